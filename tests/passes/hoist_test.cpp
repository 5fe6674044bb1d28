// hoist_loop_products: matmul(gather(X, i, axis=0), W) in a loop body, X and W from outside,
// becomes a slice of one product over X computed before the loop, when the loop visits about
// every slice; a loop of unknown length only reads such a product, never makes one. Every case
// runs before and after the pass with the same result (pass_testing.h).
#include "semantics/passes/hoist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

// X: f32[3, 2, 2] (three slices), W: f32[2, 2]; the loop sums slice i @ W over i. Integer
// values, so the product's rows are exact whichever call computes them.
std::string loop_over(const std::string& bounds, const std::string& extra = "") {
  return R"(graph @main() -> f32[2,2] {
  %x = constant [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]], [[9.0, 1.0], [2.0, 3.0]]] : f32[3,2,2]
  %w = constant [[1.0, -1.0], [2.0, 0.0]] : f32[2,2]
  %z = zeros(shape=[2,2], dtype=f32) : f32[2,2]
)" + bounds +
         R"(
  graph @main.body(%i: i64, %acc: f32[2,2]) -> (f32[2,2],) {
    %s = gather(%x, %i, axis=0) : f32[2,2]
    %p = matmul(%s, %w)" +
         extra + R"() : f32[2,2]
    %a = add(%acc, %p) : f32[2,2]
    %t = make_tuple(%a) : (f32[2,2],)
    return %t
  }
  %r = for_range(%lo, %hi, %one, @main.body, %z) : (f32[2,2],)
  %out = tuple_get(%r, index=0) : f32[2,2]
  return %out
}
)";
}

TEST(Hoist, AProductOfEverySliceLeavesTheLoop) {
  const std::string out = after_pass(loop_over(R"(  %lo = constant 0 : i64
  %hi = constant 3 : i64
  %one = constant 1 : i64)"),
                                     hoist_loop_products);
  EXPECT_NE(out.find("= matmul(%0, %1) : f32[3,2,2]"), std::string::npos) << out;
  EXPECT_NE(out.find("gather(%6, %i, axis=0) : f32[2,2]"), std::string::npos) << out;
  // The product comes before the loop's body, and the body multiplies nothing.
  EXPECT_LT(out.find("matmul(%0, %1)"), out.find("graph @main.body")) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.body")), 0u) << out;
}

TEST(Hoist, TransposeFlagsCarryOver) {
  const std::string out = after_pass(loop_over(R"(  %lo = constant 0 : i64
  %hi = constant 3 : i64
  %one = constant 1 : i64)",
                                               ", transpose_a=true, transpose_b=true"),
                                     hoist_loop_products);
  EXPECT_NE(out.find("matmul(%0, %1, transpose_a=true, transpose_b=true) : f32[3,2,2]"),
            std::string::npos)
      << out;
}

TEST(Hoist, ALoopThatVisitsFewSlicesKeepsItsProducts) {
  // One iteration of three slices: the product over all of X would be three times the work.
  const std::string text = loop_over(R"(  %lo = constant 1 : i64
  %hi = constant 2 : i64
  %one = constant 1 : i64)");
  const std::string out = after_pass(text, hoist_loop_products);
  EXPECT_EQ(count(out, "matmul"), 1u) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.body")), 1u) << out;
}

TEST(Hoist, ALoopOfUnknownLengthMakesNoProduct) {
  // The upper bound is an argument: how many slices the loop visits is not known.
  const std::string text = R"(graph @main(%n: i64) -> f32[2,2] {
  %x = constant [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]] : f32[2,2,2]
  %w = constant [[1.0, -1.0], [2.0, 0.0]] : f32[2,2]
  %z = zeros(shape=[2,2], dtype=f32) : f32[2,2]
  %lo = constant 0 : i64
  %one = constant 1 : i64
  graph @main.body(%i: i64, %acc: f32[2,2]) -> (f32[2,2],) {
    %s = gather(%x, %i, axis=0) : f32[2,2]
    %p = matmul(%s, %w) : f32[2,2]
    %a = add(%acc, %p) : f32[2,2]
    %t = make_tuple(%a) : (f32[2,2],)
    return %t
  }
  %r = for_range(%lo, %n, %one, @main.body, %z) : (f32[2,2],)
  %out = tuple_get(%r, index=0) : f32[2,2]
  return %out
}
)";
  const std::string out = after_pass(text, hoist_loop_products, {i64(2)});
  EXPECT_EQ(count(out, "matmul"), 1u) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.body")), 1u) << out;
}

// A forward loop of constant length and a backward loop whose length is an argument, both
// multiplying slices of X by W.
std::string two_loops() {
  return R"(graph @main(%n: i64) -> f32[2,2] {
  %x = constant [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]] : f32[2,2,2]
  %w = constant [[1.0, -1.0], [2.0, 0.0]] : f32[2,2]
  %z = zeros(shape=[2,2], dtype=f32) : f32[2,2]
  %lo = constant 0 : i64
  %two = constant 2 : i64
  %one = constant 1 : i64
  graph @main.fwd(%i: i64, %acc: f32[2,2]) -> (f32[2,2],) {
    %s = gather(%x, %i, axis=0) : f32[2,2]
    %p = matmul(%s, %w) : f32[2,2]
    %a = add(%acc, %p) : f32[2,2]
    %t = make_tuple(%a) : (f32[2,2],)
    return %t
  }
  %r = for_range(%lo, %two, %one, @main.fwd, %z) : (f32[2,2],)
  %f = tuple_get(%r, index=0) : f32[2,2]
  graph @main.bwd(%j: i64, %acc2: f32[2,2]) -> (f32[2,2],) {
    %s2 = gather(%x, %j, axis=0) : f32[2,2]
    %p2 = matmul(%s2, %w) : f32[2,2]
    %a2 = sub(%acc2, %p2) : f32[2,2]
    %t2 = make_tuple(%a2) : (f32[2,2],)
    return %t2
  }
  %r2 = for_range(%lo, %n, %one, @main.bwd, %f) : (f32[2,2],)
  %out = tuple_get(%r2, index=0) : f32[2,2]
  return %out
}
)";
}

TEST(Hoist, ALoopOfUnknownLengthReadsTheProductAnEarlierLoopHoisted) {
  // As a backward pass reads its forward loop's slices: the second loop's bound is an
  // argument, the first's is constant; after the pass both read the one product.
  const std::string out = after_pass(two_loops(), hoist_loop_products, {i64(1)});
  EXPECT_EQ(count(out, "matmul"), 1u) << out;
  EXPECT_NE(out.find("= matmul(%0, %1) : f32[2,2,2]"), std::string::npos) << out;
}

TEST(Hoist, AProductIsReadOnlyWhereItIsVisible) {
  // The text of the last test with @main.bwd named before @main.fwd: the product hoisted for
  // the forward loop then comes after the node that names the backward body, which cannot see
  // it, so the backward keeps its own.
  std::unique_ptr<ir::Module> m = parse(two_loops());
  ir::Graph* main = m->entry;
  auto names = [&](const char* graph) {
    return std::find_if(main->nodes.begin(), main->nodes.end(), [&](const ir::Node* n) {
      return n->graph_value && n->graph_value->name == graph;
    });
  };
  ir::Node* bwd = *names("main.bwd");
  main->nodes.erase(names("main.bwd"));
  main->nodes.insert(names("main.fwd"), bwd);
  const std::string out = after_pass(*m, hoist_loop_products, {i64(1)});
  EXPECT_EQ(count(out, "matmul"), 2u) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.bwd")), 1u) << out;
}

}  // namespace
}  // namespace spora::passes::testing
