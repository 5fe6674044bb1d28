// Every built-in schedule runs to completion in the simulator (all algorithms, all their
// collectives, rank counts 1-9 and 16, counts not divisible by the rank count, chunked or not,
// every root kind, pairs ordered or not); invalid schedules are refused before simulating.
#include "sim/collectives.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"

namespace spora::sim {
namespace {

using namespace parallel;

const ClusterSpec& cluster() {  // 4 nodes x 4 devices, so schedules cross nodes
  static const ClusterSpec spec = [] {
    ClusterSpec s = load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/tiny-2x2.yaml");
    s.nodes = 4;
    s.devices_per_node = 4;
    s.network->topology.down = {4};
    return s;
  }();
  return spec;
}

TEST(SimulatedSchedules, EveryGeneratorCompletes) {
  std::vector<Schedule> schedules;
  for (Algorithm a : all_algorithms()) {
    if (a == Algorithm::Native) continue;
    for (Collective c : supported_collectives(a))
      for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16})
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{2 * p + 1}, std::int64_t{1000}})
          for (int chunks : {1, 3})
            for (int root : is_rooted(c) ? std::vector<int>{0, p - 1} : std::vector<int>{0})
              schedules.push_back(
                  build_schedule(a, {c, ReduceOp::Sum, p, count, root}, {chunks, 0}));
  }
  for (bool ordered : {true, false}) {
    SimOptions options;
    options.ordered_pairs = ordered;
    const std::vector<SimResult> results = simulate_collectives(cluster(), schedules, options);
    ASSERT_EQ(results.size(), schedules.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Schedule& s = schedules[i];
      SCOPED_TRACE(fmt::format("{} {} p={} count={} chunks={}", s.algorithm,
                               collective_name(s.spec.collective), s.spec.ranks, s.spec.count,
                               s.options.chunks));
      EXPECT_EQ(results[i].rank_seconds.size(), static_cast<std::size_t>(s.spec.ranks));
      if (s.spec.ranks > 1) {
        EXPECT_GT(results[i].seconds, 0);
      }
    }
  }
  std::printf("  %zu schedules simulated twice\n", schedules.size());
}

// More bytes never take less time, and a bigger element type is a bigger message.
TEST(SimulatedSchedules, TimeGrowsWithSize) {
  std::vector<Schedule> schedules;
  for (std::int64_t count : {1 << 10, 1 << 14, 1 << 18, 1 << 22})
    schedules.push_back(
        build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 16, count}));
  const std::vector<SimResult> r = simulate_collectives(cluster(), schedules);
  for (std::size_t i = 1; i < r.size(); ++i) EXPECT_GT(r[i].seconds, r[i - 1].seconds);
  SimOptions doubles;
  doubles.element_bytes = 8;
  EXPECT_GT(simulate_collective(cluster(), schedules.back(), doubles).seconds, r.back().seconds);
}

TEST(SimulatedSchedules, InvalidSchedulesAreRefused) {
  // Both ranks receive before they send: a deadlock under rendezvous semantics.
  Schedule s;
  s.spec = {Collective::AllReduce, ReduceOp::Sum, 2, 4};
  s.algorithm = "hand-written";
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    Step recv;
    recv.id = 0;
    recv.kind = StepKind::Recv;
    recv.peer = 1 - r;
    recv.dst = {BufferKind::Output, 0, 4};
    Step send;
    send.id = 1;
    send.kind = StepKind::Send;
    send.peer = 1 - r;
    send.src = {BufferKind::Input, 0, 4};
    send.deps = {0};
    s.ranks[r].steps = {recv, send};
  }
  EXPECT_THROW(simulate_collective(cluster(), s), ScheduleError);

  s.ranks[1].steps.pop_back();  // rank 0's send has no receive
  EXPECT_THROW(simulate_collective(cluster(), s), ScheduleError);

  const Schedule big =
      build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 17, 4});
  try {
    simulate_collective(cluster(), big);
    FAIL() << "17 ranks on 16 devices";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the schedule has 17 ranks but the cluster has 16 devices");
  }
}

}  // namespace
}  // namespace spora::sim
