// Composed schedules (composed.h): the symbolic checker proves every grid, lane set, phase kind
// and direction the synthesizer can pick, for all four collectives; the description round
// trips; wrong compositions are refused with the reason.
#include "parallel/collectives/composed.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"

namespace spora::parallel {
namespace {

// Every ordered factorisation of p into at most three factors > 1 (and p itself).
std::vector<std::vector<int>> grids(int p) {
  std::vector<std::vector<int>> out{{p}};
  for (int a = 2; a < p; ++a) {
    if (p % a) continue;
    out.push_back({a, p / a});
    for (int b = 2; b < p / a; ++b)
      if ((p / a) % b == 0) out.push_back({a, b, p / a / b});
  }
  return out;
}

std::vector<int> identity_order(std::size_t k) {
  std::vector<int> order(k);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

TEST(Composed, CheckerProvesEveryGridLaneSetAndPhaseKind) {
  int proved = 0;
  for (Collective collective :
       {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
    for (int p : {1, 2, 3, 4, 6, 8, 12})
      for (const std::vector<int>& dims : grids(p))
        for (int kinds = 0; kinds < (1 << dims.size()); ++kinds)
          for (bool rotate : {false, true})
            for (bool both : {false, true}) {
              std::vector<bool> direct;
              for (std::size_t d = 0; d < dims.size(); ++d) direct.push_back(kinds >> d & 1);
              Composition c{
                  dims, {}, rotated_lanes(identity_order(dims.size()), rotate, both, direct), 1};
              for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3 * p + 2}})
                for (int chunks : {1, 2}) {
                  c.chunks = chunks;
                  const CollectiveSpec spec{collective, ReduceOp::Sum, p, count};
                  const Schedule s = build_composed(spec, c);
                  const CheckResult result = check_schedule(s);
                  ASSERT_TRUE(result.ok())
                      << collective_name(collective) << " ranks=" << p << " count=" << count << " "
                      << describe_composition(c) << ": " << result.error;
                  ++proved;
                }
            }
  EXPECT_GT(proved, 2000);
}

// A permutation: NCCL's channel rings as lanes of a one-dimensional grid, and a 2x4 grid whose
// virtual ranks are shuffled.
TEST(Composed, PermutedRanksAreProved) {
  for (Collective collective :
       {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
    for (int ch = 0; ch < 2; ++ch) {
      // Each channel's ring as the one lane of a composition (a composition has one perm).
      Composition one{{16}, ring_channel_order(16, 8, 2, ch), {{{{0, false, false}}}}, 2};
      const CollectiveSpec spec{collective, ReduceOp::Sum, 16, 37};
      const CheckResult r = check_schedule(build_composed(spec, one));
      ASSERT_TRUE(r.ok()) << collective_name(collective) << " channel " << ch << ": " << r.error;
    }
    Composition shuffled{
        {2, 4}, {5, 2, 7, 0, 3, 6, 1, 4}, rotated_lanes({0, 1}, true, true, {false, true}), 1};
    const CollectiveSpec spec{collective, ReduceOp::Sum, 8, 29};
    const CheckResult r = check_schedule(build_composed(spec, shuffled));
    ASSERT_TRUE(r.ok()) << collective_name(collective) << ": " << r.error;
  }
}

// Sixty-four ranks as a 4x4x4 torus, six lanes: the synthesizer's torus candidate.
TEST(Composed, TorusLanesAreProvedAt64Ranks) {
  for (Collective collective :
       {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
    const Composition c{{4, 4, 4}, {}, rotated_lanes({0, 1, 2}, true, true, {}), 2};
    const CollectiveSpec spec{collective, ReduceOp::Sum, 64, 64 * 6 + 5};
    const CheckResult r = check_schedule(build_composed(spec, c));
    ASSERT_TRUE(r.ok()) << collective_name(collective) << ": " << r.error;
  }
}

// Tree packings: binary trees and chains over rotations of the order, 1-4 of them, permuted or
// not, proved for 1-12 ranks; each tree reduces to its root and broadcasts back.
TEST(Composed, TreePackingsAreProved) {
  int proved = 0;
  for (int p = 1; p <= 12; ++p)
    for (TreeShape shape : {TreeShape::Binary, TreeShape::Chain})
      for (int k = 1; k <= std::min(p, 4); ++k)
        for (bool reversed : {false, true}) {
          std::vector<int> perm;
          if (reversed)
            for (int r = 0; r < p; ++r) perm.push_back(p - 1 - r);
          Composition c{{p}, perm, {}, 1, shape, k};
          for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5 * k + 3}})
            for (int chunks : {1, 3}) {
              c.chunks = chunks;
              const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, p, count};
              const CheckResult r = check_schedule(build_composed(spec, c));
              ASSERT_TRUE(r.ok()) << describe_composition(c) << " count " << count << ": "
                                  << r.error;
              ++proved;
            }
        }
  EXPECT_GT(proved, 500);
  // A chain of 4 ranks rooted at 0: rank 3 sends once (up), rank 0 once (down), the others twice.
  const Schedule chain = build_composed({Collective::AllReduce, ReduceOp::Sum, 4, 8},
                                        {{4}, {}, {}, 1, TreeShape::Chain, 1});
  std::vector<int> sends;
  for (const RankProgram& prog : chain.ranks) {
    int n = 0;
    for (const Step& st : prog.steps) n += st.kind == StepKind::Send;
    sends.push_back(n);
  }
  EXPECT_EQ(sends, (std::vector<int>{1, 2, 2, 1}));
  const Composition trees{{8}, {}, {}, 8, TreeShape::Binary, 4};
  EXPECT_EQ(describe_composition(trees), "dims 8 trees binary 4 chunks 8");
  EXPECT_EQ(parse_composition("dims 8 trees binary 4 chunks 8"), trees);
  EXPECT_THROW(parse_composition("dims 8 trees star 4"), std::invalid_argument);
  EXPECT_THROW(build_composed({Collective::AllGather, ReduceOp::Sum, 8, 8}, trees),
               std::invalid_argument);
  EXPECT_THROW(build_composed({Collective::AllReduce, ReduceOp::Sum, 8, 8},
                              {{8}, {}, {}, 1, TreeShape::Chain, 9}),
               std::invalid_argument);
}

// A one-dimensional composition with one lane is the built-in ring: the same message count and
// sizes per rank (all-reduce: 2 (p - 1) messages of n / p).
TEST(Composed, OneLaneRingMovesWhatTheBuiltInRingMoves) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 8, 800};
  const Schedule composed = build_composed(spec, {{8}, {}, {{{{0, false, false}}}}, 1});
  const Schedule ring = build_schedule(Algorithm::Ring, spec);
  for (int r = 0; r < 8; ++r) {
    auto sent = [](const RankProgram& prog) {
      std::int64_t messages = 0, elements = 0;
      for (const Step& s : prog.steps)
        if (s.kind == StepKind::Send) ++messages, elements += s.count();
      return std::pair{messages, elements};
    };
    EXPECT_EQ(sent(composed.ranks[r]), sent(ring.ranks[r])) << "rank " << r;
    EXPECT_EQ(sent(composed.ranks[r]), (std::pair<std::int64_t, std::int64_t>{14, 1400}));
  }
}

// A direct phase sends each peer its part at once: 2 x 4 ranks, direct in the groups of 4,
// a ring across the 2 groups: every rank sends 3 + 1 + 1 + 3 messages.
TEST(Composed, DirectPhaseSendsToEveryPeer) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 8, 64};
  const Composition c{{4, 2}, {}, {{{{0, true, false}, {1, false, false}}}}, 1};
  const Schedule s = build_composed(spec, c);
  ASSERT_TRUE(check_schedule(s).ok());
  for (const RankProgram& prog : s.ranks) {
    std::vector<int> peers;
    for (const Step& st : prog.steps)
      if (st.kind == StepKind::Send) peers.push_back(st.peer);
    EXPECT_EQ(peers.size(), 8u);
  }
}

// All-to-all as dimension-wise direct exchanges: every grid of 1-12 ranks, one lane in either
// order or lanes rotated, permuted or not, chunked, at counts that leave lanes empty or uneven.
TEST(Composed, AllToAllGridsAreProved) {
  int proved = 0;
  for (int p : {1, 2, 3, 4, 6, 8, 12})
    for (const std::vector<int>& dims : grids(p)) {
      const std::vector<int> forward = identity_order(dims.size());
      const std::vector<int> backward(forward.rbegin(), forward.rend());
      const std::vector<bool> direct(dims.size(), true);
      std::vector<int> shuffled(p);
      for (int r = 0; r < p; ++r) shuffled[r] = (r * 5 + 3) % p;
      if (p % 5 == 0) std::iota(shuffled.begin(), shuffled.end(), 0);
      for (const auto& lanes : {rotated_lanes(forward, false, false, direct),
                                rotated_lanes(backward, false, false, direct),
                                rotated_lanes(forward, true, false, direct)})
        for (const std::vector<int>& perm : {std::vector<int>{}, shuffled})
          for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}})
            for (int chunks : {1, 2}) {
              const Composition c{dims, perm, lanes, chunks};
              const CollectiveSpec spec{Collective::AllToAll, ReduceOp::Sum, p, count};
              const CheckResult result = check_schedule(build_composed(spec, c));
              ASSERT_TRUE(result.ok()) << "ranks=" << p << " count=" << count << " "
                                       << describe_composition(c) << ": " << result.error;
              ++proved;
            }
    }
  EXPECT_GT(proved, 300);
  const Composition torus{
      {4, 4, 4}, {}, rotated_lanes({0, 1, 2}, true, false, {true, true, true}), 1};
  const CheckResult r =
      check_schedule(build_composed({Collective::AllToAll, ReduceOp::Sum, 64, 5}, torus));
  EXPECT_TRUE(r.ok()) << r.error;
}

// A 4 x 2 all-to-all in one lane: 3 messages in the groups of 4, then 1 across, each carrying
// the items for that member's coordinate (4 blocks, then 4); the last phase, in the last
// dimension, lands in the output; the direct built-in sends 7 messages of one block.
TEST(Composed, AllToAllSendsOneMessagePerGroupMember) {
  const std::int64_t n = 10;
  const CollectiveSpec spec{Collective::AllToAll, ReduceOp::Sum, 8, n};
  const Schedule s =
      build_composed(spec, {{4, 2}, {}, {{{{0, true, false}, {1, true, false}}}}, 1});
  ASSERT_TRUE(check_schedule(s).ok());
  for (const RankProgram& prog : s.ranks) {
    std::vector<std::int64_t> sizes;
    for (const Step& st : prog.steps)
      if (st.kind == StepKind::Send) sizes.push_back(st.src.count);
    EXPECT_EQ(sizes, (std::vector<std::int64_t>{2 * n, 2 * n, 2 * n, 4 * n}));
    int to_output = 0;
    for (const Step& st : prog.steps)
      if (st.kind == StepKind::Recv && st.dst.buffer == BufferKind::Output) ++to_output;
    EXPECT_EQ(to_output, 1);
  }
}

TEST(Composed, DescriptionRoundTrips) {
  const Composition c{
      {4, 2}, {1, 0, 3, 2, 5, 4, 7, 6}, rotated_lanes({0, 1}, true, true, {true, false}), 4};
  const std::string text = describe_composition(c);
  EXPECT_EQ(text, "dims 4x2 lanes 0d.1,0d.1r,1.0d,1r.0d chunks 4 perm 1,0,3,2,5,4,7,6");
  EXPECT_EQ(parse_composition(text), c);
  EXPECT_THROW(parse_composition("dims 4x2"), std::invalid_argument);
  EXPECT_THROW(parse_composition("dims 4xq lanes 0.1"), std::invalid_argument);
  EXPECT_THROW(parse_composition("dims 4 lanes 0 colour red"), std::invalid_argument);
}

TEST(Composed, WrongCompositionsAreRefusedWithTheReason) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 8, 64};
  auto message = [&](const Composition& c, const CollectiveSpec& s) {
    try {
      build_composed(s, c);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{4, 4}, {}, {{{{0}, {1}}}}, 1}, spec),
            "composed schedule: the dimensions' product 16 is not the 8 ranks");
  EXPECT_EQ(message({{4, 2}, {}, {{{{0}}}}, 1}, spec),
            "composed schedule: a lane misses dimension 1");
  EXPECT_EQ(message({{4, 2}, {}, {{{{0}, {1}, {0}}}}, 1}, spec),
            "composed schedule: a lane repeats dimension 0");
  EXPECT_EQ(message({{8}, {0, 1, 2, 3, 4, 5, 6, 6}, {{{{0}}}}, 1}, spec),
            "composed schedule: perm is not a permutation of the ranks");
  EXPECT_EQ(message({{8}, {}, {}, 1}, spec), "composed schedule: no lane");
  EXPECT_EQ(message({{8}, {}, {{{{0}}}}, 0}, spec), "composed schedule: chunks 0");
  EXPECT_EQ(message({{8}, {}, {{{{0}}}}, 1}, {Collective::AllToAll, ReduceOp::Sum, 8, 8}),
            "composed schedule: an all-to-all phase is a direct exchange, not a ring");
  EXPECT_EQ(message({{8}, {}, {{{{0}}}}, 1}, {Collective::Broadcast, ReduceOp::Sum, 8, 8}),
            "composed schedule: broadcast is not composable");
}

}  // namespace
}  // namespace spora::parallel
