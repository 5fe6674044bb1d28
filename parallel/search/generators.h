// Random and synthetic cost graphs for the tests and the benchmark (seeded, deterministic).
//
//   random_series_parallel  two-terminal series-parallel graphs grown from one edge by random
//                           series steps (subdivide an edge), parallel steps (add a path beside
//                           an edge) and pendant leaves: the graphs dp must solve exactly
//   random_dag              each node takes 1..3 predecessors among the earlier nodes: not
//                           series-parallel in general
//   transformer_graph       the forward operators of an L-layer transformer (layer norm, QKV,
//                           scores, softmax, context, projection, residual add, MLP) with their
//                           residual edges: series-parallel, 12 operators a layer
// Costs are uniform in [0, 1) seconds (edges: 0 on the diagonal with probability 1/2, the
// "same layout, no redistribution" case), memory uniform in [0, 1) GB.
#pragma once

#include <cstdint>
#include <random>

#include "parallel/search/cost_graph.h"

namespace spora::parallel::search {

struct RandomCosts {
  int min_strategies = 2, max_strategies = 4;
};

CostGraph random_series_parallel(uint64_t seed, int nodes, RandomCosts costs = {});
CostGraph random_dag(uint64_t seed, int nodes, RandomCosts costs = {});
CostGraph transformer_graph(uint64_t seed, int layers, int strategies);

}  // namespace spora::parallel::search
