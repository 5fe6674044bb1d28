// The optimizer's update as one fused kernel (sim/step_program.h, UpdateKernel::Fused): one op
// per parameter whose bytes are one pass over the tensors it reads and writes (sgd 3, momentum
// 5, adam 7 of the parameter's size) and whose FLOPs are the primitives', reading the parameter,
// its gradient and its state and writing them in place; its time is that pass at the memory
// bandwidth plus one launch, where the primitives' list pays a pass and a launch each. A ZeRO-1
// piece's update stays the list, as the runtime runs it.
#include <gtest/gtest.h>

#include <set>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/partition/strategy.h"
#include "semantics/registry.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/reuse.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"

namespace spora::sim {
namespace {

using sem::Type;

const std::string kMlp = SPORA_SOURCE_DIR "/tests/parallel/mlp_small.sp";

// One device class: 1 TFLOP/s, 1 GB/s of memory, 5 us per launch: an elementwise op of B bytes
// takes B / 1e9 s + 5 us.
const ClusterSpec& slow_memory() {
  static const ClusterSpec spec = parse_cluster_spec(R"Y(
name: slow-memory
nodes: 1
devices_per_node: 16
device:
  kind: gpu
  peak_flops: {f32: 1 TFLOP/s, f64: 1 TFLOP/s}
  memory: 1 GB
  memory_bandwidth: 1 GB/s
  launch_overhead: 5 us
interconnect:
  kind: switch
  bandwidth: 10 GB/s
  latency: 10 us
)Y",
                                                     "slow-memory.yaml");
  return spec;
}

void setup() {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
}

TEST(FusedUpdate, OnePassOverTheParameterItsGradientAndItsState) {
  setup();
  const sem::TypeP t = Type::tensor(DType::f32, {100, 50});  // 20,000 bytes
  for (const auto& [optimizer, state, tensors] :
       {std::tuple{"sgd", 0, 3}, std::tuple{"momentum", 1, 5}, std::tuple{"adam", 2, 7}}) {
    int s_ops = -1, s_fused = -1;
    const std::vector<StepOp> ops = update_ops(optimizer, t, s_ops, UpdateKernel::Ops);
    const std::vector<StepOp> fused = update_ops(optimizer, t, s_fused, UpdateKernel::Fused);
    EXPECT_EQ(s_ops, state) << optimizer;
    EXPECT_EQ(s_fused, state) << optimizer;
    ASSERT_EQ(fused.size(), 1u) << optimizer;
    const StepOp& f = fused[0];
    EXPECT_EQ(f.name(), std::string("fused_") + optimizer);
    EXPECT_EQ(f.phase, Phase::Update);
    EXPECT_EQ(f.cost.op_class, "elementwise");
    EXPECT_EQ(f.cost.bytes, tensors * 20000.0) << optimizer;
    double flops = 0, bytes = 0;
    for (const StepOp& o : ops) flops += o.cost.flops, bytes += o.cost.bytes;
    EXPECT_EQ(f.cost.flops, flops) << optimizer;
    EXPECT_GT(bytes, f.cost.bytes) << optimizer;  // the list moves its temporaries too
    EXPECT_EQ(f.inputs.size(), static_cast<size_t>(2 + state));
  }
  EXPECT_EQ(parse_update_kernel("fused"), UpdateKernel::Fused);
  EXPECT_EQ(parse_update_kernel("ops"), UpdateKernel::Ops);
  EXPECT_EQ(update_kernel_name(UpdateKernel::Fused), "fused");
  EXPECT_THROW(parse_update_kernel("fast"), lang::UserError);
}

TEST(FusedUpdate, ReadsEverythingOnceAndWritesTheParameterAndStateInPlace) {
  setup();
  const sem::TypeP t = Type::tensor(DType::f32, {64});
  Dataflow flow;
  const TensorRef p = flow.fresh(t), g = flow.fresh(t);
  int state = 0;
  std::vector<StepOp> adam = update_ops("adam", t, state, UpdateKernel::Fused);
  connect_update(adam, p, g, flow);
  const StepOp& f = adam[0];
  ASSERT_EQ(f.reads.size(), 4u);
  ASSERT_EQ(f.writes.size(), 3u);
  EXPECT_EQ(f.reads[0].id, p.id);
  EXPECT_EQ(f.reads[1].id, g.id);
  const std::set<int> distinct{f.reads[0].id, f.reads[1].id, f.reads[2].id, f.reads[3].id};
  EXPECT_EQ(distinct.size(), 4u);  // m and v: new tensors
  EXPECT_EQ(f.writes[0].id, p.id);
  EXPECT_EQ(f.writes[1].id, f.reads[2].id);  // m in place
  EXPECT_EQ(f.writes[2].id, f.reads[3].id);  // v in place

  std::vector<StepOp> sgd = update_ops("sgd", t, state, UpdateKernel::Fused);
  connect_update(sgd, p, g, flow);
  ASSERT_EQ(sgd[0].reads.size(), 2u);
  ASSERT_EQ(sgd[0].writes.size(), 1u);
  EXPECT_EQ(sgd[0].writes[0].id, p.id);
}

TEST(FusedUpdate, TakesOnePassAtTheMemoryBandwidthAndOneLaunch) {
  setup();
  const CostModel model(slow_memory().device);
  const sem::TypeP t = Type::tensor(DType::f32, {100, 50});
  int state = 0;
  const StepOp f = update_ops("adam", t, state, UpdateKernel::Fused)[0];
  EXPECT_NEAR(model.time(f.cost, f.dtype).seconds, 7 * 20000 / 1e9 + 5e-6, 1e-12);
  double ops_seconds = 0, ops_bytes = 0;
  for (const StepOp& o : update_ops("adam", t, state, UpdateKernel::Ops)) {
    ops_seconds += model.time(o.cost, o.dtype).seconds;
    ops_bytes += o.cost.bytes;
  }
  EXPECT_NEAR(ops_seconds, ops_bytes / 1e9 + 12 * 5e-6, 1e-12);
}

// mlp_small: 6 parameters of 1864 f64 elements in all, 4 data-parallel ranks.
TEST(FusedUpdate, ASimulatedStepsUpdateIsOneKernelPerParameterButAZeroPieceIsNot) {
  setup();
  const char* dp4 = R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J";
  const char* zero4 =
      R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}, "optimizer_shard": 0})J";
  parallel::StepOptions o;
  o.batch = 8;
  o.optimizer = "adam";
  const StepProgram p = build_step_program(kMlp, o, UpdateKernel::Fused);
  ASSERT_EQ(p.params.size(), 6u);
  for (const StepParam& prm : p.params) {
    ASSERT_EQ(prm.update.size(), 1u) << prm.name;
    EXPECT_EQ(prm.update[0].cost.bytes, 7 * prm.bytes) << prm.name;
  }
  auto spmd = [&](const char* json, UpdateKernel k) {
    return spmd_program(p, parallel::parse_strategy(json, *p.step, "test"), "adam", k);
  };
  const SpmdProgram fused = spmd(dp4, UpdateKernel::Fused), ops = spmd(dp4, UpdateKernel::Ops);
  EXPECT_EQ(fused.update.size(), 6u);
  EXPECT_EQ(ops.update.size(), 72u);
  EXPECT_EQ(spmd(zero4, UpdateKernel::Fused).update.size(), 72u);  // the runtime's node by node
  EXPECT_EQ(fused.optimizer_state_bytes, ops.optimizer_state_bytes);

  // The simulated update: per parameter 7 x its bytes at 1 GB/s plus one launch of 5 us.
  const SpmdSimResult a = simulate_spmd_step(slow_memory(), fused);
  const SpmdSimResult b = simulate_spmd_step(slow_memory(), ops);
  EXPECT_NEAR(a.update_seconds, 7 * 1864 * 8 / 1e9 + 6 * 5e-6, 1e-12);
  EXPECT_GT(b.update_seconds, a.update_seconds);
  EXPECT_NEAR(b.step_seconds - a.step_seconds, b.update_seconds - a.update_seconds, 1e-9);
}

}  // namespace
}  // namespace spora::sim
