// Golden simulation logs, compared line by line, and determinism: two runs of the same
// simulations give bit-identical times and logs.
//
// To regenerate a golden file after an intended change of the model or the log format:
//   SPORA_UPDATE_GOLDEN=1 build/bin/test_sim --gtest_filter='GoldenLog.*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"
#include "tests/sim/golden.h"

namespace spora::sim {
namespace {

using parallel::Algorithm;
using parallel::Collective;

const std::string kData = SPORA_SOURCE_DIR "/tests/sim/data/";

std::vector<std::string> simulate_log(const std::string& cluster, Algorithm algorithm, int ranks,
                                      std::int64_t count,
                                      const parallel::AlgorithmOptions& algorithm_options = {}) {
  SimOptions options;
  options.log = true;
  const parallel::CollectiveSpec spec{Collective::AllReduce, parallel::ReduceOp::Sum, ranks, count};
  return simulate_collective(load_cluster_spec(kData + cluster),
                             parallel::build_schedule(algorithm, spec, algorithm_options), options)
      .log;
}

using testing::compare_with_golden;

// Ring all-reduce of 8 floats over 2 nodes x 2 devices: 2-element (8-byte) blocks. Hops
// 0 -> 1 stay in node0 (1 us + 8 ns); 1 -> 2 crosses the fabric (NIC, 2 switch links, NIC:
// 4 us + 8 ns at 1 GB/s); each copy of a block takes 16 ns at 1 GB/s.
TEST(GoldenLog, RingAllReduceFourRanksTwoNodes) {
  compare_with_golden(simulate_log("tiny-2x2.yaml", Algorithm::Ring, 4, 8),
                      "ring_allreduce_4ranks.log");
}

// The same all-reduce over two channels of 4 floats each, on nodes with a NIC per device
// (tiny-2x2-nics.yaml): channel 0 runs the ring 1 -> 0 -> 3 -> 2 (leaving node0 from device 0,
// NIC 0), channel 1 the ring 0 -> 1 -> 2 -> 3 (leaving from device 1, NIC 1); 1-element
// (4-byte) blocks. The two inter-node hops of a step use different NICs at once.
TEST(GoldenLog, RingAllReduceTwoChannels) {
  compare_with_golden(simulate_log("tiny-2x2-nics.yaml", Algorithm::Ring, 4, 8, {1, 2, 2}),
                      "ring_allreduce_4ranks_2channels.log");
}

// Halving-doubling on 3 ranks: rank 0 folds into rank 1, ranks 1 and 2 exchange halves, and
// rank 1 unfolds to rank 0.
TEST(GoldenLog, HalvingDoublingThreeRanks) {
  compare_with_golden(simulate_log("tiny-2x2.yaml", Algorithm::HalvingDoubling, 3, 6),
                      "halving_doubling_allreduce_3ranks.log");
}

TEST(Determinism, TwoRunsAreIdentical) {
  SimOptions options;
  options.log = true;
  const ClusterSpec cluster =
      load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100-cluster-32.yaml");
  std::vector<parallel::Schedule> schedules;
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::HalvingDoubling})
    schedules.push_back(parallel::build_schedule(
        a, {Collective::AllReduce, parallel::ReduceOp::Sum, 32, 1 << 20}, {2, 0}));
  schedules.push_back(parallel::build_schedule(
      Algorithm::Hierarchical, {Collective::AllReduce, parallel::ReduceOp::Sum, 64, 1 << 22},
      {1, 8}));
  const std::vector<SimResult> first = simulate_collectives(cluster, schedules, options);
  const std::vector<SimResult> second = simulate_collectives(cluster, schedules, options);
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].seconds, second[i].seconds);  // bit for bit
    EXPECT_EQ(first[i].rank_seconds, second[i].rank_seconds);
    EXPECT_EQ(first[i].log, second[i].log);
    EXPECT_GT(first[i].log.size(), 100u);
  }
}

}  // namespace
}  // namespace spora::sim
