// simplify_algebra: each group of rules of the table, the type guard every replacement goes
// through, and the rule language itself (pattern.h).
#include "semantics/passes/simplify.h"

#include <gtest/gtest.h>

#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "semantics/passes/dce.h"
#include "semantics/passes/pattern.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

void simplify_and_clean(ir::Module& m) {
  simplify_algebra(m);
  eliminate_dead_code(m);
}

// main(x: f32[2,3], y: f32[2,3]) with the given body lines; returns the simplified module.
std::string simplified(const std::string& body, const std::string& result = "f32[2,3]") {
  const std::string text =
      "graph @main(%x: f32[2,3], %y: f32[2,3]) -> " + result + " {\n" + body + "}\n";
  sem::Tensor x = sem::Tensor::empty(DType::f32, {2, 3}), y = x.clone();
  for (int64_t i = 0; i < 6; ++i) {
    x.set(i, 0.5 * static_cast<double>(i) - 1.25);  // no zeros: see the signed-zero licence
    y.set(i, 2.0 - 0.25 * static_cast<double>(i));
  }
  return after_pass(text, simplify_and_clean, {x, y});
}

std::string module_with(const std::string& result, const std::string& ret) {
  return "graph @main(%x: f32[2,3], %y: f32[2,3]) -> " + result + " {\n" + ret + "}\n";
}

TEST(Simplify, NeutralElements) {
  EXPECT_EQ(simplified(R"(  %one = ones(shape=[2,3]) : f32[2,3]
  %zero = constant 0.0 : f32
  %a = mul(%x, %one) : f32[2,3]
  %b = mul(%one, %a) : f32[2,3]
  %c = div(%b, %one) : f32[2,3]
  %d = pow(%c, %one) : f32[2,3]
  %e = add(%d, %zero) : f32[2,3]
  %f = add(%zero, %e) : f32[2,3]
  %g = sub(%f, %zero) : f32[2,3]
  return %g
)"),
            module_with("f32[2,3]", "  return %x\n"));
}

TEST(Simplify, NegationRules) {
  EXPECT_EQ(simplified(R"(  %zero = zeros(shape=[2,3]) : f32[2,3]
  %n = neg(%x) : f32[2,3]
  %nn = neg(%n) : f32[2,3]
  %m = neg(%y) : f32[2,3]
  %a = add(%nn, %m) : f32[2,3]
  %b = sub(%a, %m) : f32[2,3]
  %c = sub(%zero, %b) : f32[2,3]
  return %c
)"),
            module_with("f32[2,3]", R"(  %0 = sub(%x, %y) : f32[2,3]
  %1 = add(%0, %y) : f32[2,3]
  %2 = neg(%1) : f32[2,3]
  return %2
)"));
}

TEST(Simplify, ZerosAbsorbAndPropagate) {
  // Symbolic zeros of autodiff: a zero adjoint times anything, transposed, summed, reshaped,
  // is zero; the result is one zeros(...) node of the right type.
  EXPECT_EQ(simplified(R"(  %z = zeros(shape=[3]) : f32[3]
  %a = mul(%x, %z) : f32[2,3]
  %t = transpose(%a) : f32[3,2]
  %m = matmul(%x, %t) : f32[2,2]
  %s = sum(%m, axis=[0]) : f32[2]
  %r = reshape(%s, shape=[2,1]) : f32[2,1]
  %b = broadcast_to(%r, shape=[2,3]) : f32[2,3]
  %c = add(%y, %b) : f32[2,3]
  return %c
)"),
            module_with("f32[2,3]", "  return %y\n"));
}

TEST(Simplify, ZerosIgnoreTheSignOfZero) {
  // -0.0 is a zero too, and the result is +0.0 where IEEE arithmetic gives -0.0 for some
  // elements (simplify.h: the signed-zero licence), so only the IR is compared here.
  std::unique_ptr<ir::Module> m =
      parse(module_with("f32[2,3]", R"(  %z = constant [[0.0], [-0.0]] : f32[2,1]
  %a = mul(%z, %x) : f32[2,3]
  %b = neg(%a) : f32[2,3]
  return %b
)"));
  simplify_and_clean(*m);
  EXPECT_EQ(ir::print_module(*m),
            module_with("f32[2,3]", R"(  %0 = zeros(shape=[2,3], dtype=f32) : f32[2,3]
  return %0
)"));
}

TEST(Simplify, SumsOfOnesAreTheirCounts) {
  // The cotangent seed of sum(f(x)) is broadcast_to(1); summed over rows (a bias's gradient
  // under that seed) each result element is the number of ones it adds.
  EXPECT_EQ(simplified(R"(  %c = constant [[1.0]] : f32[1,1]
  %o = broadcast_to(%c, shape=[2,3]) : f32[2,3]
  %s = sum(%o, axis=[0], keepdims=true) : f32[1,3]
  %t = sum(%o) : f32
  %a = mul(%x, %s) : f32[2,3]
  %b = mul(%a, %t) : f32[2,3]
  return %b
)"),
            module_with("f32[2,3]", R"(  %0 = full(shape=[1,3], value=2.0, dtype=f32) : f32[1,3]
  %1 = full(shape=[], value=6.0, dtype=f32) : f32
  %2 = mul(%x, %0) : f32[2,3]
  %3 = mul(%2, %1) : f32[2,3]
  return %3
)"));
  // Not where the count is no integer the dtype holds: 4096 ones in f16 (2048 at most).
  std::unique_ptr<ir::Module> m = parse(R"(graph @main() -> f16 {
  %o = ones(shape=[4096], dtype=f16) : f16[4096]
  %s = sum(%o) : f16
  return %s
}
)");
  simplify_and_clean(*m);
  EXPECT_NE(ir::print_module(*m).find("sum("), std::string::npos);
}

TEST(Simplify, NoRuleChangesAType) {
  // x * ones(3, 2, 3) broadcasts x: the result is not x. Integer division gives f32: i / 1
  // is not i. x + 0 where 0 is f64 does not even type-check, so no such node exists.
  const std::string text = R"(graph @main(%x: f32[2,3], %i: i32[2]) -> (f32[3,2,3], f32[2]) {
  %0 = ones(shape=[3,2,3]) : f32[3,2,3]
  %1 = mul(%x, %0) : f32[3,2,3]
  %2 = constant 1 : i32
  %3 = div(%i, %2) : f32[2]
  %4 = make_tuple(%1, %3) : (f32[3,2,3], f32[2])
  return %4
}
)";
  sem::Tensor x = sem::Tensor::full(DType::f32, {2, 3}, 1.5);
  sem::Tensor i = sem::Tensor::full(DType::i32, {2}, 7);
  EXPECT_EQ(after_pass(text, simplify_and_clean, {x, i}), text);
}

TEST(Simplify, TransposesCompose) {
  // Two transposes cancel; two permutes that do not cancel become one permute.
  EXPECT_EQ(simplified(R"(  %t = transpose(%x) : f32[3,2]
  %tt = transpose(%t) : f32[2,3]
  %a = add(%tt, %y) : f32[2,3]
  %r = reshape(%a, shape=[1,2,3]) : f32[1,2,3]
  %p = permute(%r, axes=[1,2,0]) : f32[2,3,1]
  %q = permute(%p, axes=[1,0,2]) : f32[3,2,1]
  %same = permute(%q, axes=[0,1,2]) : f32[3,2,1]
  return %same
)",
                       "f32[3,2,1]"),
            module_with("f32[3,2,1]", R"(  %0 = add(%x, %y) : f32[2,3]
  %1 = reshape(%0, shape=[1,2,3]) : f32[1,2,3]
  %2 = permute(%1, axes=[2,1,0]) : f32[3,2,1]
  return %2
)"));
}

TEST(Simplify, ReshapesCollapseAndVanish) {
  EXPECT_EQ(simplified(R"(  %a = reshape(%x, shape=[6]) : f32[6]
  %b = unsqueeze(%a, axis=0) : f32[1,6]
  %c = reshape(%b, shape=[3,-1]) : f32[3,2]
  %d = reshape(%c, shape=[2,3]) : f32[2,3]
  %e = flatten(%y, start_axis=0) : f32[6]
  %f = reshape(%e, shape=[6,1]) : f32[6,1]
  %g = reshape(%f, shape=[2,3]) : f32[2,3]
  %h = add(%d, %g) : f32[2,3]
  return %h
)"),
            module_with("f32[2,3]", R"(  %0 = add(%x, %y) : f32[2,3]
  return %0
)"));
}

TEST(Simplify, OpsThatChangeNothingAtTheirType) {
  EXPECT_EQ(simplified(R"(  %a = cast(%x, dtype=f32) : f32[2,3]
  %b = broadcast_to(%a, shape=[2,3]) : f32[2,3]
  %c = sum(%b, axis=[]) : f32[2,3]
  %d = max(%c, axis=[0], keepdims=true) : f32[1,3]
  %e = identity(%c) : f32[2,3]
  %f = squeeze(%e) : f32[2,3]
  %g = stop_gradient(%f) : f32[2,3]
  %h = add(%g, %d) : f32[2,3]
  return %h
)"),
            module_with("f32[2,3]", R"(  %0 = max(%x, axis=[0], keepdims=true) : f32[1,3]
  %1 = stop_gradient(%x) : f32[2,3]
  %2 = add(%1, %0) : f32[2,3]
  return %2
)"));
}

TEST(Simplify, ConstantsOfOnesAndZerosAreRecognised) {
  EXPECT_EQ(simplified(R"(  %one = constant [1.0, 1.0, 1.0] : f32[3]
  %half = constant [1.0, 0.5, 1.0] : f32[3]
  %full = full(shape=[2,3], value=1.0) : f32[2,3]
  %a = mul(%x, %one) : f32[2,3]
  %b = mul(%a, %full) : f32[2,3]
  %c = mul(%b, %half) : f32[2,3]
  return %c
)"),
            module_with("f32[2,3]", R"(  %0 = constant [1.0, 0.5, 1.0] : f32[3]
  %1 = mul(%x, %0) : f32[2,3]
  return %1
)"));
}

TEST(Simplify, EffectfulOperandsStay) {
  // neg(neg(call)) reads the call, which prints: the call stays, the negations go.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = call @loud(%a) : f32
  %c = neg(%b) : f32
  %d = neg(%c) : f32
  %z = constant 0.0 : f32
  %e = mul(%d, %z) : f32
  %f = add(%e, %a) : f32
  return %f
}
graph @loud(%x: f32) -> f32 {
  %p = print(%x) : ()
  return %x
}
)",
                       simplify_and_clean),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = call @loud(%0) : f32
  return %0
}

graph @loud(%x: f32) -> f32 {
  %2 = print(%x) : ()
  return %x
}
)");
}

TEST(Simplify, RulesApplyInsideNestedGraphsWithParentOperands) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 3.0 : f32
  %one = constant 1.0 : f32
  %c = constant true : bool
  %n = neg(%x) : f32
  graph @main.then() -> f32 {
    %m = neg(%n) : f32
    %r = mul(%m, %one) : f32
    return %r
  }
  graph @main.else() -> f32 {
    return %one
  }
  %r = if(%c, @main.then, @main.else) : f32
  return %r
}
)",
                       simplify_and_clean),
            R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = constant 1.0 : f32
  %2 = constant true : bool
  graph @main.then() -> f32 {
    return %0
  }
  graph @main.else() -> f32 {
    return %1
  }
  %3 = if(%2, @main.then, @main.else) : f32
  return %3
}
)");
}

// ---- the rule language ----------------------------------------------------------------------

TEST(Pattern, MatchesBindsAndChecksRepeatedNames) {
  using namespace pattern;  // NOLINT
  std::unique_ptr<ir::Module> m = parse(R"(
graph @main(%x: f32, %y: f32) -> f32 {
  %a = add(%x, %x) : f32
  %b = add(%x, %y) : f32
  %c = sub(%a, %b) : f32
  return %c
}
)");
  ir::Graph* g = m->entry;
  Node *a = g->nodes[0], *b = g->nodes[1], *c = g->nodes[2];
  RuleSet twice({{"x + x -> x", op("add", X, X), X}});
  EXPECT_EQ(twice.rewrite(*m, a), g->params[0]);
  EXPECT_EQ(twice.rewrite(*m, b), nullptr);  // x and y differ
  std::string fired;
  RuleSet nested({{"(x + x) - y -> -(x + x)", op("sub", op("add", X, X).as(Var::A), Y),
                   [](const Match& mt, Emit& e) { return e.op("neg", {mt[Var::A]}); }}});
  Node* r = nested.rewrite(*m, c, &fired);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->is_prim("neg"));
  EXPECT_EQ(r->inputs, std::vector<Node*>{a});
  EXPECT_EQ(fired, "(x + x) - y -> -(x + x)");
  EXPECT_EQ(nested.rewrite(*m, b), nullptr);  // the root is add, the rule's is sub
}

TEST(Pattern, AReplacementOfAnotherTypeIsDeclinedAndItsNodesTakenBack) {
  using namespace pattern;  // NOLINT
  std::unique_ptr<ir::Module> m = parse(R"(
graph @main(%x: f32[2]) -> f32 {
  %s = sum(%x) : f32
  return %s
}
)");
  ir::Graph* g = m->entry;
  RuleSet wrong({{"sum(x) -> neg(x)", op("sum", X),
                  [](const Match& mt, Emit& e) { return e.op("neg", {mt[Var::X]}); }}});
  EXPECT_EQ(wrong.rewrite(*m, g->nodes[0]), nullptr);
  EXPECT_EQ(g->nodes.size(), 1u);  // the neg it built is gone again
}

TEST(Pattern, ZeroAndOneSeeThroughShapeOps) {
  std::unique_ptr<ir::Module> m = parse(R"(
graph @main() -> f32[2,2] {
  %z = constant [0.0, -0.0] : f32[2]
  %b = broadcast_to(%z, shape=[2,2]) : f32[2,2]
  %t = transpose(%b) : f32[2,2]
  %o = full(shape=[2,2], value=1.0) : f32[2,2]
  %c = cast(%o, dtype=i32) : i32[2,2]
  %h = full(shape=[2,2], value=0.5) : f32[2,2]
  return %t
}
)");
  const std::vector<ir::Node*>& n = m->entry->nodes;
  EXPECT_TRUE(pattern::is_filled(n[2], 0.0));
  EXPECT_FALSE(pattern::is_filled(n[2], 1.0));
  EXPECT_TRUE(pattern::is_filled(n[4], 1.0));
  EXPECT_FALSE(pattern::is_filled(n[5], 0.0));
}

}  // namespace
}  // namespace spora::passes::testing
