#include "parallel/search/from_ir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "lang/diagnostics.h"
#include "semantics/cost.h"

namespace spora::parallel::search {

namespace {

double bytes_of(const sem::TypeP& t) { return sem::type_bytes(t); }

double local_bytes(const sem::TypeP& t, const Layout& l, const Mesh& m) {
  if (!t || !t->is_tensor()) return bytes_of(t);
  return bytes_of(t) * (l.rank() == t->rank() ? l.local_fraction(m) : 1.0);
}

// The dtype an application computes in, as the simulator's cost model reads it
// (sim::compute_dtype): its first floating-point input, else its output's, else f32.
DType compute_dtype(const std::vector<sem::TypeP>& in, const sem::TypeP& out) {
  for (const sem::TypeP& t : in)
    if (t && t->is_tensor() && is_float(t->dtype)) return t->dtype;
  if (out && out->is_tensor()) return out->dtype;
  return DType::f32;
}

bool static_tensor(const sem::TypeP& t) {
  if (!t || !t->is_tensor()) return false;
  for (int64_t d : t->shape)
    if (d < 0) return false;
  return true;
}

}  // namespace

std::vector<Layout> enumerate_layouts(const std::vector<int64_t>& shape, const Mesh& mesh) {
  const int rank = static_cast<int>(shape.size());
  std::vector<Layout> out{Layout::replicated(rank)};
  // Each axis picks a dimension or none (rank + 1 choices); keep the valid ones.
  std::vector<int> pick(mesh.ndim(), -1);
  for (;;) {
    int a = 0;
    while (a < mesh.ndim() && ++pick[a] == rank) pick[a++] = -1;
    if (a == mesh.ndim()) break;
    Layout l = Layout::replicated(rank);
    bool ok = true;
    for (int ax = 0; ax < mesh.ndim() && ok; ++ax) {
      const int d = pick[ax];
      if (d < 0) continue;
      if (mesh.axis_size(ax) <= 1 || l.tensor_map[d] != -1 || shape[d] % mesh.axis_size(ax) != 0)
        ok = false;
      else
        l.tensor_map[d] = ax;
    }
    if (ok && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

namespace {

using NodeIds = std::map<const ir::Node*, int>;

// A node per parameter of the step (a tensor of static shape), a candidate per layout of its
// shape: the cost of its optimizer update, the memory of its copies.
void add_param_nodes(StepCostGraph& out, NodeIds& id, const ir::Graph& step,
                     const std::vector<std::string>& param_names, int trainable, int state_tensors,
                     const DeviceModel& device) {
  const Mesh& mesh = out.mesh;
  const double copies = 2.0 + state_tensors;  // weight, gradient, states
  const double update_passes = 3.0 + 2.0 * state_tensors;
  for (size_t i = 0; i < step.params.size(); ++i) {
    const ir::Node* p = step.params[i];
    if (!static_tensor(p->type)) continue;
    StepCostGraph::Origin o;
    o.node = p;
    o.is_param = true;
    o.trainable = static_cast<int>(i) < trainable;
    o.name = i < param_names.size() ? param_names[i]
             : !p->name.empty()     ? p->name  // the name strategy files use (x, y)
                                    : fmt::format("arg{}", i);
    o.layouts = enumerate_layouts(p->type->shape, mesh);
    std::vector<double> cost, mem;
    std::vector<std::string> labels;
    for (const Layout& l : o.layouts) {
      const double bytes = local_bytes(p->type, l, mesh);
      // A trainable parameter's cost is its optimizer update, memory-bound: read the weight,
      // the gradient and each state, write the weight and each state (sgd 3, momentum 5,
      // adam 7 passes over the local shard). Every device updates what it holds, so a
      // replicated weight pays it in full and a sharded one 1/p: without this term the
      // search saw no cost in replicating a layer's weights (the simulator's update does).
      cost.push_back(!o.trainable            ? 0.0
                     : device.update_seconds ? device.update_seconds(local_type(p->type, l, mesh))
                                             : bytes * update_passes / device.memory_bandwidth);
      mem.push_back(bytes * (o.trainable ? copies : 1.0));
      labels.push_back(l.partition_string(mesh));
    }
    id[p] = out.graph.add_node(o.name, cost, mem, labels);
    out.origins.push_back(std::move(o));
  }
}

// A node per primitive application, a candidate per strategy of its sharding rule (the
// replicated one without a rule): its compute time and the memory of its output.
void add_apply_nodes(StepCostGraph& out, NodeIds& id, const ir::Graph& step,
                     const DeviceModel& device) {
  const Mesh& mesh = out.mesh;
  for (size_t i = 0; i < step.nodes.size(); ++i) {
    const ir::Node* n = step.nodes[i];
    if (!n->is_apply() || !n->prim) continue;
    std::vector<sem::TypeP> in;
    for (const ir::Node* x : n->inputs) in.push_back(x->type);
    StepCostGraph::Origin o;
    o.node = n;
    o.name = fmt::format("{}#{}", n->prim->name, i);
    const ShardingRule* rule = sharding_rule(*n->prim);
    bool dynamic = !n->type || (n->type->is_tensor() && !static_tensor(n->type));
    for (const sem::TypeP& t : in) dynamic = dynamic || (t && t->is_tensor() && !static_tensor(t));
    if (rule && rule->enumerate && !dynamic)
      o.strategies = rule->enumerate(in, n->type, n->attrs, mesh);
    if (!device.pass_partial_sums)
      std::erase_if(o.strategies, [](const OpStrategy& s) {
        return std::any_of(s.inputs.begin(), s.inputs.end(),
                           [](const Layout& l) { return l.is_partial(); });
      });
    if (o.strategies.empty()) o.strategies.push_back(replicated_strategy(in, n->type));
    sem::OpCost c;
    if (const auto* cr = n->prim->facet<sem::CostRule>(sem::kCostFacet))
      c = (*cr)(in, n->type, n->attrs);
    const bool no_time = c.op_class == "view" || c.op_class == "host";
    const DType dtype = compute_dtype(in, n->type);
    // An input with no node of its own (a constant, a value of a kept call) is replicated: a
    // candidate that wants it partial cannot run (a replicated value is no partial sum) and
    // must not look free, as its edge would.
    bool has_source_free_input = false;
    std::vector<bool> sourced(n->inputs.size(), false);
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      sourced[k] = id.count(n->inputs[k]) > 0 && static_tensor(n->inputs[k]->type);
      has_source_free_input = has_source_free_input || !sourced[k];
    }
    std::vector<double> cost, mem;
    std::vector<std::string> labels;
    for (const OpStrategy& s : o.strategies) {
      const double f = s.local_flops_fraction;
      double seconds = 0;
      if (!no_time)
        seconds = device.op_seconds ? device.op_seconds(c.flops * f, c.bytes * f, c.op_class, dtype)
                                    : std::max(c.flops * f / device.peak_flops,
                                               c.bytes * f / device.memory_bandwidth) +
                                          device.launch_overhead;
      if (has_source_free_input)
        for (size_t k = 0; k < s.inputs.size() && k < sourced.size(); ++k)
          if (!sourced[k] && s.inputs[k].is_partial()) seconds += device.forbidden;
      cost.push_back(seconds);
      double m = 0;
      if (!s.tuple_outputs.empty() && n->type && !n->type->elems.empty()) {
        for (size_t e = 0; e < s.tuple_outputs.size() && e < n->type->elems.size(); ++e)
          m += local_bytes(n->type->elems[e], s.tuple_outputs[e], mesh);
      } else {
        m = local_bytes(n->type, s.output, mesh);
      }
      mem.push_back(no_time ? 0.0 : m);
      labels.push_back(s.name);
    }
    id[n] = out.graph.add_node(o.name, cost, mem, labels);
    out.origins.push_back(std::move(o));
  }
}

// The edges of the cost graph: entry (a, b) of an edge is the time to redistribute the tensor
// that candidate a of its source delivers into the layout candidate b of its destination wants.
// One shortest-path search per (source layout, shape, element bytes) prices every destination
// at once (redistribution_seconds_from), kept for the next edge of the same tensor type. The
// edges of a step repeat the same few tensor types and layouts, and a 3-D mesh gives hundreds
// of layouts a side (W4 on 2x2x2: a search per (source, destination) pair took tens of
// seconds). Layouts are interned to small ids, so that a pair costs one lookup.
class Edges {
 public:
  using Wanted = std::function<const Layout*(int)>;  // the layout candidate b wants
  Edges(StepCostGraph& out, const DeviceModel& device) : out_(out), device_(device) {}

  void add(int from, int to, const sem::TypeP& t, const Wanted& wanted) {
    const int sf = out_.graph.strategies(from), st = out_.graph.strategies(to);
    std::vector<std::vector<double>> cost(sf, std::vector<double>(st, 0.0));
    std::vector<int> dst_id(st, -1);
    for (int b = 0; b < st; ++b)
      if (const Layout* dst = wanted(b); dst && dst->rank() == t->rank())
        dst_id[b] = layout_id(*dst);
    bool any = false;
    for (int a = 0; a < sf; ++a) {
      const Layout& src = produced(from, a);
      if (src.rank() != t->rank()) continue;
      const int src_id = layout_id(src);
      const std::unordered_map<int, double>* r = nullptr;
      for (int b = 0; b < st; ++b) {
        if (dst_id[b] < 0 || dst_id[b] == src_id) continue;
        if (!r) r = &reachable(src_id, src, t);
        const auto at = r->find(dst_id[b]);
        cost[a][b] = at == r->end() ? device_.forbidden : at->second;
        any = any || cost[a][b] > 0;
      }
    }
    if (any || sf * st > 1) out_.graph.add_edge(from, to, std::move(cost));
  }

 private:
  int element_bytes(const sem::TypeP& t) const {
    return std::max(1, static_cast<int>(std::lround(static_cast<double>(dtype_size(t->dtype)) *
                                                    device_.comm_bytes_scale)));
  }
  // The layout the producer node delivers under candidate s.
  const Layout& produced(int node, int s) const {
    const StepCostGraph::Origin& o = out_.origins[node];
    return o.is_param || o.fanout ? o.layouts[s] : o.strategies[s].output;
  }
  int layout_id(const Layout& l) {
    std::string key;
    for (int x : l.tensor_map) key += static_cast<char>(x + 2);
    key.push_back('\0');
    for (int x : l.partial) key += static_cast<char>(x + 2);
    return layout_ids_.emplace(std::move(key), static_cast<int>(layout_ids_.size())).first->second;
  }
  const std::unordered_map<int, double>& reachable(int src_id, const Layout& src,
                                                   const sem::TypeP& t) {
    std::string key;
    auto put = [&](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(src_id);
    put(element_bytes(t));
    for (int64_t d : t->shape) put(d);
    const auto [it, fresh] = reach_.try_emplace(std::move(key));
    if (fresh) {
      try {
        for (const auto& [l, sec] :
             redistribution_seconds_from(src, t->shape, element_bytes(t), out_.mesh, device_.comm))
          it->second[layout_id(l)] = sec;
      } catch (const std::exception&) {
        // a source that does not fit the shape reaches nothing: every edge out of it is forbidden
      }
    }
    return it->second;
  }

  StepCostGraph& out_;
  const DeviceModel& device_;
  std::unordered_map<std::string, int> layout_ids_;
  std::unordered_map<std::string, std::unordered_map<int, double>> reach_;
};

// The edges from every tensor with a node to its consumers, through a fan-out node where
// several read it.
void add_edges(StepCostGraph& out, const NodeIds& id, const ir::Graph& step, int trainable,
               const DeviceModel& device) {
  const Mesh& mesh = out.mesh;
  Edges edges(out, device);
  // Every consumer of a tensor with a node: (consumer node, the layout its candidate b wants).
  // The step's output tuple takes each gradient in its parameter's layout (the partitioner's
  // output_layouts: the gradient -> parameter edge below), not replicated as make_tuple's rule
  // says; only the loss must come back replicated.
  using Wanted = Edges::Wanted;
  struct Use {
    int to;
    Wanted wanted;
  };
  std::map<const ir::Node*, std::vector<Use>> uses;
  std::vector<const ir::Node*> producers;  // in step order, each once
  auto add_use = [&](const ir::Node* x, Use u) {
    auto& v = uses[x];
    if (v.empty()) producers.push_back(x);
    v.push_back(std::move(u));
  };
  const ir::Node* ret = step.output;
  const bool step_tuple =
      ret && ret->is_apply() && static_cast<int>(ret->inputs.size()) == trainable + 1;
  for (const ir::Node* n : step.nodes) {
    auto it = id.find(n);
    if (it == id.end()) continue;
    const int to = it->second;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      if (n == ret && step_tuple && k > 0 && !device.output_tuple_replicated) continue;
      const ir::Node* x = n->inputs[k];
      if (!id.count(x) || !static_tensor(x->type)) continue;
      add_use(x, {to, [&out, to, k](int b) -> const Layout* {
                    const OpStrategy& s = out.origins[static_cast<size_t>(to)].strategies[b];
                    return k < s.inputs.size() ? &s.inputs[k] : nullptr;
                  }});
    }
  }
  // Gradients: the step returns (loss, grad_0, ..., grad_{trainable-1}).
  if (step_tuple) {
    for (int i = 0; i < trainable && i < static_cast<int>(step.params.size()); ++i) {
      const ir::Node* g = ret->inputs[i + 1];
      auto gs = id.find(g), ps = id.find(step.params[i]);
      if (gs == id.end() || ps == id.end() || gs->second == ps->second || !static_tensor(g->type))
        continue;
      const int to = ps->second;
      add_use(g, {to, [&out, to](int b) -> const Layout* {
                    return &out.origins[static_cast<size_t>(to)].layouts[b];
                  }});
    }
  }
  // A tensor read by several consumers is redistributed once per layout wanted and shared (the
  // partitioner caches redistribute(x, layout)): one edge per consumer would charge Megatron's
  // all-reduce once per reader of the sum. Such a tensor gets a fan-out node whose candidates
  // are the layouts it may be delivered in (every layout of its shape, also partial over the
  // axes it leaves free); its producer's edge pays the one redistribution, its consumers' edges
  // whatever is left (nothing when they want the delivered layout).
  for (const ir::Node* x : producers) {
    const std::vector<Use>& us = uses[x];
    const int from = id.at(x);
    if (us.size() < 2 || !device.fanout_nodes) {
      for (const Use& u : us) edges.add(from, u.to, x->type, u.wanted);
      continue;
    }
    StepCostGraph::Origin f;
    f.node = x;
    f.fanout = true;
    f.name = "fanout:" + out.origins[static_cast<size_t>(from)].name;
    for (const Layout& l : enumerate_layouts(x->type->shape, mesh)) {
      f.layouts.push_back(l);
      std::vector<int> free;
      for (int a = 0; a < mesh.ndim(); ++a)
        if (mesh.axis_size(a) > 1 && l.dim_of_axis(a) < 0) free.push_back(a);
      for (unsigned mask = 1; mask < (1u << free.size()); ++mask) {
        Layout pl = l;
        for (size_t bit = 0; bit < free.size(); ++bit)
          if (mask & (1u << bit)) pl.partial.push_back(free[bit]);
        f.layouts.push_back(pl);
      }
    }
    std::vector<std::string> labels;
    for (const Layout& l : f.layouts) labels.push_back(l.to_string(mesh));
    const size_t k = f.layouts.size();
    const int fan = out.graph.add_node(f.name, std::vector<double>(k, 0.0),
                                       std::vector<double>(k, 0.0), labels);
    out.origins.push_back(std::move(f));
    edges.add(from, fan, x->type, [&out, fan](int b) -> const Layout* {
      return &out.origins[static_cast<size_t>(fan)].layouts[b];
    });
    for (const Use& u : us) edges.add(fan, u.to, x->type, u.wanted);
  }
}

}  // namespace

StepCostGraph build_step_cost_graph(const ir::Graph& step,
                                    const std::vector<std::string>& param_names, int trainable,
                                    int state_tensors, const Mesh& mesh,
                                    const DeviceModel& device) {
  StepCostGraph out;
  out.mesh = mesh;
  NodeIds id;
  add_param_nodes(out, id, step, param_names, trainable, state_tensors, device);
  add_apply_nodes(out, id, step, device);
  add_edges(out, id, step, trainable, device);
  return out;
}

Assignment assignment_of(const StepCostGraph& g, const ir::Graph& step,
                         const std::vector<Layout>& param_layouts,
                         const std::map<size_t, OpStrategy>& strategies,
                         std::vector<std::string>* unmatched) {
  std::map<const ir::Node*, size_t> index;
  for (size_t i = 0; i < step.nodes.size(); ++i) index[step.nodes[i]] = i;
  std::map<const ir::Node*, size_t> param_index;
  for (size_t i = 0; i < step.params.size(); ++i) param_index[step.params[i]] = i;
  std::vector<int> choice(g.origins.size(), 0);
  for (size_t n = 0; n < g.origins.size(); ++n) {
    const StepCostGraph::Origin& o = g.origins[n];
    if (o.fanout) continue;  // below, once its neighbours are decided
    if (o.is_param) {
      const auto p = param_index.find(o.node);
      if (p == param_index.end() || p->second >= param_layouts.size()) continue;
      const auto at = std::find(o.layouts.begin(), o.layouts.end(), param_layouts[p->second]);
      if (at != o.layouts.end()) {
        choice[n] = static_cast<int>(at - o.layouts.begin());
      } else if (unmatched) {
        unmatched->push_back(fmt::format("{} {}", o.name, param_layouts[p->second].to_string()));
      }
      continue;
    }
    const auto i = index.find(o.node);
    if (i == index.end()) continue;
    const auto s = strategies.find(i->second);
    if (s == strategies.end()) continue;
    const OpStrategy& want = s->second;
    int best = -1, best_diff = 0;
    for (size_t c = 0; c < o.strategies.size(); ++c) {
      const OpStrategy& have = o.strategies[c];
      if (have.output != want.output || have.tuple_outputs != want.tuple_outputs ||
          have.inputs.size() != want.inputs.size())
        continue;
      int diff = 0;
      for (size_t k = 0; k < have.inputs.size(); ++k) diff += have.inputs[k] != want.inputs[k];
      if (best < 0 || diff < best_diff) best = static_cast<int>(c), best_diff = diff;
    }
    if (best >= 0) choice[n] = best;
    if ((best < 0 || best_diff > 0) && unmatched) {
      std::string ins;
      for (const Layout& l : want.inputs) ins += (ins.empty() ? "" : ", ") + l.to_string();
      unmatched->push_back(fmt::format("{} ({}) -> {}{}", o.name, ins, want.output.to_string(),
                                       best < 0 ? " (kept its first candidate)" : ""));
    }
  }
  // A fan-out delivers its tensor in the layout that costs its producer and consumers least
  // (the partitioner's one redistribution per layout wanted; its neighbours are all decided).
  for (size_t n = 0; n < g.origins.size(); ++n) {
    if (!g.origins[n].fanout) continue;
    std::vector<double> total(g.graph.nodes[n].cost.size(), 0.0);
    for (const CostGraph::Edge& e : g.graph.edges) {
      if (e.to == static_cast<int>(n))
        for (size_t c = 0; c < total.size(); ++c)
          total[c] += e.cost[static_cast<size_t>(choice[static_cast<size_t>(e.from)])][c];
      if (e.from == static_cast<int>(n))
        for (size_t c = 0; c < total.size(); ++c)
          total[c] += e.cost[c][static_cast<size_t>(choice[static_cast<size_t>(e.to)])];
    }
    choice[n] = static_cast<int>(std::min_element(total.begin(), total.end()) - total.begin());
  }
  return evaluate(g.graph, choice);
}

CostTerms cost_terms(const StepCostGraph& g, const Assignment& a) {
  CostTerms t;
  for (size_t n = 0; n < g.graph.nodes.size(); ++n) {
    const auto& nd = g.graph.nodes[n];
    const size_t c = static_cast<size_t>(a.choice[n]);
    t.nodes += nd.cost[c];
    t.terms.push_back({nd.cost[c], fmt::format("node {} [{}]", nd.name,
                                               c < nd.labels.size() ? nd.labels[c] : "")});
  }
  for (const auto& e : g.graph.edges) {
    const double c = e.cost[static_cast<size_t>(a.choice[static_cast<size_t>(e.from)])]
                           [static_cast<size_t>(a.choice[static_cast<size_t>(e.to)])];
    t.edges += c;
    if (c > 0)
      t.terms.push_back(
          {c, fmt::format("edge {} -> {}", g.graph.nodes[static_cast<size_t>(e.from)].name,
                          g.graph.nodes[static_cast<size_t>(e.to)].name)});
  }
  std::stable_sort(t.terms.begin(), t.terms.end(),
                   [](const CostTerm& x, const CostTerm& y) { return x.seconds > y.seconds; });
  return t;
}

DeviceModel propagation_device(DeviceModel d) {
  d.fanout_nodes = false;
  d.pass_partial_sums = false;
  d.output_tuple_replicated = true;
  return d;
}

SearchResult search_dp_fitting(const CostGraph& g, const SearchOptions& o) {
  if (o.memory_limit < kNoMemoryLimit && o.top_k <= 1) {
    SearchOptions unlimited = o;
    unlimited.memory_limit = kNoMemoryLimit;
    SearchResult r = search_dp(g, unlimited);
    if (!r.top.empty() && r.top[0].peak_memory <= o.memory_limit) {
      r.top[0].feasible = true;
      r.any_feasible = true;
      r.notes += "; it fits the memory limit";
      return r;
    }
  }
  return search_dp(g, o);
}

SearchResult search_dp_two_starts(const StepCostGraph& g, const StepCostGraph& without,
                                  const SearchOptions& o) {
  SearchResult r = search_dp_fitting(g.graph, o);
  if (without.origins.size() != g.origins.size()) return r;  // not the same step
  const SearchResult w = search_dp_fitting(without.graph, o);
  if (w.top.empty()) return r;
  std::vector<int> choice(g.origins.size(), 0);
  for (size_t n = 0; n < g.origins.size(); ++n) {
    const StepCostGraph::Origin &to = g.origins[n], &from = without.origins[n];
    const int c = w.top[0].choice[n];
    if (to.is_param || to.fanout) {
      const auto at =
          std::find(to.layouts.begin(), to.layouts.end(), from.layouts[static_cast<size_t>(c)]);
      if (at == to.layouts.end()) return r;
      choice[n] = static_cast<int>(at - to.layouts.begin());
    } else {
      const std::string& name = from.strategies[static_cast<size_t>(c)].name;
      const auto at = std::find_if(to.strategies.begin(), to.strategies.end(),
                                   [&](const OpStrategy& s) { return s.name == name; });
      if (at == to.strategies.end()) return r;
      choice[n] = static_cast<int>(at - to.strategies.begin());
    }
  }
  const Assignment second =
      improve_locally(g.graph, evaluate(g.graph, choice, o.memory_limit), o.memory_limit);
  if (r.top.empty() || (second.feasible && !r.top[0].feasible) ||
      (second.feasible == r.top[0].feasible && second.cost < r.top[0].cost)) {
    r.top.insert(r.top.begin(), second);
    if (static_cast<int>(r.top.size()) > std::max(1, o.top_k)) r.top.pop_back();
    r.exact = false;
    r.notes += "; the second start (without partial inputs, then coordinate descent) won";
  } else {
    r.notes += "; the second start did not win";
  }
  return r;
}

std::vector<std::string> parameter_layouts(const StepCostGraph& g, const Assignment& a) {
  std::vector<std::string> out;
  for (size_t i = 0; i < g.origins.size(); ++i)
    if (g.origins[i].is_param)
      out.push_back(fmt::format("{} {}", g.origins[i].name,
                                g.origins[i].layouts[a.choice[i]].partition_string(g.mesh)));
  return out;
}

namespace {
std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// A layout as a strategy file writes it: MindSpore's partition numbers where they read back to
// the same layout, else the tensor map (on a mesh with two axes of one size, "(2, 1)" means the
// first of them).
std::string layout_text(const Layout& l, const Mesh& m) {
  const std::string numbers = l.partition_string(m);
  try {
    if (Layout::parse(numbers, m, l.rank()) == l) return numbers;
  } catch (const lang::UserError&) {
  }
  return l.to_string();
}
}  // namespace

std::string strategy_json(const StepCostGraph& g, const Assignment& a) {
  std::string mesh, axes, layouts, ops;
  for (int64_t d : g.mesh.shape) mesh += fmt::format("{}{}", mesh.empty() ? "" : ", ", d);
  // A named mesh's names: the ops' strategies ("d0:tp") and layouts name its axes by them.
  for (const std::string& n : g.mesh.axis_names)
    axes += fmt::format("{}{}", axes.empty() ? "" : ", ", quote(n));
  for (size_t i = 0; i < g.origins.size(); ++i) {
    const StepCostGraph::Origin& o = g.origins[i];
    if (o.fanout) continue;  // the partitioner redistributes where a consumer needs it
    if (o.is_param) {
      layouts += fmt::format("{}\n    {}: {}", layouts.empty() ? "" : ",", quote(o.name),
                             quote(layout_text(o.layouts[a.choice[i]], g.mesh)));
    } else {
      ops += fmt::format("{}\n    {}: {}", ops.empty() ? "" : ",", quote(o.name),
                         quote(o.strategies[a.choice[i]].name));
    }
  }
  return fmt::format(
      "{{\n  \"mesh\": [{}],{}\n  \"layouts\": {{{}\n  }},\n  \"ops\": {{{}\n  }},\n"
      "  \"predicted_step_seconds\": {:.9g},\n  \"memory_per_device\": {:.0f}\n}}\n",
      mesh, axes.empty() ? "" : fmt::format("\n  \"axes\": [{}],", axes), layouts, ops, a.cost,
      a.peak_memory);
}

StepRecGraph build_step_rec_graph(const ir::Graph& step,
                                  const std::vector<std::string>& param_names, int trainable) {
  StepRecGraph out;
  const Mesh two{{2}, {}};
  std::map<const ir::Node*, int> op_of;
  std::map<int, std::vector<int>> out_tensor_dims;  // op -> tensor dim of each output entry
  std::map<const ir::Node*, int> param_index;
  for (size_t i = 0; i < step.params.size(); ++i) param_index[step.params[i]] = static_cast<int>(i);
  size_t last = step.nodes.size();
  const ir::Node* ret = step.output;
  if (ret && ret->is_apply() && static_cast<int>(ret->inputs.size()) == trainable + 1) {
    const auto it = std::find(step.nodes.begin(), step.nodes.end(), ret->inputs[0]);
    if (it != step.nodes.end()) last = static_cast<size_t>(it - step.nodes.begin()) + 1;
  }
  std::map<int, int> use_of_param;  // step param index -> out.params index
  for (size_t i = 0; i < last; ++i) {
    const ir::Node* n = step.nodes[i];
    if (!n->is_apply() || !n->prim || !static_tensor(n->type)) continue;
    std::vector<sem::TypeP> in;
    bool dynamic = false;
    for (const ir::Node* x : n->inputs) {
      in.push_back(x->type);
      dynamic = dynamic || (x->type && x->type->is_tensor() && !static_tensor(x->type));
    }
    if (dynamic) continue;
    std::vector<OpStrategy> strategies;
    // A shard_hint pinned for the real mesh need not fit the 2-device probe: it then adds
    // no index space (rec cuts by operator shapes, not by annotations).
    if (const ShardingRule* rule = sharding_rule(*n->prim); rule && rule->enumerate) {
      try {
        strategies = rule->enumerate(in, n->type, n->attrs, two);
      } catch (const lang::UserError&) {
        if (!n->is_prim("shard_hint")) throw;
      }
    }
    RecOp op;
    op.name = fmt::format("{}#{}", n->prim->name, i);
    std::vector<std::vector<int>> in_lab(in.size());
    for (size_t k = 0; k < in.size(); ++k)
      if (in[k] && in[k]->is_tensor()) in_lab[k].assign(in[k]->shape.size(), -1);
    std::vector<int> out_lab(n->type->shape.size(), -1);
    for (const OpStrategy& s : strategies) {
      const int label = static_cast<int>(op.dims.size());
      int64_t size = 0;
      for (size_t k = 0; k < in.size() && k < s.inputs.size(); ++k) {
        if (s.inputs[k].rank() != static_cast<int>(in_lab[k].size())) continue;
        for (size_t d = 0; d < in_lab[k].size(); ++d)
          if (s.inputs[k].tensor_map[d] == 0) in_lab[k][d] = label, size = in[k]->shape[d];
      }
      if (s.output.rank() == static_cast<int>(out_lab.size()))
        for (size_t d = 0; d < out_lab.size(); ++d)
          if (s.output.tensor_map[d] == 0) out_lab[d] = label, size = n->type->shape[d];
      if (size == 0) continue;  // the replicated strategy, or nothing we can read
      op.dims.push_back(size);
      op.reduced.push_back(s.output.has_partial(0));
    }
    double unlabelled = static_cast<double>(dtype_size(n->type->dtype));
    std::vector<int> tensor_dims;
    for (size_t d = 0; d < out_lab.size(); ++d) {
      if (out_lab[d] >= 0) {
        op.output.push_back(out_lab[d]);
        tensor_dims.push_back(static_cast<int>(d));
      } else {
        unlabelled *= static_cast<double>(n->type->shape[d]);
      }
    }
    op.element_bytes = unlabelled;
    if (const auto* cr = n->prim->facet<sem::CostRule>(sem::kCostFacet))
      op.flops = (*cr)(in, n->type, n->attrs).flops;
    const int index = static_cast<int>(out.graph.ops.size());
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      const ir::Node* x = n->inputs[k];
      if (in_lab[k].empty()) continue;
      if (auto p = op_of.find(x); p != op_of.end()) {
        RecOp::Input input;
        input.producer = p->second;
        for (int t : out_tensor_dims[p->second]) input.dim_map.push_back(in_lab[k][t]);
        op.inputs.push_back(std::move(input));
      } else if (auto pi = param_index.find(x); pi != param_index.end()) {
        const int pidx = pi->second;
        const std::string name = static_cast<size_t>(pidx) < param_names.size() ? param_names[pidx]
                                 : !step.params[static_cast<size_t>(pidx)]->name.empty()
                                     ? step.params[static_cast<size_t>(pidx)]->name
                                     : fmt::format("arg{}", pidx);
        if (pidx < trainable) {
          RecOp::Param param{name, {}};
          for (int l : in_lab[k])
            if (l >= 0) param.dims.push_back(l);
          op.params.push_back(std::move(param));
        }
        if (!use_of_param.count(pidx)) {
          use_of_param[pidx] = static_cast<int>(out.params.size());
          out.params.push_back(StepRecGraph::ParamUse{name, index, in_lab[k]});
        }
      }
    }
    op_of[n] = index;
    out_tensor_dims[index] = std::move(tensor_dims);
    out.graph.ops.push_back(std::move(op));
  }
  return out;
}

namespace {
std::string rec_partition(const StepRecGraph::ParamUse& u, const RecResult& r) {
  std::string t;
  for (int l : u.dims) {
    const int64_t c = l >= 0 ? r.cuts[u.op][l] : 1;
    t += fmt::format("{}{}", t.empty() ? "" : ", ", c);
  }
  return fmt::format("({}{})", t, u.dims.size() == 1 ? "," : "");
}
}  // namespace

std::vector<std::string> rec_parameter_layouts(const StepRecGraph& g, const RecResult& r) {
  std::vector<std::string> out;
  for (const StepRecGraph::ParamUse& u : g.params)
    out.push_back(fmt::format("{} {}", u.name, rec_partition(u, r)));
  return out;
}

std::string rec_strategy_json(const StepRecGraph& g, const RecResult& r, int64_t devices) {
  std::string layouts;
  for (const StepRecGraph::ParamUse& u : g.params)
    layouts += fmt::format("{}\n    {}: {}", layouts.empty() ? "" : ",", quote(u.name),
                           quote(rec_partition(u, r)));
  return fmt::format(
      "{{\n  \"mesh\": [{}],\n  \"layouts\": {{{}\n  }},\n"
      "  \"predicted_step_seconds\": {:.9g},\n  \"memory_per_device\": {:.0f}\n}}\n",
      devices, layouts, r.cost, r.memory);
}

std::map<int, int> annotation_pins(const StepCostGraph& g) {
  std::map<int, int> pins;
  for (size_t i = 0; i < g.origins.size(); ++i) {
    const StepCostGraph::Origin& o = g.origins[i];
    if (!o.is_param && o.node && o.node->is_prim("shard_hint") && o.strategies.size() == 1)
      pins[static_cast<int>(i)] = 0;
  }
  return pins;
}

std::string propagate_from_annotations(const StepCostGraph& g, std::map<int, int> fixed) {
  SearchOptions o;
  o.fixed = annotation_pins(g);
  for (const auto& [node, candidate] : fixed) o.fixed[node] = candidate;
  const SearchResult r = search_propagate(g.graph, o);
  if (r.top.empty()) throw lang::UserError("sharding propagation found no strategy");
  // The layouts only: the operators follow from them by the partitioner's own propagation
  // (partition.h step 1), as for a hand-written strategy file. Propagation over the cost graph
  // is greedy per operator and may trade an all-reduce for a reduce-scatter and a later
  // all-gather; the partitioner's forward rules keep a pending sum until a consumer needs it.
  const Assignment& a = r.top[0];
  std::string mesh, layouts;
  for (int64_t d : g.mesh.shape) mesh += fmt::format("{}{}", mesh.empty() ? "" : ", ", d);
  for (size_t i = 0; i < g.origins.size(); ++i)
    if (g.origins[i].is_param)
      layouts += fmt::format("{}\n    {}: {}", layouts.empty() ? "" : ",", quote(g.origins[i].name),
                             quote(layout_text(g.origins[i].layouts[a.choice[i]], g.mesh)));
  return fmt::format("{{\n  \"mesh\": [{}],\n  \"layouts\": {{{}\n  }}\n}}\n", mesh, layouts);
}

}  // namespace spora::parallel::search
