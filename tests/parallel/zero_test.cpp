// ZeRO-1 (the strategy's "optimizer_shard", parallel/partition/README.md): the gradients come
// back reduce-scattered, the optimizer updates its piece with state of the piece's size, the
// pieces are all-gathered; on 4 in-process ranks the losses and the updated parameters of 3
// steps of sgd, momentum and adam equal the single-device run's (f64, 1e-10).
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

const StepGraph& mlp() {
  setup();
  static const StepGraph p = distributed::build_training_step(mlp_options());
  return p;
}

std::vector<std::string> partitioned_collectives(const char* json, Partitioned* out = nullptr) {
  const Strategy s = parse_strategy(json, *mlp().step);
  Partitioned part = partition_training_step(*mlp().step, mlp().param_names.size(), s);
  std::vector<std::string> c = collective_summary(*part.graph);
  if (out) *out = std::move(part);
  return c;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(ZeroPartition, DataParallelGradientsAreReduceScatteredAlongDimZero) {
  Partitioned part;
  const std::vector<std::string> c = partitioned_collectives(kDp4Zero, &part);
  // The six gradients: a reduce-scatter each, to a quarter of dim 0; the loss: all-reduced.
  const std::vector<std::string> want = {
      "reduce_scatter(dim=0, axis=0) f64[4,32]", "reduce_scatter(dim=0, axis=0) f64[8]",
      "reduce_scatter(dim=0, axis=0) f64[8,32]", "reduce_scatter(dim=0, axis=0) f64[8]",
      "reduce_scatter(dim=0, axis=0) f64[8,8]",  "reduce_scatter(dim=0, axis=0) f64[2]"};
  for (const std::string& w : want)
    EXPECT_NE(std::find(c.begin(), c.end(), w), c.end()) << w << " in\n" << joined(c);
  EXPECT_EQ(std::count_if(c.begin(), c.end(),
                          [](const std::string& l) { return l.rfind("reduce_scatter", 0) == 0; }),
            6)
      << joined(c);
  EXPECT_EQ(std::count_if(c.begin(), c.end(),
                          [](const std::string& l) { return l.rfind("all_reduce", 0) == 0; }),
            1)
      << joined(c);
  ASSERT_EQ(part.optimizer_shards.size(), 6u);
  for (const OptimizerShard& z : part.optimizer_shards) EXPECT_EQ(z.dim, 0);
  // The parameters themselves stay replicated: the step reads them whole.
  EXPECT_EQ(part.graph->params[0]->type->str(), "f64[16,32]");
  EXPECT_EQ(part.graph->output->inputs[1]->type->str(), "f64[4,32]");
}

TEST(ZeroPartition, WithTensorParallelismTheFirstUnsplitDimensionIsSplit) {
  Partitioned part;
  const std::vector<std::string> c = partitioned_collectives(kDp2Tp2Zero, &part);
  ASSERT_EQ(part.optimizer_shards.size(), 6u);
  // l1.w [-, tp] -> dim 0; l1.b [tp] has no other dimension: its update stays whole over dp;
  // l2.w [tp, -] -> dim 1; l2.b, l3.w, l3.b (replicated) -> dim 0.
  EXPECT_EQ(part.optimizer_shards[0].dim, 0);
  EXPECT_EQ(part.optimizer_shards[1].dim, -1);
  EXPECT_EQ(part.optimizer_shards[1].reason,
            "no dimension of f64[32] is both unsplit and divisible by dp's 2 devices");
  EXPECT_EQ(part.optimizer_shards[2].dim, 1);
  EXPECT_EQ(part.optimizer_shards[3].dim, 0);
  EXPECT_EQ(part.optimizer_shards[4].dim, 0);
  EXPECT_EQ(part.optimizer_shards[5].dim, 0);
  // l1.w's gradient: [16, 16] per rank under tp, dim 0 halved over dp: [8, 16]; l2.w's
  // [16, 32] under tp, halved along dim 1: [16, 16]; l1.b's is all-reduced over dp.
  EXPECT_EQ(part.graph->output->inputs[1]->type->str(), "f64[8,16]");
  EXPECT_EQ(part.graph->output->inputs[2]->type->str(), "f64[16]");
  EXPECT_EQ(part.graph->output->inputs[3]->type->str(), "f64[16,16]");
  EXPECT_NE(std::find(c.begin(), c.end(), "reduce_scatter(dim=1, axis=0) f64[16,16]"), c.end())
      << joined(c);
  EXPECT_NE(std::find(c.begin(), c.end(), "all_reduce(axes=[0]) f64[16]"), c.end()) << joined(c);
}

TEST(ZeroPartition, AnAxisThatDividesNoDimensionLeavesEveryUpdateWhole) {
  // 3 devices divide none of 16, 32 and 8.
  Partitioned part;
  partitioned_collectives(R"json({"mesh": [3], "optimizer_shard": "m0"})json", &part);
  ASSERT_EQ(part.optimizer_shards.size(), 6u);
  for (const OptimizerShard& z : part.optimizer_shards) EXPECT_EQ(z.dim, -1);
  EXPECT_EQ(part.optimizer_shards[0].reason,
            "no dimension of f64[16,32] is both unsplit and divisible by m0's 3 devices");
  // Already split over the axis: the update is already a shard.
  partitioned_collectives(
      R"json({"mesh": [4], "layouts": {"net.l1.w": "(1, 4)"}, "optimizer_shard": 0})json", &part);
  EXPECT_EQ(part.optimizer_shards[0].dim, -1);
  EXPECT_EQ(part.optimizer_shards[0].reason, "already split over m0");
  EXPECT_EQ(part.optimizer_shards[1].dim, 0);
}

TEST(ZeroStrategy, OptimizerShardNamesAMeshAxisAndRoundTrips) {
  const Strategy s = parse_strategy(kDp2Tp2Zero, *mlp().step);
  EXPECT_EQ(s.optimizer_shard, 0);
  EXPECT_EQ(parse_strategy(strategy_json(s), *mlp().step).optimizer_shard, 0);
  EXPECT_EQ(parse_strategy(R"json({"mesh": [2, 2], "axes": ["dp", "tp"],
                                   "optimizer_shard": "tp"})json",
                           *mlp().step)
                .optimizer_shard,
            1);
  EXPECT_EQ(parse_strategy(R"json({"mesh": [4]})json", *mlp().step).optimizer_shard, -1);
  try {
    parse_strategy(R"json({"mesh": [2, 2], "axes": ["dp", "tp"], "optimizer_shard": "pp"})json",
                   *mlp().step, "s.json");
    FAIL() << "an unknown axis is an error";
  } catch (const lang::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json:1:40: \"optimizer_shard\" is a mesh axis (its name or index: dp, tp), got "
              "\"pp\"\n{\"mesh\": [2, 2], \"axes\": [\"dp\", \"tp\"], \"optimizer_shard\": "
              "\"pp\"}\n                                       ^");
  }
  EXPECT_THROW(parse_strategy(R"json({"mesh": [4], "optimizer_shard": 1})json", *mlp().step),
               lang::UserError);
}

// ---- sharded runs on 4 in-process ranks ------------------------------------------------------

std::vector<distributed::TrainStepResult> run_threads(const StepGraph& program,
                                                      const distributed::TrainStepOptions& o,
                                                      const char* strategy, int ranks = 4) {
  comm::ThreadWorld world(ranks);
  std::vector<distributed::TrainStepResult> results(static_cast<size_t>(ranks));
  world.run([&](comm::Communicator& c) {
    results[static_cast<size_t>(c.rank())] = distributed::run_training(program, o, &c, strategy);
  });
  for (int r = 1; r < ranks; ++r)
    EXPECT_EQ(results[static_cast<size_t>(r)].losses, results[0].losses) << "rank " << r;
  return results;
}

struct RunCase {
  std::string strategy, optimizer;
};

class ZeroRun : public ::testing::TestWithParam<RunCase> {};

TEST_P(ZeroRun, EqualsTheSingleDeviceRunWithAPieceOfTheState) {
  setup();
  const RunCase& rc = GetParam();
  const distributed::TrainStepOptions o = zero_options(rc.optimizer);
  const StepGraph program = distributed::build_training_step(o);
  const distributed::TrainStepResult ref = distributed::run_training(program, o, nullptr, "");
  ASSERT_EQ(ref.losses.size(), 3u);
  EXPECT_GT(ref.losses[0], ref.losses[2]) << rc.optimizer << " lowers the loss";
  const std::vector<distributed::TrainStepResult> got =
      run_threads(program, o, zero_strategy_named(rc.strategy));
  expect_same_run(ref, got[0], rc.strategy + " " + rc.optimizer);
  // The optimizer state of a sharded update is a piece of the parameter's: a quarter over dp4,
  // a half over dp of dp2tp2 (of the tp shard for l1.w and l2.w); l1.b's stays whole over dp.
  const int per = rc.optimizer == "sgd" ? 0 : rc.optimizer == "momentum" ? 1 : 2;
  const std::vector<double> dp4 = {16 * 32 / 4, 32 / 4, 32 * 32 / 4, 32 / 4, 32 * 8 / 4, 8 / 4};
  const std::vector<double> dp2tp2 = {16 * 16 / 2, 16, 16 * 32 / 2, 32 / 2, 32 * 8 / 2, 8 / 2};
  const std::vector<double>& want = rc.strategy == "dp4" ? dp4 : dp2tp2;
  for (const distributed::TrainStepResult& r : got) {
    EXPECT_EQ(r.gathers, rc.strategy == "dp4" ? 6 : 5);
    ASSERT_EQ(r.state_elements.size(), 6u);
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(r.state_elements[i], per * want[i]) << rc.strategy << " " << ref.names[i];
  }
  ASSERT_EQ(ref.state_elements.size(), 6u);
  EXPECT_EQ(ref.state_elements[0], per * 16 * 32);
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndOptimizers, ZeroRun,
                         ::testing::Values(RunCase{"dp4", "sgd"}, RunCase{"dp4", "momentum"},
                                           RunCase{"dp4", "adam"}, RunCase{"dp2tp2", "sgd"},
                                           RunCase{"dp2tp2", "momentum"},
                                           RunCase{"dp2tp2", "adam"}),
                         [](const auto& info) {
                           return info.param.strategy + "_" + info.param.optimizer;
                         });

TEST(ZeroRun, AnUnshardableAxisRunsAsPlainDataParallelism) {
  setup();
  const distributed::TrainStepOptions o = zero_options("adam");
  const StepGraph program = distributed::build_training_step(o);
  const distributed::TrainStepResult ref = distributed::run_training(program, o, nullptr, "");
  const std::vector<distributed::TrainStepResult> got =
      run_threads(program, o, R"json({"mesh": [3], "optimizer_shard": "m0"})json", 3);
  expect_same_run(ref, got[0], "mesh [3]");
  EXPECT_EQ(got[0].gathers, 0);
  EXPECT_EQ(got[0].state_elements, ref.state_elements);
}

}  // namespace
}  // namespace spora::parallel::testing
