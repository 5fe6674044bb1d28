// Every built-in algorithm, for every collective it implements, passes the symbolic checker
// for every rank count from 1 to 64 -- with counts 0, 1, 3 and 2p+1 (not divisible by p), all
// roots at the ends and the middle, unchunked and chunked.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"

namespace spora::parallel {
namespace {

struct Pair {
  Algorithm algorithm;
  Collective collective;
};

std::vector<Pair> all_pairs() {
  std::vector<Pair> out;
  for (Algorithm a : all_algorithms())
    if (a != Algorithm::Native)
      for (Collective c : supported_collectives(a)) out.push_back({a, c});
  return out;
}

std::string name_of(const Pair& p) {
  std::string s =
      std::string(algorithm_name(p.algorithm)) + "_" + std::string(collective_name(p.collective));
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

std::string pair_name(const testing::TestParamInfo<Pair>& info) { return name_of(info.param); }

// gtest prints parameters with this (test names and failure messages).
void PrintTo(const Pair& p, std::ostream* os) { *os << name_of(p); }

class CheckerSweep : public testing::TestWithParam<Pair> {};

TEST_P(CheckerSweep, EveryRankCountFrom1To64) {
  const auto [algorithm, collective] = GetParam();
  for (int p = 1; p <= 64; ++p) {
    std::set<int> roots{0};
    if (is_rooted(collective)) roots = {0, p / 2, p - 1};
    std::vector<AlgorithmOptions> variants{{1, 0}};
    if (p <= 16) variants.push_back({3, 0});
    if (algorithm == Algorithm::Hierarchical) {
      variants.clear();
      for (int g = 1; g <= p; ++g)  // every nodes x devices layout
        if (p % g == 0) variants.push_back({1, g});
      variants.push_back({1, 0});
    }
    for (std::int64_t count :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, std::int64_t{2 * p + 1}})
      for (int root : roots)
        for (const AlgorithmOptions& options : variants) {
          const CollectiveSpec spec{collective, ReduceOp::Sum, p, count, root};
          const Schedule s = build_schedule(algorithm, spec, options);
          const CheckResult result = check_schedule(s);
          ASSERT_TRUE(result.ok())
              << "ranks=" << p << " count=" << count << " root=" << root
              << " chunks=" << options.chunks << " ranks_per_node=" << options.ranks_per_node
              << ": " << result.error;
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, CheckerSweep, testing::ValuesIn(all_pairs()), pair_name);

TEST(Algorithms, SupportTableMatchesTheIssue) {
  EXPECT_EQ(supported_collectives(Algorithm::Ring).size(), 3u);
  EXPECT_EQ(supported_collectives(Algorithm::Tree).size(), 5u);
  EXPECT_EQ(supported_collectives(Algorithm::Binomial).size(), 5u);
  EXPECT_EQ(supported_collectives(Algorithm::HalvingDoubling),
            std::vector<Collective>{Collective::AllReduce});
  EXPECT_EQ(supported_collectives(Algorithm::Bruck).size(), 2u);
  EXPECT_EQ(supported_collectives(Algorithm::RecursiveDoubling).size(), 2u);
  EXPECT_EQ(supported_collectives(Algorithm::Pairwise),
            std::vector<Collective>{Collective::AllToAll});
  EXPECT_EQ(supported_collectives(Algorithm::Native).size(), 8u);
  for (Algorithm a : all_algorithms()) EXPECT_EQ(parse_algorithm(algorithm_name(a)), a);
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(collective_name(c)), c);
}

TEST(Algorithms, RejectsWhatTheyCannotBuild) {
  const CollectiveSpec all_to_all{Collective::AllToAll, ReduceOp::Sum, 4, 8, 0};
  EXPECT_THROW(build_schedule(Algorithm::Ring, all_to_all), std::invalid_argument);
  EXPECT_THROW(build_schedule(Algorithm::Native, all_to_all), std::invalid_argument);
  const CollectiveSpec all_reduce{Collective::AllReduce, ReduceOp::Sum, 6, 8, 0};
  EXPECT_THROW(build_schedule(Algorithm::Hierarchical, all_reduce, {1, 4}), std::invalid_argument);
  EXPECT_THROW(build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 0, 8, 0}),
               std::invalid_argument);
  EXPECT_THROW(build_schedule(Algorithm::Tree, {Collective::Reduce, ReduceOp::Sum, 4, 8, 4}),
               std::invalid_argument);
}

TEST(Algorithms, DefaultNodeLayout) {
  EXPECT_EQ(default_ranks_per_node(8), 4);
  EXPECT_EQ(default_ranks_per_node(6), 3);
  EXPECT_EQ(default_ranks_per_node(7), 7);
  EXPECT_EQ(default_ranks_per_node(16), 4);
  EXPECT_EQ(default_ranks_per_node(1), 1);
}

// The ring moves exactly 2(p-1)/p of the data per rank, which is what bus bandwidth assumes.
TEST(Algorithms, RingAllReduceTrafficIsOptimal) {
  for (int p : {2, 3, 8}) {
    const std::int64_t n = 24 * p;
    const Schedule s =
        build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, p, n, 0});
    for (const RankProgram& r : s.ranks) {
      std::int64_t sent = 0;
      for (const Step& step : r.steps)
        if (step.kind == StepKind::Send) sent += step.src.count;
      EXPECT_EQ(sent, 2 * (p - 1) * n / p);
    }
  }
}

// Lockstep rounds: a ring all-reduce takes 2(p-1) communication rounds (plus local copies).
TEST(Algorithms, LockstepRoundsOfTheRing) {
  const Schedule s =
      build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 5, 50, 0});
  const auto rounds = lockstep_rounds(s);
  int last = 0;
  for (std::size_t r = 0; r < rounds.size(); ++r)
    for (const Step& step : s.ranks[r].steps)
      if (step.is_communication()) last = std::max(last, rounds[r][step.id]);
  EXPECT_EQ(last + 1, 2 * (5 - 1) + 1);  // round 0 holds the initial copies
}

}  // namespace
}  // namespace spora::parallel
