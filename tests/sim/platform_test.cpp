// The platforms built from cluster specs: hosts, speeds and the routes between devices (links
// and end-to-end latency), for every interconnect kind and fabric topology. Each platform is
// built in its own process (sim/isolation.h); the child answers with text.
#include "sim/platform.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/isolation.h"

namespace spora::sim {
namespace {

namespace sg4 = simgrid::s4u;

const std::string kDir = SPORA_SOURCE_DIR "/examples/clusters/";

// Builds the platform of `spec` and describes the routes between the given device pairs as
// "a -> b: link link ... (latency us)", one per line; the first line counts hosts.
std::string routes(const ClusterSpec& spec, const std::vector<std::pair<int, int>>& pairs) {
  return run_isolated([&] {
    int argc = 2;
    char name[] = "test", log[] = "--log=root.thres:critical";
    char* argv[] = {name, log, nullptr};
    sg4::Engine engine(&argc, argv);
    configure_network_model();
    const Platform p = build_platform(spec);
    std::string out = fmt::format("{} hosts, {} at {:g} flop/s\n", p.devices.size(),
                                  p.devices[0]->get_name(), p.devices[0]->get_speed());
    for (const auto& [a, b] : pairs) {
      std::vector<sg4::Link*> links;
      double latency = 0;
      p.devices[a]->route_to(p.devices[b], links, &latency);
      out += p.devices[a]->get_name() + " -> " + p.devices[b]->get_name() + ":";
      for (const sg4::Link* l : links)
        out += fmt::format(" {}[{:g}]", l->get_name(), l->get_bandwidth() / 1e9);
      out += fmt::format(" ({:g} us)\n", latency * 1e6);
    }
    return out;
  });
}

ClusterSpec node_of(InterconnectKind kind, int devices) {
  ClusterSpec s;
  s.name = "t";
  s.devices_per_node = devices;
  s.device.kind = "gpu";
  s.device.peak_flops["f32"] = 1e12;
  s.device.memory_bytes = 1e9;
  s.device.memory_bandwidth = 1e12;
  s.interconnect.kind = kind;
  s.interconnect.bandwidth = 10e9;
  s.interconnect.latency = 2e-6;
  return s;
}

TEST(Platform, SwitchNode) {
  EXPECT_EQ(routes(load_cluster_spec(kDir + "dgx-a100.yaml"), {{0, 1}, {7, 3}}),
            "8 hosts, node0-gpu0 at 3.12e+14 flop/s\n"
            "node0-gpu0 -> node0-gpu1: node0-gpu0-port_UP[240] node0-gpu1-port_DOWN[240] (1 us)\n"
            "node0-gpu7 -> node0-gpu3: node0-gpu7-port_UP[240] node0-gpu3-port_DOWN[240] (1 us)\n");
}

TEST(Platform, RingTakesTheShorterWay) {
  EXPECT_EQ(routes(node_of(InterconnectKind::Ring, 6), {{0, 2}, {0, 4}, {0, 3}, {5, 0}}),
            "6 hosts, node0-gpu0 at 1e+12 flop/s\n"
            "node0-gpu0 -> node0-gpu2: node0-ring0_UP[10] node0-ring1_UP[10] (4 us)\n"
            "node0-gpu0 -> node0-gpu4: node0-ring5_DOWN[10] node0-ring4_DOWN[10] (4 us)\n"
            "node0-gpu0 -> node0-gpu3: node0-ring0_UP[10] node0-ring1_UP[10] node0-ring2_UP[10] "
            "(6 us)\n"
            "node0-gpu5 -> node0-gpu0: node0-ring5_UP[10] (2 us)\n");
}

TEST(Platform, MeshWithTwoGroups) {
  ClusterSpec s = node_of(InterconnectKind::Mesh, 8);
  s.interconnect.groups = 2;
  s.interconnect.bridge_bandwidth = 32e9;
  s.interconnect.bridge_latency = 4e-6;
  EXPECT_EQ(routes(s, {{0, 3}, {3, 0}, {1, 6}}),
            "8 hosts, node0-gpu0 at 1e+12 flop/s\n"
            "node0-gpu0 -> node0-gpu3: node0-mesh0-3_UP[10] (2 us)\n"
            "node0-gpu3 -> node0-gpu0: node0-mesh0-3_DOWN[10] (2 us)\n"
            "node0-gpu1 -> node0-gpu6: node0-gpu1-bridge_UP[32] node0-gpu6-bridge_DOWN[32] "
            "(4 us)\n");
}

TEST(Platform, SharedBus) {
  EXPECT_EQ(routes(load_cluster_spec(SPORA_SOURCE_DIR "/tests/sim/data/two-cores-shared.yaml"), {{0, 1}, {1, 0}}),
            "2 hosts, node0-cpu0 at 9.9e+10 flop/s\n"
            "node0-cpu0 -> node0-cpu1: node0-bus[22.5] (1 us)\n"
            "node0-cpu1 -> node0-cpu0: node0-bus[22.5] (1 us)\n");
}

// Between nodes: the device's NIC, the fabric (2 links to a node under the same leaf switch,
// 4 through a spine), the peer's NIC. 1 us per NIC, 0.5 us per fabric link.
TEST(Platform, FatTreeCluster) {
  const std::string r = routes(load_cluster_spec(kDir + "dgx-a100-cluster-32.yaml"),
                               {{0, 9}, {0, 8}, {0, 64}, {3, 255}});
  EXPECT_EQ(r.substr(0, r.find('\n')), "256 hosts, node0-gpu0 at 3.12e+14 flop/s");
  EXPECT_NE(r.find("node0-gpu0 -> node1-gpu1: node0-nic0_UP[23.5] "), std::string::npos) << r;
  EXPECT_NE(r.find("node1-nic1_DOWN[23.5] (3 us)\nnode0-gpu0 -> node1-gpu0"), std::string::npos)
      << r;
  EXPECT_NE(r.find("node8-nic0_DOWN[23.5] (4 us)\n"), std::string::npos) << r;  // via a spine
  EXPECT_NE(r.find("node0-gpu3 -> node31-gpu7: node0-nic3_UP[23.5] "), std::string::npos) << r;
  // Every fabric link carries a node's injection bandwidth: 8 x 200 Gb/s x 0.94.
  EXPECT_NE(r.find("[188]"), std::string::npos) << r;
}

// Four NICs for eight devices (nccl-tests#119's servers): devices 2j and 2j+1 share NIC j, on
// the way out and on the way in, and a node's fabric link carries its four NICs.
TEST(Platform, TwoDevicesPerNic) {
  const std::string r =
      routes(load_cluster_spec(kDir + "a100-3x4nic.yaml"), {{1, 10}, {3, 12}, {7, 16}, {6, 7}});
  EXPECT_EQ(r.substr(0, r.find('\n')), "24 hosts, node0-gpu0 at 3.12e+14 flop/s");
  EXPECT_NE(r.find("node0-gpu1 -> node1-gpu2: node0-nic0_UP[23.5] "), std::string::npos) << r;
  EXPECT_NE(r.find(" node1-nic1_DOWN[23.5] (3 us)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("node0-gpu3 -> node1-gpu4: node0-nic1_UP[23.5] "), std::string::npos) << r;
  EXPECT_NE(r.find(" node1-nic2_DOWN[23.5] (3 us)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("node0-gpu7 -> node2-gpu0: node0-nic3_UP[23.5] "), std::string::npos) << r;
  EXPECT_NE(r.find(" node2-nic0_DOWN[23.5] (3 us)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("[94]"), std::string::npos) << r;  // 4 x 200 Gb/s x 0.94
  EXPECT_NE(r.find("node0-gpu6 -> node0-gpu7: node0-gpu6-port_UP[240] node0-gpu7-port_DOWN[240] "
                   "(1 us)\n"),
            std::string::npos)
      << r;
}

TEST(Platform, TorusOfChips) {
  // 64 single-chip nodes, no NIC: a chip is a port of the torus. (0,0,0) -> (2,2,2) is 6 hops.
  const std::string r = routes(load_cluster_spec(kDir + "tpu-v4-4x4x4.yaml"), {{0, 1}, {0, 42}});
  EXPECT_EQ(r.substr(0, r.find('\n')), "64 hosts, node0-tpu0 at 2.75e+14 flop/s");
  EXPECT_NE(r.find("node0-tpu0 -> node1-tpu0:"), std::string::npos) << r;
  EXPECT_NE(r.find("(1 us)\n"), std::string::npos) << r;
  EXPECT_NE(r.find("(6 us)\n"), std::string::npos) << r;
}

TEST(Platform, DragonflyAndSwitchFabrics) {
  ClusterSpec s = node_of(InterconnectKind::Switch, 2);
  s.nodes = 8;
  NetworkSpec n;
  n.nics_per_node = 1;
  n.nic_bandwidth = 25e9;
  n.link_bandwidth = 25e9;
  n.latency = 1e-6;
  n.topology.kind = TopologyKind::Dragonfly;
  n.topology.groups = 2;
  n.topology.chassis = 2;
  n.topology.routers = 2;
  n.topology.nodes_per_router = 1;
  s.network = n;
  const std::string r = routes(s, {{0, 15}});
  EXPECT_EQ(r.substr(0, r.find('\n')), "16 hosts, node0-gpu0 at 1e+12 flop/s");
  EXPECT_NE(r.find("node0-gpu0 -> node7-gpu1: node0-nic0_UP[25]"), std::string::npos) << r;

  s.network->topology = TopologySpec{};
  s.network->topology.down = {8};
  EXPECT_NE(routes(s, {{0, 15}}).find("node7-nic0_DOWN[25] (2 us)"), std::string::npos);
}

}  // namespace
}  // namespace spora::sim
