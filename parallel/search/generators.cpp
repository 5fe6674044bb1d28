#include "parallel/search/generators.h"

#include <fmt/format.h>

#include <algorithm>

namespace spora::parallel::search {

namespace {

struct Maker {
  std::mt19937_64 rng;
  RandomCosts rc;
  CostGraph g;
  std::uniform_real_distribution<double> unit{0.0, 1.0};

  Maker(uint64_t seed, RandomCosts c) : rng(seed), rc(c) {}

  int node(int strategies = 0) {
    if (strategies <= 0)
      strategies = std::uniform_int_distribution<int>(rc.min_strategies, rc.max_strategies)(rng);
    std::vector<double> cost(strategies), mem(strategies);
    for (int s = 0; s < strategies; ++s) cost[s] = unit(rng), mem[s] = unit(rng) * 1e9;
    return g.add_node(fmt::format("n{}", g.nodes.size()), cost, mem);
  }
  void edge(int a, int b) {
    const int sa = g.strategies(a), sb = g.strategies(b);
    std::vector<std::vector<double>> c(sa, std::vector<double>(sb));
    for (int i = 0; i < sa; ++i)
      for (int j = 0; j < sb; ++j) c[i][j] = (i == j && unit(rng) < 0.5) ? 0.0 : unit(rng);
    g.add_edge(a, b, std::move(c));
  }
};

}  // namespace

CostGraph random_series_parallel(uint64_t seed, int nodes, RandomCosts costs) {
  Maker m(seed, costs);
  // Grow the shape first (edge list), then cost it.
  std::vector<std::pair<int, int>> edges{{0, 1}};
  int n = 2;
  while (n < nodes) {
    const int pick = std::uniform_int_distribution<int>(0, 2)(m.rng);
    const size_t e = std::uniform_int_distribution<size_t>(0, edges.size() - 1)(m.rng);
    const auto [a, b] = edges[e];
    const int w = n++;
    if (pick == 0) {  // series: a -> w -> b replaces a -> b
      edges[e] = {a, w};
      edges.emplace_back(w, b);
    } else if (pick == 1) {  // parallel: a -> w -> b beside a -> b
      edges.emplace_back(a, w);
      edges.emplace_back(w, b);
    } else {  // a pendant leaf off a
      edges.emplace_back(a, w);
    }
  }
  for (int i = 0; i < n; ++i) m.node();
  for (const auto& [a, b] : edges) m.edge(a, b);
  return std::move(m.g);
}

CostGraph random_dag(uint64_t seed, int nodes, RandomCosts costs) {
  Maker m(seed, costs);
  for (int i = 0; i < nodes; ++i) {
    m.node();
    if (i == 0) continue;
    const int preds = std::min(i, std::uniform_int_distribution<int>(1, 3)(m.rng));
    std::vector<int> from(i);
    for (int j = 0; j < i; ++j) from[j] = j;
    std::shuffle(from.begin(), from.end(), m.rng);
    for (int p = 0; p < preds; ++p) m.edge(from[p], i);
  }
  return std::move(m.g);
}

CostGraph transformer_graph(uint64_t seed, int layers, int strategies) {
  Maker m(seed, RandomCosts{strategies, strategies});
  int x = m.node();  // the embedding
  for (int l = 0; l < layers; ++l) {
    const int ln1 = m.node(), qkv = m.node(), scores = m.node(), softmax = m.node();
    const int context = m.node(), proj = m.node(), add1 = m.node();
    m.edge(x, ln1), m.edge(ln1, qkv), m.edge(qkv, scores), m.edge(scores, softmax);
    m.edge(softmax, context), m.edge(qkv, context);  // V feeds the context directly
    m.edge(context, proj), m.edge(proj, add1), m.edge(x, add1);
    const int ln2 = m.node(), fc1 = m.node(), gelu = m.node(), fc2 = m.node(), add2 = m.node();
    m.edge(add1, ln2), m.edge(ln2, fc1), m.edge(fc1, gelu), m.edge(gelu, fc2);
    m.edge(fc2, add2), m.edge(add1, add2);
    x = add2;
  }
  const int loss = m.node();
  m.edge(x, loss);
  return std::move(m.g);
}

}  // namespace spora::parallel::search
