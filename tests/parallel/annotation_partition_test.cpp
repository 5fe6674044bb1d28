// Annotations in use: the step graph keeps the shard_hints, the partitioner pins their layouts,
// sharding propagation from them (parallel/search/from_ir.h) finds Megatron's strategy for the
// annotated MLP (the same collectives as the hand-written strategy), and a 4-rank run of the
// annotated program equals the single-device run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "annotation_common.h"
#include "backends/comm/threads.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/search/from_ir.h"
#include "parallel/sharding/sharding.h"
#include "semantics/ir/printer.h"
#include "semantics/registry.h"
#include "spmd_common.h"

namespace spora::parallel::testing {
namespace {

distributed::TrainStepOptions megatron_options() {
  distributed::TrainStepOptions o = mlp_options();
  o.file = std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp_megatron.sp";
  return o;
}

int hints(const ir::Graph& g, const char* prim = "shard_hint") {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node* n) { return n->is_prim(prim); }));
}

search::StepCostGraph cost_graph(const StepGraph& p, const Mesh& mesh) {
  return search::build_step_cost_graph(*p.step, p.param_names,
                                       static_cast<int>(p.param_names.size()), 0, mesh,
                                       search::propagation_device({}));
}

std::vector<std::string> collectives(const StepGraph& p, const std::string& json) {
  const Strategy s = parse_strategy(json, *p.step);
  return collective_summary(*partition_training_step(*p.step, p.param_names.size(), s).graph);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(AnnotationPrimitives, ShardHintsRuleIsThePinAndStageBoundaryPassesLayoutsThrough) {
  setup();
  const sem::Primitive& hint = *sem::Registry::instance().find("shard_hint");
  const ShardingRule& rule = *sharding_rule(hint);
  const Mesh mesh{{2, 2}, {"dp", "tp"}};
  const sem::TypeP t = sem::Type::tensor(DType::f32, {8, 4});
  sem::Attrs a;
  a.set("layout", std::string("[tp, -]"));
  const std::vector<OpStrategy> s = rule.enumerate({t}, t, a, mesh);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].output.to_string(mesh), "[tp, -]");
  EXPECT_EQ(s[0].inputs.at(0), s[0].output);
  EXPECT_EQ(s[0].local_flops_fraction, 0.5);
  // forward accepts only the pinned layout (anything else is redistributed to it).
  EXPECT_EQ(rule.forward({s[0].output}, {t}, t, a, mesh), s[0].output);
  EXPECT_FALSE(rule.forward({Layout::replicated(2)}, {t}, t, a, mesh));
  // MindSpore's partition numbers; a layout that does not fit is a user error naming it.
  a.set("layout", std::string("(1, 2)"));
  EXPECT_EQ(rule.enumerate({t}, t, a, mesh)[0].output.to_string(mesh), "[-, dp]");
  a.set("layout", std::string("(3, 1)"));
  try {
    rule.enumerate({t}, t, a, mesh);
    ADD_FAILURE() << "(3, 1) fits no axis of a 2x2 mesh";
  } catch (const lang::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shard layout '(3, 1)' does not fit f32[8,4] on mesh"),
              std::string::npos)
        << e.what();
  }
  const ShardingRule& stage = *sharding_rule(*sem::Registry::instance().find("stage_boundary"));
  sem::Attrs k;
  k.set("stage", int64_t{1});
  EXPECT_EQ(stage.forward({Layout::split(2, 0, 1)}, {t}, t, k, mesh), Layout::split(2, 0, 1));
  EXPECT_GT(stage.enumerate({t}, t, k, mesh).size(), 1u);
  // Identities on values, with identity derivatives (the cotangent passes through).
  sem::Tensor x = sem::Tensor::zeros(DType::f32, {8, 4});
  x.set(5, 2.5);
  EXPECT_EQ(hint.eval({sem::Value(x)}, a).tensor.get(5), 2.5);
}

TEST(AnnotationPartition, TheStepKeepsTheHintsAndThePartitionerPinsThem) {
  setup();
  const StepGraph p = distributed::build_training_step(megatron_options());
  EXPECT_EQ(hints(*p.step), 4) << ir::print_graph(*p.step);
  // No strategy at all (everything replicated): the pins alone cut l2 and l3. The replicated
  // weights are sliced locally where the hints want them cut, so the step has collectives it
  // would not need if the weights were stored cut: what propagation (next test) fixes.
  Strategy none;
  none.mesh = Mesh{{4}, {}};
  const std::vector<std::string> c =
      collective_summary(*partition_training_step(*p.step, p.param_names.size(), none).graph);
  EXPECT_TRUE(std::any_of(c.begin(), c.end(), [](const std::string& l) {
    return l.rfind("shard_slice(dim=1", 0) == 0;
  })) << joined(c);
  EXPECT_TRUE(std::any_of(c.begin(), c.end(), [](const std::string& l) {
    return l.rfind("shard_slice(dim=0", 0) == 0;
  })) << joined(c);
}

TEST(AnnotationPartition, PropagationFromTheAnnotationsFindsMegatron) {
  setup();
  const StepGraph annotated = distributed::build_training_step(megatron_options());
  const search::StepCostGraph g = cost_graph(annotated, Mesh{{4}, {}});
  EXPECT_EQ(search::annotation_pins(g).size(), 4u);
  const std::string json = search::propagate_from_annotations(g);
  const Strategy s = parse_strategy(json, *annotated.step);
  EXPECT_EQ(s.layouts.at("net.l2.w").partition_string(s.mesh), "(1, 4)") << json;
  EXPECT_EQ(s.layouts.at("net.l2.b").partition_string(s.mesh), "(4,)") << json;
  EXPECT_EQ(s.layouts.at("net.l3.w").partition_string(s.mesh), "(4, 1)") << json;
  // The same collectives as the hand-written strategy on the plain MLP.
  const StepGraph plain = distributed::build_training_step(mlp_options());
  const std::vector<std::string> hand = collectives(plain, kTp4);
  const std::vector<std::string> got = collectives(annotated, json);
  EXPECT_EQ(joined(got), joined(hand)) << json;
  EXPECT_EQ(hand.size(), 2u) << joined(hand);
}

TEST(AnnotationPartition, TheExampleProgramPropagatesToTheExampleTp4Strategy) {
  setup();
  distributed::TrainStepOptions o;
  o.file = std::string(SPORA_SOURCE_DIR) + "/examples/megatron_mlp.sp";
  const StepGraph annotated = distributed::build_training_step(o);
  const std::string json = search::propagate_from_annotations(cost_graph(annotated, Mesh{{4}, {}}));
  o.file = std::string(SPORA_SOURCE_DIR) + "/benchmarks/sim/w2_mlp.sp";
  const StepGraph plain = distributed::build_training_step(o);
  const std::string tp4 = R"json({"mesh": [4], "layouts": {
      "net.l1.w": "(1, 4)", "net.l1.b": "(4)", "net.l2.w": "(4, 1)"}})json";  // examples/strategies/tp4.json
  const std::vector<std::string> hand = collectives(plain, tp4);
  EXPECT_EQ(joined(collectives(annotated, json)), joined(hand)) << json;
  EXPECT_FALSE(hand.empty());
}

TEST(AnnotationPartition, AFourRankRunOfTheAnnotatedProgramEqualsTheSingleDeviceRun) {
  setup();
  const StepGraph program = distributed::build_training_step(megatron_options());
  const std::string json = search::propagate_from_annotations(cost_graph(program, Mesh{{4}, {}}));
  const distributed::TrainStepResult ref =
      distributed::run_training(program, megatron_options(), nullptr, "");
  ASSERT_EQ(ref.losses.size(), 3u);
  EXPECT_GT(ref.losses[0], ref.losses[2]) << "sgd lowers the loss";
  // The annotated program computes what the plain one does.
  const distributed::TrainStepResult plain = distributed::run_training(mlp_options(), nullptr, "");
  expect_same_run(plain, ref, "annotated vs plain, one device");
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> results(4);
  world.run([&](comm::Communicator& c) {
    results[c.rank()] = distributed::run_training(program, megatron_options(), &c, json);
  });
  for (int r = 1; r < 4; ++r) EXPECT_EQ(results[r].losses, results[0].losses) << "rank " << r;
  EXPECT_EQ(results[0].collectives, 2);
  expect_same_run(ref, results[0], "propagated from the annotations, 4 ranks");
  // On a 2x2 mesh the pins name 4 pieces: (1, 4) fits no axis, a user error naming the layout.
  EXPECT_THROW(cost_graph(program, Mesh{{2, 2}, {}}), lang::UserError);
}

// Data x tensor parallel on a 2x2 mesh, written as tensor maps: the batch over m0 (x pinned
// through the hint of l2's input), Megatron over m1.
TEST(AnnotationPartition, DataAndTensorParallelAnnotationsOnTwoByTwoRunLikeOneDevice) {
  setup();
  std::ifstream in(megatron_options().file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& [from, to] : {std::pair<std::string, std::string>{
                                     "shard=((1, 1), (1, 4))", "shard=(\"[m0, -]\", \"[-, m1]\")"},
                                 {"shard=((1, 4), (4, 1))", "shard=(\"[m0, m1]\", \"[m1, -]\")"}}) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  }
  distributed::TrainStepOptions o = megatron_options();
  o.file = (std::filesystem::temp_directory_path() /
            ("spora_annot_2x2_" + std::to_string(::getpid()) + ".sp"))
               .string();
  std::ofstream(o.file) << text;
  const StepGraph program = distributed::build_training_step(o);
  std::filesystem::remove(o.file);
  const Mesh mesh{{2, 2}, {}};
  const std::string json = search::propagate_from_annotations(cost_graph(program, mesh));
  const Strategy s = parse_strategy(json, *program.step);
  EXPECT_EQ(s.layouts.at("net.l2.w").to_string(mesh), "[-, m1]") << json;
  EXPECT_EQ(s.layouts.at("net.l3.w").to_string(mesh), "[m1, -]") << json;
  EXPECT_EQ(s.layouts.at("x").to_string(mesh), "[m0, -]") << json;
  const distributed::TrainStepResult ref = distributed::run_training(program, o, nullptr, "");
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> results(4);
  world.run([&](comm::Communicator& c) {
    results[c.rank()] = distributed::run_training(program, o, &c, json);
  });
  EXPECT_GT(results[0].collectives, 2);
  expect_same_run(ref, results[0], "dp x tp from the annotations, 2x2");
}

}  // namespace
}  // namespace spora::parallel::testing
