#include "parallel/search/from_ir.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "lang/diagnostics.h"
#include "sim/cost.h"  // the cost facet's type only (header-only): no simulator code

namespace spora::parallel::search {

namespace {

double bytes_of(const sem::TypeP& t) { return sim::type_bytes(t); }

double local_bytes(const sem::TypeP& t, const Layout& l, const Mesh& m) {
  if (!t || !t->is_tensor()) return bytes_of(t);
  return bytes_of(t) * (l.rank() == t->rank() ? l.local_fraction(m) : 1.0);
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

StepCostGraph build_step_cost_graph(const ir::Graph& step,
                                    const std::vector<std::string>& param_names, int trainable,
                                    int state_tensors, const Mesh& mesh,
                                    const DeviceModel& device) {
  StepCostGraph out;
  out.mesh = mesh;
  std::map<const ir::Node*, int> id;
  const double copies = 2.0 + state_tensors;  // weight, gradient, states

  for (size_t i = 0; i < step.params.size(); ++i) {
    const ir::Node* p = step.params[i];
    if (!static_tensor(p->type)) continue;
    StepCostGraph::Origin o;
    o.node = p;
    o.is_param = true;
    o.trainable = static_cast<int>(i) < trainable;
    o.name = i < param_names.size() ? param_names[i] : fmt::format("arg{}", i);
    o.layouts = enumerate_layouts(p->type->shape, mesh);
    std::vector<double> cost(o.layouts.size(), 0.0), mem;
    std::vector<std::string> labels;
    for (const Layout& l : o.layouts) {
      mem.push_back(local_bytes(p->type, l, mesh) * (o.trainable ? copies : 1.0));
      labels.push_back(l.partition_string(mesh));
    }
    id[p] = out.graph.add_node(o.name, cost, mem, labels);
    out.origins.push_back(std::move(o));
  }

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
    if (o.strategies.empty()) o.strategies.push_back(replicated_strategy(in, n->type));
    sim::OpCost c;
    if (const auto* cr = n->prim->facet<sim::CostRule>(sim::kCostFacet))
      c = (*cr)(in, n->type, n->attrs);
    const bool no_time = c.op_class == "view" || c.op_class == "host";
    std::vector<double> cost, mem;
    std::vector<std::string> labels;
    for (const OpStrategy& s : o.strategies) {
      const double f = s.local_flops_fraction;
      cost.push_back(no_time ? 0.0
                             : std::max(c.flops * f / device.peak_flops,
                                        c.bytes * f / device.memory_bandwidth) +
                                   device.launch_overhead);
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

  // The layout the producer node delivers under candidate s.
  auto produced = [&](int node, int s) -> const Layout& {
    const StepCostGraph::Origin& o = out.origins[node];
    return o.is_param ? o.layouts[s] : o.strategies[s].output;
  };
  auto edge = [&](int from, int to, const sem::TypeP& t, auto wanted) {
    const int sf = out.graph.strategies(from), st = out.graph.strategies(to);
    std::vector<std::vector<double>> cost(sf, std::vector<double>(st, 0.0));
    bool any = false;
    for (int a = 0; a < sf; ++a)
      for (int b = 0; b < st; ++b) {
        const Layout& src = produced(from, a);
        const Layout* dst = wanted(b);
        if (!dst || src.rank() != t->rank() || dst->rank() != t->rank() || src == *dst) continue;
        try {
          cost[a][b] =
              plan_redistribution(src, *dst, t->shape, static_cast<int>(dtype_size(t->dtype)), mesh,
                                  device.comm)
                  .seconds;
        } catch (const std::exception&) {
          cost[a][b] = device.forbidden;
        }
        any = any || cost[a][b] > 0;
      }
    if (any || sf * st > 1) out.graph.add_edge(from, to, std::move(cost));
  };

  for (const ir::Node* n : step.nodes) {
    auto it = id.find(n);
    if (it == id.end()) continue;
    const int to = it->second;
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      const ir::Node* x = n->inputs[k];
      auto src = id.find(x);
      if (src == id.end() || !static_tensor(x->type)) continue;
      const StepCostGraph::Origin& o = out.origins[to];
      edge(src->second, to, x->type, [&](int b) -> const Layout* {
        const OpStrategy& s = o.strategies[b];
        return k < s.inputs.size() ? &s.inputs[k] : nullptr;
      });
    }
  }

  // Gradients: the step returns (loss, grad_0, ..., grad_{trainable-1}).
  const ir::Node* ret = step.output;
  if (ret && ret->is_apply() && static_cast<int>(ret->inputs.size()) == trainable + 1) {
    for (int i = 0; i < trainable && i < static_cast<int>(step.params.size()); ++i) {
      const ir::Node* g = ret->inputs[i + 1];
      auto gs = id.find(g), ps = id.find(step.params[i]);
      if (gs == id.end() || ps == id.end() || gs->second == ps->second || !static_tensor(g->type))
        continue;
      const StepCostGraph::Origin& po = out.origins[ps->second];
      edge(gs->second, ps->second, g->type, [&](int b) -> const Layout* { return &po.layouts[b]; });
    }
  }
  return out;
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
}  // namespace

std::string strategy_json(const StepCostGraph& g, const Assignment& a) {
  std::string mesh, layouts, ops;
  for (int64_t d : g.mesh.shape) mesh += fmt::format("{}{}", mesh.empty() ? "" : ", ", d);
  for (size_t i = 0; i < g.origins.size(); ++i) {
    const StepCostGraph::Origin& o = g.origins[i];
    if (o.is_param) {
      layouts += fmt::format("{}\n    {}: {}", layouts.empty() ? "" : ",", quote(o.name),
                             quote(o.layouts[a.choice[i]].partition_string(g.mesh)));
    } else {
      ops += fmt::format("{}\n    {}: {}", ops.empty() ? "" : ",", quote(o.name),
                         quote(o.strategies[a.choice[i]].name));
    }
  }
  return fmt::format(
      "{{\n  \"mesh\": [{}],\n  \"layouts\": {{{}\n  }},\n  \"ops\": {{{}\n  }},\n"
      "  \"predicted_step_seconds\": {:.9g},\n  \"memory_per_device\": {:.0f}\n}}\n",
      mesh, layouts, ops, a.cost, a.peak_memory);
}

}  // namespace spora::parallel::search
