// Cluster specs: the YAML description of a machine that sim/ turns into a SimGrid platform.
//
//   nodes x devices_per_node devices, all alike;
//   inside a node, an interconnect (switch | ring | mesh | shared);
//   between nodes, NICs and a fabric (switch | fat-tree | torus | dragonfly).
//
// Every field, its unit and its meaning is documented in sim/README.md; the files under
// examples/clusters/ are worked examples with the sources of their figures. Quantities carry
// units ("300 GB/s", "200 Gb/s", "80 GB", "312 TFLOP/s", "1 us") or are plain numbers in SI
// base units (bytes, bytes/s, FLOP/s, seconds).
//
// Errors are for people and name the file and the field, never crash:
//   dgx.yaml: nodes: expected a positive integer, got -1
//   dgx.yaml: interconnect.bandwith: unknown field (did you mean 'bandwidth'?)
//   dgx.yaml:4:3: invalid YAML: end of map not found
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/measured_tables.h"

namespace spora::sim {

class ClusterSpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How well one op class (semantics/cost.h) uses the device: the fraction of its roofline it
// achieves and the fixed time each operation adds (kernel launch, framework dispatch).
struct OpClassSpec {
  double efficiency = 1;                  // in (0, 1]
  std::optional<double> launch_overhead;  // seconds; unset: DeviceSpec::launch_overhead
};

// The op classes a spec may name under device.op_classes (semantics/cost.h lists what each holds).
const std::vector<std::string>& op_class_names();

struct DeviceSpec {
  std::string kind = "gpu";                  // gpu | npu | tpu | cpu: names the hosts (node0-gpu3)
  std::string model;                         // free text, e.g. "NVIDIA A100-SXM4-80GB"
  std::map<std::string, double> peak_flops;  // dtype (f64 f32 tf32 bf16 f16 f8 i8) -> FLOP/s
  double memory_bytes = 0;                   // capacity
  double memory_bandwidth = 0;               // bytes/s
  double launch_overhead = 0;                // seconds per operation, for every op class ...
  std::map<std::string, OpClassSpec> op_classes;  // ... unless its entry here says otherwise
  double comm_sm_share = 0;  // of the device a running collective's kernels hold (0: none);
                             // sim/interference.h
  // `device.measured`: tables `spora calibrate` measured (sim/measured_tables.h). Where a table
  // covers an op, the cost model uses it instead of the roofline and the class's efficiency.
  MeasuredTables measured;
  // `device.kernels`: measured rates of named kernels of the GPT model (sim/transformer/
  // kernels.h), each a fraction: `gemm_ceiling` the best fraction of peak a GEMM reaches (instead
  // of the built-in figure for the device model), `softmax` and `softmax-grad` the fraction of
  // memory_bandwidth the attention's softmax and its gradient reach (instead of the norm class).
  std::map<std::string, double> kernels;

  double max_peak_flops() const;  // the highest entry of peak_flops
};

// The names device.kernels accepts.
const std::vector<std::string>& kernel_rate_names();

enum class InterconnectKind {
  Switch,  // every device has a port (full duplex) to a non-blocking switch (NVSwitch, HCCS-L1)
  Ring,    // device d is linked to d+1 (mod devices); traffic takes the shorter way round
  Mesh,    // a direct link between every pair of devices (HCCS full mesh); optionally groups
  Shared,  // one bus that all transfers share (CPU "devices" copying through DRAM)
};

struct InterconnectSpec {
  InterconnectKind kind = InterconnectKind::Switch;
  double bandwidth = 0;   // bytes/s per link and direction (switch: per device port)
  double latency = 0;     // seconds; switch: device to device; ring, mesh: per link; shared: bus
  double efficiency = 1;  // the fraction of `bandwidth` that payload gets (protocol overhead)
  int groups = 1;         // mesh: full mesh inside each of `groups` equal groups of devices ...
  double bridge_bandwidth = 0;  // ... and across groups through a per-device bridge port
  double bridge_latency = 0;
};

enum class TopologyKind { Switch, FatTree, Torus, Dragonfly };

struct TopologySpec {
  TopologyKind kind = TopologyKind::Switch;
  // fat-tree: SimGrid's (levels; down; up; link count) with down[0] = nodes per leaf switch,
  // the product of `down` = nodes; `up` follows from the oversubscription (down:up ratio).
  int levels = 1;
  std::vector<unsigned> down;
  double oversubscription = 1;
  // torus: one entry per dimension, product = nodes.
  std::vector<unsigned long> dims;
  // dragonfly: groups x chassis x routers x nodes_per_router = nodes; the *_links are the
  // numbers of parallel links between groups, between chassis of a group, between routers.
  unsigned groups = 1, group_links = 1, chassis = 1, chassis_links = 1, routers = 1,
           router_links = 1, nodes_per_router = 1;

  // SimGrid's fat-tree parameters derived from the fields above.
  std::vector<unsigned> fat_tree_up() const;
  std::vector<unsigned> fat_tree_link_count() const;
};

struct NetworkSpec {
  int nics_per_node = 0;     // 0: a single-device node is itself a port of the fabric
  double nic_bandwidth = 0;  // bytes/s per NIC and direction
  double nic_latency = 0;    // seconds, device to fabric
  double link_bandwidth =
      0;                  // bytes/s per fabric link and direction (default: what a node injects)
  double latency = 0;     // seconds per fabric link (cable + switch hop)
  double efficiency = 1;  // payload fraction of NIC and fabric bandwidth
  TopologySpec topology;
};

struct ClusterSpec {
  std::string name;    // from the file (or its file name)
  std::string source;  // the file it was read from ("" when parsed from text)
  int nodes = 1;
  int devices_per_node = 1;
  DeviceSpec device;
  InterconnectSpec interconnect;
  std::optional<NetworkSpec> network;  // required when nodes > 1
  // How the runtime runs a step's collectives (`collectives: overlapped | inline`):
  // overlapped (the default: NCCL on its own stream, PyTorch DDP) hands a gradient's
  // all-reduce to a communication stream and computes on; inline (`spora run`'s MPI executor,
  // which runs each collective where the program reaches it, so this-machine.yaml) blocks the
  // computation until it is done. sim/spmd_step.h simulates both.
  bool overlap_collectives = true;
  // `collective_overhead: 40 us`: what every collective call costs a rank beyond its ring
  // steps (each paying `latency` and bytes over `bandwidth`): for `spora run`'s MPI executor,
  // the piece copies and a transport gone cold during the computation between two calls
  // (`spora calibrate` fits it to collectives measured in place, benchmarks/calibrate/). The SPMD step simulator
  // and the search's analytic oracle charge it once per collective. Default 0.
  double collective_overhead = 0;

  int device_count() const { return nodes * devices_per_node; }
  // "dgx-a100: 1 node x 8 NVIDIA A100-SXM4-80GB, switch 300 GB/s"
  std::string summary() const;
};

// `filename` is used in messages only. Throws ClusterSpecError.
ClusterSpec parse_cluster_spec(std::string_view yaml_text, std::string_view filename);
ClusterSpec load_cluster_spec(const std::string& path);

std::string_view interconnect_kind_name(InterconnectKind k);  // "switch", "ring", ...
std::string_view topology_kind_name(TopologyKind k);          // "switch", "fat-tree", ...

// Unit parsing, shared with the command line. Each returns nullopt when `text` is not a
// number followed by a unit of its quantity (or no unit: SI base units).
std::optional<double> parse_bandwidth(std::string_view text);  // "300 GB/s", "200 Gb/s"
std::optional<double> parse_flop_rate(std::string_view text);  // "19.5 TFLOP/s"
std::optional<double> parse_bytes(std::string_view text);      // "80 GB", "32 GiB"
std::optional<double> parse_duration(std::string_view text);   // "1.5 us", "500 ns"

// Human-readable quantities for messages and table headers: "300 GB/s", "1.5 us".
std::string format_bandwidth(double bytes_per_second);
std::string format_duration(double seconds);

}  // namespace spora::sim
