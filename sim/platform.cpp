// Building the SimGrid platform of a cluster spec; the layout is drawn in platform.h.
#include "sim/platform.h"

#include <fmt/format.h>

#include <simgrid/kernel/routing/NetPoint.hpp>

namespace spora::sim {

namespace sg4 = simgrid::s4u;
using NetPoint = simgrid::kernel::routing::NetPoint;
using Direction = sg4::LinkInRoute::Direction;

namespace {

sg4::Link* duplex_link(sg4::NetZone* zone, const std::string& name, double bandwidth,
                       double latency) {
  sg4::Link* link = zone->create_split_duplex_link(name, bandwidth);
  link->set_latency(latency)->seal();
  return link;
}

// One node: its zone, its devices, the links between them and the way out to the fabric.
class NodeBuilder {
 public:
  NodeBuilder(const ClusterSpec& spec, Platform& out) : spec_(spec), out_(out) {}

  // The node zone (a child of `parent`, or the root when parent is null) and its gateway
  // (null when the cluster has one node).
  std::pair<sg4::NetZone*, NetPoint*> build(int node, const sg4::NetZone* parent) {
    const InterconnectSpec& ic = spec_.interconnect;
    const int n = spec_.devices_per_node;
    const std::string name = node_name(node);
    sg4::NetZone* zone = sg4::create_full_zone(name);
    if (parent) zone->set_parent(parent);

    std::vector<sg4::Host*> hosts;
    for (int d = 0; d < n; ++d) {
      sg4::Host* host =
          zone->create_host(device_name(spec_, node, d), spec_.device.max_peak_flops());
      host->seal();
      hosts.push_back(host);
      out_.devices[static_cast<std::size_t>(node * n + d)] = host;
    }
    if (shares_cores(spec_)) {
      const int cores = spec_.device.measured.cores;
      if (out_.node_cores.empty()) out_.node_cores.resize(static_cast<std::size_t>(spec_.nodes));
      sg4::Host* shared = zone->create_host(name + "-cores", spec_.device.max_peak_flops());
      shared->set_core_count(cores)->seal();
      out_.node_cores[static_cast<std::size_t>(node)] = shared;
    }

    const double bw = ic.bandwidth * ic.efficiency;
    std::vector<sg4::Link*> ports, ring, bridges;
    std::vector<std::vector<sg4::Link*>> mesh(static_cast<std::size_t>(n),
                                              std::vector<sg4::Link*>(static_cast<std::size_t>(n)));
    sg4::Link* bus = nullptr;
    switch (ic.kind) {
      case InterconnectKind::Switch:
        for (int d = 0; d < n; ++d)
          ports.push_back(duplex_link(zone, hosts[d]->get_name() + "-port", bw, ic.latency / 2));
        break;
      case InterconnectKind::Ring:
        for (int d = 0; d < n; ++d)
          ring.push_back(duplex_link(zone, fmt::format("{}-ring{}", name, d), bw, ic.latency));
        break;
      case InterconnectKind::Mesh: {
        const int size = n / ic.groups;
        for (int a = 0; a < n; ++a)
          for (int b = a + 1; b < n; ++b)
            if (a / size == b / size)
              mesh[a][b] =
                  duplex_link(zone, fmt::format("{}-mesh{}-{}", name, a, b), bw, ic.latency);
        if (ic.groups > 1)
          for (int d = 0; d < n; ++d)
            bridges.push_back(duplex_link(zone, hosts[d]->get_name() + "-bridge",
                                          ic.bridge_bandwidth * ic.efficiency,
                                          ic.bridge_latency / 2));
        break;
      }
      case InterconnectKind::Shared:
        bus = zone->create_link(name + "-bus", bw);
        bus->set_latency(ic.latency)->seal();
        break;
    }

    auto route = [&](int a, int b) {
      std::vector<sg4::LinkInRoute> links;
      switch (ic.kind) {
        case InterconnectKind::Switch:
          links = {{ports[a], Direction::UP}, {ports[b], Direction::DOWN}};
          break;
        case InterconnectKind::Ring: {
          const int forward = ((b - a) % n + n) % n;
          if (forward <= n - forward)
            for (int i = a; i != b; i = (i + 1) % n) links.emplace_back(ring[i], Direction::UP);
          else
            for (int i = a; i != b; i = (i - 1 + n) % n)
              links.emplace_back(ring[(i - 1 + n) % n], Direction::DOWN);
          break;
        }
        case InterconnectKind::Mesh:
          if (mesh[std::min(a, b)][std::max(a, b)])
            links = {
                {mesh[std::min(a, b)][std::max(a, b)], a < b ? Direction::UP : Direction::DOWN}};
          else
            links = {{bridges[a], Direction::UP}, {bridges[b], Direction::DOWN}};
          break;
        case InterconnectKind::Shared:
          links = {sg4::LinkInRoute(bus)};
          break;
      }
      return links;
    };
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b)
          zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr,
                          route(a, b), /*symmetrical=*/false);

    NetPoint* gateway = nullptr;
    if (parent) {
      const NetworkSpec& net = *spec_.network;
      gateway = zone->create_router(name + "-nic");
      std::vector<sg4::Link*> nics;
      for (int j = 0; j < net.nics_per_node; ++j)
        nics.push_back(duplex_link(zone, fmt::format("{}-nic{}", name, j),
                                   net.nic_bandwidth * net.efficiency, net.nic_latency));
      for (int d = 0; d < n; ++d) {
        sg4::Link* nic = nics[static_cast<std::size_t>(d * net.nics_per_node / n)];
        zone->add_route(hosts[d]->get_netpoint(), gateway, nullptr, nullptr, {{nic, Direction::UP}},
                        false);
        zone->add_route(gateway, hosts[d]->get_netpoint(), nullptr, nullptr,
                        {{nic, Direction::DOWN}}, false);
      }
    }
    zone->seal();
    return {zone, gateway};
  }

 private:
  const ClusterSpec& spec_;
  Platform& out_;
};

}  // namespace

const std::vector<std::string>& network_model_config() {
  static const std::vector<std::string> config{
      "network/model:CM02",          // max-min bandwidth sharing, latency paid once per route
      "network/latency-factor:1",    // no slow-start correction of latencies ...
      "network/bandwidth-factor:1",  // ... nor of bandwidths
      "network/weight-S:0",          // sharing weighted by route latency only (RTT fairness)
      "network/TCP-gamma:0",         // no TCP window bound on a flow's rate
      "network/crosstraffic:0",      // no acknowledgement flow on the reverse route
  };
  return config;
}

void configure_network_model() {
  for (const std::string& setting : network_model_config()) sg4::Engine::set_config(setting);
}

// Built with AddressSanitizer (tests/sanitizers): actors run on threads of their own, not on
// the stacks SimGrid switches between, which ASan cannot follow (it warns and may report false
// errors). The simulated times do not depend on the factory.
#if defined(__SANITIZE_ADDRESS__)
#define SPORA_SIM_THREAD_CONTEXTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPORA_SIM_THREAD_CONTEXTS 1
#endif
#endif

SimEngine::SimEngine(const std::vector<std::string>& extra)
    : args_{"spora-sim", "--log=root.thres:critical"} {
  for (const std::string& setting : network_model_config()) args_.push_back("--cfg=" + setting);
#ifdef SPORA_SIM_THREAD_CONTEXTS
  args_.push_back("--cfg=contexts/factory:thread");
#endif
  args_.insert(args_.end(), extra.begin(), extra.end());
  for (std::string& a : args_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  int argc = static_cast<int>(args_.size());
  engine_ = std::make_unique<sg4::Engine>(&argc, argv_.data());
}

std::string node_name(int node) { return fmt::format("node{}", node); }

std::string device_name(const ClusterSpec& spec, int node, int d) {
  return fmt::format("node{}-{}{}", node, spec.device.kind, d);
}

bool shares_cores(const ClusterSpec& spec) {
  return spec.device.measured.cores > 0 && spec.device.measured.cores < spec.devices_per_node;
}

Platform build_platform(const ClusterSpec& spec) {
  Platform out;
  out.devices.resize(static_cast<std::size_t>(spec.device_count()));
  out.memory_bandwidth = spec.device.memory_bandwidth;
  NodeBuilder nodes(spec, out);
  if (spec.nodes == 1) {
    nodes.build(0, nullptr);
    return out;
  }

  const NetworkSpec& net = *spec.network;
  const TopologySpec& topo = net.topology;
  // Each leaf of the fabric: a node zone and its gateway, or (one device, no NIC) the device.
  auto leaf = [&](sg4::NetZone* fabric, const std::vector<unsigned long>& /*coord*/,
                  unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    const int node = static_cast<int>(id);
    if (spec.devices_per_node == 1 && net.nics_per_node == 0) {
      sg4::Host* host =
          fabric->create_host(device_name(spec, node, 0), spec.device.max_peak_flops());
      host->seal();
      out.devices[static_cast<std::size_t>(node)] = host;
      return {host->get_netpoint(), nullptr};
    }
    const auto [zone, gateway] = nodes.build(node, fabric);
    return {zone->get_netpoint(), gateway};
  };
  const sg4::ClusterCallbacks callbacks(leaf);
  const double bw = net.link_bandwidth * net.efficiency;
  const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
  sg4::NetZone* fabric = nullptr;
  try {
    switch (topo.kind) {
      case TopologyKind::Switch:
        fabric = sg4::create_fatTree_zone("fabric", nullptr,
                                          {1, {static_cast<unsigned>(spec.nodes)}, {1}, {1}},
                                          callbacks, bw, net.latency, policy);
        break;
      case TopologyKind::FatTree:
        fabric = sg4::create_fatTree_zone("fabric", nullptr,
                                          {static_cast<unsigned>(topo.levels), topo.down,
                                           topo.fat_tree_up(), topo.fat_tree_link_count()},
                                          callbacks, bw, net.latency, policy);
        break;
      case TopologyKind::Torus:
        fabric = sg4::create_torus_zone("fabric", nullptr, topo.dims, callbacks, bw, net.latency,
                                        policy);
        break;
      case TopologyKind::Dragonfly:
        fabric = sg4::create_dragonfly_zone("fabric", nullptr,
                                            {{topo.groups, topo.group_links},
                                             {topo.chassis, topo.chassis_links},
                                             {topo.routers, topo.router_links},
                                             topo.nodes_per_router},
                                            callbacks, bw, net.latency, policy);
        break;
    }
  } catch (const std::invalid_argument& e) {
    throw ClusterSpecError(fmt::format("{}: network.topology: SimGrid rejects it: {}",
                                       spec.source.empty() ? spec.name : spec.source, e.what()));
  }
  fabric->seal();
  for (std::size_t i = 0; i < out.devices.size(); ++i)
    if (!out.devices[i])
      throw ClusterSpecError(fmt::format("{}: the {} topology did not place device {}", spec.name,
                                         topology_kind_name(topo.kind), i));
  return out;
}

}  // namespace spora::sim
