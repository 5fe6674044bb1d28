// Dynamic programming by graph elimination (MindSpore's dp_algo), with back substitution.
//
// Every live node carries, per candidate strategy, a list of labels; every live edge carries,
// per pair of candidates of its ends, a list of labels. A label is (cost, memory, derivation):
// the cost and memory of everything already folded into that cell, and how to recover the
// choices that produced it. The elimination steps (undirected; directions never matter to a
// cost table):
//
//   edge elimination   two edges between a and b        -> one edge, cells combined pairwise
//                      a ==== b                             a ---- b
//   node elimination   w with exactly two neighbours    -> an edge a - b whose cell (sa, sb) is
//                      a -- w -- b                          the best over sw of e1 + w + e2
//   contraction        w with one neighbour (a leaf)    -> folded into a's cells: for every sa,
//                      a -- w                               the best over sw of e + w
//   finish             w with no neighbour left          -> its component's result: the best
//                                                            over sw of w's cells
//
// (MindSpore's OpElimination, EdgeElimination, Merge/ContractElimination.) On a series-parallel
// graph (with trees hanging off it) these steps alone reduce every component to one node, and
// the result is exact. When every remaining node has three or more distinct neighbours (a
// graph that is not series-parallel, where MindSpore reaches for its triangle and star
// eliminations), the fallback heuristic conditions one node: the one with the fewest
// neighbours is fixed to the candidate that is cheapest given its neighbours' best cells
// (own cells + for each neighbour the best of edge + neighbour cell), its edges fold into the
// neighbours as unary costs, and elimination resumes. The result is then polished by
// coordinate descent (improve_locally) and reported as not exact.
//
// Labels: a cell keeps a label unless k others in it are at least as cheap and at least as
// small (with k = top_k; for k = 1 this is the Pareto frontier of cost and memory that
// MindSpore's cost lists keep). Without a memory limit memory never matters and a cell keeps
// its k cheapest labels. A label whose memory plus the least memory of everything outside its
// cell already exceeds the limit is dropped. Cells are capped at kMaxLabels labels (the
// cheapest); a cap that bites makes the result inexact, which the result says. With k = 1 and
// no memory limit (the common case) a cell holds one label and node elimination is a dense
// (min, +) product (eliminate_single), with the same sums and the same tie order.
//
// Candidates are capped (SearchOptions::dp_max_candidates, kDpMaxCandidates = 64 by default):
// a node with more is searched on that many of them (cap_candidates: its first and its
// least-memory candidate, propagation's pick, then the best by a local lower bound); the
// assignments found are mapped back to the whole graph and polished there by coordinate
// descent, and the result says it is not guaranteed exact. So a node elimination forms at
// most K^3 sums at k = 1 (K^3 k^2 label pairs in general) and a table has at most K^2 cells,
// whatever the mesh. (W4 and the GPT block have up to 57 candidates a node on 1-D and 2-D
// meshes, which the cap leaves whole; on 2x2x2 up to 360.)
//
// Runs: cutset conditioning (Brancher, below) runs the elimination up to dp_branch_budget
// times, each with a few nodes fixed. The exact steps (merges, leaves, degree-2 nodes) depend on
// the graph's shape only, never on a node's own cells, so they are done once (Brancher::base)
// and every run starts from a copy of that state with its fixed nodes' other cells emptied.
//
// Back substitution: derivations are an arena of small records (a leaf "node v takes
// strategy s", or a pair of earlier derivations); the final labels' derivations are walked to
// recover every node's choice.
//
// Memory is bounded by design, not by the graph's luck:
//   1. a table has at most K^2 cells (the candidate cap); a cell holds at most k labels without
//      a memory limit, at most kMaxLabels with one, sized to what it holds (one label inline,
//      more on the heap; a pruned buffer is copied, not kept);
//   2. the products that feed one cell are pruned every kPruneEvery labels, so the scratch
//      buffer of a node elimination never holds more than kPruneEvery + kMaxLabels^2 labels;
//   3. a dead table's cells are freed at once (their vector goes to a pool of at most
//      Workspace::kSpare for the next tables), and the derivation arena is compacted (only the
//      records that live labels reach are kept) whenever it has doubled since the last time;
//   4. the bytes of the live tables, cells, pool, arena, the shared edge cells and the base run
//      are counted after every step; past SearchOptions::max_search_bytes the search stops with
//      SearchLimitError, which says how far it got, instead of growing until the kernel kills
//      the process.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "parallel/search/detail.h"

namespace spora::parallel::search {

namespace {

constexpr size_t kMaxLabels = 256;
constexpr size_t kPruneEvery = 4096;

struct Label {
  double cost = 0, mem = 0;
  int deriv = -1;  // -1: nothing to recover (an edge's own cost)
  // While a product is being pruned: the second half of its derivation pair (deriv, other),
  // made a record only if the label survives.
  int other = -1;
};
using Labels = std::vector<Label>;  // a scratch buffer of labels being pruned

// A cell's labels, sized to what it holds: one label is kept inline (k = 1 without a memory
// limit, the common case, allocates nothing per cell), more on the heap.
class Cell {
 public:
  Cell() = default;
  Cell(std::initializer_list<Label> ls) { assign(ls.begin(), ls.size()); }
  Cell(const Label* first, size_t n) { assign(first, n); }
  Cell(const Cell& o) { assign(o.begin(), o.size()); }
  Cell(Cell&& o) noexcept { steal(o); }
  Cell& operator=(const Cell& o) {
    if (this != &o) release(), assign(o.begin(), o.size());
    return *this;
  }
  Cell& operator=(Cell&& o) noexcept {
    if (this != &o) release(), steal(o);
    return *this;
  }
  ~Cell() { release(); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  Label* begin() { return n_ > 1 ? heap_ : &one_; }
  Label* end() { return begin() + n_; }
  const Label* begin() const { return n_ > 1 ? heap_ : &one_; }
  const Label* end() const { return begin() + n_; }
  const Label& front() const { return *begin(); }
  size_t heap_bytes() const { return n_ > 1 ? n_ * sizeof(Label) : 0; }
  void clear() { release(); }

 private:
  void assign(const Label* first, size_t n) {
    if (n > 1) {
      heap_ = new Label[n];
      std::copy(first, first + n, heap_);
    } else if (n == 1) {
      one_ = *first;
    }
    n_ = static_cast<uint32_t>(n);
  }
  void steal(Cell& o) {
    n_ = o.n_;
    if (n_ > 1)
      heap_ = o.heap_;
    else
      one_ = o.one_;
    o.n_ = 0;
  }
  void release() {
    if (n_ > 1) delete[] heap_;
    n_ = 0;
  }
  uint32_t n_ = 0;
  union {
    Label one_{};
    Label* heap_;
  };
};

struct Deriv {
  int a = -1, b = -1;            // children (pair), or
  int node = -1, strategy = -1;  // a leaf
};

// The cells of the graph's edges as every run starts from them (one label each, the edge's
// cost): built once per search and shared by its runs, which never write to them.
using EdgeCells = std::vector<std::vector<Cell>>;

EdgeCells edge_cells_of(const CostGraph& g) {
  EdgeCells out;
  for (const CostGraph::Edge& e : g.edges) {
    std::vector<Cell>& cells = out.emplace_back();
    cells.reserve(e.cost.size() * (e.cost.empty() ? 0 : e.cost[0].size()));
    for (const std::vector<double>& row : e.cost)
      for (double c : row) cells.push_back(Cell{Label{c, 0, -1}});
  }
  return out;
}

struct Table {  // an edge's cells, [sa * nb + sb] for its ends (a, b)
  int a = 0, b = 0, na = 0, nb = 0;
  std::vector<Cell> cells;                  // made by this run, or
  const std::vector<Cell>* edge = nullptr;  // a graph edge's, untouched (EdgeCells)
  double inside_min_mem = 0;  // least memory of the nodes folded into this table
  bool alive = true;
  const Cell& at(int sa, int sb) const {
    const size_t i = static_cast<size_t>(sa) * nb + sb;
    return edge ? (*edge)[i] : cells[i];
  }
  Cell& put(int sa, int sb) { return cells[static_cast<size_t>(sa) * nb + sb]; }
  // The cell for (strategy of x, strategy of the other end).
  const Cell& from(int x, int sx, int sother) const {
    return x == a ? at(sx, sother) : at(sother, sx);
  }
};

// Buffers that outlive one elimination run: the runs of a search reuse them rather than ask the
// allocator (and the kernel, for fresh pages) again each time.
struct Workspace {
  struct Scratch {  // eliminate_single's dense rows
    std::vector<double> rc, rm, rmin, lc, lm, bc;
    std::vector<int> rd, le, lw, ld, bw, order, open;
    std::vector<std::pair<double, int>> by_cost;  // (e1 + w, sw), to sort
    std::vector<char> tie;
  } scratch;
  // The cell vectors of dead tables, for the next tables (at most kSpare, capacity kept; their
  // bytes count as the search's).
  static constexpr size_t kSpare = 8;
  std::vector<std::vector<Cell>> spare;
  size_t spare_bytes = 0;

  std::vector<Cell> cells(size_t n) {
    std::vector<Cell> v;
    auto fit = std::find_if(spare.begin(), spare.end(),
                            [&](const std::vector<Cell>& c) { return c.capacity() >= n; });
    if (fit != spare.end()) {
      v = std::move(*fit);
      spare.erase(fit);
      spare_bytes -= v.capacity() * sizeof(Cell);
      v.clear();
    }
    v.resize(n);
    return v;
  }
  void give(std::vector<Cell>&& v) {
    if (v.capacity() == 0) return;
    v.clear();  // frees the labels a cell keeps on the heap
    if (spare.size() == kSpare) {
      auto least = std::min_element(spare.begin(), spare.end(), [](const auto& x, const auto& y) {
        return x.capacity() < y.capacity();
      });
      if (least->capacity() >= v.capacity()) return;  // v is freed
      spare_bytes -= least->capacity() * sizeof(Cell);
      *least = std::move(v);
      spare_bytes += least->capacity() * sizeof(Cell);
      return;
    }
    spare_bytes += v.capacity() * sizeof(Cell);
    spare.push_back(std::move(v));
  }
};

struct Dp {
  const CostGraph& g;
  Workspace& ws;
  Workspace::Scratch& sc;  // ws.scratch
  std::vector<Deriv> derivs;
  double limit;
  size_t k;
  double total_min_mem = 0;
  std::vector<std::vector<Cell>> node_cells;  // [node][strategy]
  std::vector<double> node_inside;            // least memory folded into each node's cells
  std::vector<bool> alive;
  std::vector<Table> tables;
  std::vector<std::set<int>> incident;  // live tables per node
  std::deque<int> queue;                // nodes to look at again
  std::vector<bool> queued;
  std::vector<Cell> components;         // one result list per finished component
  int64_t work = 0;
  bool capped = false, conditioned = false;
  int conditioned_nodes = 0;
  int first_guess = -1;  // the first node the fallback fixed with a real choice to make

  size_t max_bytes;
  // Bytes held for this run beside its own: the graph's edge cells (EdgeCells, shared by the
  // runs), a capped graph's cost tables, the base run it was copied from.
  size_t held_bytes = 0;
  size_t table_bytes = 0;  // the cells of the live tables
  std::vector<size_t> node_bytes;
  size_t node_bytes_total = 0;
  size_t peak_bytes = 0;
  size_t derivs_at_compaction = 0;
  int eliminated = 0;

  Dp(const CostGraph& graph, const EdgeCells& edge_cells, Workspace& workspace, double lim,
     int top_k, const std::map<int, int>& restrict, size_t max_search_bytes, size_t graph_bytes)
      : g(graph),
        ws(workspace),
        sc(workspace.scratch),
        limit(lim),
        k(static_cast<size_t>(std::max(1, top_k))),
        max_bytes(max_search_bytes),
        held_bytes(graph_bytes) {
    const int n = static_cast<int>(g.nodes.size());
    total_min_mem = min_memory_needed(g);
    node_cells.resize(n);
    node_inside.resize(n);
    alive.assign(n, true);
    incident.resize(n);
    for (int v = 0; v < n; ++v) {
      const CostGraph::Node& nd = g.nodes[v];
      node_inside[v] = *std::min_element(nd.memory.begin(), nd.memory.end());
      for (size_t s = 0; s < nd.cost.size(); ++s) {
        derivs.push_back(Deriv{-1, -1, v, static_cast<int>(s)});
        Labels c{Label{nd.cost[s], nd.memory[s], static_cast<int>(derivs.size()) - 1}};
        node_cells[v].push_back(prune(std::move(c), node_inside[v]));
      }
      // A restricted node keeps one candidate: the others' cells are empty (impossible).
      if (auto it = restrict.find(v); it != restrict.end())
        for (int s = 0; s < static_cast<int>(nd.cost.size()); ++s)
          if (s != it->second) node_cells[v][s].clear();
    }
    node_bytes.assign(n, 0);
    for (int v = 0; v < n; ++v) count_node(v);
    for (size_t e = 0; e < g.edges.size(); ++e) {
      Table t;
      t.a = g.edges[e].from, t.b = g.edges[e].to;
      t.na = g.strategies(t.a), t.nb = g.strategies(t.b);
      t.edge = &edge_cells[e];
      held_bytes += cells_bytes(edge_cells[e]);
      add_table(std::move(t));
    }
    check_budget();
  }

  static size_t cells_bytes(const std::vector<Cell>& cells) {
    size_t b = cells.capacity() * sizeof(Cell);
    for (const Cell& c : cells) b += c.heap_bytes();
    return b;
  }
  static size_t table_size(const Table& t) { return sizeof(Table) + cells_bytes(t.cells); }
  void count_node(int v) {
    node_bytes_total -= node_bytes[v];
    node_bytes[v] = cells_bytes(node_cells[v]);
    node_bytes_total += node_bytes[v];
  }
  size_t bytes() const {
    return held_bytes + table_bytes + ws.spare_bytes + node_bytes_total +
           derivs.capacity() * sizeof(Deriv) +
           tables.capacity() * sizeof(Table);
  }

  // Compacts the arena when it has doubled, then stops the search if the live state is over
  // the budget (step 4 of the header).
  void check_budget() {
    if (derivs.size() > 2 * std::max<size_t>(derivs_at_compaction, 1 << 20)) compact_derivs();
    const size_t b = bytes();
    peak_bytes = std::max(peak_bytes, b);
    if (b <= max_bytes) return;
    int live = 0;
    size_t most = 0;
    for (int v = 0; v < static_cast<int>(g.nodes.size()); ++v) {
      live += alive[v];
      most = std::max(most, g.nodes[v].cost.size());
    }
    throw SearchLimitError(fmt::format(
        "dp search stopped: its tables and cells take {:.0f} MB, over the limit of {:.0f} MB "
        "(SearchOptions::max_search_bytes), with {} of {} nodes still to eliminate (up to {} "
        "candidates a node, up to {} labels a cell); ask for fewer top strategies, a smaller "
        "mesh or --algo rec / propagate, or raise the limit",
        static_cast<double>(b) / 1e6, static_cast<double>(max_bytes) / 1e6, live, g.nodes.size(),
        most, limit == kNoMemoryLimit ? k : kMaxLabels));
  }

  // Keeps the derivation records that live labels reach, renumbered in order (children come
  // before their parents, so one pass in order rewrites the pairs).
  void compact_derivs() {
    std::vector<char> live(derivs.size(), 0);
    std::vector<int> stack;
    auto mark_cell = [&](const Cell& c) {
      for (const Label& l : c)
        if (l.deriv >= 0) stack.push_back(l.deriv);
    };
    for (const Table& t : tables)
      if (t.alive)
        for (const Cell& c : t.cells) mark_cell(c);  // (an edge's cells have no derivation)
    for (const std::vector<Cell>& cells : node_cells)
      for (const Cell& c : cells) mark_cell(c);
    for (const Cell& c : components) mark_cell(c);
    while (!stack.empty()) {
      const int d = stack.back();
      stack.pop_back();
      if (live[d]) continue;
      live[d] = 1;
      if (derivs[d].node < 0) {
        if (derivs[d].a >= 0) stack.push_back(derivs[d].a);
        if (derivs[d].b >= 0) stack.push_back(derivs[d].b);
      }
    }
    std::vector<int> to(derivs.size(), -1);
    std::vector<Deriv> kept;
    for (size_t d = 0; d < derivs.size(); ++d) {
      if (!live[d]) continue;
      Deriv r = derivs[d];
      if (r.node < 0) {
        r.a = r.a >= 0 ? to[r.a] : -1;
        r.b = r.b >= 0 ? to[r.b] : -1;
      }
      to[d] = static_cast<int>(kept.size());
      kept.push_back(r);
    }
    auto remap_cell = [&](Cell& c) {
      for (Label& l : c)
        if (l.deriv >= 0) l.deriv = to[l.deriv];
    };
    for (Table& t : tables)
      if (t.alive)
        for (Cell& c : t.cells) remap_cell(c);
    for (std::vector<Cell>& cells : node_cells)
      for (Cell& c : cells) remap_cell(c);
    for (Cell& c : components) remap_cell(c);
    kept.shrink_to_fit();
    derivs = std::move(kept);
    derivs_at_compaction = derivs.size();
  }

  // Keep a label unless k kept ones are at least as cheap and as small; drop what cannot fit.
  // The result's vector holds exactly its labels.
  Cell prune(Labels c, double inside_min_mem) {
    prune_in_place(c, inside_min_mem);
    return Cell(c.data(), c.size());
  }
  void prune_in_place(Labels& c, double inside_min_mem) {
    work += static_cast<int64_t>(c.size());
    const double outside = total_min_mem - inside_min_mem;
    const bool use_mem = limit != kNoMemoryLimit;
    if (use_mem)
      c.erase(std::remove_if(c.begin(), c.end(),
                             [&](const Label& l) { return l.mem + outside > limit * (1 + 1e-12); }),
              c.end());
    auto cheaper = [](const Label& x, const Label& y) {
      return x.cost != y.cost ? x.cost < y.cost : x.mem < y.mem;
    };
    if (!use_mem) {
      if (c.size() > k) {
        std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end(), cheaper);
        c.resize(k);
      }
      std::sort(c.begin(), c.end(), cheaper);
      return;
    }
    std::sort(c.begin(), c.end(), cheaper);
    size_t kept = 0;  // c[0, kept): the labels kept so far
    for (size_t i = 0; i < c.size(); ++i) {
      size_t dominating = 0;
      for (size_t j = 0; j < kept && dominating < k; ++j) dominating += c[j].mem <= c[i].mem;
      if (dominating >= k) continue;
      if (kept >= kMaxLabels) {
        capped = true;
        break;
      }
      c[kept++] = c[i];
    }
    c.resize(kept);
  }

  int pair(int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    derivs.push_back(Deriv{a, b, -1, -1});
    return static_cast<int>(derivs.size()) - 1;
  }

  // Turns the pending pairs of pruned labels into derivation records; returns the cell.
  Cell settle(Labels& c) {
    for (Label& l : c) {
      l.deriv = pair(l.deriv, l.other);
      l.other = -1;
    }
    return Cell(c.data(), c.size());
  }

  // x (+) y: every label of x with every label of y, pruned.
  Cell combine(const Cell& x, const Cell& y, double inside) {
    const Cell* xs[] = {&x};
    const Cell* ys[] = {&y};
    return combine_many(xs, ys, 1, inside);
  }

  // The union over i of xs[i] (+) ys[i], pruned: one buffer instead of a list per i (the inner
  // loop of node elimination and contraction, S^3 times per node), pruned whenever it passes
  // kPruneEvery labels (step 2 of the header).
  Cell combine_many(const Cell* const* xs, const Cell* const* ys, size_t n, double inside) {
    if (limit == kNoMemoryLimit) return cheapest_sums(xs, ys, n);
    scratch.clear();
    for (size_t i = 0; i < n; ++i)
      for (const Label& l : *xs[i]) {
        for (const Label& m : *ys[i])
          scratch.push_back(Label{l.cost + m.cost, l.mem + m.mem, l.deriv, m.deriv});
        if (scratch.size() > kPruneEvery) prune_in_place(scratch, inside);
      }
    prune_in_place(scratch, inside);
    return settle(scratch);
  }
  Cell combine_many(const std::vector<const Cell*>& xs, const std::vector<const Cell*>& ys,
                    double inside) {
    return combine_many(xs.data(), ys.data(), xs.size(), inside);
  }
  Labels scratch;

  // Without a memory limit a cell keeps its k cheapest labels: the k cheapest sums of pairs of
  // sorted lists, kept sorted in a buffer of k, and each list cut at the first sum that costs
  // more than the k-th kept (most candidate pairs of a node elimination are never formed).
  Cell cheapest_sums(const Cell* const* xs, const Cell* const* ys, size_t n) {
    Labels& best = scratch;
    best.clear();
    auto before = [](const Label& a, const Label& b) {
      return a.cost != b.cost ? a.cost < b.cost : a.mem < b.mem;
    };
    for (size_t i = 0; i < n; ++i) {
      const Cell &x = *xs[i], &y = *ys[i];
      if (y.empty()) continue;
      for (const Label& l : x) {
        if (best.size() == k && l.cost + y.front().cost > best.back().cost) break;
        for (const Label& m : y) {
          const Label sum{l.cost + m.cost, l.mem + m.mem, l.deriv, m.deriv};
          ++work;
          if (best.size() == k) {
            if (sum.cost > best.back().cost) break;  // y is sorted: the rest cost more
            if (!before(sum, best.back())) continue;
            best.pop_back();
          }
          best.insert(std::upper_bound(best.begin(), best.end(), sum, before), sum);
        }
      }
    }
    return settle(best);
  }

  void kill_node(int w) {
    alive[w] = false;
    std::vector<Cell>().swap(node_cells[w]);
    count_node(w);
    ++eliminated;
  }

  void kill_table(int t) {
    tables[t].alive = false;
    incident[tables[t].a].erase(t);
    incident[tables[t].b].erase(t);
    table_bytes -= table_size(tables[t]);
    ws.give(std::move(tables[t].cells));  // step 3 of the header
    tables[t].cells = {};
  }

  int add_table(Table t) {
    table_bytes += table_size(t);
    tables.push_back(std::move(t));
    const int id = static_cast<int>(tables.size()) - 1;
    incident[tables[id].a].insert(id);
    incident[tables[id].b].insert(id);
    return id;
  }

  // Two live tables between the same pair of nodes, if v has some.
  bool merge_parallel(int v) {
    std::vector<int> inc(incident[v].begin(), incident[v].end());
    for (size_t i = 0; i < inc.size(); ++i)
      for (size_t j = i + 1; j < inc.size(); ++j) {
        Table& t1 = tables[inc[i]];
        Table& t2 = tables[inc[j]];
        const int o1 = t1.a == v ? t1.b : t1.a, o2 = t2.a == v ? t2.b : t2.a;
        if (o1 != o2) continue;
        Table t;
        t.a = t1.a, t.b = t1.b, t.na = t1.na, t.nb = t1.nb;
        t.inside_min_mem = t1.inside_min_mem + t2.inside_min_mem;
        t.cells = ws.cells(static_cast<size_t>(t.na) * t.nb);
        for (int sa = 0; sa < t.na; ++sa)
          for (int sb = 0; sb < t.nb; ++sb)
            t.put(sa, sb) = combine(t1.at(sa, sb), t2.from(t.a, sa, sb), t.inside_min_mem);
        kill_table(inc[i]);
        kill_table(inc[j]);
        add_table(std::move(t));
        return true;
      }
    return false;
  }

  void eliminate_node(int w) {  // exactly two distinct neighbours
    const int e1 = *incident[w].begin(), e2 = *std::next(incident[w].begin());
    const int a = tables[e1].a == w ? tables[e1].b : tables[e1].a;
    const int b = tables[e2].a == w ? tables[e2].b : tables[e2].a;
    Table t;
    t.a = a, t.b = b, t.na = g.strategies(a), t.nb = g.strategies(b);
    t.inside_min_mem = tables[e1].inside_min_mem + node_inside[w] + tables[e2].inside_min_mem;
    const double left_inside = tables[e1].inside_min_mem + node_inside[w];
    t.cells = ws.cells(static_cast<size_t>(t.na) * t.nb);
    const int sw_n = g.strategies(w);
    if (k == 1 && limit == kNoMemoryLimit) {
      eliminate_single(e1, w, e2, t);
    } else {
      for (int sa = 0; sa < t.na; ++sa) {
        std::vector<Cell> left(sw_n);  // e1 + w, per sw
        for (int sw = 0; sw < sw_n; ++sw)
          left[sw] = combine(tables[e1].from(a, sa, sw), node_cells[w][sw], left_inside);
        std::vector<const Cell*> xs(sw_n), ys(sw_n);
        for (int sw = 0; sw < sw_n; ++sw) xs[sw] = &left[sw];
        for (int sb = 0; sb < t.nb; ++sb) {
          for (int sw = 0; sw < sw_n; ++sw) ys[sw] = &tables[e2].from(w, sw, sb);
          t.put(sa, sb) = combine_many(xs, ys, t.inside_min_mem);
        }
      }
    }
    kill_table(e1);
    kill_table(e2);
    kill_node(w);
    add_table(std::move(t));
  }

  // Node elimination when every cell holds at most one label (k = 1, no memory limit): cell
  // (sa, sb) is the least over sw of (e1 + w) + e2 by (cost, memory, sw), the sums and the
  // choice of combine_many (which keeps the first of equal labels in sw order), as a (min, +)
  // product of dense rows. For each sa the sw are taken cheapest (e1 + w) first, and every
  // kDropEvery of them the columns sb that no later sw can beat or tie leave the scan (their
  // best already costs less than this sw's (e1 + w) plus the least e2 into sb). The scan keeps
  // the least cost and the first sw reaching it without branches; a column where a later sw
  // tied it is settled again in full by (cost, memory, sw). No cell is built for an sw that
  // loses, and a pair's derivation record only for the winner.
  static constexpr size_t kDropEvery = 2;
  void eliminate_single(int e1, int w, int e2, Table& t) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const int a = t.a, sw_n = g.strategies(w), nb = t.nb;
    const size_t cells = static_cast<size_t>(sw_n) * nb;
    // e2 as dense rows (an empty cell costs infinity), and the least of each column.
    sc.rc.assign(cells, inf), sc.rm.assign(cells, 0), sc.rd.assign(cells, -1);
    sc.rmin.assign(nb, inf);
    for (int sw = 0; sw < sw_n; ++sw) {
      if (node_cells[w][sw].empty()) continue;
      for (int sb = 0; sb < nb; ++sb)
        if (const Cell& c = tables[e2].from(w, sw, sb); !c.empty()) {
          const size_t i = static_cast<size_t>(sw) * nb + sb;
          sc.rc[i] = c.front().cost, sc.rm[i] = c.front().mem, sc.rd[i] = c.front().deriv;
          sc.rmin[sb] = std::min(sc.rmin[sb], sc.rc[i]);
        }
    }
    sc.lc.resize(sw_n), sc.lm.resize(sw_n), sc.le.resize(sw_n), sc.lw.resize(sw_n);
    sc.ld.resize(sw_n), sc.bc.resize(nb), sc.bw.resize(nb), sc.tie.resize(nb);
    double* bc = sc.bc.data();
    int* bw = sc.bw.data();
    char* tie = sc.tie.data();
    for (int sa = 0; sa < t.na; ++sa) {
      sc.by_cost.clear();
      for (int sw = 0; sw < sw_n; ++sw) {  // e1 + w
        const Cell &x = tables[e1].from(a, sa, sw), &y = node_cells[w][sw];
        sc.ld[sw] = -2;  // its derivation record: made when it wins a cell
        if (x.empty() || y.empty()) continue;
        sc.lc[sw] = x.front().cost + y.front().cost;
        sc.lm[sw] = x.front().mem + y.front().mem;
        sc.le[sw] = x.front().deriv, sc.lw[sw] = y.front().deriv;
        sc.by_cost.emplace_back(sc.lc[sw], sw);
      }
      std::sort(sc.by_cost.begin(), sc.by_cost.end());
      sc.order.clear();
      for (const auto& [cost, sw] : sc.by_cost) sc.order.push_back(sw);
      sc.open.clear();
      for (int sb = 0; sb < nb; ++sb) {
        bc[sb] = inf, bw[sb] = -1, tie[sb] = 0;
        if (sc.rmin[sb] != inf) sc.open.push_back(sb);
      }
      for (size_t i = 0; i < sc.order.size() && !sc.open.empty(); ++i) {
        const int sw = sc.order[i];
        const double x = sc.lc[sw];
        if (i % kDropEvery == 0) {  // the (e1 + w) only grow along the order
          size_t kept = 0;
          for (const int sb : sc.open)
            if (!(x + sc.rmin[sb] > bc[sb])) sc.open[kept++] = sb;
          sc.open.resize(kept);
        }
        const double* rcs = &sc.rc[static_cast<size_t>(sw) * nb];
        for (const int sb : sc.open) {
          const double c = x + rcs[sb], best = bc[sb];
          const bool less = c < best;
          bc[sb] = less ? c : best;
          bw[sb] = less ? sw : bw[sb];
          tie[sb] = less ? 0 : static_cast<char>(tie[sb] | (c == best));
        }
        work += static_cast<int64_t>(sc.open.size());
      }
      for (int sb = 0; sb < nb; ++sb) {
        if (bc[sb] == inf) continue;  // no sw reaches it: the cell stays empty
        int best = bw[sb];
        double mem = sc.lm[best] + sc.rm[static_cast<size_t>(best) * nb + sb];
        if (tie[sb])  // several sw reach the least cost: the least memory, then the first sw
          for (const int sw : sc.order) {
            const size_t i = static_cast<size_t>(sw) * nb + sb;
            if (sc.lc[sw] + sc.rc[i] != bc[sb]) continue;
            const double m = sc.lm[sw] + sc.rm[i];
            if (m < mem || (m == mem && sw < best)) best = sw, mem = m;
          }
        if (sc.ld[best] == -2) sc.ld[best] = pair(sc.le[best], sc.lw[best]);
        t.put(sa, sb) = Cell{
            Label{bc[sb], mem, pair(sc.ld[best], sc.rd[static_cast<size_t>(best) * nb + sb])}};
      }
    }
  }

  void contract_leaf(int w) {  // exactly one neighbour
    const int e = *incident[w].begin();
    const int a = tables[e].a == w ? tables[e].b : tables[e].a;
    const double leaf_inside = tables[e].inside_min_mem + node_inside[w];
    const int sw_n = g.strategies(w);
    std::vector<const Cell*> xs(sw_n), ys(sw_n);
    for (int sw = 0; sw < sw_n; ++sw) ys[sw] = &node_cells[w][sw];
    for (int sa = 0; sa < g.strategies(a); ++sa) {
      for (int sw = 0; sw < sw_n; ++sw) xs[sw] = &tables[e].from(a, sa, sw);
      node_cells[a][sa] = combine(node_cells[a][sa], combine_many(xs, ys, leaf_inside),
                                  node_inside[a] + leaf_inside);
    }
    count_node(a);
    node_inside[a] += leaf_inside;
    kill_table(e);
    kill_node(w);
  }

  void finish(int w) {  // no neighbour left: the component is solved
    Labels all;
    for (const Cell& c : node_cells[w]) all.insert(all.end(), c.begin(), c.end());
    components.push_back(prune(std::move(all), node_inside[w]));
    kill_node(w);
  }

  // Not series-parallel: fix the node with the fewest neighbours to its locally best candidate.
  int viable(int v) const {
    int n = 0;
    for (const Cell& c : node_cells[v]) n += !c.empty();
    return n;
  }

  void condition(int w) {
    const int sw_n = g.strategies(w);
    if (viable(w) > 1) {  // fixing a node with one viable candidate loses nothing
      conditioned = true;
      ++conditioned_nodes;
      if (first_guess < 0) first_guess = w;
    }
    int best = -1;
    double best_score = std::numeric_limits<double>::infinity();
    for (int sw = 0; sw < sw_n; ++sw) {
      if (node_cells[w][sw].empty()) continue;  // nothing fits the memory limit
      double score = node_cells[w][sw].front().cost;
      for (int t : incident[w]) {
        Table& tb = tables[t];
        const int o = tb.a == w ? tb.b : tb.a;
        double m = std::numeric_limits<double>::infinity();
        for (int so = 0; so < g.strategies(o); ++so) {
          const Cell& ec = tb.from(w, sw, so);
          if (ec.empty() || node_cells[o][so].empty()) continue;
          m = std::min(m, ec.front().cost + node_cells[o][so].front().cost);
        }
        score += m;
      }
      if (score < best_score) best_score = score, best = sw;
    }
    if (best < 0) best = 0;  // every cell empty: the limit cannot be met; any choice will do
    // Fold w's own cell and each edge into the neighbours.
    const std::vector<int> inc(incident[w].begin(), incident[w].end());
    bool own_folded = false;
    for (int t : inc) {
      Table& tb = tables[t];
      const int o = tb.a == w ? tb.b : tb.a;
      const double add_inside = tb.inside_min_mem + (own_folded ? 0 : node_inside[w]);
      for (int so = 0; so < g.strategies(o); ++so) {
        Cell c = tb.from(w, best, so);
        if (!own_folded) c = combine(c, node_cells[w][best], add_inside);
        node_cells[o][so] = combine(node_cells[o][so], c, node_inside[o] + add_inside);
      }
      count_node(o);
      node_inside[o] += add_inside;
      own_folded = true;
      kill_table(t);
    }
    kill_node(w);
  }

  // The steps that need no guess (merges, leaves, degree-2 nodes, finished components), until
  // none is left: its tables depend on the graph's shape only, never on a node's own cells, so
  // a run restricted to fixed candidates goes through the same steps (see restrict_to).
  void eliminate_exactly() {
    const int n = static_cast<int>(g.nodes.size());
    if (queued.empty()) {
      queued.assign(n, true);
      for (int v = 0; v < n; ++v) queue.push_back(v);
    }
    while (!queue.empty()) {
      const int v = queue.front();
      queue.pop_front();
      queued[v] = false;
      if (!alive[v]) continue;
      std::vector<int> nbrs;
      for (int t : incident[v]) nbrs.push_back(tables[t].a == v ? tables[t].b : tables[t].a);
      check_budget();
      if (merge_parallel(v)) {
        touch(v);
        for (int o : nbrs) touch(o);
        continue;
      }
      if (nbrs.empty()) {
        finish(v);
      } else if (nbrs.size() == 1) {
        contract_leaf(v);
        touch(nbrs[0]);
      } else if (nbrs.size() == 2) {
        eliminate_node(v);
        touch(nbrs[0]);
        touch(nbrs[1]);
      }
    }
  }
  void touch(int v) {
    if (alive[v] && !queued[v]) queued[v] = true, queue.push_back(v);
  }

  // A copy of a run that has done eliminate_exactly, restricted to the fixed candidates of
  // `restrict`: each fixed node's other cells are emptied, which is where a run restricted from
  // the start would stand (the steps so far never read a node's own cells, and a fixed node is
  // still alive: it was fixed by conditioning, which comes later). False when a fixed node is
  // gone (the caller then runs from the start).
  bool restrict_to(const std::map<int, int>& restrict) {
    for (const auto& [v, s] : restrict) {
      if (!alive[v]) return false;
      for (int c = 0; c < g.strategies(v); ++c)
        if (c != s) node_cells[v][c].clear();
      count_node(v);
    }
    return true;
  }

  void run() {
    const int n = static_cast<int>(g.nodes.size());
    for (;;) {
      eliminate_exactly();
      int pick = -1;
      for (int v = 0; v < n; ++v) {
        if (!alive[v]) continue;
        if (viable(v) <= 1) {  // exact to fix: take it first
          pick = v;
          break;
        }
        if (pick < 0 || incident[v].size() < incident[pick].size() ||
            (incident[v].size() == incident[pick].size() && g.strategies(v) < g.strategies(pick)))
          pick = v;
      }
      if (pick < 0) break;
      std::vector<int> nbrs;
      for (int t : incident[pick]) nbrs.push_back(tables[t].a == pick ? tables[t].b : tables[t].a);
      condition(pick);
      check_budget();
      for (int o : nbrs) touch(o);
    }
  }

  std::vector<int> recover(int deriv) const {
    std::vector<int> choice(g.nodes.size(), -1);
    std::vector<int> stack{deriv};
    while (!stack.empty()) {
      const int d = stack.back();
      stack.pop_back();
      if (d < 0) continue;
      const Deriv& r = derivs[d];
      if (r.node >= 0) {
        choice[r.node] = r.strategy;
      } else {
        stack.push_back(r.a);
        stack.push_back(r.b);
      }
    }
    return choice;
  }
};

}  // namespace

namespace {

// Cutset conditioning around the elimination: when a run had to guess (fix a node with a real
// choice), run again once per candidate of the first node it guessed, with that node fixed
// (a fixed node is then eliminated exactly), while the budget of runs lasts (a branch is taken
// only when all its runs fit in what is left, so the runs never exceed the budget). The branches
// partition the assignments, so the union of their top-k is the top-k; the result is exact
// when no leaf of the branching had to guess.
struct Brancher {
  const CostGraph& g;
  const SearchOptions& o;
  double limit;
  size_t graph_bytes = 0;  // a capped graph's cost tables, made for this search
  int runs = 0;
  int committed = 1;  // runs started or promised to branches already taken: at most the budget
  int64_t work = 0;
  size_t peak_bytes = 0;
  bool exact = true, capped = false;
  int guessed = 0;
  EdgeCells edge_cells = edge_cells_of(g);
  Workspace workspace{};
  // The unrestricted run after its exact steps (Dp::eliminate_exactly): every run, restricted
  // or not, goes through the same steps first, so each starts from a copy of this one.
  std::unique_ptr<Dp> base{};

  std::vector<Assignment> solve(std::map<int, int>& restrict) {
    if (!base) {
      base = std::make_unique<Dp>(g, edge_cells, workspace, limit, o.top_k, std::map<int, int>{},
                                  o.max_search_bytes, graph_bytes);
      base->eliminate_exactly();
      work += base->work;
    }
    auto run = std::make_unique<Dp>(*base);
    run->held_bytes += base->bytes();  // the base stays alive beside the copy
    run->work = 0;
    if (!run->restrict_to(restrict))
      run = std::make_unique<Dp>(g, edge_cells, workspace, limit, o.top_k, restrict,
                                 o.max_search_bytes, graph_bytes);
    Dp& dp = *run;
    dp.run();
    ++runs;
    work += dp.work;
    peak_bytes = std::max(peak_bytes, dp.peak_bytes);
    capped = capped || dp.capped;
    if (dp.conditioned && committed + g.strategies(dp.first_guess) <= o.dp_branch_budget) {
      const int w = dp.first_guess;
      committed += g.strategies(w);  // one run per candidate of w
      run.reset();  // the branches run one at a time: one run's tables are alive, not a stack
      std::vector<Assignment> all;
      for (int s = 0; s < g.strategies(w); ++s) {
        restrict[w] = s;
        std::vector<Assignment> part = solve(restrict);
        all.insert(all.end(), part.begin(), part.end());
      }
      restrict.erase(w);
      return all;
    }
    if (dp.conditioned) exact = false, guessed = std::max(guessed, dp.conditioned_nodes);
    // Components are independent: their results combine like two cells (the limit was
    // already applied inside each one against the least memory of the whole graph).
    Cell total{Label{0, 0, -1}};
    for (const Cell& c : dp.components) total = dp.combine(total, c, dp.total_min_mem);
    std::vector<Assignment> out;
    for (const Label& l : total) {
      Assignment a = evaluate(g, dp.recover(l.deriv), limit);
      if (dp.conditioned) a = improve_locally(g, a, limit);
      out.push_back(std::move(a));
    }
    return out;
  }
};

// The graph dp searches when some node has more candidates than SearchOptions::
// dp_max_candidates (`most`): such a node keeps `most` of them, the others all of theirs. Kept
// first: the node's first candidate (a step graph's replicated layout: the all-first
// assignment stays a start), its least-memory one (the least memory any assignment needs is
// unchanged, so a memory limit that can be met still can), and the candidates of `starts`
// (propagation's picks); then the rest by a local lower bound, least first: the candidate's
// own cost plus, over its edges, the least of edge cost + neighbour's own cost over the
// neighbour's candidates (ties: the lower index). Kept candidates stay in their order.
struct Capped {
  CostGraph graph;
  std::vector<std::vector<int>> original;  // per node: the index in g of each kept candidate
  int nodes_capped = 0;
  size_t bytes = 0;  // of the capped graph's cost tables

  std::vector<int> expand(const std::vector<int>& choice) const {
    std::vector<int> out(choice.size());
    for (size_t v = 0; v < choice.size(); ++v)
      out[v] = original[v][static_cast<size_t>(choice[v])];
    return out;
  }
};

Capped cap_candidates(const CostGraph& g, int most, const std::vector<Assignment>& starts) {
  Capped c;
  const size_t n = g.nodes.size();
  std::vector<std::vector<double>> bound(n);
  for (size_t v = 0; v < n; ++v) bound[v] = g.nodes[v].cost;
  for (const CostGraph::Edge& e : g.edges) {
    const std::vector<double>&ca = g.nodes[e.from].cost, &cb = g.nodes[e.to].cost;
    std::vector<double> to_b(cb.size(), std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < ca.size(); ++i) {
      double least = std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < cb.size(); ++j) {
        least = std::min(least, e.cost[i][j] + cb[j]);
        to_b[j] = std::min(to_b[j], e.cost[i][j] + ca[i]);
      }
      bound[e.from][i] += least;
    }
    for (size_t j = 0; j < cb.size(); ++j) bound[e.to][j] += to_b[j];
  }
  c.original.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const CostGraph::Node& nd = g.nodes[v];
    const int s_n = static_cast<int>(nd.cost.size());
    std::vector<int>& keep = c.original[v];
    if (s_n <= most) {
      for (int s = 0; s < s_n; ++s) keep.push_back(s);
    } else {
      ++c.nodes_capped;
      std::vector<char> in(static_cast<size_t>(s_n), 0);
      auto take = [&](int s) {
        if (static_cast<int>(keep.size()) < most && !in[static_cast<size_t>(s)])
          in[static_cast<size_t>(s)] = 1, keep.push_back(s);
      };
      take(0);
      take(static_cast<int>(std::min_element(nd.memory.begin(), nd.memory.end()) -
                            nd.memory.begin()));
      for (const Assignment& a : starts) take(a.choice[v]);
      std::vector<int> order(static_cast<size_t>(s_n));
      for (int s = 0; s < s_n; ++s) order[static_cast<size_t>(s)] = s;
      std::stable_sort(order.begin(), order.end(),
                       [&](int x, int y) { return bound[v][x] < bound[v][y]; });
      for (int s : order) take(s);
      std::sort(keep.begin(), keep.end());
    }
    std::vector<double> cost, mem;
    std::vector<std::string> labels;
    for (int s : keep) {
      cost.push_back(nd.cost[static_cast<size_t>(s)]);
      mem.push_back(nd.memory[static_cast<size_t>(s)]);
      if (!nd.labels.empty()) labels.push_back(nd.labels[static_cast<size_t>(s)]);
    }
    c.graph.add_node(nd.name, std::move(cost), std::move(mem), std::move(labels));
  }
  for (const CostGraph::Edge& e : g.edges) {
    const std::vector<int>&ka = c.original[static_cast<size_t>(e.from)],
                       &kb = c.original[static_cast<size_t>(e.to)];
    std::vector<std::vector<double>> t(ka.size(), std::vector<double>(kb.size()));
    for (size_t i = 0; i < ka.size(); ++i)
      for (size_t j = 0; j < kb.size(); ++j)
        t[i][j] = e.cost[static_cast<size_t>(ka[i])][static_cast<size_t>(kb[j])];
    c.bytes += ka.size() * (sizeof(t[0]) + kb.size() * sizeof(double));
    c.graph.add_edge(e.from, e.to, std::move(t));
  }
  return c;
}

}  // namespace

SearchResult search_dp(const CostGraph& g, const SearchOptions& o) {
  int most = 0;
  for (const CostGraph::Node& nd : g.nodes) most = std::max(most, static_cast<int>(nd.cost.size()));
  const bool capping = o.dp_max_candidates > 0 && most > o.dp_max_candidates;
  auto solve = [&](double limit) {
    // Sharding propagation's pick: a start for a run that had to guess (W4 on 2x2: 1.6% cheaper
    // than the guessing runs'), and kept in a capped graph.
    std::vector<Assignment> propagated;
    bool have_propagated = false;
    auto propagation = [&]() -> const std::vector<Assignment>& {
      if (!have_propagated) {
        SearchOptions po;
        po.memory_limit = limit;
        propagated = search_propagate(g, po).top;
        have_propagated = true;
      }
      return propagated;
    };
    std::optional<Capped> capped;
    if (capping) capped = cap_candidates(g, o.dp_max_candidates, propagation());
    Brancher b{capped ? capped->graph : g, o, limit, capped ? capped->bytes : 0};
    std::map<int, int> restrict;
    detail::TopK top(o.top_k);
    for (Assignment& a : b.solve(restrict))
      top.offer(capped ? improve_locally(g, evaluate(g, capped->expand(a.choice), limit), limit)
                       : std::move(a));
    // A run that had to guess is a heuristic: it also offers every node's first candidate (the
    // replicated layout of a step's graph) and sharding propagation's pick, each polished by
    // coordinate descent, so that it never returns worse than those starts.
    if (!b.exact || capped) {
      top.offer(improve_locally(g, evaluate(g, std::vector<int>(g.nodes.size(), 0), limit), limit));
      for (const Assignment& a : propagation()) top.offer(improve_locally(g, a, limit));
    }
    SearchResult r;
    r.top = top.take();
    r.work = b.work;
    r.search_bytes = b.peak_bytes;
    r.exact = b.exact && !b.capped && !capped;
    r.notes = b.runs == 1 && b.exact ? "exact elimination (series-parallel)"
              : b.exact ? fmt::format("{} elimination runs, conditioning on fixed nodes", b.runs)
                        : fmt::format(
                              "not series-parallel beyond the branch budget: {} runs, "
                              "up to {} node(s) fixed by the greedy fallback, then "
                              "coordinate descent",
                              b.runs, b.guessed);
    if (b.capped)
      r.notes +=
          fmt::format("; but cells were capped at {} labels: not guaranteed exact", kMaxLabels);
    if (capped)
      r.notes += fmt::format(
          "; {} node(s) of up to {} candidates searched on their {} best by a local bound (then "
          "coordinate descent on all candidates): not guaranteed exact",
          capped->nodes_capped, most, o.dp_max_candidates);
    return r;
  };
  return detail::with_memory_fallback(g, o, [&](double limit) {
    SearchResult r = solve(limit);
    if (r.top.empty()) {
      // Only the fallback can get here (a fixed node left nothing that fits): report the
      // cheapest assignments regardless of memory rather than nothing.
      r = solve(kNoMemoryLimit);
      r.exact = false;
      r.notes += "; the greedy fallback found nothing under the memory limit";
    }
    return r;
  });
}

}  // namespace spora::parallel::search
