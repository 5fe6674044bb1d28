// Simulated SPMD training steps (sim/spmd_step.h): the partitioned per-rank program of the
// small MLP of tests/parallel under replicated, data-parallel and tensor-parallel strategies,
// against the cost model and the alpha-beta closed forms on a contention-free switch
// (tests/sim/data/alpha-beta.yaml: alpha = 10 us device to device, B = 10 GB/s per port and
// direction, memory 1 PB/s so reductions cost nothing measurable).
//
// A ring all-reduce of N bytes over p ranks takes 2(p-1)(alpha + N/(pB)); an all-gather of a
// local N bytes (p-1)(alpha + N/B).
#include "sim/spmd_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/step_program.h"

namespace spora::sim {
namespace {

const std::string kMlp = SPORA_SOURCE_DIR "/tests/parallel/mlp_small.sp";
constexpr double kAlpha = 10e-6, kB = 10e9;

StepProgram step(int64_t batch) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions o;
  o.batch = batch;
  return build_step_program(kMlp, o);
}

struct Case {
  StepProgram program;
  parallel::Partitioned part;
  SpmdProgram spmd;
};

Case partitioned(const std::string& strategy_json, int64_t batch) {
  Case c{step(batch), {}, {}};
  const parallel::Strategy s = parallel::parse_strategy(strategy_json, *c.program.step, "test");
  c.part = parallel::partition_training_step(*c.program.step, c.program.params.size(), s);
  c.spmd = spmd_program(*c.part.graph, s.mesh.shape, c.program.params.size(), "sgd");
  return c;
}

const ClusterSpec& switch16() {
  static const ClusterSpec spec = load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/alpha-beta.yaml");
  return spec;
}

// One device, nothing split: no collective, and the step is the sum of the op times.
TEST(SpmdStep, ReplicatedIsTheSumOfOpTimes) {
  Case c = partitioned(R"J({"mesh": [1], "layouts": {}})J", 8);
  EXPECT_TRUE(c.spmd.collectives.empty());
  const SpmdSimResult r = simulate_spmd_step(switch16(), c.spmd);
  const CostModel model(switch16().device);
  double total = 0;
  for (const SpmdOp& op : c.spmd.ops) total += model.time(op.op.cost, op.op.dtype).seconds;
  for (const StepOp& op : c.spmd.update) total += model.time(op.cost, op.dtype).seconds;
  EXPECT_NEAR(r.step_seconds, total, 1e-12 + 1e-9 * total);
  EXPECT_DOUBLE_EQ(r.devices[0].communication, 0);
}

// Data parallelism over 4 ranks: every gradient is all-reduced (and the loss); each all-reduce
// takes the ring's closed form, and the step is at least the compute plus the last one.
TEST(SpmdStep, DataParallelAllReducesTakeTheRingClosedForm) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ASSERT_GE(c.spmd.collectives.size(), c.program.params.size());
  const SpmdSimResult r = simulate_spmd_step(switch16(), c.spmd);
  ASSERT_EQ(r.ranks, 4);
  ASSERT_EQ(r.collectives.size(), c.spmd.collectives.size());
  const double p = 4;
  for (const SpmdCollectiveRecord& rec : r.collectives) {
    EXPECT_EQ(rec.kind, CollectiveKind::AllReduce);
    EXPECT_EQ(rec.group, 4);
    const double closed = 2 * (p - 1) * (kAlpha + rec.bytes / p / kB);
    // Equal when the comm stream was idle at issue time; never shorter.
    EXPECT_GE(rec.seconds, closed * (1 - 1e-6)) << rec.bytes;
  }
  // The first collective starts on an idle link: exactly the closed form.
  const SpmdCollectiveRecord& first = r.collectives.front();
  EXPECT_NEAR(first.seconds, 2 * (p - 1) * (kAlpha + first.bytes / p / kB), 1e-9);
  EXPECT_GE(r.step_seconds, r.compute_seconds);
  EXPECT_LT(r.step_seconds, r.compute_seconds + [&] {
    double s = 0;
    for (const SpmdCollectiveRecord& rec : r.collectives) s += rec.seconds;
    return s;
  }() + 1e-9);
  // Every rank computes the same: identical compute time on every device.
  for (const DeviceReport& d : r.devices) EXPECT_NEAR(d.compute, r.devices[0].compute, 1e-12);
}

// A two-device spec with inline collectives, for the spec keys' tests.
const char* const kInlineSpec = R"Y(name: t
nodes: 1
devices_per_node: 2
device: {peak_flops: {f32: 1 TFLOP/s}, memory: 1 GB, memory_bandwidth: 1 TB/s}
interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}
collectives: inline
)Y";

// `collectives: inline` (the runtime of `spora train-step --strategy`): nothing overlaps, so the data
// parallel step is exactly its compute plus every collective's ring closed form (on this spec
// the step is almost all communication, so the overlapped step is only a little shorter).
TEST(SpmdStep, InlineCollectivesAddUp) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ClusterSpec spec = switch16();
  ASSERT_TRUE(spec.overlap_collectives);
  const SpmdSimResult overlapped = simulate_spmd_step(spec, c.spmd);
  spec.overlap_collectives = false;
  const SpmdSimResult r = simulate_spmd_step(spec, c.spmd);
  const double p = 4;
  double closed = 0;
  for (const SpmdCollectiveRecord& rec : r.collectives) {
    EXPECT_NEAR(rec.seconds, 2 * (p - 1) * (kAlpha + rec.bytes / p / kB), 1e-9) << rec.bytes;
    closed += rec.seconds;
  }
  EXPECT_NEAR(r.step_seconds, r.compute_seconds + closed, 1e-8);
  EXPECT_LT(overlapped.step_seconds, r.step_seconds);
  // The spec key.
  const std::string yaml = kInlineSpec;
  EXPECT_FALSE(parse_cluster_spec(yaml, "t.yaml").overlap_collectives);
  EXPECT_THROW(parse_cluster_spec(yaml.substr(0, yaml.size() - 7) + "sometimes\n", "t.yaml"),
               ClusterSpecError);
}

// `collective_overhead` (what `spora run`'s collectives cost beyond their ring steps, measured
// in place by `spora calibrate`): with inline collectives, every collective takes exactly that
// much longer, and so does the step, once per collective.
TEST(SpmdStep, CollectiveOverheadOncePerCall) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  const SpmdSimResult base = simulate_spmd_step(spec, c.spmd);
  const double extra = 37e-6;
  spec.collective_overhead = extra;
  const SpmdSimResult r = simulate_spmd_step(spec, c.spmd);
  ASSERT_EQ(r.collectives.size(), base.collectives.size());
  ASSERT_GT(r.collectives.size(), 1u);
  for (size_t i = 0; i < r.collectives.size(); ++i)
    EXPECT_NEAR(r.collectives[i].seconds, base.collectives[i].seconds + extra, 1e-9) << i;
  EXPECT_NEAR(r.step_seconds,
              base.step_seconds + extra * static_cast<double>(r.collectives.size()), 1e-8);
  const std::string yaml = kInlineSpec;
  EXPECT_EQ(parse_cluster_spec(yaml, "t.yaml").collective_overhead, 0);
  EXPECT_NEAR(parse_cluster_spec(yaml + "collective_overhead: 37.5 us\n", "t.yaml").collective_overhead,
              37.5e-6, 1e-15);
  try {
    parse_cluster_spec(yaml + "collective_overhead: soon\n", "t.yaml");
    ADD_FAILURE() << "a bad duration was accepted";
  } catch (const ClusterSpecError& e) {
    EXPECT_NE(std::string(e.what()).find("collective_overhead"), std::string::npos) << e.what();
  }
}

// Measured collectives (device.measured.collectives, written by `spora calibrate`): a group of a
// measured size takes the table's time, interpolated in log2 of the bytes, from its last rank's
// arrival, instead of the ring model and its per-call overhead (times the share where ranks
// outnumber the cores); other sizes keep the ring.
TEST(SpmdStep, MeasuredCollectivesTakeTheTablesTime) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  spec.collective_overhead = 37e-6;
  const SpmdSimResult ring = simulate_spmd_step(spec, c.spmd);
  // all_reduce over 4 ranks: 1e-4 s at 256 B, 2e-4 s at 4096 B (linear in log2 between, their
  // bandwidth beyond).
  spec.device.measured.collectives["all_reduce"][4] =
      CollectiveTable::from_rows({{4096, 2e-4}, {256, 1e-4}});
  const SpmdSimResult r = simulate_spmd_step(spec, c.spmd);
  ASSERT_EQ(r.collectives.size(), ring.collectives.size());
  ASSERT_GT(r.collectives.size(), 1u);
  double total = 0;
  for (const SpmdCollectiveRecord& rec : r.collectives) {
    const double want = rec.bytes <= 256    ? 1e-4
                        : rec.bytes >= 4096 ? 2e-4 + 1e-4 * (rec.bytes - 4096) / 3840
                                            : 1e-4 + 1e-4 * std::log2(rec.bytes / 256) / 4;
    EXPECT_NEAR(rec.seconds, want, 1e-12) << rec.bytes;
    total += rec.seconds;
  }
  EXPECT_NEAR(r.step_seconds, r.compute_seconds + total, 1e-8);
  // Ranks beyond the cores (4 on 2): the table was measured with a core per rank, so each
  // call takes the share (2) times its time, plus the measured sync extra (here 15 us).
  spec.device.measured.cores = 2;
  spec.device.measured.oversubscribed = SyncTable::from_rows(4, {{0, 15e-6}, {1, 15e-6}});
  const SpmdSimResult shared = simulate_spmd_step(spec, c.spmd);
  ASSERT_EQ(shared.collectives.size(), r.collectives.size());
  for (std::size_t i = 0; i < r.collectives.size(); ++i)
    EXPECT_NEAR(shared.collectives[i].seconds, 2 * r.collectives[i].seconds + 15e-6, 1e-12);
  spec.device.measured.cores = 0;
  spec.device.measured.oversubscribed = {};
  // A table for another group size changes nothing.
  spec.device.measured.collectives["all_reduce"].erase(4);
  spec.device.measured.collectives["all_reduce"][2] = CollectiveTable::from_rows({{256, 1e-4}});
  EXPECT_DOUBLE_EQ(simulate_spmd_step(spec, c.spmd).step_seconds, ring.step_seconds);
}

// ZeRO-1 splits parameters along their first dimension: every piece of its reduce_scatters and
// all_gathers is one block, which the runtime sends without staging copies, so the measured
// contiguous tables price them; pieces of a later dimension (with a leading extent > 1) keep the
// strided tables.
TEST(SpmdStep, CollectivesOfBlocksTakeTheContiguousTables) {
  Case c = partitioned(
      R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}, "optimizer_shard": 0})J", 16);
  int blocks = 0;
  for (const SpmdOp& op : c.spmd.ops)
    if (op.collective && op.kind != CollectiveKind::AllReduce) blocks += op.contiguous ? 1 : 0;
  ASSERT_GT(blocks, 0);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  auto& tables = spec.device.measured.collectives;
  for (const char* name : {"all_gather", "reduce_scatter"}) {
    tables[name][4] = CollectiveTable::from_rows({{64, 5e-4}});
    tables[std::string(name) + "_contiguous"][4] = CollectiveTable::from_rows({{64, 1e-4}});
  }
  const SpmdSimResult r = simulate_spmd_step(spec, c.spmd);
  int priced = 0;
  for (const SpmdCollectiveRecord& rec : r.collectives) {
    const SpmdOp& op = c.spmd.ops[static_cast<std::size_t>(rec.op)];
    if (rec.kind == CollectiveKind::AllReduce) continue;
    EXPECT_NEAR(rec.seconds, op.contiguous ? 1e-4 : 5e-4, 1e-12) << rec.op;
    ++priced;
  }
  EXPECT_GT(priced, 0);
  // Without the contiguous tables every piece takes the strided one.
  tables.erase("all_gather_contiguous");
  tables.erase("reduce_scatter_contiguous");
  for (const SpmdCollectiveRecord& rec : simulate_spmd_step(spec, c.spmd).collectives) {
    if (rec.kind != CollectiveKind::AllReduce) {
      EXPECT_NEAR(rec.seconds, 5e-4, 1e-12) << rec.op;
    }
  }
  // Pieces of a later dimension are blocks only where every dimension before it has extent 1.
  const auto t = [](sem::Shape s) { return sem::Type::tensor(DType::f32, std::move(s)); };
  EXPECT_TRUE(pieces_are_blocks(*t({8, 16}), 0));
  EXPECT_FALSE(pieces_are_blocks(*t({8, 16}), 1));
  EXPECT_TRUE(pieces_are_blocks(*t({1, 8, 16}), 1));
  EXPECT_FALSE(pieces_are_blocks(*t({8, 1, 16}), 2));
}

// Megatron-style tensor parallelism (column then row split): the forward all-reduce after the
// row-split matmul blocks the ops after it, so the step exceeds compute + exposed comm > 0;
// parameters are split 4 ways in memory.
TEST(SpmdStep, TensorParallelBlocksOnItsForwardAllReduce) {
  Case tp = partitioned(R"J({"mesh": [4], "layouts": {"net.l1.w": "(1, 4)", "net.l1.b": "(4)",
                                                      "net.l2.w": "(4, 1)"}})J",
                        8);
  Case rep = partitioned(R"J({"mesh": [1], "layouts": {}})J", 8);
  ASSERT_FALSE(tp.spmd.collectives.empty());
  const SpmdSimResult r = simulate_spmd_step(switch16(), tp.spmd);
  EXPECT_GT(r.devices[0].exposed_communication, 2 * kAlpha);
  EXPECT_LT(tp.spmd.param_bytes, rep.spmd.param_bytes);
  const double l1 = 8.0 * (16 * 32 + 32), l2 = 8.0 * 32 * 32;
  EXPECT_DOUBLE_EQ(rep.spmd.param_bytes - tp.spmd.param_bytes, 0.75 * (l1 + l2));
}

// More ranks than cores (the measured tables' `cores`, sim/cost_model.h): 4 ranks of equal work
// on 2 cores. Each op takes 2x (the fair share), each ring step's transfer moves 2x the bytes
// (the copies take turns on the cores too), and each collective adds the measured extra of
// `measured.oversubscribed` at its grain g: the rank's compute since its previous collective at
// one rank per core. The spec is slowed (1 GFLOP/s, 100 MB/s ports) so that every term counts;
// the table is the line X0 + S g (its rows (0, X0) and (1 ms, X0 + S ms); every grain is below
// 1 ms), so the step is, in closed form,
//   2 x compute(one rank per core) + sum over collectives of
//     [2 (p - 1)(alpha + 2 bytes / p / B) + X0 + S g]
// and with 2 ranks on the 2 cores nothing changes.
TEST(SpmdStep, RanksBeyondTheCoresTakeTheFairShareAndTheMeasuredSyncCost) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  spec.device.peak_flops = {{"f32", 1e9}};
  const double B = 1e8;
  spec.interconnect.bandwidth = B;
  const SpmdSimResult alone = simulate_spmd_step(spec, c.spmd);  // a core each (cores: 0)
  const double X0 = 20e-6, S = 50;
  const SyncTable table = SyncTable::from_rows(4, {{0, X0}, {1e-3, X0 + S * 1e-3}});
  spec.device.measured.cores = 2;
  spec.device.measured.oversubscribed = table;
  const SpmdSimResult r = simulate_spmd_step(spec, c.spmd);
  ASSERT_EQ(r.ranks, 4);
  EXPECT_NEAR(r.compute_seconds, 2 * alone.compute_seconds, 1e-15);
  const double p = 4;
  double closed = 2 * alone.compute_seconds, grain = 0, extras = 0, bytes_terms = 0;
  std::size_t next = 0;  // the collectives in issue order, each after the op issue_after names
  auto issued_after = [&](int op) {
    while (next < c.spmd.collectives.size() && c.spmd.issue_after[next] == op) {
      const double bytes = c.spmd.ops[static_cast<std::size_t>(c.spmd.collectives[next])].bytes;
      ASSERT_LT(grain, 1e-3);
      closed += 2 * (p - 1) * (kAlpha + 2 * bytes / p / B) + X0 + S * grain;
      extras += X0 + S * grain;
      bytes_terms += 2 * (p - 1) * bytes / p / B;
      grain = 0;
      ++next;
    }
  };
  issued_after(-1);
  for (std::size_t i = 0; i < c.spmd.ops.size(); ++i) {
    if (!c.spmd.ops[i].collective) grain += alone.op_seconds[i];
    issued_after(static_cast<int>(i));
  }
  ASSERT_EQ(next, c.spmd.collectives.size());
  ASSERT_GT(next, 2u);
  // Every term is more than 1% of the step: the closed form would miss without any of them.
  EXPECT_GT(alone.compute_seconds, 0.01 * closed);
  EXPECT_GT(bytes_terms, 0.01 * closed);
  EXPECT_GT(extras - X0 * static_cast<double>(next), 0.01 * closed);
  EXPECT_NEAR(r.step_seconds, closed, 1e-8);
  // Two ranks on the same two cores: no sharing, no extra.
  Case dp2 = partitioned(R"J({"mesh": [2], "layouts": {"x": "(2, 1)", "y": "(2)"}})J", 16);
  spec.device.measured = {};
  const SpmdSimResult two_alone = simulate_spmd_step(spec, dp2.spmd);
  spec.device.measured.cores = 2;
  spec.device.measured.oversubscribed = table;
  EXPECT_DOUBLE_EQ(simulate_spmd_step(spec, dp2.spmd).step_seconds, two_alone.step_seconds);
}

// A negative extra (a loop measured faster than the fair share and the ring) corrects the
// per-call time, 2 x collective_overhead on 4 ranks over 2 cores, and their sum stays >= 0:
// with overhead 30 us, a table of -20 us adds 40 us per collective, one of -100 us nothing.
TEST(SpmdStep, ANegativeSyncExtraCorrectsThePerCallTimeDownToZero) {
  Case c = partitioned(R"J({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})J", 16);
  ClusterSpec spec = switch16();
  spec.overlap_collectives = false;
  spec.device.measured.cores = 2;
  auto step = [&](double overhead, double extra) {
    spec.collective_overhead = overhead;
    spec.device.measured.oversubscribed = SyncTable::from_rows(4, {{0, extra}, {1, extra}});
    return simulate_spmd_step(spec, c.spmd).step_seconds;
  };
  const double base = step(0, 0);
  const double n = static_cast<double>(c.spmd.collectives.size());
  EXPECT_NEAR(step(30e-6, -20e-6), base + n * 40e-6, 1e-8);
  EXPECT_NEAR(step(30e-6, -100e-6), base, 1e-8);
  EXPECT_NEAR(step(0, 15e-6), base + n * 15e-6, 1e-8);
}

TEST(SpmdStep, Deterministic) {
  Case c = partitioned(R"J({"mesh": [2, 2], "layouts": {"x": "(2, 1)", "net.l1.w": "(1, 2)"}})J", 8);
  SpmdSimOptions o;
  o.log = true;
  const SpmdSimResult a = simulate_spmd_step(switch16(), c.spmd, o);
  const SpmdSimResult b = simulate_spmd_step(switch16(), c.spmd, o);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.step_seconds, b.step_seconds);
  EXPECT_EQ(spmd_chrome_trace(c.spmd, a), spmd_chrome_trace(c.spmd, b));
  EXPECT_NE(spmd_report(c.spmd, a).find("all_reduce"), std::string::npos);
}

// The Chrome trace names what ran: per device, every compute interval holds its program ops
// (named by primitive, with their result type and modelled time), tiling the interval in
// program order with their modelled shares; the collectives are named by kind with their bytes
// and group; the update closes the compute stream. (The switch slowed to 1 GFLOP/s and 1 GB/s
// of memory, so that every op takes microseconds.)
TEST(SpmdStep, TheTraceShowsEveryOpInsideItsComputeIntervalAndNamesTheCollectives) {
  Case dp = partitioned(R"J({"mesh": [2], "layouts": {"x": "(2, 1)", "y": "(2)"}})J", 16);
  ClusterSpec spec = switch16();
  spec.device.peak_flops = {{"f32", 1e9}};
  spec.device.memory_bandwidth = 1e9;
  const SpmdSimResult r = simulate_spmd_step(spec, dp.spmd);
  ASSERT_GT(r.update_seconds, 0);
  const nlohmann::json trace = nlohmann::json::parse(spmd_chrome_trace(dp.spmd, r));
  for (int pid = 0; pid < 2; ++pid) {
    const auto k = static_cast<std::size_t>(pid);
    std::vector<nlohmann::json> intervals, ops, comm;
    for (const nlohmann::json& e : trace["traceEvents"]) {
      if (e["ph"] != "X" || e["pid"] != pid) continue;
      if (e["tid"] == 1)
        comm.push_back(e);
      else if (e["cat"] == "segment" || e["cat"] == "update")
        intervals.push_back(e);
      else
        ops.push_back(e);
    }
    ASSERT_EQ(intervals.size(), r.compute_intervals[k].size());
    EXPECT_EQ(intervals.back()["name"], "update");
    EXPECT_NEAR(intervals.back()["dur"].get<double>(), r.update_seconds * 1e6, 1e-2);
    // Every compute op with a modelled time appears once, in program order.
    std::vector<int> expected, seen;
    for (std::size_t i = 0; i < dp.spmd.ops.size(); ++i)
      if (r.op_seconds[i] > 0) expected.push_back(static_cast<int>(i));
    for (const nlohmann::json& e : ops) seen.push_back(e["args"]["op"].get<int>());
    EXPECT_EQ(seen, expected);
    // Each interval's ops (its "first-last" range) start at its start, follow one another and
    // end at its end; nothing contends here, so each op's span is its modelled time.
    std::size_t o = 0;
    for (const nlohmann::json& iv : intervals) {
      if (iv["name"] == "update") continue;
      int first = 0, last = 0;
      ASSERT_EQ(std::sscanf(iv["args"]["ops"].get<std::string>().c_str(), "%d-%d", &first, &last),
                2);
      double t = iv["ts"].get<double>();
      for (; o < ops.size() && ops[o]["args"]["op"].get<int>() <= last; ++o) {
        const nlohmann::json& e = ops[o];
        const int i = e["args"]["op"].get<int>();
        EXPECT_GE(i, first);
        const StepOp& op = dp.spmd.ops[static_cast<std::size_t>(i)].op;
        EXPECT_EQ(e["name"], std::string(op.name()));
        EXPECT_EQ(e["args"]["output"], op.output->str());
        EXPECT_EQ(e["cat"], "op");
        const double modelled = r.op_seconds[static_cast<std::size_t>(i)] * 1e6;
        EXPECT_NEAR(e["args"]["modelled_us"].get<double>(), modelled, 1e-3);
        EXPECT_NEAR(e["dur"].get<double>(), modelled, 1e-2);
        EXPECT_NEAR(e["ts"].get<double>(), t, 1e-2);
        t += e["dur"].get<double>();
      }
      EXPECT_NEAR(t, iv["ts"].get<double>() + iv["dur"].get<double>(), 5e-2);
    }
    EXPECT_EQ(o, ops.size());
    // Data parallelism: the gradients' all_reduces over both ranks, with their bytes.
    ASSERT_EQ(comm.size(), dp.spmd.collectives.size());
    int all_reduces = 0;
    for (std::size_t c = 0; c < comm.size(); ++c) {
      const SpmdOp& op = dp.spmd.ops[static_cast<std::size_t>(dp.spmd.collectives[c])];
      EXPECT_EQ(comm[c]["name"], std::string(collective_kind_name(op.kind)));
      all_reduces += comm[c]["name"] == "all_reduce";
      EXPECT_EQ(comm[c]["args"]["group"], 2);
      EXPECT_DOUBLE_EQ(comm[c]["args"]["bytes"].get<double>(), op.bytes);
      EXPECT_NEAR(comm[c]["dur"].get<double>(),
                  (r.comm_intervals[k][c].end - r.comm_intervals[k][c].start) * 1e6, 1e-2);
    }
    EXPECT_GE(all_reduces, static_cast<int>(dp.program.params.size()));  // and the loss's
  }
}

}  // namespace
}  // namespace spora::sim
