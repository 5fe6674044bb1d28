// The SPMD partitioner (partition.h has the algorithm).
#include "parallel/partition/partition.h"
#include "parallel/partition/node_strategy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <unordered_map>

#include "lang/diagnostics.h"
#include "parallel/partition/json_locations.h"

namespace spora::parallel {

namespace {

using ir::Graph;
using ir::Node;
using sem::Attrs;
using sem::Type;
using sem::TypeP;

[[noreturn]] void user_error(const std::string& m) { throw lang::UserError(m); }
[[noreturn]] void internal_error(const std::string& m) { throw lang::InternalError(m); }

const sem::Primitive& prim(const std::string& name) {
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p)
    internal_error(fmt::format("the partitioner needs the primitive {} (ops::register_all)", name));
  return *p;
}

bool is_tuple(const TypeP& t) { return t && t->kind == Type::Kind::Tuple; }

// The layout of a value: a tensor's, or one per element of a tuple.
struct ValueLayout {
  Layout layout;
  std::vector<Layout> elems;
};

class Partitioner {
 public:
  Partitioner(const Graph& g, const Strategy& s, const PartitionOptions& o)
      : g_(g), s_(s), o_(o), mesh_(s.mesh) {}

  Partitioned run() {
    mesh_.validate();
    check_straight_line();
    out_.module = std::make_unique<ir::Module>();
    ir::Module& m = *out_.module;
    graph_ = m.add_graph("spmd");
    m.entry = graph_;
    out_.graph = graph_;
    params();
    for (size_t i = 0; i < g_.nodes.size(); ++i) node(i, *g_.nodes[i]);
    output();
    return std::move(out_);
  }

 private:
  void check_straight_line() {
    for (const Node* n : g_.nodes) {
      if (n->is_apply() && n->callee)
        user_error(
            fmt::format("the partitioner needs a straight-line graph, but @{} calls @{} "
                        "(optimise the module first: inlining removes calls)",
                        g_.name, n->callee->name));
      if (n->is_constant() && n->graph_value)
        user_error(
            fmt::format("the partitioner cannot partition control flow yet (@{} uses "
                        "the graph @{})",
                        g_.name, n->graph_value->name));
    }
    for (const auto& [name, layout] : s_.layouts) {
      bool found = false;
      for (const Node* p : g_.params) found |= p->name == name;
      if (!found) {
        std::vector<std::string> names;
        for (const Node* p : g_.params) names.push_back(p->name);
        user_error(
            fmt::format("the strategy gives a layout to '{}', which @{} does not take "
                        "(its parameters, closest first: {})",
                        name, g_.name, fmt::join(closest_first(name, names), ", ")));
      }
    }
  }

  void params() {
    for (const Node* p : g_.params) {
      if (is_tuple(p->type) || (p->type && p->type->kind == Type::Kind::Record))
        user_error(fmt::format("the partitioner takes tensor parameters; '{}' is {}", p->name,
                               p->type->str()));
      Layout l = replicated_layout(p->type);
      auto it = s_.layouts.find(p->name);
      if (it != s_.layouts.end()) {
        l = it->second;
        if (!p->type->is_tensor() || l.rank() != p->type->rank())
          user_error(fmt::format("the layout {} of '{}' does not fit its type {}",
                                 l.to_string(mesh_), p->name, p->type->str()));
        l.validate(mesh_, p->type->shape);
        if (l.is_partial())
          user_error(
              fmt::format("the input '{}' cannot be partial ({})", p->name, l.to_string(mesh_)));
      }
      Node* local = out_.module->add_param(graph_, p->name, local_type(p->type, l, mesh_), p->loc);
      layouts_[p] = {l, {}};
      locals_[p] = local;
      out_.param_layouts.push_back(l);
    }
  }

  // The strategy of an application whose inputs currently have `in` (algorithm step 1).
  OpStrategy choose(size_t index, const Node& n, const std::vector<Layout>& in,
                    const std::vector<TypeP>& in_types) {
    auto chosen = s_.ops.find(index);
    if (chosen != s_.ops.end()) return chosen->second;
    return choose_strategy(n, in, in_types, mesh_, o_.comm);
  }

  void node(size_t index, const Node& n) {
    ir::Module& m = *out_.module;
    if (n.is_constant()) {
      locals_[&n] = m.add_constant(graph_, n.value, n.loc);
      layouts_[&n] = {replicated_layout(n.type), {}};
      return;
    }
    if (n.is_prim("make_tuple")) {
      ValueLayout vl;
      std::vector<Node*> ins;
      std::vector<TypeP> types;
      for (const Node* in : n.inputs) {
        vl.elems.push_back(layouts_.at(in).layout);
        ins.push_back(locals_.at(in));
        types.push_back(ins.back()->type);
      }
      locals_[&n] = m.add_apply(graph_, n.prim, ins, n.attrs, Type::tuple(types), n.loc);
      layouts_[&n] = vl;
      return;
    }
    if (n.is_prim("tuple_get")) {
      const ValueLayout& src = layouts_.at(n.inputs[0]);
      const auto i = static_cast<size_t>(n.attrs.get_int("index"));
      Node* t = locals_.at(n.inputs[0]);
      locals_[&n] = m.add_apply(graph_, n.prim, {t}, n.attrs, t->type->elems.at(i), n.loc);
      layouts_[&n] = {i < src.elems.size() ? src.elems[i] : replicated_layout(n.type), {}};
      return;
    }
    std::vector<Layout> in;
    std::vector<TypeP> in_types;
    for (const Node* x : n.inputs) {
      in.push_back(layouts_.at(x).layout);
      in_types.push_back(x->type);
    }
    const OpStrategy s = choose(index, n, in, in_types);
    out_.strategies[index] = s;
    if (s.inputs.size() != n.inputs.size())
      internal_error(fmt::format("the strategy '{}' of {} has {} input layouts for {} inputs",
                                 s.name, n.prim->name, s.inputs.size(), n.inputs.size()));
    std::vector<Node*> ins;
    std::vector<TypeP> local_types;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ins.push_back(redistribute(n.inputs[i], s.inputs[i]));
      local_types.push_back(ins.back()->type);
    }
    const ShardingRule* rule = sharding_rule(*n.prim);
    Attrs attrs = rule && rule->local_attrs ? rule->local_attrs(n.attrs, s, in_types, n.type, mesh_)
                                            : n.attrs;
    TypeP type = n.prim->infer(local_types, attrs);
    if (is_tuple(n.type)) {
      if (s.tuple_outputs.size() != n.type->elems.size())
        internal_error(fmt::format("the strategy '{}' of {} gives {} layouts for {}", s.name,
                                   n.prim->name, s.tuple_outputs.size(), n.type->str()));
    } else {
      const TypeP expected = local_type(n.type, s.output, mesh_);
      if (type->str() != expected->str())
        internal_error(fmt::format(
            "{} under strategy '{}' has the local type {}, but its layout {} of {} means {}",
            n.prim->name, s.name, type->str(), s.output.to_string(mesh_), n.type->str(),
            expected->str()));
    }
    Node* local = m.add_apply(graph_, n.prim, ins, attrs, type, n.loc);
    local->name = n.name;
    local = rescale(n, s, attrs, in_types, local_types, local);
    locals_[&n] = local;
    layouts_[&n] = {s.output, s.tuple_outputs};
  }

  // Algorithm step 3: the strategy's output_scale (a mean over split dimensions, made a partial
  // sum of the global mean); when the strategy does not say (0: a bare forward result), the
  // ratio of the local to the global count of a mean or cross_entropy(reduction="mean").
  Node* rescale(const Node& n, const OpStrategy& s, const Attrs& local_attrs,
                const std::vector<TypeP>& global_in, const std::vector<TypeP>& local_in,
                Node* local) {
    return scale(n, local, output_scale(n, s, local_attrs, global_in, local_in, local->type));
  }

  Node* scale(const Node& n, Node* local, double factor) {
    if (factor == 1 || !local->type->is_tensor() || !is_float(local->type->dtype)) return local;
    ir::Module& m = *out_.module;
    Node* k =
        m.add_constant(graph_, sem::Value(sem::Tensor::scalar(local->type->dtype, factor)), n.loc);
    return m.add_apply(graph_, &prim("mul"), {local, k}, {}, local->type, n.loc);
  }

  // The local node of `x` in layout `to` (algorithm step 2), shared by every consumer.
  Node* redistribute(const Node* x, const Layout& to) {
    Node* local = locals_.at(x);
    const Layout& from = layouts_.at(x).layout;
    if (!x->type || !x->type->is_tensor() || from == to) return local;
    const std::string key = to.to_string();
    auto& cache = redistributed_[x];
    auto hit = cache.find(key);
    if (hit != cache.end()) return hit->second;
    const RedistPlan plan = plan_redistribution(
        from, to, x->type->shape, static_cast<int>(dtype_size(x->type->dtype)), mesh_, o_.comm);
    Node* cur = local;
    for (const RedistStep& step : plan.steps) cur = emit_step(cur, step);
    cache[key] = cur;
    return cur;
  }

  Node* emit_step(Node* x, const RedistStep& step) {
    const CollectiveCall c = collective_call(step, mesh_);
    const sem::Primitive& p = prim(c.prim);
    TypeP t = p.infer({x->type}, c.attrs);
    if (c.prim != "shard_slice") ++out_.collectives;
    return out_.module->add_apply(graph_, &p, {x}, c.attrs, t, x->loc);
  }

  void output() {
    const Node* out = g_.output;
    if (!out) internal_error("the graph to partition returns nothing");
    auto wanted = [&](size_t i, const TypeP& t) {
      if (i < o_.output_layouts.size() && o_.output_layouts[i]) return *o_.output_layouts[i];
      return replicated_layout(t);
    };
    ir::Module& m = *out_.module;
    if (out->is_prim("make_tuple")) {
      std::vector<Node*> ins;
      std::vector<TypeP> types;
      for (size_t i = 0; i < out->inputs.size(); ++i) {
        const Layout l = wanted(i, out->inputs[i]->type);
        ins.push_back(redistribute(out->inputs[i], l));
        types.push_back(ins.back()->type);
        out_.output_layouts.push_back(l);
      }
      graph_->output = m.add_apply(graph_, out->prim, ins, {}, Type::tuple(types), out->loc);
      return;
    }
    const Layout l = wanted(0, out->type);
    graph_->output = redistribute(out, l);
    out_.output_layouts.push_back(l);
  }

  const Graph& g_;
  const Strategy& s_;
  const PartitionOptions& o_;
  const Mesh& mesh_;
  Partitioned out_;
  Graph* graph_ = nullptr;
  std::unordered_map<const Node*, ValueLayout> layouts_;
  std::unordered_map<const Node*, Node*> locals_;
  std::unordered_map<const Node*, std::map<std::string, Node*>> redistributed_;
};

}  // namespace

Partitioned partition(const ir::Graph& g, const Strategy& s, const PartitionOptions& o) {
  return Partitioner(g, s, o).run();
}

std::vector<std::string> collective_summary(const ir::Graph& g) {
  std::vector<std::string> lines;
  for (const ir::Node* n : g.nodes) {
    if (!n->prim || n->prim->family != "collective") continue;
    std::string attrs;
    for (const auto& [name, value] : n->attrs.items()) {
      if (name == "mesh") continue;
      attrs += (attrs.empty() ? "" : ", ") + name + "=" + sem::attr_str(value);
    }
    lines.push_back(fmt::format("{}({}) {}", n->prim->name, attrs, n->type->str()));
  }
  return lines;
}

std::vector<OptimizerShard> optimizer_shards(const ir::Graph& step, std::size_t trainable,
                                             const Strategy& s) {
  std::vector<OptimizerShard> out;
  const int axis = s.optimizer_shard;
  if (axis < 0) return out;
  if (axis >= s.mesh.ndim())
    user_error(fmt::format("optimizer_shard: mesh axis {} does not exist (the mesh {} has {})",
                           axis, s.mesh.to_string(), s.mesh.ndim()));
  const int64_t p = s.mesh.axis_size(axis);
  const std::string name = s.mesh.axis_name(axis);
  for (std::size_t i = 0; i < trainable && i < step.params.size(); ++i) {
    const ir::Node* param = step.params[i];
    OptimizerShard o;
    if (!param->type || !param->type->is_tensor() || param->type->rank() == 0) {
      o.reason = "a scalar";
      out.push_back(o);
      continue;
    }
    auto it = s.layouts.find(param->name);
    const Layout l = it == s.layouts.end() ? replicated_layout(param->type) : it->second;
    if (p == 1) {
      o.reason = fmt::format("mesh axis {} has one device", name);
    } else if (l.dim_of_axis(axis) >= 0) {
      o.reason = fmt::format("already split over {}", name);
    } else {
      for (int d = 0; d < l.rank() && o.dim < 0; ++d)
        if (l.tensor_map[static_cast<std::size_t>(d)] < 0 &&
            param->type->shape[static_cast<std::size_t>(d)] % p == 0)
          o.dim = d;
      if (o.dim < 0)
        o.reason =
            fmt::format("no dimension of {} is both unsplit and divisible by {}'s {} devices",
                        param->type->str(), name, p);
    }
    out.push_back(o);
  }
  return out;
}

Partitioned partition_training_step(const ir::Graph& step, std::size_t trainable,
                                    const Strategy& s) {
  const std::vector<OptimizerShard> shards = optimizer_shards(step, trainable, s);
  PartitionOptions o;
  o.output_layouts.push_back(std::nullopt);  // the loss: replicated
  for (std::size_t i = 0; i < trainable && i < step.params.size(); ++i) {
    auto it = s.layouts.find(step.params[i]->name);
    std::optional<Layout> l = it == s.layouts.end() ? std::nullopt : std::optional(it->second);
    if (i < shards.size() && shards[i].dim >= 0) {
      // ZeRO-1: the gradient in the parameter's layout, split further over the axis.
      if (!l) l = replicated_layout(step.params[i]->type);
      l->tensor_map[static_cast<std::size_t>(shards[i].dim)] = s.optimizer_shard;
    }
    o.output_layouts.push_back(l);
  }
  Partitioned part = partition(step, s, o);
  part.optimizer_shards = shards;
  return part;
}

}  // namespace spora::parallel
