// The verifier: every test module is clean; each kind of violation is reported, with the
// printer's names.
#include "semantics/ir/verifier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "tests/ir/test_modules.h"
#include "tests/ir/test_prims.h"

namespace spora::ir::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// The one problem verify() finds (fails the test if there are none or several). Where one
// mistake breaks several invariants (a body's signature and the graph constant naming it),
// tests check with Contains instead.
std::string only_problem(const Module& m) {
  std::vector<std::string> problems = verify(m);
  if (problems.size() != 1) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    ADD_FAILURE() << problems.size() << " problems:" << all << "\n" << print_module(m);
    return problems.empty() ? "" : problems[0];
  }
  return problems[0];
}

TEST(Verifier, AcceptsEveryTestModuleAndItsReparse) {
  const std::vector<std::function<Graph*(Module&)>> builders = {
      build_straight_line, build_nested_closures, build_collatz,   build_range_sum, build_factorial,
      build_for_each_sum,  build_constants,       build_odd_names, build_attrs};
  Module all;
  for (const auto& build : builders) {
    Module m;
    build(m);
    EXPECT_EQ(verify(m), std::vector<std::string>{}) << print_module(m);
    build(all);
  }
  EXPECT_EQ(verify(all), std::vector<std::string>{});
  EXPECT_EQ(verify(*parse_module(print_module(all))), std::vector<std::string>{});
  EXPECT_NO_THROW(verify_or_throw(all));
}

TEST(Verifier, UseBeforeDefinition) {
  Module m;
  Graph* g = build_straight_line(m);
  std::swap(g->nodes[0], g->nodes[1]);
  EXPECT_EQ(only_problem(m), "@straight: %0 = mul: input %1 is used before it is defined");
}

TEST(Verifier, ValueOfASiblingGraph) {
  Module m;
  Graph* outer = build_nested_closures(m);
  Graph* small = m.find_graph("small");
  Graph* big = m.find_graph("big");
  big->output = small->nodes[1];  // lt(x, 5) of @small, read from its sibling @big
  EXPECT_THAT(verify(m),
              Contains("@big: output %4 belongs to @small, which does not enclose @big"));
  (void)outer;
}

TEST(Verifier, ValueOfANestedGraph) {
  Module m;
  Graph* fact = build_factorial(m);
  Graph* rec = m.find_graph("rec");
  fact->output = rec->output;  // the parent reads its child's node
  EXPECT_THAT(only_problem(m), HasSubstr("belongs to @rec, which does not enclose @fact"));
}

TEST(Verifier, DetachedNode) {
  ensure_prims();
  Module m;
  Graph* g = build_straight_line(m);
  Graph* other = m.add_graph("other");
  Node* stray = m.add_constant(other, f32(1.0));
  other->nodes.clear();  // the constant is no longer listed anywhere
  other->output = m.add_constant(other, f32(2.0));
  g->nodes[1]->inputs[1] = stray;
  EXPECT_EQ(only_problem(m),
            "@straight: %1 = mul: input %<detached> is not in any graph of the module");
}

TEST(Verifier, WrongOwnerAndListedTwice) {
  Module m;
  Graph* g = build_straight_line(m);
  Graph* h = m.add_graph("h");
  h->output = m.add_param(h, "p", f32_t());
  g->nodes[0]->graph = h;
  EXPECT_EQ(only_problem(m), "@straight: %0 = add: node->graph is not @straight");
  g->nodes[0]->graph = g;
  g->nodes.push_back(g->nodes[0]);
  EXPECT_THAT(only_problem(m), HasSubstr("listed twice"));
}

TEST(Verifier, MissingTypeAndOutput) {
  Module m;
  Graph* g = build_straight_line(m);
  g->nodes[0]->type = nullptr;
  EXPECT_EQ(only_problem(m), "@straight: %0 = add: has no type");
  g->nodes[0]->type = f32_t();
  g->output = nullptr;
  EXPECT_EQ(only_problem(m), "@straight: has no output");
}

TEST(Verifier, TypeDiffersFromTheShapeRule) {
  Module m;
  Graph* g = build_straight_line(m);
  g->nodes[1]->type = f32_t({3});
  EXPECT_EQ(only_problem(m), "@straight: %1 = mul: has type f32[3] but its shape rule gives f32");
}

TEST(Verifier, ShapeRuleRejectsTheInputs) {
  Module m;
  Graph* g = build_straight_line(m);
  g->params[1]->type = sem::Type::string();
  EXPECT_THAT(only_problem(m),
              HasSubstr("@straight: %0 = add: its shape rule rejects the inputs: "));
}

TEST(Verifier, CallArgumentsAndResult) {
  Module m;
  build_factorial(m);
  Node* call = m.find_graph("rec")->nodes[2];
  ASSERT_NE(call->callee, nullptr);
  call->type = f32_t();
  EXPECT_THAT(verify(m), Contains("@rec: %5 = call @fact: has type f32 but @fact returns i64"));
  call->type = i64_t();
  call->inputs.push_back(call->inputs[0]);
  EXPECT_EQ(only_problem(m), "@rec: %5 = call @fact: passes 2 arguments to @fact, which takes 1");
  call->inputs.pop_back();
  m.find_graph("fact")->params[0]->type = i64_t({2});
  EXPECT_THAT(verify(m),
              ::testing::Contains(
                  "@rec: %5 = call @fact: argument 1 has type i64 but @fact expects i64[2]"));
}

TEST(Verifier, IfConditionAndBranches) {
  Module m;
  Graph* fact = build_factorial(m);
  Node* cond_node = fact->nodes[1];
  Node* branch = fact->nodes.back();
  ASSERT_TRUE(branch->is_prim("if"));
  branch->inputs[0] = fact->params[0];  // an i64 condition
  EXPECT_EQ(only_problem(m), "@fact: %7 = if: the condition is i64, not bool");
  branch->inputs[0] = cond_node;
  m.find_graph("base")->output->type = f32_t();  // one branch returns f32
  m.find_graph("base")->output->value = f32(1.0);
  EXPECT_THAT(verify(m), Contains("@fact: %7 = if: @base is fn() -> f32 but if needs fn() -> i64"));
  EXPECT_THAT(verify(m), Contains("@fact: @base: has type fn() -> i64 but @base is fn() -> f32"));
}

TEST(Verifier, GraphOperandMustBeAGraphConstant) {
  Module m;
  Graph* fact = build_factorial(m);
  Node* branch = fact->nodes.back();
  branch->inputs[2] = fact->nodes[0];
  EXPECT_THAT(only_problem(m), HasSubstr(" = if: operand 3 must be a graph constant"));
}

TEST(Verifier, WhileStateMustMatchTheBody) {
  Module m;
  Graph* g = build_collatz(m);
  Graph* step = m.find_graph("step");
  step->output = step->nodes[step->nodes.size() - 3];  // the new n alone, not the (n, steps) tuple
  EXPECT_THAT(verify(m), Contains("@collatz: %15 = while: @step is fn(i64, i64) -> i64 but "
                                  "while needs fn(i64, i64) -> (i64, i64)"));
  (void)g;
}

TEST(Verifier, WhileConditionMustReturnBool) {
  Module m;
  build_collatz(m);
  Graph* cond = m.find_graph("cond");
  cond->output = cond->params[0];
  EXPECT_THAT(verify(m), Contains("@collatz: %15 = while: @cond is fn(i64, i64) -> i64 but "
                                  "while needs fn(i64, i64) -> bool"));
}

TEST(Verifier, ForRangeIndexAndBody) {
  Module m;
  build_range_sum(m);
  Graph* body = m.find_graph("body");
  body->params[0]->type = sem::Type::scalar(DType::i32);
  EXPECT_THAT(verify(m), Contains("@range_sum: %3 = for_range: @body is fn(i32, i64) -> (i64,) "
                                  "but for_range needs fn(i64, i64) -> (i64,)"));
  body->params[0]->type = i64_t();
  Node* loop = m.find_graph("range_sum")->nodes[2];
  ASSERT_TRUE(loop->is_prim("for_range"));
  loop->type = sem::Type::tuple({f32_t()});
  EXPECT_THAT(verify(m),
              Contains("@range_sum: %3 = for_range: has type (f32,) but its loop state is (i64,)"));
}

TEST(Verifier, ForEachNeedsAnIterator) {
  Module m;
  Graph* g = build_for_each_sum(m);
  g->params[0]->type = f32_t();
  EXPECT_EQ(only_problem(m), "@each_sum: %2 = for_each: iterates over f32, not an iterator");
}

TEST(Verifier, NestedGraphNamedFromOutsideItsParent) {
  ensure_prims();
  Module m;
  build_factorial(m);
  Graph* other = m.add_graph("other");
  Node* c = m.add_constant(other, Value(sem::Tensor::scalar(DType::boolean, 1)));
  Graph* base = m.find_graph("base");
  other->output = m.add_apply(
      other, prim("if"), {c, m.add_graph_constant(other, base), m.add_graph_constant(other, base)},
      {}, i64_t());
  std::vector<std::string> problems = verify(m);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "@other: @base: names @base, nested in @fact and not visible from @other");
}

TEST(Verifier, GraphNamesMustBeUnique) {
  Module m;
  build_straight_line(m);
  Graph* g = m.add_graph("second");
  g->output = m.add_param(g, "x", f32_t());
  g->name = "straight";
  EXPECT_EQ(only_problem(m), "graph name @straight is used twice");
}

TEST(Verifier, ConstantValueMustHaveTheNodeType) {
  ensure_prims();
  Module m;
  Graph* g = m.add_graph("c");
  g->output = m.add_constant(g, f32(1.0));
  g->output->type = i64_t();
  EXPECT_EQ(only_problem(m), "@c: %0: has type i64 but its value is f32");
}

TEST(Verifier, VerifyOrThrowListsTheProblems) {
  Module m;
  Graph* g = build_straight_line(m);
  g->output = nullptr;
  try {
    verify_or_throw(m, "after cse");
    FAIL() << "expected an InternalError";
  } catch (const lang::InternalError& e) {
    EXPECT_STREQ(e.what(), "IR verification failed after cse:\n  @straight: has no output");
  }
}

TEST(Verifier, EffectfulCounts) {
  ensure_prims();
  Module m;
  Graph* g = m.add_graph("main");
  Node* x = m.add_param(g, "x", f32_t());
  Node* e = m.add_apply(g, prim("test_effect"), {x}, {}, nullptr);
  g->output = m.add_apply(g, prim("test_effect"), {e}, {}, nullptr);
  EXPECT_EQ(effectful_counts(m), (std::map<std::string, int>{{"test_effect", 2}}));
}

}  // namespace
}  // namespace spora::ir::testing
