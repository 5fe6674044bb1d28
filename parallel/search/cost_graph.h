// The abstract cost graph that every strategy search works on (MindSpore's auto-parallel
// CostGraph, reduced to numbers): one node per operator with one entry per candidate strategy,
// one edge per producer -> consumer tensor with the redistribution cost of every pair of
// candidates. The graph knows nothing about layouts, meshes or IR: parallel/search/build.h
// fills it from a real model, the tests fill it at random.
//
//   total cost(choice)   = sum_n node[n].cost[choice[n]] + sum_e
//   edge[e].cost[choice[from]][choice[to]] peak memory(choice)  = sum_n node[n].memory[choice[n]]
//
// Memory is additive on purpose: a node's memory is what its candidate keeps resident on one
// device for the whole step (its parameter shard with gradient and optimizer state, and the
// activations it saves for the backward pass), and in a training step those are all live when
// the backward pass starts. Additivity is what lets the dynamic programming carry memory as a
// second label (a Pareto frontier, as MindSpore's cost lists do) and makes the smallest memory
// any assignment can need a plain sum of per-node minima (`min_memory_needed`).
//
// Costs are seconds and must be non-negative and finite (exhaustive search prunes with
// lower bounds that rely on it); `validate` says what is wrong with a graph, in words.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace spora::parallel::search {

struct CostGraph {
  struct Node {
    std::string name;
    std::vector<double> cost;         // per candidate strategy: compute + its own comm, seconds
    std::vector<double> memory;       // bytes per device per candidate
    std::vector<std::string> labels;  // per candidate, for people (may be empty)
  };
  struct Edge {
    int from = 0, to = 0;
    std::vector<std::vector<double>> cost;  // [s_from][s_to] redistribution seconds
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;

  int add_node(std::string name, std::vector<double> cost, std::vector<double> memory,
               std::vector<std::string> labels = {});
  void add_edge(int from, int to, std::vector<std::vector<double>> cost);
  int strategies(int node) const { return static_cast<int>(nodes[node].cost.size()); }
};

// An empty string when the graph is well formed, else what is wrong (lowercase, with the
// offending node or edge and its sizes).
std::string validate(const CostGraph& g);

struct Assignment {
  std::vector<int> choice;  // per node: index of its candidate strategy
  double cost = 0;
  double peak_memory = 0;
  bool feasible = true;  // peak_memory <= the limit it was searched under
};

inline constexpr double kNoMemoryLimit = std::numeric_limits<double>::infinity();
// SearchOptions::dp_max_candidates by default: every node of the W4 and GPT blocks on a 1-D or
// 2-D mesh (up to 57 candidates) keeps all of its candidates; on 2x2x2 they have up to 360.
inline constexpr int kDpMaxCandidates = 64;

// What a device keeps beside a plan's own bytes: reserved_bytes (the CUDA context with its
// kernels, the communication library's buffers) and the allocator's fragmentation as a share of
// what the plan allocates. A plan fits a device of `capacity` bytes when
//   allocated + reserved_bytes + fragmentation x allocated <= capacity,
// so the memory limit a search gets is (capacity - reserved_bytes) / (1 + fragmentation)
// (sim/transformer/gpt_sim.h's GptMemory counts a GPT step's memory the same way).
struct MemoryHeadroom {
  double reserved_bytes = 0;
  double fragmentation = 0;
};
// Throws std::invalid_argument (with the numbers) when the headroom leaves no memory or is
// negative.
double memory_limit_with_headroom(double capacity, const MemoryHeadroom& headroom);
// By how many bytes `a` exceeds `memory_limit` (0 when it fits).
double bytes_over_limit(const Assignment& a, double memory_limit);

struct SearchOptions {
  int top_k = 1;
  double memory_limit = kNoMemoryLimit;  // bytes per device
  // exhaustive: give up after this many search-tree nodes (result.complete = false)
  int64_t max_visits = 200'000'000;
  // dp: how many elimination runs cutset conditioning may spend on a graph that is not
  // series-parallel before the greedy fallback decides the rest (1: no branching)
  int dp_branch_budget = 64;
  // dp: the most bytes its tables, cells and derivation records may take at once; past it the
  // search throws SearchLimitError (dp.cpp, "Memory is bounded by design")
  size_t max_search_bytes = size_t{512} << 20;
  // dp: the most candidates a node keeps (dp.cpp, "Candidates are capped"): a node with more
  // is searched on this many of them, and the result is then not guaranteed exact; 0: no cap
  int dp_max_candidates = kDpMaxCandidates;
  // propagate: node -> fixed candidate (the user's shard annotations)
  std::map<int, int> fixed;
};

struct SearchResult {
  // Best first. When no assignment fits the memory limit, these are the cheapest ones regardless
  // of memory, each with feasible = false.
  std::vector<Assignment> top;
  bool any_feasible = true;      // some assignment fits the limit (min_memory_needed <= limit)
  double min_memory_needed = 0;  // the least peak memory of any assignment (sum of node minima)
  bool exact = true;             // the algorithm guarantees these are the true top-k
  bool complete = true;          // exhaustive: false when max_visits stopped it
  int64_t work = 0;              // algorithm-specific count (search-tree nodes, labels built...)
  size_t search_bytes = 0;       // dp: the peak bytes of its tables, cells and records
  std::string notes;             // what heuristic ran, for people
};

// A search that would pass one of its own limits (SearchOptions::max_search_bytes): the message
// says which limit, its value and how far the search got.
class SearchLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The cost and memory of one assignment (feasible against `memory_limit`). Throws
// std::invalid_argument when choice does not fit the graph.
Assignment evaluate(const CostGraph& g, const std::vector<int>& choice,
                    double memory_limit = kNoMemoryLimit);

double min_memory_needed(const CostGraph& g);

// The algorithms (each in its own .cpp). All of them throw std::invalid_argument with the
// message of `validate` on a malformed graph.
SearchResult search_exhaustive(const CostGraph& g, const SearchOptions& o);
SearchResult search_dp(const CostGraph& g, const SearchOptions& o);
SearchResult search_propagate(const CostGraph& g, const SearchOptions& o);

// Coordinate descent: change one node at a time while the total cost drops and memory stays
// under the limit. Used to polish heuristic results; returns the improved assignment.
Assignment improve_locally(const CostGraph& g, Assignment a, double memory_limit);

}  // namespace spora::parallel::search
