// clone_module / clone_graph and the Graphviz output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "semantics/interpreter.h"
#include "semantics/ir/clone.h"
#include "semantics/ir/dot.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "tests/ir/test_modules.h"
#include "tests/ir/test_prims.h"

namespace spora::ir::testing {
namespace {

using ::testing::HasSubstr;

TEST(Clone, ModuleCopyPrintsIdenticallyAndSharesNothing) {
  const std::vector<std::function<Graph*(Module&)>> builders = {
      build_straight_line, build_nested_closures, build_collatz,   build_range_sum, build_factorial,
      build_for_each_sum,  build_constants,       build_odd_names, build_attrs};
  Module m;
  for (const auto& build : builders) build(m);
  CloneMap map;
  auto copy = clone_module(m, &map);
  EXPECT_EQ(print_module(*copy), print_module(m));
  EXPECT_EQ(verify(*copy), std::vector<std::string>{});
  EXPECT_EQ(copy->entry, map.graph(m.entry));
  for (const auto& g : copy->graphs()) {
    for (const Node* n : g->nodes) {
      EXPECT_EQ(n->graph, g.get());
      for (const Node* in : n->inputs) EXPECT_EQ(map.nodes.count(in), 0u) << "an old node leaked";
    }
  }
  EXPECT_EQ(map.graphs.size(), m.graphs().size());
}

TEST(Clone, ModuleCopyRuns) {
  Module m;
  build_collatz(m);
  auto copy = clone_module(m);
  EXPECT_EQ(scalar(sem::Interpreter(*copy).call(copy->find_graph("collatz"), {i64(27)})), 111.0);
}

TEST(Clone, GraphCopyInTheSameModuleGetsFreshNamesAndRedirectsRecursion) {
  Module m;
  Graph* fact = build_factorial(m);
  CloneMap map;
  Graph* copy = clone_graph(m, *fact, nullptr, map);
  EXPECT_EQ(copy->name, "fact.1");
  EXPECT_EQ(m.find_graph("rec.1")->parent, copy);
  Node* call = m.find_graph("rec.1")->nodes[2];
  EXPECT_EQ(call->callee, copy);  // the recursive call targets the copy
  EXPECT_EQ(verify(m), std::vector<std::string>{});
  EXPECT_EQ(scalar(sem::Interpreter(m).call(copy, {i64(5)})), 120.0);
}

TEST(Clone, NestedGraphCopyKeepsOrSubstitutesFreeVariables) {
  Module m;
  Graph* outer = build_nested_closures(m);
  Graph* small = m.find_graph("small");
  // Copy @small as a new top-level graph whose free variable %x becomes a parameter.
  Graph* holder = m.add_graph("holder");
  Node* x = m.add_param(holder, "y", f32_t());
  CloneMap map;
  map.nodes[outer->params[0]] = x;
  Graph* copy = clone_graph(m, *small, holder, map);
  EXPECT_EQ(copy->name, "small.1");
  EXPECT_EQ(copy->parent, holder);
  EXPECT_EQ(copy->nodes[1]->inputs[0], x);  // lt(%x, 5) now reads the substitute
  Graph* tiny = map.graph(m.find_graph("tiny"));
  EXPECT_EQ(tiny->parent, copy);
  EXPECT_EQ(tiny->output->inputs[0], x);
  EXPECT_EQ(tiny->output->inputs[1], outer->nodes[0]);  // %k was not mapped: kept
}

TEST(Dot, DrawsClustersDataFlowAndFreeVariables) {
  Module m;
  build_nested_closures(m);
  std::string dot = to_dot(m);
  EXPECT_THAT(dot, HasSubstr("digraph spora {"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_0 {"));
  EXPECT_THAT(dot, HasSubstr("label=\"@outer(%x: f32) -> f32\";"));
  EXPECT_THAT(dot, HasSubstr("label=\"@tiny() -> f32\";"));
  EXPECT_THAT(dot, HasSubstr("[shape=ellipse, label=\"%x : f32\"]"));
  EXPECT_THAT(dot, HasSubstr("[shape=box, style=\"rounded\", label=\"%4 = lt : bool\"]"));
  EXPECT_THAT(dot, HasSubstr("style=dashed"));      // %x and %k read inside @tiny
  EXPECT_THAT(dot, HasSubstr("style=dotted"));      // @small as an operand of if
  EXPECT_THAT(dot, HasSubstr("label=\"return\""));  // @big returns %0 of @outer
  EXPECT_EQ(dot, to_dot(m));
  // Nested clusters sit inside their parent's: @tiny's opens before @outer's closes.
  EXPECT_LT(dot.find("@tiny() -> f32"), dot.find("\n  }\n"));
}

}  // namespace
}  // namespace spora::ir::testing
