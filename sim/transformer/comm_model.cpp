#include "sim/transformer/comm_model.h"

#include <fmt/format.h>

#include <algorithm>

namespace spora::sim::transformer {

CommModel::CommModel(const ClusterSpec& cluster, LinkSharing sharing)
    : cluster_(cluster), sharing_(sharing) {}

double CommModel::bandwidth(const Group& g) const {
  const auto& ic = cluster_.interconnect;
  const double intra = ic.bandwidth * ic.efficiency;
  if (!g.spans_nodes() || !cluster_.network) return intra;
  const auto& net = *cluster_.network;
  const double share = static_cast<double>(net.nics_per_node) * static_cast<double>(g.per_node) /
                       static_cast<double>(cluster_.devices_per_node);
  double nics = sharing_.channels ? share : std::min(1.0, share);
  if (!sharing_.nic_sharing) nics = std::max(1.0, nics);
  const double inter = nics * net.nic_bandwidth * net.efficiency;
  return cluster_.devices_per_node > 1 ? std::min(intra, inter) : inter;
}

double CommModel::latency(const Group& g) const {
  if (!g.spans_nodes() || !cluster_.network) return cluster_.interconnect.latency;
  const auto& net = *cluster_.network;
  const int levels =
      net.topology.kind == TopologyKind::FatTree ? std::max(1, net.topology.levels) : 1;
  return 2 * net.nic_latency + 2 * levels * net.latency;
}

double CommModel::seconds(CommKind kind, const Group& g, double bytes) const {
  if (g.size <= 1 || bytes <= 0) return 0;
  const double p = static_cast<double>(g.size);
  const double step = latency(g) + bytes / (p * bandwidth(g));
  return (kind == CommKind::AllReduce ? 2 : 1) * (p - 1) * step;
}

double CommModel::p2p(bool across_nodes, double bytes) const {
  Group g{2, across_nodes ? 1 : 2};
  if (across_nodes && cluster_.network) {
    const auto& net = *cluster_.network;
    return latency(g) + bytes / (net.nic_bandwidth * net.efficiency);
  }
  return latency(g) + bytes / bandwidth(g);
}

Group tensor_group(const ClusterSpec& c, int64_t tp) {
  return {tp, std::min<int64_t>(tp, c.devices_per_node)};
}

Group data_group(const ClusterSpec& c, int64_t tp, int64_t dp) {
  const int64_t dpn = c.devices_per_node;
  const int64_t per_node = tp >= dpn ? 1 : std::min<int64_t>(dp, dpn / tp);
  return {dp, per_node};
}

bool pipeline_crosses_nodes(const ClusterSpec& c, int64_t tp, int64_t dp) {
  return tp * dp >= c.devices_per_node || c.devices_per_node % (tp * dp) != 0;
}

ClusterSpec scale_cluster(const ClusterSpec& c, int64_t gpus) {
  if (gpus < 1 || gpus % c.devices_per_node != 0)
    throw GptConfigError(fmt::format("--gpus {} is not a multiple of the {} devices per node of {}",
                                     gpus, c.devices_per_node, c.name));
  ClusterSpec s = c;
  s.nodes = static_cast<int>(gpus / c.devices_per_node);
  if (s.nodes == c.nodes) return s;
  if (s.nodes > 1 && !s.network)
    throw GptConfigError(
        fmt::format("--gpus {}: {} has one node and no network to grow", gpus, c.name));
  if (!s.network) return s;
  TopologySpec& t = s.network->topology;
  const unsigned nodes = static_cast<unsigned>(s.nodes);
  if (t.kind == TopologyKind::FatTree && !t.down.empty() && nodes > t.down[0] &&
      nodes % t.down[0] == 0) {
    t.levels = 2;
    t.down = {t.down[0], nodes / t.down[0]};
  } else if (t.kind == TopologyKind::FatTree) {
    t.levels = 1;
    t.down = {nodes};
  } else {
    t = TopologySpec{};
  }
  return s;
}

}  // namespace spora::sim::transformer
