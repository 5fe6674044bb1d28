// Pipeline stages: the "pipeline" strategy key, stage assignment, stage programs and their
// partitioning (pipeline.h has the algorithm).
#include "parallel/pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "autodiff/reverse.h"
#include "lang/diagnostics.h"
#include "semantics/ir/printer.h"
#include "semantics/passes/pipeline.h"
#include "semantics/shape_rules.h"

namespace spora::parallel::pipeline {

namespace {

using ir::Graph;
using ir::Node;
using nlohmann::json;
using sem::Type;
using sem::TypeP;

[[noreturn]] void user_error(const std::string& m) { throw lang::UserError(m); }
[[noreturn]] void fail(const std::string& origin, const std::string& why) {
  throw lang::UserError(fmt::format("{}: {}", origin, why));
}

json parse_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(origin, fmt::format("not valid JSON: {}", e.what()));
  }
}

// The names of the activation and cotangent parameters of the stage graphs.
constexpr const char* kAct = "pipe.act";
constexpr const char* kCt = "pipe.ct";

std::string describe(const Node* n) {
  if (n->is_param()) return fmt::format("'{}' {}", n->name, n->type->str());
  const std::string what = n->prim ? n->prim->name : "a call";
  return fmt::format("{}{} {}", what, n->name.empty() ? "" : " '" + n->name + "'", n->type->str());
}

bool has_prefix(const std::string& name, const std::string& prefix) {
  return name == prefix ||
         (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
          name[prefix.size()] == '.');
}

std::string param_names(const Graph& step, size_t trainable) {
  std::string s;
  for (size_t i = 0; i < trainable && i < step.params.size(); ++i)
    s += (s.empty() ? "" : ", ") + step.params[i]->name;
  return s;
}

// Copies what `n` needs into g (the nodes of stage k and free ones), on demand.
class StageCopier {
 public:
  StageCopier(ir::Module& m, Graph* g, const Graph& step, const StageAssignment& a, int k)
      : m_(m), g_(g), a_(a), k_(k) {
    for (size_t i = 0; i < step.nodes.size(); ++i) index_[step.nodes[i]] = i;
  }
  std::unordered_map<const Node*, Node*> map;

  Node* copy(const Node* n) {
    if (auto it = map.find(n); it != map.end()) return it->second;
    if (n->is_param())
      throw lang::InternalError(
          fmt::format("pipeline stage {} reads {}, which it does not take", k_, describe(n)));
    Node* c = nullptr;
    if (n->is_constant()) {
      if (n->graph_value)
        user_error(
            fmt::format("a pipeline stage cannot copy control flow (@{})", n->graph_value->name));
      c = m_.add_constant(g_, n->value, n->loc);
    } else {
      const int s = a_.stage.at(index_.at(n));
      if (s != k_ && s != -1)
        throw lang::InternalError(
            fmt::format("pipeline stage {} needs {} of stage {}", k_, describe(n), s));
      if (n->callee)
        user_error(fmt::format("a pipeline stage needs a straight-line graph, but it calls @{}",
                               n->callee->name));
      std::vector<Node*> ins;
      for (const Node* in : n->inputs) ins.push_back(copy(in));
      c = m_.add_apply(g_, n->prim, ins, n->attrs, n->type, n->loc);
    }
    c->name = n->name;
    map[n] = c;
    return c;
  }

 private:
  ir::Module& m_;
  Graph* g_;
  const StageAssignment& a_;
  int k_;
  std::unordered_map<const Node*, size_t> index_;
};

// Stage k's parameters in its graphs: (params_k..., [act], data...).
std::vector<Node*> add_stage_params(ir::Module& m, Graph* g, const Graph& step,
                                    const PipelineProgram& p, const StageProgram& sp,
                                    StageCopier& copier) {
  std::vector<Node*> diff;  // what the backward differentiates against
  for (size_t i : sp.params) {
    Node* x = m.add_param(g, step.params[i]->name, step.params[i]->type, step.params[i]->loc);
    copier.map[step.params[i]] = x;
    diff.push_back(x);
  }
  if (sp.takes_activation) {
    const Node* a = p.assignment.boundary[static_cast<size_t>(sp.stage) - 1];
    Node* x = m.add_param(g, kAct, a->type, a->loc);
    copier.map[a] = x;
    diff.push_back(x);
  }
  for (size_t i : p.data)
    copier.map[step.params[i]] =
        m.add_param(g, step.params[i]->name, step.params[i]->type, step.params[i]->loc);
  return diff;
}

// The "auto" cut: stage per node of `order` (non-free forward nodes in order).
std::vector<int> auto_cut(const std::vector<const Node*>& order, const Graph& step,
                          size_t trainable, int stages, const NodeCost& cost) {
  const size_t n = order.size();
  std::unordered_map<const Node*, size_t> pos;
  for (size_t j = 0; j < n; ++j) pos[order[j]] = j;
  // last[j]: the last consumer of order[j]; a cut before c is valid when exactly one producer
  // j < c has last[j] >= c, and no parameter is used on both sides.
  std::vector<size_t> last(n, 0);
  std::unordered_map<const Node*, std::pair<size_t, size_t>> param_use;
  for (size_t l = 0; l < n; ++l)
    for (const Node* in : order[l]->inputs) {
      if (auto it = pos.find(in); it != pos.end()) last[it->second] = std::max(last[it->second], l);
      if (in->is_param()) {
        auto [it, fresh] = param_use.try_emplace(in, l, l);
        if (!fresh) it->second.second = l;
      }
    }
  std::vector<int> crossing(n + 1, 0);
  for (size_t j = 0; j < n; ++j)
    for (size_t c = j + 1; c <= last[j] && c < n; ++c) ++crossing[c];
  std::vector<bool> valid(n + 1, false);
  for (size_t c = 1; c < n; ++c) valid[c] = crossing[c] == 1;
  for (const auto& [param, use] : param_use)
    for (size_t c = use.first + 1; c <= use.second; ++c) valid[c] = false;
  std::vector<double> prefix(n + 1, 0);
  for (size_t j = 0; j < n; ++j) prefix[j + 1] = prefix[j] + cost(*order[j]);
  const double inf = std::numeric_limits<double>::infinity();
  const size_t S = static_cast<size_t>(stages);
  // best[s][i]: the most expensive stage when the first i nodes form stages 0..s.
  std::vector<std::vector<double>> best(S, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> from(S, std::vector<size_t>(n + 1, 0));
  for (size_t i = 1; i <= n; ++i) best[0][i] = prefix[i];
  for (size_t s = 1; s < S; ++s)
    for (size_t i = s + 1; i <= n; ++i)
      for (size_t c = s; c < i; ++c) {
        if (!valid[c] || best[s - 1][c] == inf) continue;
        const double v = std::max(best[s - 1][c], prefix[i] - prefix[c]);
        if (v < best[s][i]) {
          best[s][i] = v;
          from[s][i] = c;
        }
      }
  if (best[S - 1][n] == inf) {
    size_t places = 0;
    for (size_t c = 1; c < n; ++c) places += valid[c];
    user_error(fmt::format(
        "\"split\": \"auto\" cannot cut the forward pass into {} stages: it has {} places where a "
        "single activation crosses (the parameters: {})",
        stages, places, param_names(step, trainable)));
  }
  std::vector<size_t> cuts;
  for (size_t s = S - 1, i = n; s > 0; --s) {
    i = from[s][i];
    cuts.push_back(i);
  }
  std::vector<int> stage(n, 0);
  for (size_t j = 0; j < n; ++j)
    for (size_t c : cuts) stage[j] += j >= c;
  return stage;
}

}  // namespace

std::optional<PipelineSpec> parse_pipeline(const std::string& text, const std::string& origin) {
  const json j = parse_json(text, origin);
  if (!j.is_object() || !j.contains("pipeline")) return std::nullopt;
  const json& p = j["pipeline"];
  if (!p.is_object())
    fail(origin,
         "\"pipeline\" is an object like {\"stages\": 2, \"micro_batches\": 4, \"split\": "
         "\"auto\"}");
  PipelineSpec spec;
  for (const auto& [key, value] : p.items())
    if (key != "stages" && key != "micro_batches" && key != "split" && key != "schedule")
      fail(origin,
           fmt::format("unknown pipeline key \"{}\" (expected stages, micro_batches, split, "
                       "schedule)",
                       key));
  auto positive = [&](const char* key, int fallback) {
    if (!p.contains(key)) return fallback;
    if (!p[key].is_number_integer() || p[key].get<int64_t>() < 1 || p[key].get<int64_t>() > 1 << 20)
      fail(origin,
           fmt::format("pipeline \"{}\" must be a positive integer, got {}", key, p[key].dump()));
    return static_cast<int>(p[key].get<int64_t>());
  };
  if (!p.contains("stages")) fail(origin, "\"pipeline\" needs \"stages\" (the number of stages)");
  spec.stages = positive("stages", 1);
  spec.micro_batches = positive("micro_batches", 1);
  spec.split_given = p.contains("split");
  const json split = p.contains("split") ? p["split"] : json("auto");
  if (split.is_string() && split.get<std::string>() == "auto") {
    spec.auto_split = true;
  } else if (split.is_array()) {
    for (const json& s : split) {
      if (!s.is_string() || s.get<std::string>().empty())
        fail(origin,
             fmt::format("pipeline \"split\" lists parameter name prefixes, got {}", s.dump()));
      spec.split.push_back(s.get<std::string>());
    }
  } else {
    fail(origin, fmt::format("pipeline \"split\" is \"auto\" or a list of parameter name prefixes "
                             "like [\"net.l2\"], got {}",
                             split.dump()));
  }
  if (p.contains("schedule")) {
    const json& s = p["schedule"];
    if (s == "1f1b")
      spec.schedule = Schedule::OneFOneB;
    else if (s == "gpipe")
      spec.schedule = Schedule::GPipe;
    else
      fail(origin, fmt::format("pipeline \"schedule\" is \"1f1b\" or \"gpipe\", got {}", s.dump()));
  }
  return spec;
}

std::string inner_strategy_json(const std::string& text, const std::string& origin) {
  json j = parse_json(text, origin);
  if (!j.is_object()) fail(origin, "expected a JSON object with \"mesh\" and \"layouts\"");
  if (j.contains("ops") && j.contains("pipeline"))
    fail(origin, "\"ops\" names nodes of the whole step; with a \"pipeline\", give layouts only");
  j.erase("pipeline");
  if (!j.contains("mesh")) j["mesh"] = json::array({1});  // one device per stage
  return j.dump();
}

double default_node_cost(const Node& n) {
  if (!n.type || !n.type->is_tensor()) return 0;
  double out = 1;
  for (int64_t d : n.type->shape) out *= static_cast<double>(d);
  if (n.is_prim("matmul") && !n.inputs.empty() && n.inputs[0]->type->is_tensor() &&
      n.inputs[0]->type->rank() > 0) {
    const sem::Shape& a = n.inputs[0]->type->shape;  // [..., k] or, transposed, [..., k, m]
    const bool ta = sem::matmul_flags(n.attrs).a && a.size() >= 2;
    return 2 * out * static_cast<double>(ta ? a[a.size() - 2] : a.back());
  }
  return out;
}

StageAssignment assign_stages(const Graph& step, size_t trainable, const PipelineSpec& spec,
                              const NodeCost& cost) {
  const int S = spec.stages;
  const Node* out = step.output;
  if (!out || !out->is_prim("make_tuple") || out->inputs.empty())
    throw lang::InternalError("the pipeline needs a step that returns (loss, gradients...)");
  const Node* loss = out->inputs[0];
  StageAssignment a;
  const size_t N = step.nodes.size();
  a.stage.assign(N, -1);
  a.forward.assign(N, false);
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < N; ++i) index[step.nodes[i]] = i;
  {
    std::vector<const Node*> stack{loss};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      auto it = index.find(n);
      if (it == index.end() || a.forward[it->second]) continue;
      a.forward[it->second] = true;
      for (const Node* in : n->inputs) stack.push_back(in);
    }
  }
  std::unordered_map<const Node*, size_t> param_index;
  for (size_t i = 0; i < step.params.size(); ++i) param_index[step.params[i]] = i;

  // 1. The split's stage of each trainable parameter (auto: all 0, the cut comes later).
  std::vector<int> split_stage(trainable, 0);
  bool markers = false;
  for (const Node* n : step.nodes) markers |= n->is_prim("stage_boundary");
  // No "split" in the strategy and @stage marks in the program: the marks decide.
  const bool auto_split = spec.auto_split && !(markers && !spec.split_given);
  if (!auto_split) {
    if (spec.split.size() + 1 > static_cast<size_t>(S) ||
        (!markers && spec.split.size() + 1 != static_cast<size_t>(S)))
      user_error(fmt::format("a pipeline of {} stages needs {} split points, got {} ({})", S, S - 1,
                             spec.split.size(), fmt::join(spec.split, ", ")));
    size_t previous = 0;
    for (size_t j = 0; j < spec.split.size(); ++j) {
      size_t first = trainable;
      for (size_t i = 0; i < trainable && first == trainable; ++i)
        if (has_prefix(step.params[i]->name, spec.split[j])) first = i;
      if (first == trainable)
        user_error(
            fmt::format("pipeline split point '{}' names no trainable parameter (they are: {})",
                        spec.split[j], param_names(step, trainable)));
      if (first <= previous)
        user_error(fmt::format(
            "pipeline split points must follow the parameters' order and leave every stage a "
            "parameter: '{}' starts at '{}'{}",
            spec.split[j], step.params[first]->name,
            j == 0 ? ", the first parameter" : fmt::format(", not after '{}'", spec.split[j - 1])));
      previous = first;
      for (size_t i = first; i < trainable; ++i) ++split_stage[i];
    }
  }
  // 2. Node stages: the largest of the inputs' (-1: free), at least a marker's.
  std::unordered_map<const Node*, int> st;
  auto stage_of = [&](const Node* n) {
    if (n->is_param()) {
      const size_t i = param_index.at(n);
      return i < trainable ? split_stage[i] : -1;
    }
    auto it = st.find(n);
    return it == st.end() ? -1 : it->second;
  };
  std::vector<const Node*> order;  // non-free forward applications
  for (size_t i = 0; i < N; ++i) {
    const Node* n = step.nodes[i];
    if (!a.forward[i] || !n->is_apply()) continue;
    int s = -1;
    for (const Node* in : n->inputs) s = std::max(s, stage_of(in));
    if (n->is_prim("stage_boundary") && !auto_split && n->attrs.has("stage"))
      s = std::max(s, static_cast<int>(n->attrs.get_int("stage")));
    if (s >= S)
      user_error(fmt::format("@stage({}) needs more stages than the pipeline's {}", s, S));
    st[n] = s;
    if (s >= 0) order.push_back(n);
  }
  if (auto_split) {
    const std::vector<int> cut = auto_cut(order, step, trainable, S, cost);
    for (size_t j = 0; j < order.size(); ++j) st[order[j]] = cut[j];
  }
  for (size_t i = 0; i < N; ++i)
    if (a.forward[i] && step.nodes[i]->is_apply()) a.stage[i] = st.at(step.nodes[i]);

  // 3. Checks: parameters on one stage, one activation per boundary, no empty stage.
  a.param_stage.assign(split_stage.begin(), split_stage.end());
  std::vector<std::set<int>> users(trainable);
  std::vector<std::set<const Node*>> crossing(static_cast<size_t>(S));
  a.stage_cost.assign(static_cast<size_t>(S), 0);
  for (const Node* n : order) {
    const int s = st.at(n);
    a.stage_cost[static_cast<size_t>(s)] += cost(*n);
    for (const Node* in : n->inputs) {
      if (in->is_param()) {
        const size_t i = param_index.at(in);
        if (i < trainable) users[i].insert(s);
        continue;
      }
      const int from = stage_of(in);
      if (from < 0 || from == s) continue;
      for (int b = from + 1; b <= s; ++b) crossing[static_cast<size_t>(b)].insert(in);
    }
  }
  for (size_t i = 0; i < trainable; ++i) {
    if (users[i].size() > 1)
      user_error(
          fmt::format("parameter '{}' is used on pipeline stages {}: a parameter belongs to "
                      "one stage (move the split point)",
                      step.params[i]->name, fmt::join(users[i], " and ")));
    if (users[i].size() == 1) a.param_stage[i] = *users[i].begin();
  }
  std::vector<bool> used(static_cast<size_t>(S), false);
  for (const Node* n : order) used[static_cast<size_t>(st.at(n))] = true;
  for (int k = 0; k < S; ++k)
    if (!used[static_cast<size_t>(k)])
      user_error(
          fmt::format("pipeline stage {} of {} computes nothing: more stages than cut points "
                      "(the parameters: {})",
                      k, S, param_names(step, trainable)));
  for (int b = 1; b < S; ++b) {
    const std::set<const Node*>& c = crossing[static_cast<size_t>(b)];
    if (c.size() != 1) {
      std::vector<std::string> what;
      for (const Node* n : c) what.push_back(describe(n));
      user_error(
          fmt::format("pipeline stages {} and {}: {} activations cross the cut ({}), but a "
                      "cut sends exactly one",
                      b - 1, b, c.size(), fmt::join(what, "; ")));
    }
    const Node* x = *c.begin();
    if (stage_of(x) != b - 1)
      user_error(
          fmt::format("pipeline stage {} sends nothing to stage {}: stage {} uses {} of "
                      "stage {}",
                      b - 1, b, b, describe(x), stage_of(x)));
    a.boundary.push_back(x);
  }
  if (stage_of(loss) != S - 1)
    throw lang::InternalError("the loss is not on the last pipeline stage");
  return a;
}

PipelineProgram build_pipeline(const Graph& step, size_t trainable, const PipelineSpec& spec,
                               const NodeCost& cost) {
  PipelineProgram p;
  p.spec = spec;
  p.assignment = assign_stages(step, trainable, spec, cost);
  for (size_t i = trainable; i < step.params.size(); ++i) p.data.push_back(i);
  const int S = spec.stages;
  const Node* loss = step.output->inputs[0];
  for (int k = 0; k < S; ++k) {
    StageProgram sp;
    sp.stage = k;
    sp.takes_activation = k > 0;
    for (size_t i = 0; i < trainable; ++i)
      if (p.assignment.param_stage[i] == k) sp.params.push_back(i);
    const Node* result = k == S - 1 ? loss : p.assignment.boundary[static_cast<size_t>(k)];

    sp.forward_module = std::make_unique<ir::Module>();
    ir::Module& fm = *sp.forward_module;
    sp.forward = fm.add_graph(fmt::format("stage{}_forward", k));
    fm.entry = sp.forward;
    StageCopier fc(fm, sp.forward, step, p.assignment, k);
    add_stage_params(fm, sp.forward, step, p, sp, fc);
    sp.forward->output = fc.copy(result);

    sp.backward_module = std::make_unique<ir::Module>();
    ir::Module& bm = *sp.backward_module;
    Graph* g = bm.add_graph(fmt::format("stage{}_backward", k));
    bm.entry = g;
    StageCopier bc(bm, g, step, p.assignment, k);
    const std::vector<Node*> diff = add_stage_params(bm, g, step, p, sp, bc);
    Node* ct = bm.add_param(g, kCt, result->type, result->loc);
    Node* out = bc.copy(result);
    const std::vector<Node*> region(g->nodes.begin(), g->nodes.end());
    const std::vector<Node*> adj = autodiff::reverse_region(bm, region, g, diff, out, ct);
    std::vector<Node*> results;
    if (sp.takes_activation) results.push_back(adj.back());
    for (size_t i = 0; i < sp.params.size(); ++i) results.push_back(adj[i]);
    std::vector<TypeP> types;
    for (const Node* r : results) types.push_back(r->type);
    const sem::Primitive* tuple = sem::Registry::instance().find("make_tuple");
    g->output = bm.add_apply(g, tuple, results, {}, Type::tuple(types), out->loc);
    passes::optimize(bm);
    sp.backward = bm.entry;
    const size_t nparams = sp.params.size() + (sp.takes_activation ? 1 : 0) + p.data.size() + 1;
    if (sp.backward->params.size() != nparams)
      throw lang::InternalError(fmt::format("stage {}'s backward takes {} parameters, not {}", k,
                                            sp.backward->params.size(), nparams));
    p.stages.push_back(std::move(sp));
  }
  return p;
}

std::vector<PartitionedStage> partition_pipeline(const PipelineProgram& p, const Graph& step,
                                                 const Strategy& inner) {
  // The batch split of the data, for an activation of type t.
  auto batch_layout = [&](const TypeP& t) {
    Layout l = Layout::replicated(static_cast<int>(t->rank()));
    if (t->rank() == 0) return l;
    for (size_t i : p.data) {
      const Node* d = step.params[i];
      auto it = inner.layouts.find(d->name);
      if (it == inner.layouts.end() || it->second.rank() == 0 || it->second.tensor_map[0] < 0 ||
          d->type->shape[0] != t->shape[0])
        continue;
      Layout split = l;
      split.tensor_map[0] = it->second.tensor_map[0];
      try {
        split.validate(inner.mesh, t->shape);
      } catch (const lang::UserError&) {
        continue;
      }
      return split;
    }
    return l;
  };
  const int S = p.spec.stages;
  std::vector<PartitionedStage> out;
  for (int k = 0; k < S; ++k) {
    const StageProgram& sp = p.stages[static_cast<size_t>(k)];
    PartitionedStage ps;
    Strategy s;
    s.mesh = inner.mesh;
    for (const Node* x : sp.forward->params)
      if (auto it = inner.layouts.find(x->name); it != inner.layouts.end())
        s.layouts[x->name] = it->second;
    if (k > 0) ps.act_in = batch_layout(p.assignment.boundary[static_cast<size_t>(k) - 1]->type);
    if (k < S - 1) ps.act_out = batch_layout(p.assignment.boundary[static_cast<size_t>(k)]->type);
    if (ps.act_in) s.layouts[kAct] = *ps.act_in;
    PartitionOptions fo;
    fo.output_layouts.push_back(ps.act_out);
    ps.forward = partition(*sp.forward, s, fo);
    if (ps.act_out) s.layouts[kCt] = *ps.act_out;
    PartitionOptions bo;
    if (ps.act_in) bo.output_layouts.push_back(ps.act_in);
    for (size_t i : sp.params) {
      auto it = inner.layouts.find(step.params[i]->name);
      bo.output_layouts.push_back(it == inner.layouts.end() ? std::nullopt
                                                            : std::optional(it->second));
    }
    ps.grad_partial.assign(sp.params.size(), {});
    // Data parallelism inside the stage: the gradients come back as partial sums over the batch
    // axes, added over the micro-batches and all-reduced once per step by the runtime (not once
    // per micro-batch). Where the partitioner cannot leave a gradient partial (it never creates
    // partial sums), every gradient is reduced in b_k as usual.
    std::vector<int> batch_axes;
    for (size_t i : p.data)
      if (auto it = inner.layouts.find(step.params[i]->name);
          it != inner.layouts.end() && it->second.rank() > 0 && it->second.tensor_map[0] >= 0 &&
          std::find(batch_axes.begin(), batch_axes.end(), it->second.tensor_map[0]) ==
              batch_axes.end())
        batch_axes.push_back(it->second.tensor_map[0]);
    std::sort(batch_axes.begin(), batch_axes.end());
    // Which gradients can stay partial: each one alone first (a bias gradient reshaped after
    // its sum is reduced before the reshape, and cannot), then all of those together.
    const size_t at = ps.act_in ? 1 : 0;
    auto with_partial = [&](const std::vector<bool>& on) {
      PartitionOptions po = bo;
      for (size_t j = 0; j < sp.params.size(); ++j) {
        if (!on[j]) continue;
        const sem::TypeP& t = step.params[sp.params[j]]->type;
        Layout l =
            po.output_layouts[at + j].value_or(Layout::replicated(static_cast<int>(t->rank())));
        l.partial.insert(l.partial.end(), batch_axes.begin(), batch_axes.end());
        std::sort(l.partial.begin(), l.partial.end());
        po.output_layouts[at + j] = l;
      }
      return po;
    };
    std::vector<bool> on(sp.params.size(), false);
    for (size_t j = 0; j < sp.params.size() && !batch_axes.empty(); ++j) {
      const std::optional<Layout>& l = bo.output_layouts[at + j];
      bool free_axes = true;
      for (int a : batch_axes) free_axes &= !l || (l->dim_of_axis(a) < 0 && !l->has_partial(a));
      if (!free_axes) continue;
      std::vector<bool> one(sp.params.size(), false);
      one[j] = true;
      try {
        partition(*sp.backward, s, with_partial(one));
        on[j] = true;
      } catch (const lang::UserError&) {
      }
    }
    bool deferred = false;
    if (std::find(on.begin(), on.end(), true) != on.end()) {
      try {
        ps.backward = partition(*sp.backward, s, with_partial(on));
        for (size_t j = 0; j < sp.params.size(); ++j)
          if (on[j]) ps.grad_partial[j].assign(batch_axes.begin(), batch_axes.end());
        deferred = true;
      } catch (const lang::UserError&) {
      }
    }
    if (!deferred) ps.backward = partition(*sp.backward, s, bo);
    ps.forward.graph->name = sp.forward->name;  // not both "spmd" in a dump
    ps.backward.graph->name = sp.backward->name;
    ps.param_layouts.assign(ps.forward.param_layouts.begin(),
                            ps.forward.param_layouts.begin() + static_cast<long>(sp.params.size()));
    ps.data_layouts.assign(ps.forward.param_layouts.end() - static_cast<long>(p.data.size()),
                           ps.forward.param_layouts.end());
    out.push_back(std::move(ps));
  }
  return out;
}

std::string print_pipeline(const PipelineProgram& p, const std::vector<PartitionedStage>& parts,
                           const Strategy& inner) {
  std::string s =
      fmt::format("# pipeline: {} stages x mesh {}, {} micro-batches, {} schedule\n", p.spec.stages,
                  inner.mesh.to_string(), p.spec.micro_batches, schedule_name(p.spec.schedule));
  for (size_t k = 0; k < parts.size(); ++k) {
    const StageProgram& sp = p.stages[k];
    const PartitionedStage& ps = parts[k];
    std::vector<std::string> names;
    for (size_t i = 0; i < sp.params.size(); ++i) names.push_back(sp.forward->params[i]->name);
    s += fmt::format("# stage {}: parameters {}; cost {:.4g}\n", k,
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
                     p.assignment.stage_cost[k]);
    if (ps.act_in)
      s += fmt::format("#   receives {} {} from stage {}\n",
                       p.assignment.boundary[k - 1]->type->str(), ps.act_in->to_string(inner.mesh),
                       k - 1);
    if (ps.act_out)
      s += fmt::format("#   sends {} {} to stage {}\n", p.assignment.boundary[k]->type->str(),
                       ps.act_out->to_string(inner.mesh), k + 1);
    s += ir::print_module(*ps.forward.module);
    s += ir::print_module(*ps.backward.module);
    const int c = ps.forward.collectives + ps.backward.collectives;
    s += fmt::format("# stage {}: {} collectives (forward {}, backward {})\n", k, c,
                     ps.forward.collectives, ps.backward.collectives);
    for (const std::string& line : collective_summary(*ps.forward.graph)) s += "#   " + line + "\n";
    for (const std::string& line : collective_summary(*ps.backward.graph))
      s += "#   " + line + "\n";
    for (size_t j = 0; j < ps.grad_partial.size(); ++j)
      if (!ps.grad_partial[j].empty())
        s += fmt::format(
            "#   all_reduce(axes=[{}]) of d {} once per step (after the last micro-batch)\n",
            fmt::join(ps.grad_partial[j], ", "), sp.forward->params[j]->name);
  }
  return s;
}

}  // namespace spora::parallel::pipeline
