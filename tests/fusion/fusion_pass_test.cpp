// The fusion pass on hand-written IR: which groups form (chains, matmul epilogues, reductions
// with their epilogues, siblings), which must not (through an opaque node: no cycle; past the
// size limit; effects), the lattice facets, and that fused modules verify, print and parse
// back and compute what they computed (node by node).
#include <gtest/gtest.h>

#include <set>

#include "semantics/interpreter.h"
#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/passes/fusion_plan.h"
#include "semantics/registry.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::fusion_testing {
namespace {

using passes::FusionKind;

std::unique_ptr<ir::Module> parse(const std::string& text) {
  setup();
  auto m = ir::parse_module(text);
  ir::verify_or_throw(*m, "test input");
  return m;
}

// The fused graphs' member primitives, one line per group ("exp mul add").
std::vector<std::string> groups_of(const ir::Module& m) {
  std::vector<std::string> out;
  for (const auto& g : m.graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    std::string line;
    for (const ir::Node* n : g->nodes)
      if (n->is_apply() && n->prim && n->prim->name != "make_tuple")
        line += (line.empty() ? "" : " ") + n->prim->name;
    out.push_back(line);
  }
  return out;
}

// Fuses m; checks it verifies, round-trips through text, and computes the same on `args`.
passes::FusionStats fuse_and_check(ir::Module& m, const std::vector<sem::Value>& args,
                                   const passes::FusionOptions& o = {}) {
  const ProgramRun before = call(m, m.entry, args);
  const passes::FusionStats s = passes::fuse_operators(m, o);
  ir::verify_or_throw(m, "after fusion");
  const std::string text = ir::print_module(m);
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text);
  const ProgramRun after = call(m, m.entry, args);
  EXPECT_EQ(after.printed, before.printed);
  EXPECT_EQ(compare(after.result, before.result, 0, 0), "") << text;  // node by node: exact
  return s;
}

std::vector<sem::Value> args_for(const ir::Module& m) {
  std::vector<sem::Value> args;
  uint64_t seed = 7;
  for (const ir::Node* p : m.entry->params) args.push_back(random_value(p->type, seed++));
  return args;
}

TEST(FusionKinds, RowsCarryTheirPlaceOnTheLattice) {
  setup();
  const auto& r = sem::Registry::instance();
  auto kind = [&](const char* name, sem::Attrs a = {}) {
    return passes::fusion_kind(*r.find(name), a);
  };
  EXPECT_EQ(kind("exp"), FusionKind::Elementwise);
  EXPECT_EQ(kind("cast"), FusionKind::Elementwise);
  EXPECT_EQ(kind("add"), FusionKind::Broadcast);
  EXPECT_EQ(kind("where"), FusionKind::Broadcast);
  EXPECT_EQ(kind("permute"), FusionKind::Injective);
  EXPECT_EQ(kind("one_hot"), FusionKind::Injective);
  EXPECT_EQ(kind("sum"), FusionKind::Reduction);
  EXPECT_EQ(kind("softmax"), FusionKind::Reduction);
  EXPECT_EQ(kind("layer_norm"), FusionKind::Reduction);
  EXPECT_EQ(kind("matmul"), FusionKind::OutputFusable);
  EXPECT_EQ(kind("conv2d"), FusionKind::OutputFusable);
  EXPECT_EQ(kind("gather"), FusionKind::Opaque);
  EXPECT_EQ(kind("print"), FusionKind::Opaque);
  EXPECT_EQ(kind("argmax"), FusionKind::Opaque);
  sem::Attrs training, inference;
  training.set("training", true);
  inference.set("training", false);
  EXPECT_EQ(kind("batch_norm", training), FusionKind::Opaque);
  EXPECT_EQ(kind("batch_norm", inference), FusionKind::Broadcast);
  // The order of the lattice.
  EXPECT_LT(FusionKind::Elementwise, FusionKind::Broadcast);
  EXPECT_LT(FusionKind::Broadcast, FusionKind::Injective);
  EXPECT_LT(FusionKind::Injective, FusionKind::Reduction);
  EXPECT_LT(FusionKind::Reduction, FusionKind::OutputFusable);
  EXPECT_LT(FusionKind::OutputFusable, FusionKind::Opaque);
  // Every row of the ops files states its kind (control-flow and tape rows say Opaque).
  const std::set<std::string> ops_families = {"elementwise", "compare", "reduction", "matmul",
                                              "shape",       "nn",      "conv",      "creation",
                                              "internal",    "control", "tape"};
  for (const sem::Primitive* p : r.all()) {
    if (!ops_families.count(p->family)) continue;
    EXPECT_TRUE(p->facets.count(passes::kFusionFacet)) << p->name << " (" << p->family << ")";
  }
}

TEST(FusionPass, AnElementwiseChainIsOneGroup) {
  auto m = parse(R"(
graph @main(%x: f32[64,32]) -> f32[64,32] {
  %a = constant 1.5 : f32
  %b = mul(%x, %a) : f32[64,32]
  %c = gelu(%b) : f32[64,32]
  %d = tanh(%x) : f32[64,32]
  %e = add(%c, %d) : f32[64,32]
  return %e
}
)");
  const auto s = fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(s.groups, 1u);
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"mul gelu tanh add"}));
  EXPECT_EQ(ir::print_module(*m).find("constant 1.5"),
            ir::print_module(*m).rfind("constant 1.5"))
      << "the scalar constant moves into the group";
}

TEST(FusionPass, MatmulTakesItsBiasAndActivationEpilogue) {
  auto m = parse(R"(
graph @main(%x: f32[16,8], %w: f32[8,4], %b: f32[4]) -> f32[16,4] {
  %h = matmul(%x, %w) : f32[16,4]
  %z = add(%h, %b) : f32[16,4]
  %y = relu(%z) : f32[16,4]
  return %y
}
)");
  fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"matmul add relu"}));
}

// Views and transposes alone (the attention heads' reshape + transpose, a flattened
// activation's transpose) move data and compute nothing: they stay unfused for the backend's
// copy engine. The same transpose feeding arithmetic fuses with it.
TEST(FusionPass, DataMovementAloneStaysUnfused) {
  auto m = parse(R"(
graph @main(%x: f32[8,16,4,2], %y: f32[16,8]) -> (f32[8,4,16,2], f32[8,16]) {
  %r = reshape(%x, shape=[8,16,4,2]) : f32[8,16,4,2]
  %h = transpose(%r, axes=[0,2,1,3]) : f32[8,4,16,2]
  %f = reshape(%y, shape=[16,8]) : f32[16,8]
  %t = permute(%f, axes=[1,0]) : f32[8,16]
  %out = make_tuple(%h, %t) : (f32[8,4,16,2], f32[8,16])
  return %out
}
)");
  const auto s = fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(s.groups, 0u) << ir::print_module(*m);
  auto with_math = parse(R"(
graph @main(%y: f32[16,8]) -> f32[8,16] {
  %t = permute(%y, axes=[1,0]) : f32[8,16]
  %e = exp(%t) : f32[8,16]
  return %e
}
)");
  fuse_and_check(*with_math, args_for(*with_math));
  EXPECT_EQ(groups_of(*with_math), (std::vector<std::string>{"permute exp"}));
}

// An anchor whose own result is read outside the group (a pre-activation the backward pass
// needs) stays out of it: the loop nest would only write the GEMM's result over itself. The
// epilogue still fuses when it has two members.
TEST(FusionPass, AnAnchorNeededOutsideStaysOut) {
  auto m = parse(R"(
graph @main(%x: f32[16,8], %w: f32[8,4]) -> (f32[16,4], f32[16,4]) {
  %h = matmul(%x, %w) : f32[16,4]
  %y = relu(%h) : f32[16,4]
  %t = make_tuple(%h, %y) : (f32[16,4], f32[16,4])
  return %t
}
)");
  fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{}));
  auto m2 = parse(R"(
graph @main(%x: f32[16,8], %w: f32[8,4]) -> (f32[16,4], f32[16,4]) {
  %h = matmul(%x, %w) : f32[16,4]
  %a = relu(%h) : f32[16,4]
  %y = exp(%a) : f32[16,4]
  %t = make_tuple(%h, %y) : (f32[16,4], f32[16,4])
  return %t
}
)");
  fuse_and_check(*m2, args_for(*m2));
  EXPECT_EQ(groups_of(*m2), (std::vector<std::string>{"relu exp"}));
}

TEST(FusionPass, NothingFeedsTheAnchorFromInsideItsGroup) {
  // relu(x) feeds the matmul: it stays outside (the GEMM runs before the loop nest).
  auto m = parse(R"(
graph @main(%x: f32[16,8], %w: f32[8,4]) -> f32[16,4] {
  %r = relu(%x) : f32[16,8]
  %h = matmul(%r, %w) : f32[16,4]
  %y = exp(%h) : f32[16,4]
  return %y
}
)");
  fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"matmul exp"}));
}

TEST(FusionPass, SoftmaxBackwardIsOneRowKernel) {
  auto m = parse(R"(
graph @main(%x: f32[32,10], %g: f32[32,10]) -> f32[32,10] {
  %y = softmax(%x, axis=1) : f32[32,10]
  %gy = mul(%g, %y) : f32[32,10]
  %s = sum(%gy, axis=[1], keepdims=true) : f32[32,1]
  %d = sub(%g, %s) : f32[32,10]
  %dx = mul(%y, %d) : f32[32,10]
  return %dx
}
)");
  fuse_and_check(*m, args_for(*m));
  ASSERT_EQ(groups_of(*m), (std::vector<std::string>{"softmax mul sum sub mul"}));
  auto plan = passes::plan_group(passes::group_of(*m->find_graph("fused_main")));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rows, 32);
  EXPECT_EQ(plan->inner, 10);
  // Per row: max(x); sum(exp(x - max)); sum(g y) (y needs the sum); the output.
  EXPECT_EQ(plan->passes.size(), 4u);
}

TEST(FusionPass, NoGroupAcrossAnOpaqueNode) {
  // exp -> gather -> add and exp -> add: fusing exp with add would need gather inside too.
  auto m = parse(R"(
graph @main(%x: f32[6], %i: i32[6]) -> f32[6] {
  %a = exp(%x) : f32[6]
  %g = gather(%a, %i, axis=0) : f32[6]
  %b = add(%a, %g) : f32[6]
  %c = neg(%b) : f32[6]
  return %c
}
)");
  fuse_and_check(*m, {random_value(sem::Type::tensor(DType::f32, {6}), 1),
                      random_value(sem::Type::tensor(DType::i32, {6}), 2)});
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"add neg"}));
}

TEST(FusionPass, SiblingsReadingOneInputMerge) {
  auto m = parse(R"(
graph @main(%x: f32[128,64]) -> (f32[128,64], f32[128,64]) {
  %a = exp(%x) : f32[128,64]
  %b = sin(%x) : f32[128,64]
  %t = make_tuple(%a, %b) : (f32[128,64], f32[128,64])
  return %t
}
)");
  fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"exp sin"}));
}

TEST(FusionPass, GroupsRespectTheSizeLimit) {
  std::string text = "graph @main(%x: f32[8]) -> f32[8] {\n  %v0 = exp(%x) : f32[8]\n";
  for (int i = 1; i < 40; ++i)
    text += "  %v" + std::to_string(i) + " = " + (i % 2 ? "tanh" : "sin") + "(%v" +
            std::to_string(i - 1) + ") : f32[8]\n";
  text += "  return %v39\n}\n";
  auto m = parse(text);
  passes::FusionOptions o;
  o.max_group_size = 16;
  const auto s = fuse_and_check(*m, args_for(*m), o);
  EXPECT_EQ(s.fused_nodes, 40u);
  for (const std::string& g : groups_of(*m))
    EXPECT_LE(std::count(g.begin(), g.end(), ' ') + 1, 16) << g;
  EXPECT_GE(s.groups, 3u);
}

TEST(FusionPass, EffectsStayInOrderAndOutsideGroups) {
  auto m = parse(R"(
graph @main(%x: f32[4]) -> f32[4] {
  %a = exp(%x) : f32[4]
  %p = print(%a) : ()
  %b = mul(%a, %a) : f32[4]
  %c = sin(%b) : f32[4]
  %q = print(%c) : ()
  %d = add(%c, %x) : f32[4]
  return %d
}
)");
  fuse_and_check(*m, args_for(*m));
  for (const std::string& g : groups_of(*m)) EXPECT_EQ(g.find("print"), std::string::npos);
  const auto& nodes = m->entry->nodes;
  std::vector<size_t> prints;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->is_prim("print")) prints.push_back(i);
  ASSERT_EQ(prints.size(), 2u);
  EXPECT_LT(prints[0], prints[1]);
}

TEST(FusionPass, LoopBodiesAreFusedAndReadTheirClosure) {
  auto m = parse(R"(
graph @main(%x: f32[16], %w: f32[16]) -> f32[16] {
  %z = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  graph @main.body(%i: i64, %h: f32[16]) -> (f32[16],) {
    %a = mul(%h, %w) : f32[16]
    %b = tanh(%a) : f32[16]
    %c = add(%b, %h) : f32[16]
    %t = make_tuple(%c) : (f32[16],)
    return %t
  }
  %l = for_range(%z, %n, %one, @main.body, %x) : (f32[16],)
  %r = tuple_get(%l, index=0) : f32[16]
  return %r
}
)");
  fuse_and_check(*m, args_for(*m));
  EXPECT_EQ(groups_of(*m), (std::vector<std::string>{"mul tanh add"}));
}

TEST(FusionPlan, RejectsRowReductionsOverDifferentAxes) {
  auto m = parse(R"(
graph @main(%x: f32[8,4]) -> (f32[8,1], f32[1,4]) {
  %a = sum(%x, axis=[1], keepdims=true) : f32[8,1]
  %b = sum(%x, axis=[0], keepdims=true) : f32[1,4]
  %t = make_tuple(%a, %b) : (f32[8,1], f32[1,4])
  return %t
}
)");
  passes::GroupSpec g;
  g.nodes = {m->entry->nodes[0], m->entry->nodes[1]};
  g.inputs = {m->entry->params[0]};
  g.outputs = g.nodes;
  std::string why;
  EXPECT_FALSE(passes::plan_group(g, &why));
  EXPECT_NE(why.find("different axes"), std::string::npos) << why;
  // One of them alone is a loop nest of 8 rows x 4 (or 4 rows x 8, a column reduction).
  g.nodes = {m->entry->nodes[1]};
  g.outputs = g.nodes;
  auto plan = passes::plan_group(g);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->rows, 4);
  EXPECT_EQ(plan->inner, 8);
}

}  // namespace
}  // namespace spora::fusion_testing
