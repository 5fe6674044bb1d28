// Simulated all-reduce times against their alpha-beta closed forms, on a contention-free
// machine (tests/sim/data/alpha-beta.yaml: p devices, each with its own full-duplex port to a
// non-blocking switch; alpha = 10 us device to device, B = 10 GB/s per port and direction).
//
// The network model (sim/platform.h) is SimGrid's CM02 with latency and bandwidth factors 1,
// no TCP window bound, no reverse cross-traffic: a message of s bytes alone on its route takes
// alpha + s/B, and flows sharing a port share B equally. Memory runs at 1 PB/s, so copies and
// reductions cost nothing measurable, except where a test sets a finite memory bandwidth M.
// N bytes are reduced over p ranks; m = N/p is a ring block (N is divisible by every p used).
//
// Ring (ring.cpp): p-1 reduce-scatter hops, then p-1 all-gather hops. In every hop each rank
// sends one block to its successor and receives one from its predecessor: one flow per port
// direction, no contention; hop k+1 needs the block received in hop k. With `chunks` c and the
// pair ordering of sim/collectives.h, the c pieces of a hop follow each other on the link and
// every link is busy through all 2(p-1) hops, so chunking only adds latencies:
//     T_ring = 2(p-1) (c alpha + N/(pB))
//
// Double binary tree (tree.cpp, p = 2^k, unchunked): half of the data on each of two trees of
// depth k whose top has one child; both trees run at once on disjoint ports. Reduce: on each
// of the k-1 levels below the top a parent receives from two children *one after the other*
// (both receives accumulate into the same buffer, so the schedule orders them), each alpha +
// (N/2)/B; then the top child sends to the top, alpha + (N/2)/B. Broadcast: the top sends
// back down (alpha + (N/2)/B); on each of the k-1 levels a parent sends to its two children at
// once, sharing its port (alpha + N/B).
//     T_tree = (k-1)(2 alpha + N/B) + 2 (alpha + N/(2B)) + (k-1)(alpha + N/B)
//            = (3k - 1) alpha + (2k - 1) N/B
//
// Halving-doubling (halving_doubling.cpp, Rabenseifner): q = 2^floor(log2 p), rem = p - q.
// Round i = 1..log2 q of the reduce-scatter exchanges N/2^i bytes with a partner in both
// directions at once (full duplex: no contention); the all-gather mirrors it. When p is not a
// power of two, 2 rem ranks first fold pairwise (alpha + N/B) and unfold at the end.
//     T_hd = 2 log2(q) alpha + 2 N (q-1)/(q B)  [+ 2 (alpha + N/B) if rem > 0]
//
// Memory costs (ring, finite M): each rank copies the p-1 blocks it will reduce into, one after
// another in the order the hops need them (2m/M each), so the first receive waits for one copy
// and the others are done before their hops when 2m/M <= alpha + m/B; a reduction reads two
// blocks and writes one, 3m/M. `staged` reduces after each receive, so each of the p-1
// reduce-scatter hops also pays 3m/M (the copies must be over before the first reduction
// shares the device with them: (p-2) 2m/M <= alpha + m/B); `fused` overlaps it with the
// transfer and pays nothing when 3m/M < alpha + m/B:
//     T_staged = 2m/M + (p-1)(alpha + m/B + 3m/M) + (p-1)(alpha + m/B)
//     T_fused  = 2m/M + 2(p-1)(alpha + m/B)
//
// SimGrid's factors: with --cfg=network/latency-factor:f_l and bandwidth-factor:f_b (LV08
// uses 13.01 and 0.97), every message takes f_l alpha + s/(f_b B); the closed forms follow by
// substituting alpha and B.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"

namespace spora::sim {
namespace {

using parallel::Algorithm;

constexpr double kAlpha = 10e-6, kB = 10e9;
constexpr std::int64_t kCount = 240 * 65536;  // f32 elements: N = 62,914,560 bytes
constexpr double kN = kCount * 4.0;

const ClusterSpec& machine() {
  static const ClusterSpec spec =
      load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/alpha-beta.yaml");
  return spec;
}

struct Case {
  std::string name;
  Algorithm algorithm;
  int ranks, chunks;
  std::function<double()> closed_form;
};

double simulate(const ClusterSpec& spec, Algorithm a, int p, int chunks,
                const SimOptions& options = {}) {
  const parallel::CollectiveSpec c{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, p,
                                   kCount};
  return simulate_collective(spec, parallel::build_schedule(a, c, {chunks, 0}), options).seconds;
}

void expect_close(const std::string& name, double simulated, double closed) {
  const double error = (simulated - closed) / closed;
  std::printf("  %-34s closed form %12.3f us  simulated %12.3f us  error %+.5f%%\n", name.c_str(),
              closed * 1e6, simulated * 1e6, error * 100);
  EXPECT_LT(std::abs(error), 0.05) << name;
}

TEST(AlphaBeta, AllReduceClosedForms) {
  const double a = kAlpha, B = kB, N = kN;
  auto ring = [&](int p, int c) { return 2 * (p - 1) * (c * a + N / (p * B)); };
  auto tree = [&](int k) { return (3 * k - 1) * a + (2 * k - 1) * N / B; };
  auto hd = [&](int p) {
    int q = 1, rounds = 0;
    while (q * 2 <= p) q *= 2, ++rounds;
    const double fold = p > q ? 2 * (a + N / B) : 0;
    return fold + 2 * rounds * a + 2 * N * (q - 1) / (q * B);
  };
  const std::vector<Case> cases{
      {"ring p=4", Algorithm::Ring, 4, 1, [&] { return ring(4, 1); }},
      {"ring p=8", Algorithm::Ring, 8, 1, [&] { return ring(8, 1); }},
      {"ring p=5", Algorithm::Ring, 5, 1, [&] { return ring(5, 1); }},
      {"ring p=8 chunks=4", Algorithm::Ring, 8, 4, [&] { return ring(8, 4); }},
      {"ring p=16 chunks=3", Algorithm::Ring, 16, 3, [&] { return ring(16, 3); }},
      {"tree p=4", Algorithm::Tree, 4, 1, [&] { return tree(2); }},
      {"tree p=8", Algorithm::Tree, 8, 1, [&] { return tree(3); }},
      {"tree p=16", Algorithm::Tree, 16, 1, [&] { return tree(4); }},
      {"halving-doubling p=8", Algorithm::HalvingDoubling, 8, 1, [&] { return hd(8); }},
      {"halving-doubling p=16", Algorithm::HalvingDoubling, 16, 1, [&] { return hd(16); }},
      {"halving-doubling p=6", Algorithm::HalvingDoubling, 6, 1, [&] { return hd(6); }},
      {"halving-doubling p=12", Algorithm::HalvingDoubling, 12, 1, [&] { return hd(12); }},
  };
  std::vector<parallel::Schedule> schedules;
  for (const Case& c : cases)
    schedules.push_back(parallel::build_schedule(
        c.algorithm, {parallel::Collective::AllReduce, parallel::ReduceOp::Sum, c.ranks, kCount},
        {c.chunks, 0}));
  const std::vector<SimResult> results = simulate_collectives(machine(), schedules);
  for (std::size_t i = 0; i < cases.size(); ++i)
    expect_close(cases[i].name, results[i].seconds, cases[i].closed_form());
}

TEST(AlphaBeta, RingWithMemoryCosts) {
  ClusterSpec spec = machine();
  const double p = 8, m = kN / p, a = kAlpha, B = kB;
  double M = 200e9;
  spec.device.memory_bandwidth = M;
  ASSERT_LE((p - 2) * 2 * m / M, a + m / B);
  SimOptions staged;
  staged.recv_reduce = RecvReduceModel::Staged;
  expect_close("ring p=8 staged, M=200 GB/s", simulate(spec, Algorithm::Ring, 8, 1, staged),
               2 * m / M + (p - 1) * (a + m / B + 3 * m / M) + (p - 1) * (a + m / B));
  M = 40e9;
  spec.device.memory_bandwidth = M;
  ASSERT_LT(3 * m / M, a + m / B);
  expect_close("ring p=8 fused, M=40 GB/s", simulate(spec, Algorithm::Ring, 8, 1),
               2 * m / M + 2 * (p - 1) * (a + m / B));
}

TEST(AlphaBeta, SimGridModelFactors) {
  SimOptions lv08;
  lv08.simgrid_args = {"--cfg=network/latency-factor:13.01", "--cfg=network/bandwidth-factor:0.97"};
  const double p = 8;
  expect_close("ring p=8, factors 13.01 / 0.97", simulate(machine(), Algorithm::Ring, 8, 1, lv08),
               2 * (p - 1) * (13.01 * kAlpha + kN / (p * 0.97 * kB)));
}

// Without the pair ordering, the pieces of a chunked transfer share the link and arrive
// together: chunking then changes nothing at all.
TEST(AlphaBeta, UnorderedPiecesShareTheLink) {
  SimOptions unordered;
  unordered.ordered_pairs = false;
  expect_close("ring p=8 chunks=4 unordered", simulate(machine(), Algorithm::Ring, 8, 4, unordered),
               2 * 7 * (kAlpha + kN / (8 * kB)));
}

}  // namespace
}  // namespace spora::sim
