// Collective and point-to-point times of a GPT step: alpha-beta closed forms of NCCL's ring
// algorithms on a cluster spec, the forms that sim/collectives.h's SimGrid rings reproduce on
// contention-free links (tests/sim/transformer/comm_model_test.cpp checks them against
// simulate_collective on the spec's own platform).
//
// A group is p ranks, g of them per node (Megatron's rank order: tensor-parallel groups are
// consecutive ranks, data-parallel groups have stride tp, pipeline neighbours stride tp x dp).
// Per rank and direction a ring moves data at
//   inside a node     beta = interconnect.bandwidth x interconnect.efficiency
//   across nodes      beta = min(that, g x nics_per_node / devices_per_node x nic_bandwidth x
//                                network.efficiency)
// the second because NCCL runs one ring (channel) per NIC and a group's g ranks of a node reach
// the fabric through their share of the node's NICs (a rail-aligned data-parallel group of one
// GPU per node gets one NIC; a group of a whole DGX, all eight). Megatron's groups of one kind
// run their collectives at the same time, so devices_per_node / g groups share a node's NICs: with
// fewer NICs than GPUs a rail-aligned group gets nics_per_node / devices_per_node of a NIC.
// Both effects can be switched off (LinkSharing) to show their share of a step:
//   channels off      one ring per group: at most one NIC, however many the group's share is
//   nic_sharing off   every group gets at least one whole NIC, as if it ran alone
// Per step, alpha is the route's
// latency: interconnect.latency inside a node, 2 nic_latency + 2 levels x network.latency across
// the fabric.
//   all-reduce       2 (p - 1) (alpha + N / (p beta))
//   all-gather,
//   reduce-scatter   (p - 1) (alpha + N / (p beta))      N: the whole (gathered) tensor
//   p2p              alpha + N / beta                      (one NIC, or the NVLink port)
#pragma once

#include <cstdint>

#include "sim/cluster_spec.h"
#include "sim/transformer/layer_ops.h"

namespace spora::sim::transformer {

struct Group {
  int64_t size = 1;      // p
  int64_t per_node = 1;  // g: its ranks on one node
  bool spans_nodes() const { return size > per_node; }
};

struct LinkSharing {
  bool channels = true;     // one ring per NIC of the group's share (NCCL's channels)
  bool nic_sharing = true;  // concurrent groups share a node's NICs
};

class CommModel {
 public:
  explicit CommModel(const ClusterSpec& cluster, LinkSharing sharing = {});
  double bandwidth(const Group& g) const;  // beta, bytes/s per rank and direction
  double latency(const Group& g) const;    // alpha, seconds per ring step
  double seconds(CommKind kind, const Group& g, double bytes) const;
  // One message between two ranks, inside a node or across it (one NIC each).
  double p2p(bool across_nodes, double bytes) const;
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  ClusterSpec cluster_;
  LinkSharing sharing_;
};

// The groups of a configuration on a cluster (Megatron's rank order, above).
Group tensor_group(const ClusterSpec& c, int64_t tp);
Group data_group(const ClusterSpec& c, int64_t tp, int64_t dp);
bool pipeline_crosses_nodes(const ClusterSpec& c, int64_t tp, int64_t dp);

// The spec with its node count scaled to `gpus` devices (a multiple of devices_per_node): a
// fat tree keeps the radix of its lower levels and grows the top one (down[0] nodes per leaf;
// fewer nodes than that: one switch); other fabrics become one switch. Throws GptConfigError
// when gpus is not a multiple of devices_per_node.
ClusterSpec scale_cluster(const ClusterSpec& c, int64_t gpus);

}  // namespace spora::sim::transformer
