// Building the per-rank step program (step_program.h): lower with the batch constant set,
// capture the first reverse-mode region, re-derive it in a graph of its own, optimise, flatten.
#include "sim/step_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "lang/ast.h"
#include "semantics/ad_hooks.h"
#include "semantics/ir/clone.h"
#include "semantics/lower.h"
#include "semantics/passes/dce.h"
#include "semantics/passes/fold_tuples.h"
#include "semantics/passes/inline.h"
#include "semantics/passes/pipeline.h"
#include "sim/cost_model.h"

namespace spora::sim {

namespace {

using ir::Graph;
using ir::Node;
using sem::Type;
using sem::TypeP;

[[noreturn]] void user_error(const std::string& message) { throw lang::UserError(message); }

std::string diagnostics_text(const lang::DiagnosticEngine& diags) {
  std::ostringstream os;
  diags.print(os);
  std::string text = os.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The module-level `let <name> = <integer>` of the main file.
lang::Expr* find_batch_constant(sem::Program& program, const std::string& name) {
  for (const auto& st : program.modules.at(0)->globals)
    if (st->kind == lang::StmtKind::Let && !st->pattern.is_tuple && st->pattern.name == name &&
        st->value && st->value->kind == lang::ExprKind::Int)
      return st->value.get();
  return nullptr;
}

// What the reverse hook was handed the first time it ran.
struct Captured {
  bool done = false;
  std::vector<Node*> region, inputs;
  Node* output = nullptr;
};

// Restores the autodiff hook however the lowering ends.
struct HookGuard {
  sem::AutodiffHooks& hooks;
  decltype(sem::AutodiffHooks::reverse) saved;
  ~HookGuard() { hooks.reverse = saved; }
};

bool is_control(const sem::Primitive* p) {
  return p && (p->name == "if" || p->name == "while" || p->name == "for_range" ||
               p->name == "for_each");
}

// A name for a differentiated leaf: its own debug name, or its source's.
std::string leaf_name(const Node* leaf, std::size_t i) {
  for (const Node* n = leaf; n; n = n->is_apply() && n->inputs.size() == 1 ? n->inputs[0] : nullptr)
    if (!n->name.empty()) return n->name;
  return fmt::format("param{}", i);
}

// Copies the captured region into a new top-level graph and differentiates it there.
Graph* build_step_graph(ir::Module& m, const Captured& cap,
                        const decltype(sem::AutodiffHooks::reverse)& reverse,
                        std::vector<std::string>& leaf_names) {
  Graph* g = m.add_graph("sim.step");
  ir::CloneMap map;
  const std::unordered_set<const Node*> in_region(cap.region.begin(), cap.region.end());
  std::vector<Node*> inputs;
  for (std::size_t i = 0; i < cap.inputs.size(); ++i) {
    Node* leaf = cap.inputs[i];
    leaf_names.push_back(leaf_name(leaf, i));
    Node* p = m.add_param(g, leaf_names.back(), leaf->type, leaf->loc);
    map.nodes[leaf] = p;
    inputs.push_back(p);
  }
  // Everything else the region reads from outside: constants are copied, the rest (the batch,
  // non-differentiated arguments) become parameters.
  auto external = [&](Node* n) {
    if (in_region.count(n) || map.nodes.count(n)) return;
    if (n->is_constant() && !n->graph_value) {
      Node* c = m.add_constant(g, n->value, n->loc);
      map.nodes[n] = c;
      return;
    }
    if (n->is_constant())
      user_error(fmt::format("the differentiated function uses the graph @{} from outside; "
                             "spora sim cannot copy it",
                             n->graph_value->name));
    const TypeP& t = n->type;
    if (!t || (t->kind != Type::Kind::Tensor && t->kind != Type::Kind::Tuple &&
               t->kind != Type::Kind::Record))
      user_error(fmt::format("the differentiated function reads a {} from outside; a simulated "
                             "step can only take tensors, tuples and records",
                             t ? t->str() : "value"));
    map.nodes[n] = m.add_param(g, n->name.empty() ? "input" : n->name, t, n->loc);
  };
  for (Node* n : cap.region) {
    for (Node* in : n->inputs) external(in);
    if (n->is_constant() && n->graph_value)
      for (Node* fv : ir::free_variables(n->graph_value)) external(fv);
  }
  const std::size_t begin = g->nodes.size();
  for (Node* n : cap.region) {
    Node* copy = nullptr;
    std::vector<Node*> ins;
    for (Node* in : n->inputs) ins.push_back(map.node(in));
    if (n->is_constant() && n->graph_value) {
      Graph* body = ir::clone_graph(m, *n->graph_value, g, map);
      copy = m.add_graph_constant(g, body, n->loc);
    } else if (n->is_constant()) {
      copy = m.add_constant(g, n->value, n->loc);
    } else if (n->prim) {
      copy = m.add_apply(g, n->prim, ins, n->attrs, n->type, n->loc);
    } else {
      copy = m.add_call(g, n->callee, ins, n->type, n->loc);
    }
    copy->name = n->name;
    map.nodes[n] = copy;
  }
  const std::vector<Node*> region(g->nodes.begin() + static_cast<long>(begin), g->nodes.end());
  Node* out = map.node(cap.output);
  Node* dout = m.add_constant(g, sem::Value(sem::Tensor::scalar(out->type->dtype, 1.0)), out->loc);
  std::vector<Node*> adj = reverse(m, region, g, inputs, out, dout);
  std::vector<Node*> results{out};
  std::vector<TypeP> types{out->type};
  for (Node* a : adj) {
    results.push_back(a);
    types.push_back(a->type);
  }
  const sem::Primitive* tuple = sem::Registry::instance().find("make_tuple");
  g->output = m.add_apply(g, tuple, results, {}, Type::tuple(types), out->loc);
  return g;
}

// Recomputation made explicit (step_program.h, "Recomputation"): the calls of checkpointed
// graphs are inlined, their record packing folded, what nothing reads removed; no CSE, which
// would merge the backward's recomputation with the forward.
void inline_checkpoints(ir::Module& m) {
  bool any = false;
  for (const auto& g : m.graphs()) {
    auto& f = g->flags;
    const auto end = std::remove(f.begin(), f.end(), std::string("checkpoint"));
    any = any || end != f.end();
    f.erase(end, f.end());
  }
  if (!any) return;
  passes::inline_calls(m);
  passes::fold_tuples(m);
  passes::eliminate_dead_code(m);
}

double total_cost(const std::vector<StepOp>& ops) {
  double c = 0;
  for (const StepOp& op : ops) c += op.cost.flops + op.cost.bytes;
  return c;
}

// Flattens a graph's nodes into ops (step_program.h, "The op list").
class Flattener {
 public:
  Flattener(std::vector<StepOp>& ops, std::vector<std::string>& warnings)
      : ops_(ops), warnings_(warnings) {}

  void graph(const Graph& g, Phase phase, int depth) {
    for (const Node* n : g.nodes) node(*n, phase, depth);
  }

  void node(const Node& n, Phase phase, int depth) {
    if (!n.is_apply()) return;
    if (depth > 64) {
      warn("calls nested deeper than 64 levels are not expanded");
      return;
    }
    if (n.callee) {
      graph(*n.callee, phase, depth + 1);
      return;
    }
    if (!is_control(n.prim)) {
      std::vector<TypeP> in;
      for (const Node* i : n.inputs) in.push_back(i->type);
      ops_.push_back(make_step_op(*n.prim, std::move(in), n.type, n.attrs, phase));
      return;
    }
    auto body = [&](std::size_t i) -> const Graph* {
      return i < n.inputs.size() ? n.inputs[i]->graph_value : nullptr;
    };
    const std::string& name = n.prim->name;
    if (name == "if") {
      std::vector<StepOp> a, b;
      Flattener fa(a, warnings_), fb(b, warnings_);
      if (body(1)) fa.graph(*body(1), phase, depth + 1);
      if (body(2)) fb.graph(*body(2), phase, depth + 1);
      const std::vector<StepOp>& chosen = total_cost(a) >= total_cost(b) ? a : b;
      ops_.insert(ops_.end(), chosen.begin(), chosen.end());
      return;
    }
    if (name == "for_range") {
      long trips = 1;
      if (const auto t = constant_trips(n)) {
        trips = *t;
      } else {
        warn("a for_range with run-time bounds counts one iteration");
      }
      std::vector<StepOp> once;
      Flattener f(once, warnings_);
      if (body(3)) f.graph(*body(3), phase, depth + 1);
      for (long k = 0; k < trips; ++k) ops_.insert(ops_.end(), once.begin(), once.end());
      return;
    }
    if (name == "while") {
      warn("a while loop counts one iteration");
      if (body(0)) graph(*body(0), phase, depth + 1);
      if (body(1)) graph(*body(1), phase, depth + 1);
      return;
    }
    warn("a for_each loop counts one iteration");
    if (body(1)) graph(*body(1), phase, depth + 1);
  }

 private:
  static std::optional<double> scalar_constant(const Node* n) {
    if (!n->is_constant() || n->value.kind != sem::Value::Kind::Tensor) return std::nullopt;
    const sem::Tensor& t = n->value.tensor;
    if (t.numel() != 1) return std::nullopt;
    return t.get(0);
  }
  static std::optional<long> constant_trips(const Node& n) {
    if (n.inputs.size() < 4) return std::nullopt;
    const auto start = scalar_constant(n.inputs[0]), stop = scalar_constant(n.inputs[1]),
               step = scalar_constant(n.inputs[2]);
    if (!start || !stop || !step || *step == 0) return std::nullopt;
    const double trips = std::ceil((*stop - *start) / *step);
    return trips > 0 ? static_cast<long>(trips) : 0;
  }
  void warn(const std::string& w) {
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
  }

  std::vector<StepOp>& ops_;
  std::vector<std::string>& warnings_;
};

}  // namespace

// The optimizer's update of one parameter p with gradient g, as primitive applications:
//   sgd       p - lr g
//   momentum  v = mu v + g; p - lr v                                  (one state tensor)
//   adam      m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//             p - lr m / (sqrt(v) + eps)  (bias corrections folded into lr) (two state tensors)
std::vector<StepOp> update_ops(const std::string& optimizer, const TypeP& p, int& state) {
  const TypeP s = Type::scalar(p->dtype);
  auto op = [&](const char* name, std::vector<TypeP> in) {
    const sem::Primitive* prim = sem::Registry::instance().find(name);
    if (!prim) throw lang::InternalError(fmt::format("no primitive {}", name));
    return make_step_op(*prim, std::move(in), p, {}, Phase::Update);
  };
  if (optimizer == "sgd") {
    state = 0;
    return {op("mul", {p, s}), op("sub", {p, p})};
  }
  if (optimizer == "momentum") {
    state = 1;
    return {op("mul", {p, s}), op("add", {p, p}), op("mul", {p, s}), op("sub", {p, p})};
  }
  if (optimizer == "adam") {
    state = 2;
    return {op("mul", {p, s}), op("mul", {p, s}), op("add", {p, p}), op("mul", {p, s}),
            op("mul", {p, p}), op("mul", {p, s}), op("add", {p, p}), op("sqrt", {p}),
            op("add", {p, s}), op("div", {p, p}),  op("mul", {p, s}), op("sub", {p, p})};
  }
  user_error(fmt::format("unknown optimizer '{}' (sgd, momentum, adam)", optimizer));
}

// Peak bytes of live intermediates of the step graph, in node order (step_program.h): an
// Apply allocates its output and frees it after its last use (uses inside nested graphs count
// at the control-flow node that runs them); a view aliases its input and allocates nothing;
// gradient leaves are freed as soon as they are made (they move into the gradient buckets,
// counted apart), parameters are not counted.
double activation_peak(const Graph& g, const std::unordered_set<const Node*>& gradients) {
  std::unordered_map<const Node*, std::size_t> last_use;
  std::unordered_map<const Node*, const Node*> storage;  // a view -> what it aliases
  auto root = [&](const Node* n) {
    while (storage.count(n)) n = storage.at(n);
    return n;
  };
  for (std::size_t j = 0; j < g.nodes.size(); ++j) {
    const Node* n = g.nodes[j];
    if (!n->is_apply()) continue;
    for (const Node* in : n->inputs) {
      last_use[root(in)] = j;
      if (in->graph_value)
        for (const Node* fv : ir::free_variables(in->graph_value)) last_use[root(fv)] = j;
    }
    if (n->prim) {
      const CostRule* rule = n->prim->facet<CostRule>(kCostFacet);
      std::vector<TypeP> in;
      for (const Node* i : n->inputs) in.push_back(i->type);
      if (rule && !n->inputs.empty() && (*rule)(in, n->type, n->attrs).op_class == "view")
        storage[n] = n->inputs[0];
    }
  }
  if (g.output) last_use[root(g.output)] = g.nodes.size();
  double live = 0, peak = 0;
  std::map<std::size_t, double> frees;
  for (std::size_t j = 0; j < g.nodes.size(); ++j) {
    const Node* n = g.nodes[j];
    if (n->is_apply() && !storage.count(n) && !n->is_prim("make_tuple")) {
      const double b = type_bytes(n->type);
      live += b;
      peak = std::max(peak, live);
      if (gradients.count(n))
        live -= b;
      else if (last_use.count(n))
        frees[last_use.at(n)] += b;
      else
        live -= b;  // unused
    }
    if (auto it = frees.find(j); it != frees.end()) live -= it->second;
  }
  return peak;
}

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Update: return "update";
  }
  return "?";
}

double StepProgram::param_bytes() const {
  double b = 0;
  for (const StepParam& p : params) b += p.bytes;
  return b;
}

StepOp make_step_op(const sem::Primitive& prim, std::vector<TypeP> inputs, TypeP output,
                    sem::Attrs attrs, Phase phase) {
  StepOp op;
  op.prim = &prim;
  op.phase = phase;
  if (const CostRule* rule = prim.facet<CostRule>(kCostFacet)) {
    op.cost = (*rule)(inputs, output, attrs);
  } else if (prim.effectful || prim.family == "io") {
    op.cost = host_cost()(inputs, output, attrs);  // I/O and effects run on the host
    op.costed = false;
  } else {
    op.cost = elementwise_cost(1)(inputs, output, attrs);
    op.costed = false;
  }
  op.dtype = compute_dtype(inputs, output);
  op.inputs = std::move(inputs);
  op.output = std::move(output);
  op.attrs = std::move(attrs);
  return op;
}

StepProgram build_step_program(const std::string& path, const StepOptions& options) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  std::unique_ptr<sem::Program> program = sem::load_program(sources, path, diags);
  if (!program || diags.has_errors()) user_error(diagnostics_text(diags));

  StepProgram result;
  lang::Expr* batch = find_batch_constant(*program, options.batch_name);
  if (!batch)
    user_error(fmt::format("{} has no module-level `let {} = <integer>`: the simulator sets it to "
                           "the per-rank batch",
                           path, options.batch_name));
  if (options.batch) {
    if (*options.batch <= 0)
      user_error(fmt::format("the per-rank batch must be positive, got {}", *options.batch));
    batch->int_value = *options.batch;
    batch->text = std::to_string(*options.batch);
  }
  result.batch = batch->int_value;

  sem::AutodiffHooks& hooks = sem::autodiff_hooks();
  if (!hooks.reverse) throw lang::InternalError("autodiff is not installed (autodiff::install())");
  const HookGuard guard{hooks, hooks.reverse};
  Captured cap;
  const auto reverse = guard.saved;
  hooks.reverse = [&cap, reverse](ir::Module& m, const std::vector<Node*>& region, Graph* into,
                                  const std::vector<Node*>& inputs, Node* output, Node* dout) {
    if (!cap.done) {
      cap.done = true;
      cap.region = region;
      cap.inputs = inputs;
      cap.output = output;
    }
    return reverse(m, region, into, inputs, output, dout);
  };
  sem::LowerOptions lower;
  lower.entry = options.entry;
  // Recomputation: the layers named (or all: one level below a differentiated argument).
  std::set<std::string> layers, recomputed;
  if (options.recompute_all || !options.recompute.empty())
    lower.recompute = [&](const std::string& path) {
      if (path.empty()) return false;
      const auto dots = std::count(path.begin(), path.end(), '.');
      if (dots == 1) layers.insert(path);
      const bool chosen = options.recompute_all
                              ? dots == 1
                              : std::find(options.recompute.begin(), options.recompute.end(),
                                          path) != options.recompute.end();
      if (chosen) recomputed.insert(path);
      return chosen;
    };
  result.module = sem::lower_program(*program, diags, lower);
  if (!result.module) user_error(diagnostics_text(diags));
  for (const std::string& name : options.recompute)
    if (!recomputed.count(name))
      user_error(
          fmt::format("recompute names '{}', which is not a layer the loss calls (its "
                      "layers: {})",
                      name, layers.empty() ? "none" : fmt::format("{}", fmt::join(layers, ", "))));
  result.recomputed.assign(recomputed.begin(), recomputed.end());
  if (!cap.done)
    user_error(fmt::format("'{}' in {} takes no derivative: a training step calls "
                           "value_and_grad(loss)(...) or grad(loss)(...)",
                           options.entry, path));
  if (cap.inputs.empty())
    user_error("the derivative is taken with respect to no floating-point tensor");

  std::vector<std::string> names;
  Graph* g = build_step_graph(*result.module, cap, reverse, names);
  result.loss_type = cap.output->type->str();
  result.module->entry = g;
  passes::optimize(*result.module);
  inline_checkpoints(*result.module);
  g = result.module->entry;
  result.step = g;

  // Which node produced each output, and which nodes the loss depends on (the forward).
  const Node* out = g->output;
  if (!out || !out->is_prim("make_tuple") || out->inputs.size() != cap.inputs.size() + 1)
    throw lang::InternalError("sim.step does not return (loss, gradients...) after optimisation");
  std::unordered_set<const Node*> forward;
  std::vector<const Node*> stack{out->inputs[0]};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!forward.insert(n).second) continue;
    for (const Node* in : n->inputs) stack.push_back(in);
  }
  std::unordered_map<const Node*, int> last_op;  // node -> index of its last op
  Flattener flat(result.ops, result.warnings);
  for (const Node* n : g->nodes) {
    flat.node(*n, forward.count(n) ? Phase::Forward : Phase::Backward, 0);
    last_op[n] = static_cast<int>(result.ops.size()) - 1;
  }
  std::unordered_set<const Node*> gradients;
  for (std::size_t i = 0; i < cap.inputs.size(); ++i) {
    StepParam p;
    p.name = names[i];
    p.type = g->params[i]->type;
    p.bytes = type_bytes(p.type);
    const Node* grad = out->inputs[i + 1];
    gradients.insert(grad);
    p.grad_op = last_op.count(grad) ? last_op.at(grad) : -1;
    p.update = update_ops(options.optimizer, p.type, p.state_tensors);
    result.params.push_back(std::move(p));
  }
  for (std::size_t i = cap.inputs.size(); i < g->params.size(); ++i)
    result.input_bytes += type_bytes(g->params[i]->type);
  result.activation_peak = activation_peak(*g, gradients) + result.input_bytes;
  return result;
}

}  // namespace spora::sim
