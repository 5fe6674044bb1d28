// Shared by the search algorithms' .cpp files only (not part of the library's interface).
#pragma once

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include "parallel/search/cost_graph.h"

namespace spora::parallel::search::detail {

inline void require_valid(const CostGraph& g) {
  const std::string err = validate(g);
  if (!err.empty()) throw std::invalid_argument("invalid cost graph: " + err);
  if (g.nodes.empty()) throw std::invalid_argument("invalid cost graph: it has no nodes");
}

// Collects assignments, keeps the best `k` distinct ones (cheapest first).
class TopK {
 public:
  explicit TopK(int k) : k_(std::max(1, k)) {}
  void offer(Assignment a) {
    if (!seen_.insert(a.choice).second) return;
    items_.push_back(std::move(a));
    std::sort(items_.begin(), items_.end(),
              [](const Assignment& x, const Assignment& y) { return x.cost < y.cost; });
    if (static_cast<int>(items_.size()) > k_) items_.resize(k_);
  }
  bool full() const { return static_cast<int>(items_.size()) >= k_; }
  double worst() const { return items_.back().cost; }
  std::vector<Assignment> take() { return std::move(items_); }

 private:
  int k_;
  std::vector<Assignment> items_;
  std::set<std::vector<int>> seen_;
};

// Runs `algo` under the limit when some assignment can fit it; else without any limit, and
// marks the result infeasible (what the user sees is the cheapest assignments and the least
// memory any assignment needs).
template <typename Algo>
SearchResult with_memory_fallback(const CostGraph& g, const SearchOptions& o, Algo algo) {
  require_valid(g);
  const double need = min_memory_needed(g);
  double most = 0;  // the largest memory any assignment can take
  for (const CostGraph::Node& n : g.nodes)
    most += *std::max_element(n.memory.begin(), n.memory.end());
  SearchResult r;
  if (most <= o.memory_limit) {
    r = algo(kNoMemoryLimit);  // every assignment fits: memory cannot decide anything
  } else if (need <= o.memory_limit) {
    r = algo(o.memory_limit);
  } else {
    r = algo(kNoMemoryLimit);
    r.any_feasible = false;
  }
  for (Assignment& a : r.top) a.feasible = a.peak_memory <= o.memory_limit;
  r.min_memory_needed = need;
  return r;
}

}  // namespace spora::parallel::search::detail
