// stack_loop_products: a loop state the body only updates as c + transpose(A) @ B becomes two
// lists of A and B and one product of their stacked rows after the loop (list_tmatmul_sum).
// Every case runs before and after the pass with the same result (pass_testing.h); the values
// are small integers, so the sums are exact in any order.
#include "semantics/passes/stack_products.h"

#include <gtest/gtest.h>

#include "lang/diagnostics.h"
#include "semantics/passes/dce.h"
#include "semantics/registry.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

// The bound of the loop below: %hi, defined after %lo = 0 and %one = 1.
const char* kThree = "  %hi = constant 3 : i64\n";
const char* kNone = "  %hi = constant 0 : i64\n";
const char* kArgument = "  %hi = add(%n, %lo) : i64\n";  // not known before the run
// A backward pass's loop over a tape: as long as the list a forward loop filled (3 slices).
const char* kTape = R"(  %e = list_empty(elem="f32[2,3]") : list<f32[2,3]>
  graph @main.fwd(%j: i64, %l: list<f32[2,3]>) -> (list<f32[2,3]>,) {
    %xj = gather(%x, %j, axis=0) : f32[2,3]
    %l2 = list_push(%l, %xj) : list<f32[2,3]>
    %tf = make_tuple(%l2) : (list<f32[2,3]>,)
    return %tf
  }
  %three = constant 3 : i64
  %fr = for_range(%lo, %three, %one, @main.fwd, %e) : (list<f32[2,3]>,)
  %tape = tuple_get(%fr, index=0) : list<f32[2,3]>
  %hi = list_len(%tape) : i64
)";

// A loop over slices i of X (f32[3, 2, 3]) and G (f32[3, 2, 2]) up to `bound`, the state
// updated as acc + transpose(X_i) @ G_i (`product` is the matmul's text, `extra` more of the
// body).
std::string weight_gradient_loop(const std::string& product, const std::string& init,
                                 const std::string& bound, const std::string& extra = "") {
  return R"(graph @main(%n: i64) -> f32[3,2] {
  %x = constant [[[1.0, 2.0, 0.0], [3.0, -1.0, 2.0]], [[0.0, 1.0, 1.0], [2.0, 2.0, -3.0]], [[1.0, 0.0, 4.0], [-2.0, 1.0, 1.0]]] : f32[3,2,3]
  %g = constant [[[1.0, -1.0], [2.0, 0.0]], [[0.0, 3.0], [1.0, 1.0]], [[-1.0, 2.0], [2.0, -2.0]]] : f32[3,2,2]
  %c0 = )" +
         init + R"(
  %lo = constant 0 : i64
  %one = constant 1 : i64
)" + bound +
         R"(  graph @main.body(%i: i64, %acc: f32[3,2]) -> (f32[3,2],) {
    %xi = gather(%x, %i, axis=0) : f32[2,3]
    %gi = gather(%g, %i, axis=0) : f32[2,2]
)" + product +
         extra + R"(
    %a = add(%acc, %p) : f32[3,2]
    %t = make_tuple(%a) : (f32[3,2],)
    return %t
  }
  %r = for_range(%lo, %hi, %one, @main.body, %c0) : (f32[3,2],)
  %out = tuple_get(%r, index=0) : f32[3,2]
  return %out
}
)";
}

const char* kPermuted = R"(    %xt = permute(%xi, axes=[1,0]) : f32[3,2]
    %p = matmul(%xt, %gi) : f32[3,2]
)";
const char* kFlag = R"(    %p = matmul(%xi, %gi, transpose_a=true) : f32[3,2]
)";
const char* kZeros = "zeros(shape=[3,2], dtype=f32) : f32[3,2]";
const char* kOnes = "constant [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]] : f32[3,2]";

// The pass, then dead-code elimination (as the pipeline runs them): the old update goes.
void stack_then_dce(ir::Module& m) {
  stack_loop_products(m);
  eliminate_dead_code(m);
}

TEST(Stack, AnAccumulatedProductBecomesOneProductAfterTheLoop) {
  const std::string out =
      after_pass(weight_gradient_loop(kPermuted, kZeros, kThree), stack_then_dce, {i64(3)});
  const size_t body = out.find("graph @main.body"), body_end = out.find("\n  }\n", body);
  ASSERT_NE(body_end, std::string::npos) << out;
  const std::string body_text = out.substr(body, body_end - body);
  // The body pushes X_i and G_i and multiplies nothing (the state, passed through, went with
  // the dead code); the one product follows the loop.
  EXPECT_EQ(count(body_text, "list_push"), 2u) << out;
  EXPECT_EQ(count(body_text, "matmul"), 0u) << out;
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 1u) << out;
  EXPECT_GT(out.find("list_tmatmul_sum"), out.find("for_range")) << out;
}

TEST(Stack, TheTransposeFlagFormAndAnInitialValueAreKept) {
  // Initial value ones, transpose as the matmul's flag; also 0 iterations (the initial value),
  // and a backward pass's loop over a tape.
  for (const char* bound : {kThree, kNone, kTape}) {
    const std::string out =
        after_pass(weight_gradient_loop(kFlag, kOnes, bound), stack_loop_products, {i64(3)});
    EXPECT_EQ(count(out, "list_tmatmul_sum"), 1u) << out;
  }
}

TEST(Stack, AStateReadInsideTheBodyStays) {
  // The body also prints the running sum: it is needed at every iteration.
  const std::string out =
      after_pass(weight_gradient_loop(kPermuted, kZeros, kThree, "    %seen = print(%acc) : ()\n"),
                 stack_loop_products, {i64(2)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.body")), 1u) << out;
}

TEST(Stack, AProductWithATransposedRightOperandStays) {
  const std::string out =
      after_pass(weight_gradient_loop(R"(    %gt = permute(%gi, axes=[1,0]) : f32[2,2]
    %p = matmul(%xi, %gt, transpose_a=true, transpose_b=true) : f32[3,2]
)",
                                      kZeros, kThree),
                 stack_loop_products, {i64(3)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
}

TEST(Stack, ALoopWhoseListsCouldGrowWithoutBoundStays) {
  // A bound known only when the loop runs (an accumulation over a data set): n products, O(1)
  // memory. A constant trip count whose lists would pass the budget: the same.
  std::string out =
      after_pass(weight_gradient_loop(kPermuted, kZeros, kArgument), stack_loop_products, {i64(3)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
  // 3 iterations x (2 x 3 + 2 x 2) elements = 30.
  auto within = [](int64_t budget) {
    return [budget](ir::Module& m) { stack_loop_products_within(m, budget); };
  };
  out = after_pass(weight_gradient_loop(kPermuted, kZeros, kThree), within(29), {i64(3)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
  out = after_pass(weight_gradient_loop(kPermuted, kZeros, kThree), within(30), {i64(3)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 1u) << out;
}

TEST(Stack, TheSumsTypeRuleNamesWhatDoesNotFit) {
  parse(weight_gradient_loop(kFlag, kZeros, kThree));  // registers the primitives
  const sem::Primitive* p = sem::Registry::instance().find("list_tmatmul_sum");
  ASSERT_NE(p, nullptr);
  const sem::TypeP la = sem::Type::list(sem::Type::tensor(DType::f32, {2, 3}));
  const sem::TypeP lb = sem::Type::list(sem::Type::tensor(DType::f32, {2, 4}));
  EXPECT_EQ(p->infer({la, lb, sem::Type::tensor(DType::f32, {3, 4})}, {})->str(), "f32[3,4]");
  try {
    p->infer({la, lb, sem::Type::tensor(DType::f32, {4, 3})}, {});
    ADD_FAILURE() << "no error";
  } catch (const lang::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the sum is f32[3,4], the initial value f32[4,3]"),
              std::string::npos)
        << e.what();
  }
  const sem::TypeP other_rows = sem::Type::list(sem::Type::tensor(DType::f32, {5, 4}));
  EXPECT_THROW(p->infer({la, other_rows, sem::Type::tensor(DType::f32, {3, 4})}, {}),
               lang::UserError);
}

}  // namespace
}  // namespace spora::passes::testing
