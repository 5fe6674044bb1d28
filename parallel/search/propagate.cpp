// Sharding propagation (MindSpore's "sharding_propagation" search mode).
//
//   1. Seeds: the nodes the user fixed (SearchOptions::fixed, from shard annotations) keep their
//      candidate. A component without a fixed node is seeded at its heaviest node (largest
//      cheapest cost): with no annotation anywhere, every candidate of the heaviest node is
//      tried as the seed and the results ranked, which is what top_k returns.
//   2. Breadth first from the seeds: a node reached for the first time takes the candidate
//      that minimises its own cost plus the redistribution on its edges to nodes already
//      decided (MindSpore picks the strategy with the least redistribution to the operator it
//      is reached from; we also count the node's own cost, so a cheap-to-compute candidate
//      wins a tie on communication; a remaining tie goes to the candidate of less memory).
//   3. Memory: a candidate is skipped when the memory decided so far, plus its own, plus the
//      least memory of every undecided node exceeds the limit, so propagation never paints
//      itself into an infeasible corner (unless the fixed nodes already do).
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>

#include "parallel/search/detail.h"

namespace spora::parallel::search {

namespace {

struct Propagator {
  const CostGraph& g;
  double limit;
  std::vector<std::vector<int>> incident;
  std::vector<double> min_mem;

  Propagator(const CostGraph& graph, double lim) : g(graph), limit(lim) {
    incident.resize(g.nodes.size());
    for (size_t e = 0; e < g.edges.size(); ++e) {
      incident[g.edges[e].from].push_back(static_cast<int>(e));
      incident[g.edges[e].to].push_back(static_cast<int>(e));
    }
    for (const CostGraph::Node& n : g.nodes)
      min_mem.push_back(*std::min_element(n.memory.begin(), n.memory.end()));
  }

  int heaviest(const std::vector<int>& component) const {
    int best = component.front();
    auto weight = [&](int v) {
      return *std::min_element(g.nodes[v].cost.begin(), g.nodes[v].cost.end());
    };
    for (int v : component)
      if (weight(v) > weight(best)) best = v;
    return best;
  }

  // Propagates from `seeds` (node, candidate); undecided components get their heaviest node
  // at its locally best candidate.
  std::vector<int> run(const std::vector<std::pair<int, int>>& seeds) const {
    const int n = static_cast<int>(g.nodes.size());
    std::vector<int> choice(n, -1);
    double mem_decided = 0, mem_rest = 0;
    for (double m : min_mem) mem_rest += m;
    std::deque<int> q;
    auto decide = [&](int v, int s) {
      choice[v] = s;
      mem_decided += g.nodes[v].memory[s];
      mem_rest -= min_mem[v];
      q.push_back(v);
    };
    auto best_candidate = [&](int v) {
      int best = -1, fallback = 0;
      double best_cost = std::numeric_limits<double>::infinity(), fallback_mem = best_cost;
      double best_mem = best_cost;
      for (int s = 0; s < g.strategies(v); ++s) {
        const double m = g.nodes[v].memory[s];
        if (m < fallback_mem) fallback_mem = m, fallback = s;
        if (mem_decided + m + (mem_rest - min_mem[v]) > limit) continue;
        double c = g.nodes[v].cost[s];
        for (int e : incident[v]) {
          const CostGraph::Edge& ed = g.edges[e];
          const int o = ed.from == v ? ed.to : ed.from;
          if (choice[o] < 0) continue;
          c += ed.from == v ? ed.cost[s][choice[o]] : ed.cost[choice[o]][s];
        }
        // Ties go to the smaller memory: a parameter next to an annotated (pinned) operator is
        // stored cut like the pin rather than replicated and sliced (a slice costs nothing).
        if (c < best_cost || (c == best_cost && m < best_mem))
          best_cost = c, best_mem = m, best = s;
      }
      return best >= 0 ? best : fallback;  // nothing fits: the smallest, as close as we get
    };
    auto flood = [&]() {
      while (!q.empty()) {
        const int u = q.front();
        q.pop_front();
        for (int e : incident[u]) {
          const int o = g.edges[e].from == u ? g.edges[e].to : g.edges[e].from;
          if (choice[o] < 0) decide(o, best_candidate(o));
        }
      }
    };
    for (const auto& [v, s] : seeds) decide(v, s);
    flood();
    for (int v = 0; v < n; ++v) {
      if (choice[v] >= 0) continue;
      // A component no seed reached: start at its heaviest node.
      std::vector<int> comp{v};
      std::vector<bool> seen(n, false);
      seen[v] = true;
      for (size_t i = 0; i < comp.size(); ++i)
        for (int e : incident[comp[i]]) {
          const int o = g.edges[e].from == comp[i] ? g.edges[e].to : g.edges[e].from;
          if (!seen[o]) seen[o] = true, comp.push_back(o);
        }
      const int h = heaviest(comp);
      decide(h, best_candidate(h));
      flood();
    }
    return choice;
  }
};

}  // namespace

SearchResult search_propagate(const CostGraph& g, const SearchOptions& o) {
  detail::require_valid(g);
  for (const auto& [v, s] : o.fixed)
    if (v < 0 || v >= static_cast<int>(g.nodes.size()) || s < 0 || s >= g.strategies(v))
      throw std::invalid_argument(
          fmt::format("fixed strategy {} for node {} does not exist in a graph of {} nodes", s, v,
                      g.nodes.size()));
  return detail::with_memory_fallback(g, o, [&](double limit) {
    Propagator p(g, limit);
    SearchResult r;
    detail::TopK top(o.top_k);
    if (!o.fixed.empty()) {
      std::vector<std::pair<int, int>> seeds(o.fixed.begin(), o.fixed.end());
      top.offer(evaluate(g, p.run(seeds), limit));
      r.work = 1;
      r.notes = fmt::format("propagated from {} annotated node(s)", seeds.size());
    } else {
      std::vector<int> all(g.nodes.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      const int h = p.heaviest(all);
      for (int s = 0; s < g.strategies(h); ++s) top.offer(evaluate(g, p.run({{h, s}}), limit));
      r.work = g.strategies(h);
      r.notes = fmt::format("no annotation: seeded at '{}' with each of its {} candidates",
                            g.nodes[h].name, g.strategies(h));
    }
    r.top = top.take();
    r.exact = false;
    return r;
  });
}

}  // namespace spora::parallel::search
