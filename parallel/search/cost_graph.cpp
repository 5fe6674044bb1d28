#include "parallel/search/cost_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace spora::parallel::search {

int CostGraph::add_node(std::string name, std::vector<double> cost, std::vector<double> memory,
                        std::vector<std::string> labels) {
  nodes.push_back(Node{std::move(name), std::move(cost), std::move(memory), std::move(labels)});
  return static_cast<int>(nodes.size()) - 1;
}

void CostGraph::add_edge(int from, int to, std::vector<std::vector<double>> cost) {
  edges.push_back(Edge{from, to, std::move(cost)});
}

namespace {
bool bad(double x) { return !std::isfinite(x) || x < 0; }
}  // namespace

std::string validate(const CostGraph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const CostGraph::Node& n = g.nodes[i];
    if (n.cost.empty()) return fmt::format("node {} '{}' has no candidate strategy", i, n.name);
    if (n.memory.size() != n.cost.size())
      return fmt::format("node {} '{}' has {} costs but {} memory entries", i, n.name,
                         n.cost.size(), n.memory.size());
    if (!n.labels.empty() && n.labels.size() != n.cost.size())
      return fmt::format("node {} '{}' has {} costs but {} labels", i, n.name, n.cost.size(),
                         n.labels.size());
    for (size_t s = 0; s < n.cost.size(); ++s)
      if (bad(n.cost[s]) || bad(n.memory[s]))
        return fmt::format(
            "node {} '{}' strategy {} has cost {} and memory {}: both must be "
            "finite and non-negative",
            i, n.name, s, n.cost[s], n.memory[s]);
  }
  const int n = static_cast<int>(g.nodes.size());
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const CostGraph::Edge& ed = g.edges[e];
    if (ed.from < 0 || ed.from >= n || ed.to < 0 || ed.to >= n)
      return fmt::format("edge {} joins nodes {} -> {} of a graph of {} nodes", e, ed.from, ed.to,
                         n);
    if (ed.from == ed.to) return fmt::format("edge {} is a self loop on node {}", e, ed.from);
    const size_t sf = g.nodes[ed.from].cost.size(), st = g.nodes[ed.to].cost.size();
    if (ed.cost.size() != sf)
      return fmt::format("edge {} ({} -> {}) has {} rows, its source has {} strategies", e, ed.from,
                         ed.to, ed.cost.size(), sf);
    for (const auto& row : ed.cost) {
      if (row.size() != st)
        return fmt::format(
            "edge {} ({} -> {}) has a row of {} entries, its target has {} "
            "strategies",
            e, ed.from, ed.to, row.size(), st);
      for (double x : row)
        if (bad(x))
          return fmt::format(
              "edge {} ({} -> {}) has cost {}: costs must be finite and "
              "non-negative",
              e, ed.from, ed.to, x);
    }
  }
  return "";
}

Assignment evaluate(const CostGraph& g, const std::vector<int>& choice, double memory_limit) {
  if (choice.size() != g.nodes.size())
    throw std::invalid_argument(fmt::format("assignment has {} choices for a graph of {} nodes",
                                            choice.size(), g.nodes.size()));
  Assignment a;
  a.choice = choice;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int s = choice[i];
    if (s < 0 || s >= g.strategies(static_cast<int>(i)))
      throw std::invalid_argument(fmt::format("node {} '{}' has no strategy {} (it has {})", i,
                                              g.nodes[i].name, s,
                                              g.strategies(static_cast<int>(i))));
    a.cost += g.nodes[i].cost[s];
    a.peak_memory += g.nodes[i].memory[s];
  }
  for (const CostGraph::Edge& e : g.edges) a.cost += e.cost[choice[e.from]][choice[e.to]];
  a.feasible = a.peak_memory <= memory_limit;
  return a;
}

double min_memory_needed(const CostGraph& g) {
  double m = 0;
  for (const CostGraph::Node& n : g.nodes) m += *std::min_element(n.memory.begin(), n.memory.end());
  return m;
}

Assignment improve_locally(const CostGraph& g, Assignment a, double memory_limit) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> incident(n);
  for (size_t e = 0; e < g.edges.size(); ++e) {
    incident[g.edges[e].from].push_back(static_cast<int>(e));
    incident[g.edges[e].to].push_back(static_cast<int>(e));
  }
  // The part of the total that depends on node v's strategy s.
  auto local = [&](int v, int s) {
    double c = g.nodes[v].cost[s];
    for (int e : incident[v]) {
      const CostGraph::Edge& ed = g.edges[e];
      c += ed.from == v ? ed.cost[s][a.choice[ed.to]] : ed.cost[a.choice[ed.from]][s];
    }
    return c;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int v = 0; v < n; ++v) {
      const int cur = a.choice[v];
      const double base = local(v, cur);
      int best = cur;
      double best_gain = 1e-15 * std::max(1.0, a.cost);
      for (int s = 0; s < g.strategies(v); ++s) {
        if (s == cur) continue;
        const double mem = a.peak_memory - g.nodes[v].memory[cur] + g.nodes[v].memory[s];
        // Never leave the memory limit, and never walk away from it if already over.
        if (mem > memory_limit && mem > a.peak_memory) continue;
        const double gain = base - local(v, s);
        if (gain > best_gain) best_gain = gain, best = s;
      }
      if (best != cur) {
        a.peak_memory += g.nodes[v].memory[best] - g.nodes[v].memory[cur];
        a.choice[v] = best;
        changed = true;
      }
    }
  }
  return evaluate(g, a.choice, memory_limit);  // exact totals, no drift
}

double memory_limit_with_headroom(double capacity, const MemoryHeadroom& h) {
  if (h.reserved_bytes < 0 || h.fragmentation < 0)
    throw std::invalid_argument(
        fmt::format("memory headroom must not be negative: reserved {} bytes, fragmentation {}",
                    h.reserved_bytes, h.fragmentation));
  const double left = capacity - h.reserved_bytes;
  if (!(left > 0))
    throw std::invalid_argument(
        fmt::format("the memory headroom ({} bytes reserved) leaves nothing of {} bytes",
                    h.reserved_bytes, capacity));
  return left / (1 + h.fragmentation);
}

double bytes_over_limit(const Assignment& a, double memory_limit) {
  return a.peak_memory > memory_limit ? a.peak_memory - memory_limit : 0;
}

}  // namespace spora::parallel::search
