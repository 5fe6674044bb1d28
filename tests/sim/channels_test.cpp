// Ring channels across nodes against their alpha-beta closed form, on a machine whose NICs are
// the bottleneck (tests/sim/data/alpha-beta-nics.yaml: 2 nodes x 4 devices, a 10 GB/s NIC per
// device, 4 us device to device across nodes, 1 TB/s inside a node, free memory).
//
// With C channels (parallel/collectives/ring.cpp) channel c leaves every node from local device
// c and enters the next node at device c + 1: its inter-node hop has NIC c to itself on the
// way out and NIC c + 1 on the way in, so every NIC carries one flow per direction and the
// fabric links (100 GB/s) four at most. A ring all-reduce makes 2(p-1) hops; each hop of a
// channel moves a block of N/(Cp) bytes, and every hop waits for the slowest edge of its ring,
// the inter-node one (the intra-node edges take 1 us + a few us):
//     T_C = 2(p-1) (alpha_net + N/(C p B_nic))
// C = 1 is the plain ring through one NIC per node; C = 4 divides the bandwidth term by 4.
// On one node, where all channels share the same ports, they add no bandwidth (second test).
#include <gtest/gtest.h>

#include <cmath>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"

namespace spora::sim {
namespace {

constexpr double kAlphaNet = 4e-6, kNic = 10e9;
constexpr std::int64_t kCount = 240 * 65536;  // f32 elements: N = 62,914,560 bytes
constexpr double kN = kCount * 4.0;
constexpr int kRanks = 8;

double simulate(int channels) {
  const ClusterSpec spec =
      load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/alpha-beta-nics.yaml");
  EXPECT_EQ(default_ring_channels(spec, kRanks), 4);
  EXPECT_EQ(default_ring_channels(spec, 4), 1);  // one node: one ring
  const parallel::CollectiveSpec c{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, kRanks,
                                   kCount};
  return simulate_collective(
             spec, parallel::build_schedule(parallel::Algorithm::Ring, c, {1, 4, channels}))
      .seconds;
}

double closed_form(int channels) {
  return 2 * (kRanks - 1) * (kAlphaNet + kN / (channels * kRanks * kNic));
}

TEST(RingChannels, AcrossNodesAtTheClosedForm) {
  for (int channels : {1, 2, 4}) {
    const double simulated = simulate(channels), closed = closed_form(channels);
    const double error = (simulated - closed) / closed;
    std::printf(
        "  ring p=8, %d channel(s): closed form %.3f us, simulated %.3f us, error %+.4f%%\n",
        channels, closed * 1e6, simulated * 1e6, error * 100);
    EXPECT_LT(std::abs(error), 0.005) << channels << " channels";
  }
}

// On one node the channels are rotations of the same ring, so they share every NVLink port:
// on tests/sim/data/alpha-beta.yaml (a 10 GB/s port per device, 10 us device to device) two
// channels whose messages share the links (--unordered) each get half of every port, and the
// all-reduce takes the one-ring time 2(p-1)(alpha + N/(pB)): channels add no bandwidth there.
TEST(RingChannels, OneNodeSharesThePorts) {
  const ClusterSpec spec = load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/alpha-beta.yaml");
  const parallel::CollectiveSpec c{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, kRanks,
                                   kCount};
  SimOptions unordered;
  unordered.ordered_pairs = false;
  const double simulated =
      simulate_collective(spec, parallel::build_schedule(parallel::Algorithm::Ring, c, {1, 0, 2}),
                          unordered)
          .seconds;
  const double closed = 2 * (kRanks - 1) * (10e-6 + kN / (kRanks * 10e9));
  std::printf("  ring p=8 on one switch, 2 channels: closed form %.3f us, simulated %.3f us\n",
              closed * 1e6, simulated * 1e6);
  EXPECT_NEAR(simulated, closed, 0.005 * closed);
}

}  // namespace
}  // namespace spora::sim
