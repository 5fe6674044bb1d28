// Hierarchical two-level all-reduce for a nodes x devices layout.
//
// Ranks are numbered node-major: rank = node * g + local, with g = ranks_per_node devices per
// node and m = p / g nodes. Links inside a node are fast, links between nodes slow:
//
//   node 0: ranks 0 1 2 3            node 1: ranks 4 5 6 7            (g = 4, m = 2)
//
//   1. reduce-scatter inside each node (a ring over 0 1 2 3, another over 4 5 6 7):
//      local rank l ends with block l (1/g of the data) summed over its node
//   2. all-reduce of block l across the nodes (a ring over l, g + l, 2g + l, ...):
//         0 <-> 4     1 <-> 5     2 <-> 6     3 <-> 7
//      so each device moves only 1/g of the data over the slow links, all g rings at once
//   3. all-gather inside each node: every rank ends with the whole sum
//
// Each phase is a ring (ring.cpp) on a subgroup and an element range of the output buffer;
// phase 1 reads the contributions straight from the input.
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
