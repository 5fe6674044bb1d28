// The simulator against published measurements: ring all-reduce bus bandwidth on single DGX
// nodes and across nodes (one channel per NIC), from tests/sim/data/published.yaml (figures and
// sources there).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"

namespace spora::sim {
namespace {

TEST(Published, RingAllReduceBusBandwidth) {
  const YAML::Node entries = YAML::LoadFile(SPORA_SOURCE_DIR "/tests/sim/data/published.yaml");
  ASSERT_GE(entries.size(), 1u);
  for (const YAML::Node& e : entries) {
    const std::string system = e["system"].as<std::string>();
    SCOPED_TRACE(system);
    const ClusterSpec cluster =
        load_cluster_spec(SPORA_SOURCE_DIR "/" + e["cluster"].as<std::string>());
    const int p = e["ranks"].as<int>();
    const double bytes = *parse_bytes(e["size"].as<std::string>());
    ASSERT_EQ(e["dtype"].as<std::string>(), "f32");
    const parallel::CollectiveSpec spec{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, p,
                                        static_cast<std::int64_t>(bytes / 4)};
    const auto algorithm = parallel::parse_algorithm(e["algorithm"].as<std::string>());
    ASSERT_TRUE(algorithm);
    const int per_node = p % cluster.devices_per_node == 0 ? cluster.devices_per_node : 0;
    const int channels =
        *algorithm == parallel::Algorithm::Ring ? default_ring_channels(cluster, p) : 1;
    const SimResult r = simulate_collective(
        cluster, parallel::build_schedule(*algorithm, spec, {1, per_node, channels}));
    const double busbw = bytes / r.seconds * 2 * (p - 1) / p;
    const double published = *parse_bandwidth(e["busbw"].as<std::string>());
    const double error = (busbw - published) / published;
    std::printf(
        "  %s: %d channel(s), simulated busbw %.1f GB/s, published %.1f GB/s, error %+.1f%%\n",
        system.c_str(), channels, busbw / 1e9, published / 1e9, error * 100);
    EXPECT_LT(std::abs(error), e["tolerance"].as<double>());
  }
}

}  // namespace
}  // namespace spora::sim
