// Hierarchical two-level all-reduce for a nodes x devices layout.
//
// Ranks are numbered node-major: rank = node * g + local, with g = ranks_per_node devices per
// node and m = p / g nodes. Fast links inside a node, slow ones between nodes:
//
//          node 0                 node 1
//     d0  d1  d2  d3         d0  d1  d2  d3
//     [ ring inside ]        [ ring inside ]      1. reduce-scatter: local rank l ends with
//      |   |   |   |          |   |   |   |          block l (1/g of the data) summed over
//      +---|---|---|----------+   |   |   |          its node
//          +---|---|--------------+   |   |       2. all-reduce of block l among the m ranks
//              +---|----------------- + ...          with local rank l (a ring per l), so
//                                                    inter-node traffic is 1/g per device
//     [ ring inside ]        [ ring inside ]      3. all-gather inside each node
//
// Each phase is a ring (ring.cpp) on a subgroup and an element range of the output buffer;
// phase 1 reads the contributions from the input.
#include <stdexcept>
#include <string>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

Schedule hierarchical_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  const int p = spec.ranks;
  const int g = options.ranks_per_node > 0 ? options.ranks_per_node : default_ranks_per_node(p);
  if (p % g != 0)
    throw std::invalid_argument("hierarchical: ranks_per_node " + std::to_string(g) +
                                " does not divide " + std::to_string(p) + " ranks");
  AlgorithmOptions used = options;
  used.ranks_per_node = g;
  ScheduleBuilder b(spec, "hierarchical", used);
  const int m = p / g;
  const std::int64_t n = spec.count;
  auto node_group = [&](int node) {
    std::vector<int> group;
    for (int l = 0; l < g; ++l) group.push_back(node * g + l);
    return group;
  };
  for (int node = 0; node < m; ++node)
    ring_reduce_scatter_inplace(b, node_group(node), 0, n, /*from_input=*/true);
  for (int l = 0; l < g; ++l) {
    std::vector<int> peers;
    for (int node = 0; node < m; ++node) peers.push_back(node * g + l);
    const std::int64_t lo = block_offset(n, g, l), hi = lo + block_size(n, g, l);
    ring_reduce_scatter_inplace(b, peers, lo, hi, /*from_input=*/false);
    ring_all_gather_inplace(b, peers, lo, hi);
  }
  for (int node = 0; node < m; ++node) ring_all_gather_inplace(b, node_group(node), 0, n);
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
