// The collective synthesizer (sim/synth.h): never worse than the built-ins it tried, every
// winner proven, the time limit honoured, labels that read back, and golden simulator logs of
// two synthesized schedules.
//
// To regenerate the golden logs after an intended change of the model or the log format:
//   SPORA_UPDATE_GOLDEN=1 build/bin/test_sim --gtest_filter='SynthGolden.*'
#include "sim/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "sim/isolation.h"
#include "tests/sim/golden.h"

namespace spora::sim {
namespace {

using parallel::Collective;
using parallel::CollectiveSpec;
using parallel::ReduceOp;

const std::string kData = SPORA_SOURCE_DIR "/tests/sim/data/";

// On two small clusters and every collective: the winner is no slower than any built-in tried,
// the baseline is the fastest built-in, every candidate was tried (no limit: a sanitizer build
// runs far slower), and the schedule returned is the winner's and passes the checker at its
// own count.
TEST(Synth, NeverSlowerThanABuiltInAndProven) {
  SynthOptions unlimited;
  unlimited.time_limit = 1e9;
  for (const char* file : {"tiny-2x2-nics.yaml", "mesh-2x4.yaml"}) {
    const ClusterSpec cluster = load_cluster_spec(kData + file);
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather,
                         Collective::AllToAll}) {
      const CollectiveSpec spec{c, ReduceOp::Sum, cluster.device_count(), 4096};
      const SynthResult r = synthesize(cluster, spec, unlimited);
      SCOPED_TRACE(std::string(file) + " " + std::string(parallel::collective_name(c)));
      EXPECT_EQ(r.skipped, 0);
      double best_builtin = 0;
      int builtins = 0;
      for (const SynthEvaluation& e : r.evaluated) {
        EXPECT_LE(r.seconds, e.seconds) << e.candidate.label();
        if (e.candidate.builtin) {
          ++builtins;
          if (best_builtin == 0 || e.seconds < best_builtin) best_builtin = e.seconds;
        }
      }
      EXPECT_GT(builtins, 0);
      EXPECT_EQ(r.baseline_seconds, best_builtin);
      EXPECT_EQ(r.schedule, r.candidate.build(spec));
      EXPECT_TRUE(parallel::check_schedule(r.schedule).ok());
      EXPECT_NE(r.proof.find("at its count"), std::string::npos) << r.proof;
      // Simulating the returned schedule again gives the time the search recorded.
      EXPECT_EQ(simulate_collective(cluster, r.schedule, {}).seconds, r.seconds);
    }
  }
}

// Where the topology has links a ring leaves idle, the synthesizer finds a composition that
// uses them: a 4x4 torus (four links per chip) and two full meshes of four.
TEST(Synth, CompositionsBeatTheBuiltInsWhereRingsLeaveLinksIdle) {
  for (const char* file : {"torus-4x4.yaml", "mesh-2x4.yaml"})
    for (Collective c : {Collective::AllReduce, Collective::AllToAll}) {
      const ClusterSpec cluster = load_cluster_spec(kData + file);
      // All-reduce of 4 Mi elements; all-to-all of 16 Ki-element blocks (dimension-wise
      // exchanges: 1.7-2.3x in the simulator).
      const std::int64_t count = c == Collective::AllReduce ? 4 << 20 : 1 << 14;
      const CollectiveSpec spec{c, ReduceOp::Sum, cluster.device_count(), count};
      SynthOptions unlimited;
      unlimited.time_limit = 1e9;
      const SynthResult r = synthesize(cluster, spec, unlimited);
      EXPECT_FALSE(r.candidate.builtin) << file << ": " << r.label;
      EXPECT_GT(r.baseline_seconds / r.seconds, 1.5) << file << " " << collective_name(c) << ": "
                                                     << r.label << " against " << r.baseline_label;
    }
}

// The limit: a search over a 64-chip torus (about 70 candidates, each simulation tens of
// milliseconds to seconds) stops with candidates left, within the limit (the winner's proof,
// timed apart, comes after it; a sanitizer build's proof takes seconds).
TEST(Synth, TimeLimitIsHonoured) {
  const ClusterSpec cluster =
      load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/tpu-v4-4x4x4.yaml");
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 64, 4 << 20};
  SynthOptions options;
  options.time_limit = 1.5;
  const SynthResult r = synthesize(cluster, spec, options);
  EXPECT_GT(r.skipped, 0);
  EXPECT_LT(r.search_seconds - r.proof_seconds, options.time_limit + 1.0);
  EXPECT_FALSE(r.evaluated.empty());
  options.time_limit = 0;
  EXPECT_THROW(synthesize(cluster, spec, options), std::invalid_argument);
}

// What the limit rests on: a forked simulation still running at its timeout is killed.
TEST(Synth, ASimulationPastItsTimeoutIsKilled) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run_isolated(
                   [] {
                     ::sleep(10);
                     return std::string("late");
                   },
                   0.2),
               SimulationTimeout);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(run_isolated([] { return std::string("in time"); }, 5), "in time");
}

// A mesh axis' group runs on its own devices: two ranks on the devices of one node are faster
// than on one device of each node (tiny-2x2: the network path has two more hops), and the log
// names the devices; the synthesizer searches on them too.
TEST(Synth, AGroupRunsOnItsDevices) {
  const ClusterSpec cluster = load_cluster_spec(kData + "tiny-2x2.yaml");
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 2, 1024};
  const parallel::Schedule ring = parallel::build_schedule(parallel::Algorithm::Ring, spec);
  SimOptions inside, across;
  inside.devices = {0, 1};
  across.devices = {0, 2};
  across.log = true;
  const SimResult a = simulate_collective(cluster, ring, inside);
  const SimResult b = simulate_collective(cluster, ring, across);
  EXPECT_LT(a.seconds, b.seconds);
  EXPECT_EQ(a.seconds, simulate_collective(cluster, ring, {}).seconds);
  EXPECT_NE(b.log.back().find("rank1@node1-gpu0"), std::string::npos) << b.log.back();
  SimOptions wrong;
  wrong.devices = {0, 0};
  EXPECT_THROW(simulate_collective(cluster, ring, wrong), std::invalid_argument);
  wrong.devices = {0, 4};
  EXPECT_THROW(simulate_collective(cluster, ring, wrong), std::invalid_argument);
  SynthOptions options;
  options.sim = across;
  options.sim.log = false;
  const SynthResult r = synthesize(cluster, spec, options);
  EXPECT_LE(r.seconds, b.seconds);
}

TEST(Synth, LabelsReadBack) {
  const ClusterSpec cluster = load_cluster_spec(kData + "torus-4x4.yaml");
  for (Collective c : {Collective::AllReduce, Collective::AllToAll, Collective::Broadcast}) {
    const std::vector<SynthCandidate> all = synth_candidates(cluster, c, 16);
    EXPECT_FALSE(all.empty());
    for (SynthCandidate cand : all) {
      (cand.builtin ? cand.options.chunks : cand.composition.chunks) = 4;
      EXPECT_EQ(parse_synth_candidate(cand.label()), cand) << cand.label();
    }
  }
  EXPECT_THROW(parse_synth_candidate("native chunks=1"), std::invalid_argument);
  EXPECT_THROW(parse_synth_candidate("ring chunks=x"), std::invalid_argument);
  EXPECT_THROW(parse_synth_candidate("ring colour=2"), std::invalid_argument);
  EXPECT_THROW(parse_synth_candidate("composed dims 4 lanes"), std::invalid_argument);
}

// A count beyond the checker is proven at two small counts of the same construction.
TEST(Synth, LargeCountsAreProvenOnTheSameConstruction) {
  const SynthCandidate c = parse_synth_candidate("composed dims 4x4 lanes 0.1,1r.0r chunks 2");
  std::string proof, error;
  const CollectiveSpec big{Collective::AllReduce, ReduceOp::Sum, 16, std::int64_t{1} << 24};
  ASSERT_TRUE(prove_candidate(c, big, &proof, &error)) << error;
  EXPECT_EQ(proof,
            "proven by the symbolic checker at counts 129 and 193 (the same construction; the "
            "count itself, 16777216, exceeds the checker's 2^26 elements)");
  const CollectiveSpec small{Collective::AllGather, ReduceOp::Sum, 16, 100};
  ASSERT_TRUE(prove_candidate(c, small, &proof, &error)) << error;
  EXPECT_EQ(proof, "proven by the symbolic checker at its count (100 elements)");
}

using testing::compare_with_golden;

std::vector<std::string> log_of(const std::string& cluster, Collective c, int ranks,
                                std::int64_t count, const std::string& label) {
  SimOptions options;
  options.log = true;
  const CollectiveSpec spec{c, ReduceOp::Sum, ranks, count};
  return simulate_collective(load_cluster_spec(kData + cluster),
                             parse_synth_candidate(label).build(spec), options)
      .log;
}

// Two nodes of two devices as a 2x2 grid, two lanes (inside the nodes first, across first):
// 8 floats, 4 per lane; a first-phase part is 2 floats (8 bytes: 8 ns at 1 GB/s plus the
// latency, after the 32 ns copy of the rank's own contribution).
TEST(SynthGolden, TwoLaneAllReduceOnTwoNodes) {
  compare_with_golden(log_of("tiny-2x2.yaml", Collective::AllReduce, 4, 8,
                             "composed dims 2x2 lanes 0.1,1.0 chunks 1"),
                      "synth_allreduce_2x2_two_lanes.log");
}

// Direct all-gather in the mesh groups of four, then a ring across the two groups: every
// member sends its 2 floats to its three mesh peers at once.
TEST(SynthGolden, DirectAllGatherOnTwoMeshes) {
  compare_with_golden(
      log_of("mesh-2x4.yaml", Collective::AllGather, 8, 2, "composed dims 4x2 lanes 0d.1 chunks 1"),
      "synth_allgather_mesh_direct.log");
}

}  // namespace
}  // namespace spora::sim
