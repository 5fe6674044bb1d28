// Recomputation (the strategy's "recompute", parallel/partition/README.md;
// parallel/step/step_graph.h; the simulator's op list and activation peak, sim/step_program.h):
// the named layers' forward is lowered as @checkpoint graphs, autodiff recomputes it in the
// backward pass, and the step is made straight-line again without merging the recomputation
// back. The step has the recomputed ops in its backward, computes the same values (single
// device and partitioned on 4 in-process ranks), and keeps fewer bytes of activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "autodiff/install.h"
#include "backends/comm/threads.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "zero_common.h"

namespace spora::parallel::testing {
namespace {

void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
  });
}

distributed::TrainStepOptions blocks() {
  distributed::TrainStepOptions o = mlp_options();
  o.file = std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp_blocks.sp";
  return o;
}

// The harness's step (distributed::step_options) with the simulator's op list and activation
// peak on top.
sim::StepProgram build(const std::string& strategy_json) {
  setup();
  return sim::build_step_program(blocks().file, distributed::step_options(blocks(), strategy_json));
}

int count(const ir::Graph& g, const std::string& prim) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(),
                                        [&](const ir::Node* n) { return n->is_prim(prim); }));
}

int calls(const ir::Graph& g) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [](const ir::Node* n) {
    return n->is_apply() && n->callee;
  }));
}

const char* kRecomputeL1 = R"json({"mesh": [1], "recompute": ["net.l1"]})json";
const char* kRecomputeAll = R"json({"mesh": [1], "recompute": true})json";

TEST(Recompute, TheNamedLayerIsComputedAgainInTheBackwardPass) {
  const sim::StepProgram plain = build("");
  const sim::StepProgram l1 = build(kRecomputeL1);
  EXPECT_TRUE(plain.recomputed.empty());
  EXPECT_EQ(l1.recomputed, (std::vector<std::string>{"net.l1"}));
  // Straight-line: the checkpointed calls are inlined (the partitioner needs that).
  EXPECT_EQ(calls(*l1.step), 0);
  // l1's ReLU output relu(x @ w + b) is made again for the ReLU's derivative (which reads its
  // result), as a checkpointed layer's backward reads only what it computes again: one more
  // matmul, add and relu.
  EXPECT_EQ(count(*plain.step, "matmul"), 3 + 5);  // 3 forward; dx, dw of l2 and l3, dw of l1
  EXPECT_EQ(count(*l1.step, "matmul"), count(*plain.step, "matmul") + 1);
  EXPECT_EQ(count(*l1.step, "add"), count(*plain.step, "add") + 1);
  EXPECT_EQ(count(*l1.step, "relu"), count(*plain.step, "relu") + 1);
  EXPECT_EQ(l1.step->nodes.size(), plain.step->nodes.size() + 3);
  // Both recomputed ops are in the backward pass (the loss does not depend on them).
  int forward_matmuls_plain = 0, forward_matmuls_l1 = 0;
  for (const sim::StepOp& op : plain.ops)
    forward_matmuls_plain += op.phase == sim::Phase::Forward && op.prim->name == "matmul";
  for (const sim::StepOp& op : l1.ops)
    forward_matmuls_l1 += op.phase == sim::Phase::Forward && op.prim->name == "matmul";
  EXPECT_EQ(forward_matmuls_plain, 3);
  EXPECT_EQ(forward_matmuls_l1, 3);
  EXPECT_EQ(l1.ops.size(), plain.ops.size() + 3);
}

TEST(Recompute, TrueRecomputesEveryLayer) {
  const sim::StepProgram plain = build("");
  const sim::StepProgram all = build(kRecomputeAll);
  EXPECT_EQ(all.recomputed, (std::vector<std::string>{"net.l1", "net.l2", "net.l3"}));
  // l1 and l2 are made again (matmul, add, relu each); l3 (no ReLU) has nothing its backward
  // needs.
  EXPECT_EQ(count(*all.step, "matmul"), count(*plain.step, "matmul") + 2);
  EXPECT_EQ(all.step->nodes.size(), plain.step->nodes.size() + 6);
}

TEST(Recompute, ActivationsKeptForTheBackwardPassShrink) {
  const sim::StepProgram plain = build("");
  const sim::StepProgram l1 = build(kRecomputeL1);
  const sim::StepProgram all = build(kRecomputeAll);
  // f64, batch 8: one [8, 32] tensor of l1's, 2048 bytes, is no longer kept through the
  // forward pass. Recomputing l2 too moves the peak into the backward pass (where l2's
  // recomputed output lives with the gradients being made): no further drop.
  EXPECT_EQ(plain.activation_peak, 17768);
  EXPECT_EQ(l1.activation_peak, 17768 - 2048);
  EXPECT_EQ(all.activation_peak, 17768 - 2048);
}

// @checkpoint in the source goes the same way: the step is straight-line (so it can be
// partitioned) with the recomputation in its backward pass, as the strategy's would have it.
TEST(Recompute, CheckpointInTheSourceIsTheSameStep) {
  setup();
  distributed::TrainStepOptions o = blocks();
  o.file = std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp_blocks_checkpoint.sp";
  const sim::StepProgram source = sim::build_step_program(o.file, distributed::step_options(o));
  const sim::StepProgram strategy =
      build(R"json({"mesh": [1], "recompute": ["net.l1", "net.l2"]})json");
  EXPECT_EQ(calls(*source.step), 0);
  EXPECT_TRUE(source.recomputed.empty());
  EXPECT_EQ(source.step->nodes.size(), strategy.step->nodes.size());
  EXPECT_EQ(count(*source.step, "matmul"), count(*strategy.step, "matmul"));
  EXPECT_EQ(source.activation_peak, strategy.activation_peak);
  const distributed::TrainStepResult ref =
      distributed::run_training(build(""), blocks(), nullptr, "");
  const char* dp4 = R"json({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})json";
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> got(4);
  world.run([&](comm::Communicator& c) {
    got[static_cast<size_t>(c.rank())] = distributed::run_training(source, o, &c, dp4);
  });
  expect_same_run(ref, got[0], "@checkpoint on dp4");
}

TEST(Recompute, UnknownLayersAreUserErrors) {
  try {
    build(R"json({"mesh": [1], "recompute": ["net.l9"]})json");
    FAIL() << "net.l9 does not exist";
  } catch (const lang::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "recompute names 'net.l9', which is not a layer the loss calls (its layers: "
              "net.l1, net.l2, net.l3)");
  }
  EXPECT_THROW(build(R"json({"mesh": [1], "recompute": "net.l1"})json"), lang::UserError);
  EXPECT_THROW(build(R"json({"mesh": [1], "recompute": [3]})json"), lang::UserError);
}

TEST(Recompute, TheStrategyKeyRoundTrips) {
  const sim::StepProgram p = build(kRecomputeL1);
  const Strategy s = parse_strategy(kRecomputeL1, *p.step);
  EXPECT_EQ(s.recompute, (std::vector<std::string>{"net.l1"}));
  EXPECT_FALSE(s.recompute_all);
  EXPECT_EQ(parse_strategy(strategy_json(s), *p.step).recompute, s.recompute);
  EXPECT_TRUE(parse_strategy(kRecomputeAll, *p.step).recompute_all);
  EXPECT_TRUE(parse_recompute(strategy_json(parse_strategy(kRecomputeAll, *p.step))).recompute_all);
}

// ---- the values: single device, and partitioned on 4 in-process ranks ------------------------

distributed::TrainStepResult run_threads(const sim::StepProgram& program,
                                         const distributed::TrainStepOptions& o,
                                         const std::string& strategy) {
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> results(4);
  world.run([&](comm::Communicator& c) {
    results[static_cast<size_t>(c.rank())] = distributed::run_training(program, o, &c, strategy);
  });
  return results[0];
}

class RecomputeRun : public ::testing::TestWithParam<std::string> {};

TEST_P(RecomputeRun, EqualsTheRunWithoutIt) {
  setup();
  distributed::TrainStepOptions o = blocks();
  o.optimizer = GetParam();
  const distributed::TrainStepResult ref = distributed::run_training(build(""), o, nullptr, "");
  ASSERT_EQ(ref.losses.size(), 3u);
  EXPECT_GT(ref.losses[0], ref.losses[2]);
  const distributed::TrainStepResult one =
      distributed::run_training(build(kRecomputeAll), o, nullptr, "");
  expect_same_run(ref, one, "recompute on one device");
  // Data parallel with every layer recomputed and ZeRO-1 on top.
  const std::string dp4 = R"json({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"},
                                  "recompute": true, "optimizer_shard": 0})json";
  const distributed::TrainStepResult got = run_threads(build(dp4), o, dp4);
  EXPECT_EQ(got.gathers, 6);
  expect_same_run(ref, got, "recompute + optimizer_shard on dp4");
  // Tensor parallel (Megatron on l1 and l2) with l1 recomputed.
  const std::string tp4 = R"json({"mesh": [4], "layouts": {
      "net.l1.w": "(1, 4)", "net.l1.b": "(4)", "net.l2.w": "(4, 1)"}, "recompute": ["net.l1"]})json";
  expect_same_run(ref, run_threads(build(tp4), o, tp4), "recompute on tp4");
}

INSTANTIATE_TEST_SUITE_P(Optimizers, RecomputeRun, ::testing::Values("sgd", "adam"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spora::parallel::testing
