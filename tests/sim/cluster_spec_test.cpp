// Cluster specs: units, the shipped examples, and bad specs rejected with exact messages
// (never a crash: a sweep of mutilated specs must only ever raise ClusterSpecError).
#include "sim/cluster_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace spora::sim {
namespace {

const std::string kDir = SPORA_SOURCE_DIR "/examples/clusters/";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Units, Bandwidths) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth("300 GB/s"), 300e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("200 Gb/s"), 25e9);  // bits
  EXPECT_DOUBLE_EQ(*parse_bandwidth("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("2 TB/s"), 2e12);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("1 GiB/s"), 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("1e9"), 1e9);  // bytes/s
  EXPECT_FALSE(parse_bandwidth("300 GB"));
  EXPECT_FALSE(parse_bandwidth("fast"));
  EXPECT_FALSE(parse_bandwidth("300 gB/s"));
}

TEST(Units, FlopRatesSizesDurations) {
  EXPECT_DOUBLE_EQ(*parse_flop_rate("312 TFLOP/s"), 312e12);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("19.5 Tflops"), 19.5e12);
  EXPECT_DOUBLE_EQ(*parse_flop_rate("198 GFLOPS"), 198e9);
  EXPECT_FALSE(parse_flop_rate("312 T"));
  EXPECT_DOUBLE_EQ(*parse_bytes("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parse_bytes("32 GiB"), 32.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5 us"), 1.5e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("500 ns"), 500e-9);
  EXPECT_DOUBLE_EQ(*parse_duration("2 ms"), 2e-3);
  EXPECT_DOUBLE_EQ(*parse_duration("0"), 0);
  EXPECT_FALSE(parse_duration("1 min"));
  EXPECT_EQ(format_bandwidth(300e9), "300 GB/s");
  EXPECT_EQ(format_duration(1.5e-6), "1.5 us");
}

TEST(ClusterSpec, EveryShippedSpecLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const ClusterSpec spec = load_cluster_spec(entry.path().string());
    EXPECT_GT(spec.device_count(), 0);
    EXPECT_GT(spec.device.max_peak_flops(), 0);
    EXPECT_EQ(spec.nodes > 1, spec.network.has_value() && spec.nodes > 1);
    ++count;
  }
  EXPECT_GE(count, 7);
}

TEST(ClusterSpec, DgxA100Figures) {
  const ClusterSpec s = load_cluster_spec(kDir + "dgx-a100.yaml");
  EXPECT_EQ(s.name, "dgx-a100");
  EXPECT_EQ(s.device_count(), 8);
  EXPECT_DOUBLE_EQ(s.device.peak_flops.at("bf16"), 312e12);
  EXPECT_DOUBLE_EQ(s.device.peak_flops.at("f32"), 19.5e12);
  EXPECT_DOUBLE_EQ(s.device.peak_flops.at("tf32"), 156e12);
  EXPECT_DOUBLE_EQ(s.device.memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(s.device.memory_bandwidth, 2039e9);
  EXPECT_EQ(s.interconnect.kind, InterconnectKind::Switch);
  EXPECT_DOUBLE_EQ(s.interconnect.bandwidth, 300e9);
  ASSERT_TRUE(s.network);
  EXPECT_EQ(s.network->nics_per_node, 8);
  EXPECT_DOUBLE_EQ(s.network->nic_bandwidth, 25e9);  // 200 Gb/s
  EXPECT_DOUBLE_EQ(s.network->link_bandwidth, 200e9);
  EXPECT_EQ(s.summary(), "dgx-a100: 1 node x 8 NVIDIA A100-SXM4-80GB, switch 300 GB/s per device");
}

TEST(ClusterSpec, TopologiesOfTheClusters) {
  const ClusterSpec a = load_cluster_spec(kDir + "dgx-a100-cluster-32.yaml");
  EXPECT_EQ(a.device_count(), 256);
  EXPECT_EQ(a.network->topology.kind, TopologyKind::FatTree);
  EXPECT_EQ(a.network->topology.down, (std::vector<unsigned>{8, 4}));
  EXPECT_EQ(a.network->topology.fat_tree_up(), (std::vector<unsigned>{1, 8}));  // non-blocking
  const ClusterSpec h = load_cluster_spec(kDir + "dgx-h100-cluster-64.yaml");
  EXPECT_EQ(h.network->topology.fat_tree_up(), (std::vector<unsigned>{1, 4}));  // 2:1
  const ClusterSpec t = load_cluster_spec(kDir + "tpu-v4-4x4x4.yaml");
  EXPECT_EQ(t.network->topology.dims, (std::vector<unsigned long>{4, 4, 4}));
  EXPECT_EQ(t.network->nics_per_node, 0);
  const ClusterSpec n = load_cluster_spec(kDir + "ascend-910-8npu.yaml");
  EXPECT_EQ(n.interconnect.kind, InterconnectKind::Mesh);
  EXPECT_EQ(n.interconnect.groups, 2);
}

TEST(ClusterSpec, DefaultFatTreeShape) {
  const std::string text = R"(
nodes: 32
devices_per_node: 1
device: {peak_flops: {f32: 1 TFLOP/s}, memory: 1 GB, memory_bandwidth: 1 TB/s}
interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 0}
network: {link_bandwidth: 1 GB/s, latency: 1 us, topology: {kind: fat-tree, levels: 3}}
)";
  const ClusterSpec s = parse_cluster_spec(text, "ft.yaml");
  EXPECT_EQ(s.name, "ft");
  EXPECT_EQ(s.network->topology.down, (std::vector<unsigned>{4, 4, 2}));
}

// A valid spec that each bad case changes in one place.
const std::string kGood = R"(name: dgx
nodes: 2
devices_per_node: 8
device:
  peak_flops: {bf16: 312 TFLOP/s, f32: 19.5 TFLOP/s}
  memory: 80 GB
  memory_bandwidth: 2039 GB/s
interconnect:
  kind: switch
  bandwidth: 300 GB/s
  latency: 1 us
network:
  nics_per_node: 8
  nic_bandwidth: 200 Gb/s
  latency: 1 us
  topology: switch
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    parse_cluster_spec(text, "dgx.yaml");
  } catch (const ClusterSpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(BadSpecs, ExactMessages) {
  ASSERT_EQ(error_of(kGood), "(accepted)");
  const std::vector<std::pair<std::string, std::string>> cases{
      {replace(kGood, "nodes: 2", "nodes: -1"),
       "dgx.yaml: nodes: expected a positive integer, got -1"},
      {replace(kGood, "devices_per_node: 8", "devices_per_node: 2.5"),
       "dgx.yaml: devices_per_node: expected a positive integer, got 2.5"},
      {replace(kGood, "devices_per_node: 8", "devices_per_node: eight"),
       "dgx.yaml: devices_per_node: expected a positive integer, got \"eight\""},
      {replace(kGood, "nodes: 2\n", ""), "dgx.yaml: nodes: required field is missing"},
      {replace(kGood, "  bandwidth: 300 GB/s", "  bandwith: 300 GB/s"),
       "dgx.yaml: interconnect.bandwith: unknown field (did you mean 'bandwidth'?)"},
      {replace(kGood, "  bandwidth: 300 GB/s", "  bandwidth: 300 GB"),
       "dgx.yaml: interconnect.bandwidth: expected a bandwidth such as \"300 GB/s\", got "
       "\"300 GB\""},
      {replace(kGood, "  bandwidth: 300 GB/s", "  bandwidth: 0 GB/s"),
       "dgx.yaml: interconnect.bandwidth: expected a positive bandwidth, got \"0 GB/s\""},
      {replace(kGood, "  latency: 1 us\nnetwork", "  latency: -1 us\nnetwork"),
       "dgx.yaml: interconnect.latency: expected a non-negative duration, got \"-1 us\""},
      {replace(kGood, "kind: switch", "kind: tree"),
       "dgx.yaml: interconnect.kind: expected one of switch, ring, mesh, shared, got \"tree\""},
      {replace(kGood, "f32: 19.5 TFLOP/s", "fp32: 19.5 TFLOP/s"),
       "dgx.yaml: device.peak_flops.fp32: unknown field (did you mean 'f32'?)"},
      {replace(kGood, "bf16: 312 TFLOP/s", "bf16: 312 TB/s"),
       "dgx.yaml: device.peak_flops.bf16: expected a FLOP rate such as \"312 TFLOP/s\", got "
       "\"312 TB/s\""},
      {replace(kGood, "memory: 80 GB", "memory: 0"),
       "dgx.yaml: device.memory: expected a positive size, got 0"},
      {replace(kGood, "memory: 80 GB", "memory: [80, GB]"),
       "dgx.yaml: device.memory: expected a size such as \"80 GB\", got a list"},
      {replace(kGood, "  memory_bandwidth: 2039 GB/s\n", ""),
       "dgx.yaml: device.memory_bandwidth: required field is missing"},
      {replace(kGood, "  kind: switch\n", "  kind: switch\n  efficiency: 1.5\n"),
       "dgx.yaml: interconnect.efficiency: expected a number in (0, 1], got 1.5"},
      {replace(kGood, "  kind: switch\n", "  kind: mesh\n  groups: 3\n"),
       "dgx.yaml: interconnect.groups: 3 groups do not divide devices_per_node (8)"},
      {replace(kGood, "  kind: switch\n", "  kind: mesh\n  groups: 2\n"),
       "dgx.yaml: interconnect.bridge_bandwidth: required field is missing"},
      {replace(kGood, "  kind: switch\n", "  kind: ring\n  groups: 2\n"),
       "dgx.yaml: interconnect.groups: only a mesh interconnect has groups"},
      {kGood.substr(0, kGood.find("network:")),
       "dgx.yaml: network: required field is missing (the cluster has 2 nodes)"},
      {replace(kGood, "  nics_per_node: 8\n", ""),
       "dgx.yaml: network.nics_per_node: required field is missing (nodes have 8 devices)"},
      {replace(kGood, "nics_per_node: 8", "nics_per_node: 0"),
       "dgx.yaml: network.nics_per_node: expected a positive integer, got 0"},
      {replace(kGood, "topology: switch", "topology: hypercube"),
       "dgx.yaml: network.topology: expected switch or a map with a kind (switch, fat-tree, "
       "torus, dragonfly), got \"hypercube\""},
      {replace(kGood, "topology: switch", "topology: {kind: torus, dims: [2, 2]}"),
       "dgx.yaml: network.topology.dims: 2 x 2 = 4 nodes, but the cluster has 2"},
      {replace(kGood, "topology: switch", "topology: {kind: torus, dims: [2, 0]}"),
       "dgx.yaml: network.topology.dims[1]: expected positive integers, got 0"},
      {replace(kGood, "topology: switch", "topology: {kind: torus, levels: 2, dims: [2]}"),
       "dgx.yaml: network.topology.levels: not a parameter of a torus topology"},
      {replace(kGood, "topology: switch", "topology: {kind: fat-tree, levels: 2, down: [2]}"),
       "dgx.yaml: network.topology.down: expected 2 entries (one per level), got 1"},
      {replace(kGood, "topology: switch",
               "topology: {kind: fat-tree, levels: 2, oversubscription: 0.5}"),
       "dgx.yaml: network.topology.oversubscription: expected a number >= 1 (down:up bandwidth "
       "at each switch), got 0.5"},
      {replace(kGood, "topology: switch", "topology: {kind: dragonfly, groups: 3}"),
       "dgx.yaml: network.topology.groups: 3 x 1 x 1 x 1 = 3 nodes, but the cluster has 2"},
      {"hello",
       "dgx.yaml: expected a map of fields (name, nodes, devices_per_node, device, "
       "interconnect, network), got \"hello\""},
      {"nodes: [1, 2", "dgx.yaml:1:1: invalid YAML: end of sequence flow not found"},
      {"nodes: 1\nwhat: 2\n",
       "dgx.yaml: what: unknown field (known: name, nodes, devices_per_node, device, "
       "interconnect, network, collectives, collective_overhead)"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(error_of(text), message);
  }
}

TEST(BadSpecs, MissingFile) {
  try {
    load_cluster_spec("no/such/cluster.yaml");
    FAIL() << "accepted a missing file";
  } catch (const ClusterSpecError& e) {
    EXPECT_STREQ(e.what(), "no/such/cluster.yaml: cannot open the file");
  }
}

// Every shipped spec, with each line deleted or each value replaced by junk of every shape:
// the reader must accept it or raise a ClusterSpecError, nothing else.
TEST(BadSpecs, NeverCrash) {
  const std::vector<std::string> junk{"-1",    "0", "abc", "[1, 2]", "{a: 1}",    "",
                                      "1e999", "~", "\"",  "3 GB/s", "!!binary 0"};
  int tried = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::vector<std::string> lines;
    std::istringstream in(read(entry.path().string()));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    auto attempt = [&](const std::vector<std::string>& changed) {
      std::string text;
      for (const std::string& l : changed) text += l + "\n";
      ++tried;
      try {
        parse_cluster_spec(text, "m.yaml");
      } catch (const ClusterSpecError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a ClusterSpecError: " << e.what() << "\n" << text;
      }
    };
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::vector<std::string> changed = lines;
      changed.erase(changed.begin() + static_cast<std::ptrdiff_t>(i));
      attempt(changed);
      const auto colon = lines[i].find(':');
      if (colon == std::string::npos || lines[i].find('#') < colon) continue;
      for (const std::string& j : junk) {
        changed = lines;
        changed[i] = lines[i].substr(0, colon + 1) + " " + j;
        attempt(changed);
      }
    }
  }
  EXPECT_GT(tried, 500);
}

}  // namespace
}  // namespace spora::sim
