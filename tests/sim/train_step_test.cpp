// Simulated data-parallel training steps (sim/step_program.h, sim/train_step.h, sim/report.h):
// the per-rank program against closed forms, DDP's buckets, step times against the alpha-beta
// model, overlap, the bulk model against the step-by-step one, memory, determinism, and the
// golden log of a small simulation.
//
// To regenerate the golden log after an intended change:
//   SPORA_UPDATE_GOLDEN=1 build/bin/test_sim --gtest_filter='TrainStep.GoldenLog*'
#include "sim/train_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "autodiff/install.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/report.h"
#include "sim/step_program.h"
#include "tests/sim/golden.h"

namespace spora::sim {
namespace {

const std::string kData = SPORA_SOURCE_DIR "/tests/sim/data/";
const std::string kW2 = SPORA_SOURCE_DIR "/benchmarks/sim/w2_mlp.sp";

StepProgram program(const std::string& path, int64_t batch, const std::string& optimizer = "sgd") {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions o;
  o.batch = batch;
  o.optimizer = optimizer;
  return build_step_program(path, o);
}

double sum(const std::vector<double>& v, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to && i < v.size(); ++i) s += v[i];
  return s;
}

// The MLP of W2 at batch B: every matmul of forward and backward, and nothing else.
TEST(StepProgram, W2MatmulsAreTheClosedForm) {
  const StepProgram p = program(kW2, 32);
  EXPECT_EQ(p.batch, 32);
  ASSERT_EQ(p.params.size(), 6u);
  EXPECT_DOUBLE_EQ(p.param_bytes(), 4.0 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10));
  double forward = 0, backward = 0;
  int matmuls = 0;
  for (const StepOp& op : p.ops) {
    if (op.prim->name != "matmul") continue;
    ++matmuls;
    (op.phase == Phase::Forward ? forward : backward) += op.cost.flops;
  }
  const double B = 32, layers = 784 * 512 + 512 * 512 + 512 * 10;
  EXPECT_EQ(matmuls, 8);  // 3 forward; 3 weight gradients, 2 input gradients (not x's)
  EXPECT_DOUBLE_EQ(forward, 2 * B * layers);
  EXPECT_DOUBLE_EQ(backward, 2 * B * layers + 2 * B * (512 * 512 + 512 * 10));
  // Every gradient is produced by an op of the backward pass.
  for (const StepParam& param : p.params) {
    ASSERT_GE(param.grad_op, 0) << param.name;
    EXPECT_EQ(p.ops[static_cast<std::size_t>(param.grad_op)].phase, Phase::Backward) << param.name;
    EXPECT_EQ(param.update.size(), 2u);  // sgd: mul, sub
  }
  EXPECT_TRUE(p.warnings.empty());
  // Activations: at least the input batch and the three layer outputs before the backward.
  EXPECT_GE(p.activation_peak, 4 * B * (784 + 512 + 512 + 10));
}

TEST(StepProgram, ErrorsAreForPeople) {
  ops::register_all();
  autodiff::install();
  auto message = [](const std::string& path, parallel::StepOptions o) {
    try {
      build_step_program(path, o);
    } catch (const lang::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  parallel::StepOptions o;
  o.batch_name = "examples";
  EXPECT_EQ(message(kData + "tiny_mlp.sp", o),
            kData + "tiny_mlp.sp has no module-level `let examples = <integer>`: the simulator "
                    "sets it to the per-rank batch");
  EXPECT_EQ(message(kData + "no_grad.sp", {}),
            "'main' in " + kData + "no_grad.sp takes no derivative: a training step calls "
                                   "value_and_grad(loss)(...) or grad(loss)(...)");
  parallel::StepOptions zero;
  zero.batch = 0;
  EXPECT_EQ(message(kData + "tiny_mlp.sp", zero), "the per-rank batch must be positive, got 0");
  parallel::StepOptions adagrad;
  adagrad.optimizer = "adagrad";
  EXPECT_EQ(message(kData + "tiny_mlp.sp", adagrad),
            "unknown optimizer 'adagrad' (sgd, momentum, adam)");
}

// DDP: production order, the first bucket closed at 1 MiB, the others at the cap.
TEST(TrainStep, BucketsFollowDdp) {
  const StepProgram p = program(kW2, 32);
  const std::vector<Bucket> buckets = assign_buckets(p, 25.0 * (1 << 20), 1 << 20);
  ASSERT_EQ(buckets.size(), 2u);
  double total = 0;
  for (const Bucket& b : buckets) total += b.bytes;
  EXPECT_DOUBLE_EQ(total, p.param_bytes());
  EXPECT_GE(buckets[0].bytes, 1 << 20);
  EXPECT_LT(buckets[0].ready_op, buckets[1].ready_op);
  // The layer-3 gradients come first (back-propagation order), w1's last.
  EXPECT_EQ(p.params[static_cast<std::size_t>(buckets[1].params.back())].type->str(), "f32[784,512]");
  // Small caps: one parameter per bucket, in the order their gradients complete.
  const std::vector<Bucket> each = assign_buckets(p, 1, 1);
  ASSERT_EQ(each.size(), 6u);
  for (std::size_t b = 1; b < each.size(); ++b) EXPECT_LE(each[b - 1].ready_op, each[b].ready_op);
}

// One device: no communication, the step is the sum of its op times.
TEST(TrainStep, OneDeviceIsTheSumOfItsOps) {
  const StepProgram p = program(kW2, 16);
  const ClusterSpec c = load_cluster_spec(kData + "alpha-beta.yaml");
  TrainSimOptions o;
  o.ranks = 1;
  o.bucket_copies = false;
  const TrainSimResult r = simulate_train_step(c, p, o);
  const CostModel model(c.device);
  double expected = 0;
  for (const StepOp& op : p.ops) expected += model.time(op.cost, op.dtype).seconds;
  for (const StepParam& param : p.params)
    for (const StepOp& op : param.update) expected += model.time(op.cost, op.dtype).seconds;
  // (A one-rank all-reduce still copies its input to its output: nanoseconds at 1 PB/s.)
  EXPECT_NEAR(r.step_seconds / expected, 1.0, 1e-4);
  EXPECT_NEAR(r.devices[0].compute, expected, 1e-12);
  EXPECT_DOUBLE_EQ(r.throughput, 16 / r.step_seconds);
}

// Two ranks on a contention-free switch, one bucket made by the last op of the backward pass:
// the step is compute, then ring all-reduce 2 (alpha + S / 2 / beta), then the update.
TEST(TrainStep, TwoRanksMatchAlphaBeta) {
  const StepProgram p = program(kW2, 16);
  const ClusterSpec c = load_cluster_spec(kData + "alpha-beta.yaml");
  TrainSimOptions o;
  o.ranks = 2;
  o.bucket_copies = false;
  o.bucket_bytes = o.first_bucket_bytes = 1e9;
  o.algorithm = "ring";
  const TrainSimResult r = simulate_train_step(c, p, o);
  ASSERT_EQ(r.buckets.size(), 1u);
  const auto ready = static_cast<std::size_t>(r.buckets[0].ready_op);
  const double before = sum(r.op_seconds, 0, ready + 1);
  const double after = sum(r.op_seconds, ready + 1, r.op_seconds.size());
  const double alpha = 10e-6, beta = 10e9, S = p.param_bytes();
  const double all_reduce = 2 * (alpha + S / 2 / beta);
  const double expected = before + std::max(all_reduce, after) + r.update_seconds;
  // To a few nanoseconds: the ring's copies and reductions at 1 PB/s.
  EXPECT_NEAR(r.step_seconds / expected, 1.0, 1e-4) << r.step_seconds << " vs " << expected;
  EXPECT_NEAR(r.devices[0].communication / all_reduce, 1.0, 1e-4);
  EXPECT_NEAR(r.devices[0].exposed_communication, all_reduce - after, 1e-8);
  EXPECT_EQ(r.algorithm, "ring");
  EXPECT_EQ(r.comm_model, CommModel::Steps);
}

// With small buckets, all-reduces run during the backward pass: less is exposed than is
// communicated, and the step is shorter than computing and then communicating.
TEST(TrainStep, BucketsOverlapTheBackwardPass) {
  const StepProgram p = program(kW2, 64);
  const ClusterSpec c = load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml");
  TrainSimOptions o;
  o.bucket_bytes = 64 << 10;
  o.first_bucket_bytes = 64 << 10;
  const TrainSimResult r = simulate_train_step(c, p, o);
  ASSERT_EQ(r.buckets.size(), 2u);
  const DeviceReport& d = r.devices[0];
  EXPECT_GT(d.communication, 0);
  EXPECT_LT(d.exposed_communication, d.communication);
  EXPECT_LT(r.step_seconds, d.compute + d.communication);
  EXPECT_NEAR(r.step_seconds, d.compute + d.exposed_communication + d.idle, 1e-12);
  // The first bucket starts before the backward pass is over.
  const DeviceTimeline& t = r.timelines[0];
  EXPECT_LT(t.all_reduce[0].start, t.update_start[0] - d.communication / 2);
}

// The bulk model gives the steps model's time on contention-free rings.
TEST(TrainStep, BulkMatchesSteps) {
  const StepProgram p = program(kW2, 16);
  for (const char* algo : {"ring", "hierarchical"}) {
    const bool ring = std::string(algo) == "ring";
    const ClusterSpec c = load_cluster_spec(kData + (ring ? "alpha-beta.yaml" : "alpha-beta-4x4.yaml"));
    TrainSimOptions o;
    o.ranks = ring ? 8 : 16;
    o.algorithm = algo;
    o.comm_model = CommModel::Steps;
    const TrainSimResult steps = simulate_train_step(c, p, o);
    o.comm_model = CommModel::Bulk;
    const TrainSimResult bulk = simulate_train_step(c, p, o);
    const double a = steps.devices[0].communication, b = bulk.devices[0].communication;
    EXPECT_NEAR(b / a, 1.0, 0.02) << algo << ": steps " << a << ", bulk " << b;
    EXPECT_NEAR(bulk.step_seconds / steps.step_seconds, 1.0, 0.02) << algo;
    EXPECT_LT(bulk.events, steps.events) << algo;
  }
}

TEST(TrainStep, MemoryPerDevice) {
  const ClusterSpec c = load_cluster_spec(kData + "alpha-beta.yaml");
  TrainSimOptions o;
  o.ranks = 2;
  const StepProgram sgd = program(kW2, 16), adam = program(kW2, 16, "adam");
  const DeviceReport a = simulate_train_step(c, sgd, o).devices[0];
  const DeviceReport b = simulate_train_step(c, adam, o).devices[0];
  EXPECT_DOUBLE_EQ(a.parameters, sgd.param_bytes());
  EXPECT_DOUBLE_EQ(a.gradients, 2 * sgd.param_bytes());  // gradients and their buckets
  EXPECT_DOUBLE_EQ(a.optimizer_state, 0);
  EXPECT_DOUBLE_EQ(b.optimizer_state, 2 * sgd.param_bytes());  // adam: m and v
  EXPECT_DOUBLE_EQ(a.activations, sgd.activation_peak);
  EXPECT_EQ(adam.params[0].update.size(), 12u);
}

TEST(TrainStep, Deterministic) {
  const StepProgram p = program(kW2, 8);
  const ClusterSpec c = load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml");
  TrainSimOptions o;
  o.log = true;
  o.bucket_bytes = 256 << 10;
  const TrainSimResult a = simulate_train_step(c, p, o), b = simulate_train_step(c, p, o);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  EXPECT_EQ(chrome_trace(c, p, a, 0), chrome_trace(c, p, b, 0));
  EXPECT_EQ(svg_timeline(c, p, a, 0), svg_timeline(c, p, b, 0));
  EXPECT_EQ(format_report(c, p, a), format_report(c, p, b));
  // The trace has one complete event per costed op and device, and names its processes.
  const std::string trace = chrome_trace(c, p, a, 2);
  EXPECT_NE(trace.find("\"name\": \"rank1@node0-gpu1\""), std::string::npos);
  EXPECT_NE(trace.find("\"name\": \"matmul\", \"cat\": \"forward\", \"ph\": \"X\""),
            std::string::npos);
  EXPECT_EQ(trace.find("rank2@"), std::string::npos);
}

using testing::compare_with_golden;

// The tiny MLP on 2 nodes x 2 devices (tiny-2x2.yaml: 1 GFLOP/s, 1 GB/s everywhere):
// hierarchical all-reduce of one 268-byte bucket, with the steps of the all-reduce.
TEST(TrainStep, GoldenLogTinyMlpFourRanks) {
  const StepProgram p = program(kData + "tiny_mlp.sp", 2);
  TrainSimOptions o;
  o.log = true;
  o.log_collectives = true;
  const TrainSimResult r = simulate_train_step(load_cluster_spec(kData + "tiny-2x2.yaml"), p, o);
  compare_with_golden(r.log, "dp_tiny_mlp_4ranks.log");
}

// The same on two devices of one node, in the bulk model, with two buckets.
TEST(TrainStep, GoldenLogTinyMlpBulkTwoBuckets) {
  const StepProgram p = program(kData + "tiny_mlp.sp", 2);
  TrainSimOptions o;
  o.log = true;
  o.ranks = 2;
  o.comm_model = CommModel::Bulk;
  o.bucket_bytes = o.first_bucket_bytes = 100;
  const TrainSimResult r = simulate_train_step(load_cluster_spec(kData + "tiny-2x2.yaml"), p, o);
  compare_with_golden(r.log, "dp_tiny_mlp_bulk_2ranks.log");
}

}  // namespace
}  // namespace spora::sim
