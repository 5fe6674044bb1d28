// Exhaustive search with branch and bound: the ground truth for small graphs.
//
//   1. Order the nodes breadth-first (per connected component), so that most edges close
//      as soon as possible and their cost enters the partial sum early.
//   2. Depth-first over that order; at depth i the partial cost covers the nodes before i and
//      every edge among them. Costs are non-negative, so partial + sum of the cheapest
//      candidate of every later node is a lower bound; a branch whose bound cannot beat the
//      k-th best complete assignment is cut. The same with memory: partial + the least memory
//      of every later node above the limit cuts the branch.
//   3. Candidates are tried cheapest first (own cost + the edges they close), which finds good
//      bounds early.
#include <algorithm>
#include <deque>
#include <numeric>

#include "parallel/search/detail.h"

namespace spora::parallel::search {

namespace {

struct Exhaustive {
  const CostGraph& g;
  double limit;
  int64_t max_visits;
  std::vector<int> order;
  // back[i]: edges from order[i] to a node earlier in the order: (edge, earlier node, i is the
  // edge's source)
  struct Back {
    int edge, other;
    bool from_here;
  };
  std::vector<std::vector<Back>> back;
  std::vector<double> suffix_cost, suffix_mem;
  std::vector<int> choice;
  detail::TopK top;
  int64_t visits = 0;
  bool stopped = false;

  Exhaustive(const CostGraph& graph, double lim, int k, int64_t mv)
      : g(graph), limit(lim), max_visits(mv), top(k) {
    const int n = static_cast<int>(g.nodes.size());
    std::vector<std::vector<int>> adj(n);
    for (const CostGraph::Edge& e : g.edges) {
      adj[e.from].push_back(e.to);
      adj[e.to].push_back(e.from);
    }
    std::vector<int> pos(n, -1);
    for (int start = 0; start < n; ++start) {
      if (pos[start] >= 0) continue;
      std::deque<int> q{start};
      pos[start] = static_cast<int>(order.size());
      order.push_back(start);
      while (!q.empty()) {
        const int u = q.front();
        q.pop_front();
        for (int v : adj[u])
          if (pos[v] < 0) {
            pos[v] = static_cast<int>(order.size());
            order.push_back(v);
            q.push_back(v);
          }
      }
    }
    back.resize(n);
    for (size_t e = 0; e < g.edges.size(); ++e) {
      const int a = pos[g.edges[e].from], b = pos[g.edges[e].to];
      if (a > b)
        back[a].push_back({static_cast<int>(e), g.edges[e].to, true});
      else
        back[b].push_back({static_cast<int>(e), g.edges[e].from, false});
    }
    suffix_cost.assign(n + 1, 0);
    suffix_mem.assign(n + 1, 0);
    for (int i = n - 1; i >= 0; --i) {
      const CostGraph::Node& nd = g.nodes[order[i]];
      suffix_cost[i] = suffix_cost[i + 1] + *std::min_element(nd.cost.begin(), nd.cost.end());
      suffix_mem[i] = suffix_mem[i + 1] + *std::min_element(nd.memory.begin(), nd.memory.end());
    }
    choice.assign(n, -1);
  }

  void run(int i, double cost, double mem) {
    if (stopped) return;
    if (++visits > max_visits) {
      stopped = true;
      return;
    }
    const int n = static_cast<int>(order.size());
    if (i == n) {
      top.offer(evaluate(g, choice, limit));
      return;
    }
    const int v = order[i];
    const CostGraph::Node& nd = g.nodes[v];
    const int S = static_cast<int>(nd.cost.size());
    std::vector<std::pair<double, int>> cand;
    cand.reserve(S);
    for (int s = 0; s < S; ++s) {
      if (mem + nd.memory[s] + suffix_mem[i + 1] > limit) continue;
      double c = nd.cost[s];
      for (const Back& b : back[i]) {
        const CostGraph::Edge& e = g.edges[b.edge];
        c += b.from_here ? e.cost[s][choice[b.other]] : e.cost[choice[b.other]][s];
      }
      cand.emplace_back(c, s);
    }
    std::sort(cand.begin(), cand.end());
    for (const auto& [c, s] : cand) {
      if (top.full() && cost + c + suffix_cost[i + 1] >= top.worst()) break;  // sorted: rest worse
      choice[v] = s;
      run(i + 1, cost + c, mem + nd.memory[s]);
      if (stopped) break;
    }
    choice[v] = -1;
  }
};

}  // namespace

SearchResult search_exhaustive(const CostGraph& g, const SearchOptions& o) {
  return detail::with_memory_fallback(g, o, [&](double limit) {
    Exhaustive ex(g, limit, o.top_k, o.max_visits);
    ex.run(0, 0, 0);
    SearchResult r;
    r.top = ex.top.take();
    r.work = ex.visits;
    r.complete = !ex.stopped;
    r.exact = r.complete;
    r.notes = r.complete ? "branch and bound over every assignment"
                         : "stopped after the visit limit: best found so far";
    return r;
  });
}

}  // namespace spora::parallel::search
