// sim/transformer: the pipeline schedules against their closed forms, the collective closed
// forms against SimGrid's rings on the spec's own platform, determinism, the user errors of
// `spora sim-gpt` (one line, exit status 1) and a golden report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"
#include "sim/transformer/comm_model.h"
#include "sim/transformer/gpt_sim.h"
#include "sim/transformer/kernels.h"
#include "sim/transformer/layer_ops.h"
#include "sim/transformer/pipeline_schedule.h"
#include "tools/cmd_sim_gpt.h"

namespace spora::sim::transformer {
namespace {

const std::string kCluster = SPORA_SOURCE_DIR "/benchmarks/sim/gpt/dgx-a100-64.yaml";

ScheduleInput uniform(int64_t p, int64_t v, int64_t m, double f, double b, double c = 0) {
  ScheduleInput in;
  in.stages = p, in.chunks = v, in.micro_batches = m, in.p2p_seconds = c;
  in.forward.assign(p, std::vector<double>(v, f));
  in.backward.assign(p, std::vector<double>(v, b));
  return in;
}

// The optimizer step as Megatron-LM's Float16OptimizerWithFloat16Params runs it (2021,
// megatron/optimizer/optimizer.py): f16 copies the 16-bit gradient to f32 (2 + 4 bytes per
// parameter), unscales it (8), reads it for the clipping norm (4), runs FusedAdam (28) and
// copies the master to the 16-bit parameter (6); bf16 with f32 gradient buffers has no copy and
// no loss scale. The step's optimizer time is those passes at the HBM rate.
TEST(SimGptOptimizer, MegatronsMixedPrecisionPasses) {
  double f16 = 0, bf16 = 0;
  std::vector<std::string> names;
  for (const auto& [name, bytes] : optimizer_passes(2, true)) f16 += bytes, names.push_back(name);
  for (const auto& [name, bytes] : optimizer_passes(4, false)) bf16 += bytes;
  EXPECT_EQ(f16, 52);
  EXPECT_EQ(bf16, 38);
  EXPECT_EQ(names, (std::vector<std::string>{"optimizer-copy-to-main-grad", "optimizer-unscale",
                                             "optimizer-grad-norm", "fused-adam",
                                             "optimizer-copy-to-model"}));
  const ClusterSpec c = load_cluster_spec(kCluster);
  const KernelTimer timer(c.device, "f16", 2);
  double want = 0;
  for (const auto& [name, bytes] : optimizer_passes(2, true))
    want += timer.seconds(memory_kernel(name, 1e9 * bytes, "elementwise"));
  EXPECT_DOUBLE_EQ(optimizer_seconds(timer, 1e9, 2, true), want);
  // A billion parameters' 52 GB take at least 52 GB over the HBM bandwidth.
  EXPECT_GT(want, 52e9 / c.device.memory_bandwidth);
  EXPECT_LT(want, 52e9 / c.device.memory_bandwidth / 0.5);

  // The 1.7B row on 32 GPUs (tp 1, dp 32): every GPU updates all its parameters.
  const GptModel m{2304, 24, 24, 51200, 2048};
  GptParallel par{.global_batch = 512, .micro_batch = 16, .tp = 1, .pp = 1};
  par.precision = "f16";
  resolve_parallel(m, par, 32);
  const GptSimResult r = simulate_gpt(scale_cluster(c, 32), m, par);
  const double local = r.memory.parameters / 2;  // 16-bit parameters
  EXPECT_NEAR(r.breakdown.optimizer, optimizer_seconds(timer, local, 2, true),
              1e-9 * r.breakdown.optimizer);
}

TEST(SimGptSchedule, OneFOneBTakesMPlusPMinusOneSlots) {
  for (int64_t p : {1, 2, 4, 8})
    for (int64_t m : {1, 3, 8, 32}) {
      const ScheduleResult r = run_schedule(uniform(p, 1, m, 1.0, 2.0));
      EXPECT_DOUBLE_EQ(r.pipeline_seconds, (m + p - 1) * 3.0) << p << " " << m;
      EXPECT_NEAR(r.bubble_fraction, (p - 1) / double(m + p - 1), 1e-12);
      EXPECT_EQ(r.peak_in_flight[0], std::min(p, m));
    }
}

TEST(SimGptSchedule, InterleavingDividesTheBubbleByV) {
  // Chunks of 1/v of a stage: m (F + B) + (p - 1)(F + B) / v (Narayanan et al., section 2.2).
  for (int64_t v : {2, 4}) {
    const int64_t p = 4, m = 8;
    const double f = 1.0 / v, b = 2.0 / v;
    const ScheduleResult r = run_schedule(uniform(p, v, m, f, b));
    EXPECT_NEAR(r.pipeline_seconds, m * 3.0 + (p - 1) * 3.0 / v, 1e-9) << v;
  }
  EXPECT_THROW(stage_order(0, 4, 2, 6), std::invalid_argument);  // m not a multiple of p
}

TEST(SimGptSchedule, TwoStagesPayTheMessageBothWays) {
  // One micro-batch over two stages: F, send, F, B, send, B.
  const ScheduleResult r = run_schedule(uniform(2, 1, 1, 1.0, 2.0, 0.5));
  EXPECT_DOUBLE_EQ(r.pipeline_seconds, 1 + 0.5 + 1 + 2 + 0.5 + 2);
}

// A spec whose memory is so fast that SimGrid's ring copies and reductions cost nothing: the
// network part alone, which is what the closed forms state.
ClusterSpec fast_memory(ClusterSpec c) {
  c.device.memory_bandwidth = 1e18;
  return c;
}

double simulated_ring(const ClusterSpec& c, int p, double bytes) {
  const parallel::CollectiveSpec spec{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, p,
                                      static_cast<int64_t>(bytes / 4)};
  return simulate_collective(c, parallel::build_schedule(parallel::Algorithm::Ring, spec, {1, 0}))
      .seconds;
}

TEST(SimGptComm, ClosedFormsMatchSimGridRings) {
  const double bytes = 256.0 * 1048576;
  // Tensor parallelism inside a DGX: 8 ranks on the NVSwitch.
  const ClusterSpec dgx =
      fast_memory(load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml"));
  const CommModel dgx_model(dgx);
  for (int p : {2, 4, 8}) {
    const double closed = dgx_model.seconds(CommKind::AllReduce, tensor_group(dgx, p), bytes);
    const double simulated = simulated_ring(dgx, p, bytes);
    std::printf("  nvswitch p=%d: closed form %.1f us, simulated %.1f us\n", p, closed * 1e6,
                simulated * 1e6);
    EXPECT_NEAR(simulated / closed, 1.0, 0.02) << p;
  }
  // A rail-aligned data-parallel group: one GPU per node, each through its own NIC.
  ClusterSpec rail = load_cluster_spec(kCluster);
  rail.devices_per_node = 1;
  rail.nodes = 8;
  rail.network->nics_per_node = 1;
  rail.network->topology.levels = 1;
  rail.network->topology.down = {8};
  rail = fast_memory(rail);
  const CommModel rail_model(rail);
  const double closed = rail_model.seconds(CommKind::AllReduce, data_group(rail, 1, 8), bytes);
  const double simulated = simulated_ring(rail, 8, bytes);
  std::printf("  rail of 8 nodes: closed form %.1f us, simulated %.1f us\n", closed * 1e6,
              simulated * 1e6);
  EXPECT_NEAR(simulated / closed, 1.0, 0.02);
}

TEST(SimGptComm, ScaledClusterKeepsTheLeafRadix) {
  const ClusterSpec c = load_cluster_spec(kCluster);
  const ClusterSpec big = scale_cluster(c, 4096);
  EXPECT_EQ(big.nodes, 512);
  EXPECT_EQ(big.network->topology.down, (std::vector<unsigned>{8, 64}));
  EXPECT_EQ(scale_cluster(c, 32).network->topology.down, (std::vector<unsigned>{4}));
  EXPECT_THROW(scale_cluster(c, 12), GptConfigError);
}

GptSimResult row(int64_t h, int64_t l, int64_t a, int64_t tp, int64_t pp, int64_t gpus,
                 int64_t batch, int64_t micro_batch, const GptSimOptions& options = {},
                 bool async_tp = false) {
  GptModel m{h, l, a, 51200, 2048};
  GptParallel p;
  p.global_batch = batch, p.tp = tp, p.pp = pp, p.micro_batch = micro_batch;
  p.precision = "f16";
  p.async_tp_allreduce = async_tp;
  resolve_parallel(m, p, gpus);
  return simulate_gpt(scale_cluster(load_cluster_spec(kCluster), gpus), m, p, options);
}

TEST(SimGpt, Deterministic) {
  const std::string a = gpt_json(row(8192, 48, 64, 8, 2, 512, 1536, 0));
  const std::string b = gpt_json(row(8192, 48, 64, 8, 2, 512, 1536, 0));
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"step_seconds\": "), std::string::npos);
  EXPECT_NE(a.find("\"tflops_per_gpu\": "), std::string::npos);
  EXPECT_NE(a.find("\"memory_per_gpu_bytes\": "), std::string::npos);
  EXPECT_NE(a.find("\"fits\": true"), std::string::npos);
}

TEST(SimGpt, BreakdownAddsUpToTheStep) {
  for (const double share : {0.0, 0.15}) {
    GptSimOptions o;
    o.comm_sm_share = share;
    const GptSimResult r = row(8192, 48, 64, 8, 2, 512, 1536, 2, o, true);
    const GptBreakdown& b = r.breakdown;
    double sum = b.compute + b.pipeline_wait + b.dp_exposed + b.embedding_sync + b.optimizer +
                 b.zero_gather + b.interference;
    for (const auto& [k, s] : b.tp_comm) sum += s;
    EXPECT_NEAR(sum / r.step_seconds, 1.0, 1e-9) << share;
    EXPECT_GT(b.tp_comm.at("tp-all-reduce"), 0);
    EXPECT_GT(r.bubble_fraction, 0);
    EXPECT_EQ(b.interference > 0, share > 0);
  }
}

// Contention (gpt_sim.h): NCCL's kernels hold a share s of the GPU while a collective runs beside
// compute. The 1.7B row (t 1, p 1, d 32, b 16): the gradient all-reduce of each layer starts as
// the last backward pass makes that layer's gradients final and keeps up with it, so each of
// the first L - 1 layers' syncs overlaps compute throughout (the last runs after it): the step
// grows by s (L - 1) times one layer's sync.
TEST(SimGptContention, SmShareDelaysTheBackwardTheGradientStreamOverlaps) {
  GptSimOptions off, on;
  off.comm_sm_share = 0, on.comm_sm_share = 0.15;
  const GptSimResult a = row(2304, 24, 24, 1, 1, 32, 512, 16, off);
  const GptSimResult b = row(2304, 24, 24, 1, 1, 32, 512, 16, on);
  const ClusterSpec c = scale_cluster(load_cluster_spec(kCluster), 32);
  const double h = 2304, layer_params = 12 * h * h + 7 * h + 6 * h;
  const double sync =
      CommModel(c).seconds(CommKind::AllReduce, data_group(c, 1, 32), layer_params * 2);
  ASSERT_LT(sync, b.layer_backward_seconds / 24);  // the stream keeps up
  EXPECT_DOUBLE_EQ(a.breakdown.interference, 0);
  EXPECT_NEAR(b.breakdown.interference, 0.15 * 23 * sync, 1e-12);
  EXPECT_NEAR(b.step_seconds - a.step_seconds, 0.15 * 23 * sync, 1e-12);
  EXPECT_DOUBLE_EQ(b.comm_sm_share, 0.15);
  // Default: the spec's device.comm_sm_share.
  ClusterSpec spec = load_cluster_spec(kCluster);
  spec.device.comm_sm_share = 0.15;
  GptModel m{2304, 24, 24, 51200, 2048};
  GptParallel p;
  p.global_batch = 512, p.micro_batch = 16, p.precision = "f16";
  resolve_parallel(m, p, 32);
  EXPECT_DOUBLE_EQ(simulate_gpt(scale_cluster(spec, 32), m, p).step_seconds, b.step_seconds);
}

// Links (comm_model.h, LinkSharing) on a node of 8 GPUs and 4 NICs.
TEST(SimGptContention, GroupsShareTheNodesNicsAndRingsUseOnePerNic) {
  ClusterSpec c = scale_cluster(load_cluster_spec(kCluster), 32);
  c.network->nics_per_node = 4;
  const double nic = c.network->nic_bandwidth * c.network->efficiency;
  const double nvswitch = c.interconnect.bandwidth * c.interconnect.efficiency;
  const Group rail = data_group(c, 8, 4), node = data_group(c, 1, 32);
  ASSERT_EQ(rail.per_node, 1);
  ASSERT_EQ(node.per_node, 8);
  // Eight rail-aligned groups at once on four NICs: half a NIC each; alone, a whole one.
  EXPECT_DOUBLE_EQ(CommModel(c).bandwidth(rail), 0.5 * nic);
  EXPECT_DOUBLE_EQ(CommModel(c, {true, false}).bandwidth(rail), nic);
  // A group of whole nodes: one ring per NIC, four of them; one ring: one NIC.
  EXPECT_DOUBLE_EQ(CommModel(c).bandwidth(node), std::min(nvswitch, 4 * nic));
  EXPECT_DOUBLE_EQ(CommModel(c, {false, true}).bandwidth(node), nic);
  // Inside a node nothing changes.
  const Group tp = tensor_group(c, 8);
  EXPECT_DOUBLE_EQ(CommModel(c, {false, false}).bandwidth(tp), nvswitch);
  // In a step: the rail-aligned gradient all-reduce of the 18.4B row takes twice as long.
  GptModel m{6144, 40, 48, 51200, 2048};
  GptParallel p;
  p.global_batch = 1024, p.tp = 8, p.micro_batch = 16, p.precision = "f16";
  resolve_parallel(m, p, 32);
  GptSimOptions alone;
  alone.links.nic_sharing = false;
  alone.grad_overlap = false;
  GptSimOptions shared = alone;
  shared.links.nic_sharing = true;
  const GptSimResult a = simulate_gpt(c, m, p, alone), b = simulate_gpt(c, m, p, shared);
  EXPECT_NEAR(b.breakdown.dp_exposed / a.breakdown.dp_exposed, 2.0, 0.02);
}

TEST(SimGpt, AutoPicksTheFastestThatFits) {
  const GptSimResult r = row(2304, 24, 24, 1, 1, 32, 512, 0);
  ASSERT_EQ(r.candidates.size(), 5u);  // 1, 2, 4, 8, 16 sequences of the 16 per replica
  for (const GptCandidate& c : r.candidates) {
    if (c.fits) {
      EXPECT_LE(r.step_seconds, c.step_seconds);
    }
  }
  EXPECT_TRUE(r.fits);
}

// The tensor-parallel collectives of a layer's backward pass as Megatron-LM's code places them
// (layer_ops.h): one layer of the 22B model of Korthikanti et al. (h 6144, a 64, t 8, b 4) on a
// DGX A100, its backward time against kernels + collectives in closed form.
struct LayerBackward {
  double kernels = 0;                // every kernel of the pass
  std::map<std::string, double> at;  // GEMM times by name
  double all_reduce = 0, all_gather = 0, reduce_scatter = 0;  // of T h E bytes over t ranks
  double simulated = 0;  // simulate_gpt's layer_backward_seconds
};

LayerBackward layer_backward_22b(bool sp, bool async, double sm_share = 0) {
  const ClusterSpec c = scale_cluster(load_cluster_spec(kCluster), 8);
  GptModel m{6144, 48, 64, 51200, 2048};
  GptParallel p;
  p.global_batch = 4, p.micro_batch = 4, p.tp = 8, p.recompute = Recompute::None;
  p.sequence_parallel = sp, p.async_tp_allreduce = async;
  resolve_parallel(m, p, 8);
  const LayerShape x = layer_shape(m, p, 4);
  const KernelTimer timer(c.device, "bf16", 2);
  LayerBackward r;
  for (const Kernel& k : layer_backward(x).kernels) {
    r.kernels += timer.seconds(k);
    r.at[k.name] = timer.seconds(k);
  }
  const CommModel comm(c);
  const Group tp = tensor_group(c, 8);
  const double bytes = 4 * 2048 * 6144 * 2.0;
  r.all_reduce = comm.seconds(CommKind::AllReduce, tp, bytes);
  r.all_gather = comm.seconds(CommKind::AllGather, tp, bytes);
  r.reduce_scatter = comm.seconds(CommKind::ReduceScatter, tp, bytes);
  GptSimOptions o;
  o.comm_sm_share = sm_share;
  r.simulated = simulate_gpt(c, m, p, o).layer_backward_seconds;
  return r;
}

TEST(SimGptLayer, BackwardAllReducesOnTheCriticalPath) {
  const LayerBackward r = layer_backward_22b(false, false);
  EXPECT_NEAR(r.simulated, r.kernels + 2 * r.all_reduce, 1e-12);
}

TEST(SimGptLayer, AsyncAllReduceRunsBesideTheWeightGradient) {
  // Megatron-LM's async_tensor_model_parallel_allreduce: only what outlasts the wgrad GEMM.
  const LayerBackward r = layer_backward_22b(false, true);
  const double exposed = std::max(0.0, r.all_reduce - r.at.at("fc1-wgrad")) +
                         std::max(0.0, r.all_reduce - r.at.at("qkv-wgrad"));
  EXPECT_NEAR(r.simulated, r.kernels + exposed, 1e-12);
  EXPECT_LT(r.simulated, layer_backward_22b(false, false).simulated);
}

// The async tensor-parallel all-reduce beside its weight-gradient GEMM slows that GEMM by s for
// as long as they overlap (the shorter of the two).
TEST(SimGptContention, SmShareSlowsTheGemmBesideTheAsyncAllReduce) {
  const LayerBackward off = layer_backward_22b(false, true);
  const LayerBackward on = layer_backward_22b(false, true, 0.2);
  const double overlapped = std::min(off.all_reduce, off.at.at("fc1-wgrad")) +
                            std::min(off.all_reduce, off.at.at("qkv-wgrad"));
  EXPECT_NEAR(on.simulated - off.simulated, 0.2 * overlapped, 1e-12);
}

// Megatron's vocabulary-parallel cross-entropy (mpu/cross_entropy.py, on `output.float()` since
// the runs pass no --fp16-lm-cross-entropy) reads and writes the T x V/t logits once per PyTorch
// kernel: forward cast 2 + 4 bytes per logit, max 4, subtract 8, exp 8, sum 4, divide 8 (38);
// backward scale 8 and cast 4 + 2 (14). One launch each.
TEST(SimGptLayer, CrossEntropyIsMegatronsPassesOverTheF32Logits) {
  GptModel m;
  m.hidden = 6144, m.heads = 48, m.layers = 40, m.seq = 2048, m.vocab = 51200;
  GptParallel p;
  p.tp = 8;
  const LayerShape x = layer_shape(m, p, 8);
  const double logits = 8.0 * 2048 * 51200 / 8;
  auto ce = [](const PassOps& ops, int* kernels) {
    double bytes = 0;
    for (const Kernel& k : ops.kernels)
      if (k.name.rfind("ce-", 0) == 0) bytes += k.bytes, ++*kernels;
    return bytes;
  };
  int forward_kernels = 0, backward_kernels = 0;
  EXPECT_DOUBLE_EQ(ce(head_forward(x), &forward_kernels), 38 * logits);
  EXPECT_DOUBLE_EQ(ce(head_backward(x), &backward_kernels), 14 * logits);
  EXPECT_EQ(forward_kernels, 6);
  EXPECT_EQ(backward_kernels, 2);
}

TEST(SimGptLayer, SequenceParallelBackwardGathersTheOutputGradients) {
  // Korthikanti et al., section 4.2.2: the forward reduce-scatters (g-bar) all-gather in the
  // backward pass, the forward all-gathers (g) reduce-scatter; the layer norms' outputs are
  // gathered again for the weight gradients beside the input-gradient GEMMs, and the
  // reduce-scatters run beside the weight-gradient GEMMs (megatron/mpu/layers.py).
  const LayerBackward r = layer_backward_22b(true, false);
  const double exposed = 2 * r.all_gather +
                         std::max(0.0, r.all_gather - r.at.at("fc1-dgrad")) +
                         std::max(0.0, r.all_gather - r.at.at("qkv-dgrad")) +
                         std::max(0.0, r.reduce_scatter - r.at.at("fc1-wgrad")) +
                         std::max(0.0, r.reduce_scatter - r.at.at("qkv-wgrad"));
  EXPECT_NEAR(r.simulated, r.kernels + exposed, 1e-12);
  // The volume of tensor parallelism's two all-reduces: ring closed forms, AG + RS = AR.
  EXPECT_NEAR(r.all_gather + r.reduce_scatter, r.all_reduce, 1e-15);
  std::vector<std::string> names;
  GptModel m{6144, 48, 64, 51200, 2048};
  GptParallel p;
  p.tp = 8, p.sequence_parallel = true;
  for (const TpCollective& c : layer_backward(layer_shape(m, p, 4)).collectives)
    names.push_back(c.name + ":" + std::string(comm_kind_name(c.kind)));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "fc2-grad-gather:all-gather", "ln2-gather-again:all-gather",
                       "fc1-dgrad-reduce:reduce-scatter", "proj-grad-gather:all-gather",
                       "ln1-gather-again:all-gather", "qkv-dgrad-reduce:reduce-scatter"}));
}

int cli(std::vector<std::string> args, std::string* out, std::string* err) {
  std::vector<char*> argv{const_cast<char*>("spora"), const_cast<char*>("sim-gpt")};
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int rc = tools::run_sim_gpt_command(static_cast<int>(argv.size()), argv.data());
  *out = testing::internal::GetCapturedStdout();
  *err = testing::internal::GetCapturedStderr();
  return rc;
}

std::vector<std::string> base_args() {
  return {"--cluster", kCluster,  "--gpus", "32",      "--hidden", "2304",        "--layers",
          "24",        "--heads", "24",     "--batch", "512",      "--precision", "f16"};
}

TEST(SimGptCli, TpThatDoesNotDivideTheHeads) {
  std::string out, err;
  auto args = base_args();
  args.insert(args.end(), {"--tp", "5"});
  EXPECT_EQ(cli(args, &out, &err), 1);
  EXPECT_EQ(err, "spora sim-gpt: error: --tp 5 does not divide --heads 24\n");
}

TEST(SimGptCli, PpThatDoesNotDivideTheLayers) {
  std::string out, err;
  auto args = base_args();
  args[3] = "40";  // --gpus
  args.insert(args.end(), {"--pp", "5"});
  EXPECT_EQ(cli(args, &out, &err), 1);
  EXPECT_EQ(err, "spora sim-gpt: error: --pp 5 does not divide --layers 24\n");
}

TEST(SimGptCli, DoesNotFitSaysByHowMuch) {
  // 39.1B on one DGX with tensor parallelism alone: 16 bytes per parameter is 78 GB per GPU.
  std::string out, err;
  EXPECT_EQ(cli({"--cluster", kCluster, "--gpus", "8", "--tp", "8", "--hidden", "8192", "--layers",
                 "48", "--heads", "64", "--batch", "8", "--micro-batch", "1", "--precision", "f16"},
                &out, &err),
            1);
  EXPECT_EQ(err.rfind("spora sim-gpt: error: the configuration does not fit: ", 0), 0u) << err;
  EXPECT_NE(err.find(" GB over the 80.00 GB of a GPU\n"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

// device.kernels: a measured rate of a named kernel replaces its op class's efficiency, and
// gemm_ceiling the built-in ceiling of the GEMM model; the spec reader and --kernel-rate name
// what is wrong.
TEST(SimGptKernels, MeasuredRatesReplaceTheClassAndTheCeiling) {
  ClusterSpec c = load_cluster_spec(kCluster);
  const Kernel softmax = memory_kernel("softmax", 1e9, "norm");
  const Kernel ln = memory_kernel("ln1", 1e9, "norm");
  const Kernel big = gemm("fc1", 8192, 8192, 8192);
  const double s0 = KernelTimer(c.device, "f16", 2).seconds(softmax);
  const double l0 = KernelTimer(c.device, "f16", 2).seconds(ln);
  const double g0 = KernelTimer(c.device, "f16", 2).seconds(big);
  c.device.kernels["softmax"] = 0.3;
  c.device.kernels["gemm_ceiling"] = 0.5;
  const KernelTimer t(c.device, "f16", 2);
  const double launch = c.device.launch_overhead;
  EXPECT_NEAR(t.seconds(softmax), 1e9 / (c.device.memory_bandwidth * 0.3) + launch, 1e-12);
  EXPECT_NEAR((s0 - launch) / (t.seconds(softmax) - launch), 0.3 / 0.6, 1e-9);  // the norm class
  EXPECT_DOUBLE_EQ(t.seconds(ln), l0);  // another kernel of the class keeps it
  // 8192^3 fills every tile and wave: the time scales with the ceiling alone.
  EXPECT_NEAR((t.seconds(big) - launch) / (g0 - launch), (267.9 / 312) / 0.5, 1e-9);
  EXPECT_EQ(t.gemm().source, "the spec's device.kernels.gemm_ceiling");

  const std::string yaml =
      "name: k\nnodes: 1\ndevices_per_node: 1\ndevice:\n  model: NVIDIA A100\n"
      "  peak_flops: {f16: 312 TFLOP/s}\n  memory: 80 GB\n"
      "  memory_bandwidth: 2039 GB/s\n";
  const std::string tail = "interconnect: {kind: switch, bandwidth: 300 GB/s, latency: 1 us}\n";
  const ClusterSpec k =
      parse_cluster_spec(yaml + "  kernels: {softmax: 0.5, gemm_ceiling: 0.8}\n" + tail, "k.yaml");
  EXPECT_DOUBLE_EQ(k.device.kernels.at("softmax"), 0.5);
  EXPECT_DOUBLE_EQ(gemm_model_for(k.device).ceiling, 0.8);
  for (const std::string bad : {"  kernels: {softmax: 1.5}\n", "  kernels: {bias-gelu: 0.5}\n"}) {
    try {
      parse_cluster_spec(yaml + bad + tail, "k.yaml");
      ADD_FAILURE() << bad;
    } catch (const ClusterSpecError& e) {
      EXPECT_NE(std::string(e.what()).find("device.kernels"), std::string::npos) << e.what();
    }
  }
  std::string out, err;
  auto args = base_args();
  args.insert(args.end(), {"--kernel-rate", "softmax=2"});
  EXPECT_EQ(cli(args, &out, &err), 1);
  EXPECT_EQ(err,
            "spora sim-gpt: error: --kernel-rate: expected NAME=FRACTION with NAME one of "
            "gemm_ceiling, softmax, softmax-grad and FRACTION in (0, 1], got 'softmax=2'\n");
}

TEST(SimGptCli, GoldenReport) {
  std::string out, err;
  auto args = base_args();
  args.insert(args.end(), {"--micro-batch", "4"});
  ASSERT_EQ(cli(args, &out, &err), 0) << err;
  const std::string path = SPORA_SOURCE_DIR "/tests/sim/transformer/data/gpt_1.7b_32.txt";
  if (std::getenv("SPORA_UPDATE_GOLDEN")) std::ofstream(path) << out;
  std::ifstream f(path);
  std::stringstream golden;
  golden << f.rdbuf();
  EXPECT_EQ(out, golden.str());
}

}  // namespace
}  // namespace spora::sim::transformer
