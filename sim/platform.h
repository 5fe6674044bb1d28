// A ClusterSpec becomes a SimGrid platform, built in code (no XML).
//
//   root: the inter-node fabric, one SimGrid cluster zone (nodes > 1)
//     switch     create_fatTree_zone, 1 level (one switch, every node one link to it)
//     fat-tree   create_fatTree_zone (levels; down; up from the oversubscription; 1 link)
//     torus      create_torus_zone (dims)
//     dragonfly  create_dragonfly_zone (groups, chassis, routers, nodes per router)
//     every fabric link: split duplex, link_bandwidth x efficiency, `latency`
//   a leaf per node: a full zone "node<i>" with one host per device ("node<i>-gpu<d>"), the
//     intra-node links of the interconnect kind, and a gateway router "node<i>-nic" that the
//     devices reach through their NIC ("node<i>-nic<j>", split duplex, NIC bandwidth x
//     efficiency; devices share NICs in contiguous blocks: device d uses NIC d*nics/devices).
//     A node of one device and no NIC is a host straight in the fabric (TPU-like chips).
//   nodes == 1: the node zone is the root.
//
//   interconnect   links (all split duplex unless said)          route a -> b
//   switch         one port per device, latency/2 each           port(a) up, port(b) down
//   ring           link i joins devices i and i+1 (mod n)         the shorter way round,
//                                                                 forward on a tie
//   mesh           one link per pair (inside a group);           link(a, b); across groups:
//                  one bridge port per device across groups       bridge(a) up, bridge(b) down
//   shared         one bus (a shared, not split, link)            bus
//
// Hosts compute at the device's highest peak FLOP/s; costs are computed in seconds and
// converted (Platform::flops_for).
//
// The network model is configured as a plain alpha-beta model (configure_network_model):
// CM02 with latency and bandwidth factors 1, no TCP window bound (TCP-gamma 0), no reverse
// cross-traffic, weight-S 0. A message of s bytes over a route then takes
//   sum of the route's link latencies + s / (the bandwidth max-min fairness gives it),
// the share being the narrowest link's bandwidth when the flow has the links to itself.
//
// SimGrid keeps one engine per process and its zone builders keep static counters: build one
// platform per process. sim/isolation.h runs each simulation in its own process for that.
#pragma once

#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "sim/cluster_spec.h"

namespace spora::sim {

struct Platform {
  std::vector<simgrid::s4u::Host*> devices;  // device (and rank) i = node * devices_per_node + d
  double memory_bandwidth = 0;               // bytes/s of every device
  // Per node, where its devices share fewer cores than they are (device.measured.cores <
  // devices_per_node: ranks of `spora run --ranks N` on a smaller machine): a host of that many
  // cores at a device's speed, on which work that the ranks share the cores for runs (SimGrid's
  // multi-core sharing: each execution gets at most one core per thread, and the running
  // executions share the cores max-min fairly). Empty otherwise. It has no network links.
  std::vector<simgrid::s4u::Host*> node_cores;

  // The amount a host executes to take `seconds` (hosts run at their peak FLOP/s).
  double flops_for(const simgrid::s4u::Host* host, double seconds) const {
    return seconds * host->get_speed();
  }
};

// The --cfg settings of the alpha-beta network model, as "name:value".
const std::vector<std::string>& network_model_config();
// Applies them; call after creating the engine and before building the platform.
void configure_network_model();

// The SimGrid engine of one simulation (call inside sim/isolation.h's run_isolated): quiet
// logging, the alpha-beta network model of network_model_config(), then `extra` engine
// arguments ("--cfg=...", "--log=..."). The argument strings live as long as the engine.
class SimEngine {
 public:
  explicit SimEngine(const std::vector<std::string>& extra);
  simgrid::s4u::Engine& get() { return *engine_; }

 private:
  std::vector<std::string> args_;
  std::vector<char*> argv_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
};

// Whether the devices of a node share fewer cores than they are (Platform::node_cores).
bool shares_cores(const ClusterSpec& spec);

// Builds the platform into the current engine. Throws ClusterSpecError for a spec that SimGrid
// cannot represent.
Platform build_platform(const ClusterSpec& spec);

std::string node_name(int node);                                    // "node3"
std::string device_name(const ClusterSpec& spec, int node, int d);  // "node3-gpu5"

}  // namespace spora::sim
