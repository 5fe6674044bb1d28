// Simulated steps with ZeRO-1 (the strategy's "optimizer_shard") and recomputation
// ("recompute"): the optimizer state per device is divided by the axis size, the update runs on
// the pieces and their all_gathers follow it (alpha-beta closed forms on the contention-free
// switch of tests/sim/data/alpha-beta.yaml), and recomputing a layer lowers the activation peak
// and adds exactly the recomputed ops' time.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "semantics/registry.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"

namespace spora::sim {
namespace {

const std::string kMlp = SPORA_SOURCE_DIR "/tests/parallel/mlp_small.sp";
const std::string kBlocks = SPORA_SOURCE_DIR "/tests/parallel/mlp_blocks.sp";
constexpr double kAlpha = 10e-6, kB = 10e9;

StepProgram step(const std::string& file, const std::string& strategy_json) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions o;
  o.batch = 8;
  const parallel::Strategy r = parallel::parse_recompute(strategy_json);
  o.recompute_all = r.recompute_all;
  o.recompute = r.recompute;
  return build_step_program(file, o);
}

SpmdProgram spmd(const StepProgram& p, const std::string& strategy_json,
                 const std::string& optimizer) {
  return spmd_program(p, parallel::parse_strategy(strategy_json, *p.step, "test"), optimizer);
}

const ClusterSpec& switch16() {
  static const ClusterSpec spec =
      load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/alpha-beta.yaml");
  return spec;
}

const char* kDp4 = R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J";
const char* kDp4Zero =
    R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}, "optimizer_shard": 0})J";

// ZeRO-1's all_gathers run one after another once the update is done: the first follows the
// update's computation, the others no computation at all, so they take the back-to-back tables;
// the reduce_scatters each follow a gradient's computation and keep the in-place ones.
TEST(ZeroSim, AllGathersAfterTheFirstTakeTheBackToBackTables) {
  const SpmdProgram zero = spmd(step(kMlp, kDp4Zero), kDp4Zero, "sgd");
  ASSERT_GT(zero.gathers.size(), 1u);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  auto& tables = spec.device.measured.collectives;
  for (const std::string name : {"all_gather", "reduce_scatter", "all_reduce"}) {
    tables[name][4] = CollectiveTable::from_rows({{64, 5e-4}});
    tables[name + "_b2b"][4] = CollectiveTable::from_rows({{64, 1e-4}});
  }
  const SpmdSimResult r = simulate_spmd_step(spec, zero);
  const std::size_t n = zero.collectives.size();
  ASSERT_EQ(r.collectives.size(), n + zero.gathers.size());
  int b2b = 0;
  for (std::size_t i = 0; i < r.collectives.size(); ++i) {
    const bool later_gather = i > n;  // the gathers after the first
    EXPECT_NEAR(r.collectives[i].seconds, later_gather ? 1e-4 : 5e-4, 1e-12) << i;
    b2b += later_gather ? 1 : 0;
  }
  EXPECT_EQ(b2b, static_cast<int>(zero.gathers.size()) - 1);
}

// The MLP 16-32-32-8 in f64 has 16*32 + 32 + 32*32 + 32 + 32*8 + 8 = 1864 parameters.
TEST(ZeroSim, AdamsTwoMomentsPerDeviceAreAQuarterOverFourRanks) {
  const StepProgram p = step(kMlp, kDp4);
  const SpmdProgram plain = spmd(p, kDp4, "adam");
  const SpmdProgram zero = spmd(p, kDp4Zero, "adam");
  EXPECT_EQ(plain.param_bytes, 1864 * 8);
  EXPECT_EQ(plain.optimizer_state_bytes, 2 * 1864 * 8);     // 29824
  EXPECT_EQ(zero.optimizer_state_bytes, 2 * 1864 / 4 * 8);  // 7456
  EXPECT_EQ(zero.optimizer_state_unsharded_bytes, 2 * 1864 * 8);
  EXPECT_EQ(zero.param_bytes, plain.param_bytes);  // the parameters stay whole
  EXPECT_EQ(zero.optimizer_shard, 0);
  EXPECT_TRUE(plain.gathers.empty());
  ASSERT_EQ(zero.gathers.size(), 6u);
  // Momentum keeps one tensor: a quarter of 1864 * 8 bytes.
  EXPECT_EQ(spmd(p, kDp4Zero, "momentum").optimizer_state_bytes, 1864 / 4 * 8);
  EXPECT_EQ(spmd(p, kDp4Zero, "sgd").optimizer_state_bytes, 0);
  // The update works on the pieces: the same ops on a quarter of the elements.
  ASSERT_EQ(zero.update.size(), plain.update.size());
  int64_t plain_elements = 0, zero_elements = 0;
  for (const StepOp& op : plain.update) plain_elements += op.output->numel();
  for (const StepOp& op : zero.update) zero_elements += op.output->numel();
  EXPECT_EQ(plain_elements, 12 * 1864);  // adam: 12 elementwise ops per parameter
  EXPECT_EQ(zero_elements, 12 * 1864 / 4);
}

TEST(ZeroSim, TheUpdatedPiecesAreAllGatheredAfterTheUpdate) {
  const StepProgram p = step(kMlp, kDp4);
  const SpmdProgram plain = spmd(p, kDp4, "adam");
  const SpmdProgram zero = spmd(p, kDp4Zero, "adam");
  const SpmdSimResult a = simulate_spmd_step(switch16(), plain);
  const SpmdSimResult z = simulate_spmd_step(switch16(), zero);
  // Gradients: 6 reduce-scatters (and the loss's all-reduce), then 6 all-gathers.
  ASSERT_EQ(z.collectives.size(), 13u);
  int scatters = 0, gathers = 0;
  double gather_seconds = 0;
  for (const SpmdCollectiveRecord& c : z.collectives) {
    scatters += c.kind == CollectiveKind::ReduceScatter;
    if (c.kind != CollectiveKind::AllGather) continue;
    ++gathers;
    // A ring all-gather of a local N bytes over 4 ranks on an idle link: 3 (alpha + N / B).
    EXPECT_NEAR(c.seconds, 3 * (kAlpha + c.bytes / kB), 1e-9) << c.bytes;
    gather_seconds += c.seconds;
  }
  EXPECT_EQ(scatters, 6);
  EXPECT_EQ(gathers, 6);
  // The gathered pieces: a quarter of each parameter, 1864 / 4 elements of 8 bytes in all.
  double gathered = 0;
  for (int g : zero.gathers) gathered += zero.ops[static_cast<size_t>(g)].bytes;
  EXPECT_EQ(gathered, 1864 / 4 * 8);
  // The update is a quarter of the work, and the all-gathers come after it: the step ends
  // after the update plus the six all-gathers, one after the other.
  EXPECT_LT(z.update_seconds, a.update_seconds);
  const double update_end = z.compute_intervals[0].back().end;
  EXPECT_NEAR(z.step_seconds, update_end + gather_seconds, 1e-9);
  EXPECT_NE(spmd_report(zero, z).find("optimizer_shard     mesh axis 0: 6 parameters' updates "
                                      "split, optimizer state 0.01 MB instead of 0.03 MB"),
            std::string::npos)
      << spmd_report(zero, z);
  EXPECT_EQ(z.devices[0].optimizer_state, 7456);
  EXPECT_EQ(a.devices[0].optimizer_state - z.devices[0].optimizer_state, 29824 - 7456);
}

// Recomputing Block l1 of the block MLP (ReLU inside the layer): the activation peak drops by
// one [8, 32] f64 tensor (2048 bytes), and one matmul [8,16] @ [16,32], one bias add and one
// ReLU more run.
TEST(RecomputeSim, TheActivationPeakDropsAndTheComputeGrowsByTheRecomputedOps) {
  const char* one = R"J({"mesh": [1]})J";
  const char* l1 = R"J({"mesh": [1], "recompute": ["net.l1"]})J";
  const StepProgram p0 = step(kBlocks, one);
  const StepProgram p1 = step(kBlocks, l1);
  const SpmdProgram s0 = spmd(p0, one, "sgd");
  const SpmdProgram s1 = spmd(p1, l1, "sgd");
  EXPECT_EQ(s0.activation_peak - s1.activation_peak, 2048);
  const SpmdSimResult r0 = simulate_spmd_step(switch16(), s0);
  const SpmdSimResult r1 = simulate_spmd_step(switch16(), s1);
  const CostModel model(switch16().device);
  const auto f64 = [](std::vector<int64_t> shape) { return sem::Type::tensor(DType::f64, shape); };
  const auto& reg = sem::Registry::instance();
  const double matmul = model
                            .time(make_step_op(*reg.find("matmul"), {f64({8, 16}), f64({16, 32})},
                                               f64({8, 32}), {}, Phase::Backward)
                                      .cost,
                                  DType::f64)
                            .seconds;
  const double add = model
                         .time(make_step_op(*reg.find("add"), {f64({8, 32}), f64({32})},
                                            f64({8, 32}), {}, Phase::Backward)
                                   .cost,
                               DType::f64)
                         .seconds;
  const double relu =
      model
          .time(make_step_op(*reg.find("relu"), {f64({8, 32})}, f64({8, 32}), {}, Phase::Backward)
                    .cost,
                DType::f64)
          .seconds;
  EXPECT_GT(matmul, 0);
  EXPECT_NEAR(r1.compute_seconds - r0.compute_seconds, matmul + add + relu, 1e-15);
  EXPECT_NEAR(r1.step_seconds - r0.step_seconds, matmul + add + relu, 1e-12);
  // With the gradients kept until the update, the step peaks later in the backward pass, where
  // less of l1's forward is still live: the peak drops by less, but it drops.
  EXPECT_LT(r1.devices[0].peak_memory(), r0.devices[0].peak_memory());
}

}  // namespace
}  // namespace spora::sim
