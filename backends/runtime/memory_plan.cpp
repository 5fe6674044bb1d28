// The static memory plan (memory_plan.h).
#include "backends/runtime/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "semantics/liveness.h"

namespace spora::runtime {

using ir::Graph;
using ir::Node;

namespace {

constexpr int64_t kAlign = static_cast<int64_t>(sem::kBufferAlignment);

int64_t aligned(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Bytes of a value of type t (tensors and their tuples / records); -1 when not static.
int64_t type_bytes(const sem::Type& t) {
  switch (t.kind) {
    case sem::Type::Kind::Tensor: {
      const int64_t n = t.numel();
      return n < 0 ? -1 : n * static_cast<int64_t>(dtype_size(t.dtype));
    }
    case sem::Type::Kind::Tuple:
    case sem::Type::Kind::Record: {
      int64_t sum = 0;
      for (const auto& e : t.elems) {
        const int64_t b = type_bytes(*e);
        if (b < 0) return -1;
        sum += b;
      }
      return sum;
    }
    case sem::Type::Kind::List:
      return -1;
    default:
      return 0;
  }
}

// Primitives whose result shares its inputs' buffers (and allocates none).
bool is_view(const Node& n) {
  static const std::set<std::string> views = {
      "make_tuple", "make_record", "tuple_get", "record_get", "identity", "stop_gradient",
      "reshape",    "flatten",     "squeeze",   "unsqueeze",  "expand_dims",
      "shard_hint", "stage_boundary"};
  return n.prim && views.count(n.prim->name);
}

// The buffers a value shares, with the element structure of tuples / records when known.
struct Owners {
  std::vector<size_t> all;           // buffer indices
  std::vector<Owners> parts;         // per element (empty: structure unknown)
};

void append(std::vector<size_t>& into, const std::vector<size_t>& from) {
  for (size_t b : from)
    if (std::find(into.begin(), into.end(), b) == into.end()) into.push_back(b);
}

// Step 3: greedy by size, best fit.
void place(std::vector<PlannedBuffer>& bufs) {
  std::vector<size_t> order(bufs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (bufs[a].bytes != bufs[b].bytes) return bufs[a].bytes > bufs[b].bytes;
    return bufs[a].begin < bufs[b].begin;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    PlannedBuffer& b = bufs[i];
    if (b.bytes == 0) {
      b.offset = 0;
      continue;
    }
    std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, offset + bytes) of overlapping buffers
    for (size_t j : placed) {
      const PlannedBuffer& o = bufs[j];
      if (o.begin <= b.end && b.begin <= o.end) taken.emplace_back(o.offset, o.offset + o.bytes);
    }
    std::sort(taken.begin(), taken.end());
    int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
    for (const auto& [lo, hi] : taken) {
      if (lo > cursor) {
        const int64_t gap = lo - cursor;
        if (gap >= b.bytes && gap < best_gap) {
          best = cursor;
          best_gap = gap;
        }
      }
      cursor = std::max(cursor, hi);
    }
    b.offset = best >= 0 ? best : cursor;
    placed.push_back(i);
  }
}

}  // namespace

GraphPlan plan_graph(const Graph& g, const std::function<int64_t(const Graph*)>& nested_peak) {
  GraphPlan plan;
  plan.graph = &g;
  const sem::Liveness live = sem::analyze_liveness(g);
  const size_t P = g.params.size();
  std::vector<Owners> owners(P + g.nodes.size());
  std::vector<PlannedBuffer>& bufs = plan.buffers;

  auto fresh = [&](const Node* n, long at) -> std::vector<size_t> {
    int64_t b = n->type ? type_bytes(*n->type) : 0;
    if (b < 0) {
      ++plan.unsized_values;
      b = 0;
    }
    if (b == 0) return {};
    bufs.push_back(PlannedBuffer{n, aligned(b), at, at, 0});
    return {bufs.size() - 1};
  };
  auto owners_of = [&](const Node* x) -> const Owners* {
    if (!x || x->graph != &g) return nullptr;  // an enclosing graph's value: not ours
    auto it = live.slot.find(x);
    return it == live.slot.end() ? nullptr : &owners[it->second];
  };

  for (size_t i = 0; i < P; ++i) {
    owners[i].all = fresh(g.params[i], -1);
    for (size_t b : owners[i].all) plan.param_bytes += bufs[b].bytes;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node* n = g.nodes[i];
    const long pos = static_cast<long>(i);
    Owners& o = owners[P + i];
    if (n->is_constant()) {
      if (n->value.kind != sem::Value::Kind::None && n->type) plan.constant_bytes += std::max<int64_t>(0, type_bytes(*n->type));
      continue;
    }
    if (is_view(*n)) {
      const std::string& p = n->prim->name;
      if (p == "make_tuple" || p == "make_record") {
        for (const Node* x : n->inputs) {
          const Owners* xo = owners_of(x);
          o.parts.push_back(xo ? *xo : Owners{});
          if (xo) append(o.all, xo->all);
        }
      } else if ((p == "tuple_get" || p == "record_get") && !n->inputs.empty()) {
        const Owners* xo = owners_of(n->inputs[0]);
        long idx = -1;
        if (p == "tuple_get" && n->attrs.has("index")) idx = static_cast<long>(n->attrs.get_int("index"));
        if (p == "record_get" && n->attrs.has("field") && n->inputs[0]->type)
          idx = n->inputs[0]->type->field_index(n->attrs.get_string("field"));
        if (xo && idx >= 0 && static_cast<size_t>(idx) < xo->parts.size()) {
          o = xo->parts[static_cast<size_t>(idx)];
        } else if (xo) {
          o.all = xo->all;
        }
      } else {
        for (const Node* x : n->inputs)
          if (const Owners* xo = owners_of(x)) append(o.all, xo->all);
      }
      continue;
    }
    o.all = fresh(n, pos);
    if (live.runs_graph[i]) {
      // The result may pass inputs through; the nested run needs its workspace.
      for (const Node* x : n->inputs)
        if (const Owners* xo = owners_of(x)) append(o.all, xo->all);
      int64_t ws = 0;
      if (n->callee) ws = nested_peak(n->callee);
      // A counted loop's index and an iterator's element are body parameters the node makes
      // itself (the others are its operands).
      const bool makes_first_param = n->is_prim("for_range") || n->is_prim("for_each");
      for (const Node* x : n->inputs) {
        if (!x || !x->graph_value) continue;
        int64_t w = nested_peak(x->graph_value);
        const auto& ps = x->graph_value->params;
        if (makes_first_param && !ps.empty() && ps[0]->type) w += std::max<int64_t>(0, type_bytes(*ps[0]->type));
        ws = std::max(ws, w);
      }
      if (ws > 0) bufs.push_back(PlannedBuffer{nullptr, aligned(ws), pos, pos, 0});
    }
  }

  // Step 2: a buffer lives until the last use of any value sharing it.
  for (size_t s = 0; s < owners.size(); ++s) {
    const long last = live.last_use[s];
    for (size_t b : owners[s].all) bufs[b].end = std::max(bufs[b].end, last);
  }

  // The workspace a caller reserves: the arena of everything but the parameters (they are the
  // caller's operands, already in its own plan).
  {
    std::vector<PlannedBuffer> own;
    for (const PlannedBuffer& b : bufs)
      if (b.begin >= 0) own.push_back(b);
    place(own);
    for (const PlannedBuffer& b : own) plan.workspace_bytes = std::max(plan.workspace_bytes, b.offset + b.bytes);
  }
  place(bufs);
  for (const PlannedBuffer& b : bufs) plan.peak_bytes = std::max(plan.peak_bytes, b.offset + b.bytes);
  // Lower bound: bytes live at each position (a sweep over begin / end events).
  std::map<long, int64_t> delta;
  for (const PlannedBuffer& b : bufs) {
    delta[b.begin] += b.bytes;
    delta[b.end + 1] -= b.bytes;
  }
  int64_t now = 0;
  for (const auto& [pos, d] : delta) {
    now += d;
    plan.lower_bound_bytes = std::max(plan.lower_bound_bytes, now);
  }
  return plan;
}

const GraphPlan* ModulePlan::find(const Graph* g) const {
  for (const GraphPlan& p : graphs)
    if (p.graph == g) return &p;
  return nullptr;
}

ModulePlan plan_module(const ir::Module& m, const Graph* root) {
  ModulePlan out;
  if (!root) root = m.entry;
  if (!root) return out;
  std::unordered_map<const Graph*, int64_t> peaks;  // planned (or in progress: 0)
  std::unordered_map<const Graph*, size_t> index;
  std::function<int64_t(const Graph*)> peak_of = [&](const Graph* g) -> int64_t {
    auto it = peaks.find(g);
    if (it != peaks.end()) return it->second;  // done, or recursion in progress (0)
    peaks[g] = 0;
    GraphPlan p = plan_graph(*g, peak_of);
    peaks[g] = p.workspace_bytes;
    index[g] = out.graphs.size();
    out.graphs.push_back(std::move(p));
    return peaks[g];
  };
  peak_of(root);
  // The root first, the rest in the order they were planned (innermost first).
  std::rotate(out.graphs.begin(), out.graphs.begin() + static_cast<long>(index[root]),
              out.graphs.begin() + static_cast<long>(index[root]) + 1);
  return out;
}

std::string describe(const ModulePlan& plan, size_t max_bodies) {
  if (plan.graphs.empty()) return "no graph planned";
  auto mb = [](int64_t b) { return static_cast<double>(b) / 1e6; };
  const GraphPlan& root = plan.graphs.front();
  std::string s = fmt::format("planned peak {:.3f} MB for @{} (lower bound {:.3f} MB, constants {:.3f} MB)",
                              mb(root.peak_bytes), root.graph->name, mb(root.lower_bound_bytes),
                              mb(root.constant_bytes));
  std::vector<const GraphPlan*> bodies;
  for (size_t i = 1; i < plan.graphs.size(); ++i) bodies.push_back(&plan.graphs[i]);
  std::stable_sort(bodies.begin(), bodies.end(),
                   [](const GraphPlan* a, const GraphPlan* b) { return a->workspace_bytes > b->workspace_bytes; });
  if (!bodies.empty()) {
    s += "; nested graphs' workspaces:";
    for (size_t i = 0; i < bodies.size() && i < max_bodies; ++i)
      s += fmt::format("{} @{} {:.3f} MB", i ? "," : "", bodies[i]->graph->name, mb(bodies[i]->workspace_bytes));
    if (bodies.size() > max_bodies) s += fmt::format(" (+{} more)", bodies.size() - max_bodies);
  }
  int64_t unsized = 0;
  for (const GraphPlan& p : plan.graphs) unsized += p.unsized_values;
  if (unsized) s += fmt::format("; {} values of unknown size counted as 0", unsized);
  return s;
}

}  // namespace spora::runtime
