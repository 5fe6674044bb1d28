// The simulator's step program (step_program.h): the step graph of parallel/step/step_graph.h,
// flattened to costed ops, with the optimizer's update of every parameter.
#include "sim/step_program.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "lang/diagnostics.h"
#include "sim/cost_model.h"
#include "sim/reuse.h"

namespace spora::sim {

namespace {

using ir::Graph;
using ir::Node;
using sem::Type;
using sem::TypeP;

bool is_control(const sem::Primitive* p) {
  return p && (p->name == "if" || p->name == "while" || p->name == "for_range" ||
               p->name == "for_each");
}

double total_cost(const std::vector<StepOp>& ops) {
  double c = 0;
  for (const StepOp& op : ops) c += op.cost.flops + op.cost.bytes;
  return c;
}

// Flattens a graph's nodes into ops (step_program.h, "The op list").
class Flattener {
 public:
  Flattener(std::vector<StepOp>& ops, std::vector<std::string>& warnings, Dataflow& flow)
      : ops_(ops), warnings_(warnings), flow_(flow) {}

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
      for (std::size_t k = 0; k < n.inputs.size() && k < n.callee->params.size(); ++k)
        flow_.bind(n.callee->params[k], flow_.refs(n.inputs[k]));
      graph(*n.callee, phase, depth + 1);
      if (n.callee->output) flow_.bind(&n, flow_.refs(n.callee->output));
      return;
    }
    if (!is_control(n.prim)) {
      std::vector<TypeP> in;
      for (const Node* i : n.inputs) in.push_back(i->type);
      StepOp op = make_step_op(*n.prim, std::move(in), n.type, n.attrs, phase);
      flow_.apply(n, op);
      ops_.push_back(std::move(op));
      return;
    }
    // A loop's or branch's body reads values the dataflow does not follow (its parameters);
    // the control node's result is a new value.
    flow_.bind(&n, {flow_.fresh(n.type)});
    auto body = [&](std::size_t i) -> const Graph* {
      return i < n.inputs.size() ? n.inputs[i]->graph_value : nullptr;
    };
    const std::string& name = n.prim->name;
    if (name == "if") {
      std::vector<StepOp> a, b;
      Flattener fa(a, warnings_, flow_), fb(b, warnings_, flow_);
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
      Flattener f(once, warnings_, flow_);
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
  Dataflow& flow_;
};

}  // namespace

// The optimizer's update of one parameter p with gradient g, as primitive applications:
//   sgd       p - lr g
//   momentum  v = mu v + g; p - lr v                                  (one state tensor)
//   adam      m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//             p - lr m / (sqrt(v) + eps)  (bias corrections folded into lr) (two state tensors)
std::vector<StepOp> update_ops(const std::string& optimizer, const TypeP& p, int& state,
                               UpdateKernel kernel) {
  const TypeP s = Type::scalar(p->dtype);
  auto op = [&](const char* name, std::vector<TypeP> in) {
    const sem::Primitive* prim = sem::Registry::instance().find(name);
    if (!prim) throw lang::InternalError(fmt::format("no primitive {}", name));
    return make_step_op(*prim, std::move(in), p, {}, Phase::Update);
  };
  std::vector<StepOp> ops;
  if (optimizer == "sgd") {
    state = 0;
    ops = {op("mul", {p, s}), op("sub", {p, p})};
  } else if (optimizer == "momentum") {
    state = 1;
    ops = {op("mul", {p, s}), op("add", {p, p}), op("mul", {p, s}), op("sub", {p, p})};
  } else if (optimizer == "adam") {
    state = 2;
    ops = {op("mul", {p, s}), op("mul", {p, s}), op("add", {p, p}), op("mul", {p, s}),
           op("mul", {p, p}), op("mul", {p, s}), op("add", {p, p}), op("sqrt", {p}),
           op("add", {p, s}), op("div", {p, p}), op("mul", {p, s}), op("sub", {p, p})};
  } else {
    throw lang::UserError(fmt::format("unknown optimizer '{}' (sgd, momentum, adam)", optimizer));
  }
  if (kernel == UpdateKernel::Ops) return ops;
  // One pass: the parameter, its gradient and its state read, the parameter and its state
  // written; the applications' FLOPs.
  StepOp fused = ops.back();
  fused.label = "fused_" + optimizer;
  fused.inputs.assign(static_cast<std::size_t>(2 + state), p);
  fused.cost = sem::OpCost{};
  for (const StepOp& o : ops) fused.cost.flops += o.cost.flops;
  fused.cost.bytes = static_cast<double>(3 + 2 * state) * sem::type_bytes(p);
  fused.cost.op_class = "elementwise";
  return {fused};
}

std::string_view update_kernel_name(UpdateKernel k) {
  return k == UpdateKernel::Fused ? "fused" : "ops";
}

UpdateKernel parse_update_kernel(const std::string& s) {
  if (s == "ops") return UpdateKernel::Ops;
  if (s == "fused") return UpdateKernel::Fused;
  throw lang::UserError(fmt::format("unknown update kernel '{}' (ops, fused)", s));
}

// Peak bytes of live intermediates of the step graph, in node order (step_program.h): an
// Apply allocates its output and frees it after its last use (uses inside nested graphs count
// at the control-flow node that runs them); a view aliases its input and allocates nothing;
// parameters are not counted. Gradient leaves either move into buckets counted apart (freed as
// soon as made: data parallelism's DDP buckets) or stay live to the end of the step (the
// update reads them where they are, as the SPMD runtime and the harness hold them).
LivePeak live_peak(const Graph& g, const std::unordered_set<const Node*>& gradients,
                   bool keep_gradients) {
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
      const sem::CostRule* rule = n->prim->facet<sem::CostRule>(sem::kCostFacet);
      std::vector<TypeP> in;
      for (const Node* i : n->inputs) in.push_back(i->type);
      if (rule && !n->inputs.empty() && (*rule)(in, n->type, n->attrs).op_class == "view")
        storage[n] = n->inputs[0];
    }
  }
  if (g.output) last_use[root(g.output)] = g.nodes.size();
  double live = 0, grads = 0;
  LivePeak peak;
  std::map<std::size_t, double> frees;
  for (std::size_t j = 0; j < g.nodes.size(); ++j) {
    const Node* n = g.nodes[j];
    if (n->is_apply() && !storage.count(n) && !n->is_prim("make_tuple")) {
      const double b = sem::type_bytes(n->type);
      const bool gradient = gradients.count(n) > 0;
      if (gradient && keep_gradients) {
        grads += b;
      } else {
        live += b;
      }
      if (live + grads > peak.intermediates + peak.gradients) {
        peak.intermediates = live;
        peak.gradients = grads;
      }
      if (gradient && keep_gradients)
        ;  // live until the update
      else if (gradient)
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

double activation_peak(const Graph& g, const std::unordered_set<const Node*>& gradients) {
  return live_peak(g, gradients, false).intermediates;
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
  if (const sem::CostRule* rule = prim.facet<sem::CostRule>(sem::kCostFacet)) {
    op.cost = (*rule)(inputs, output, attrs);
  } else if (prim.effectful || prim.family == "io") {
    op.cost = sem::host_cost()(inputs, output, attrs);  // I/O and effects run on the host
    op.costed = false;
  } else {
    op.cost = sem::elementwise_cost(1)(inputs, output, attrs);
    op.costed = false;
  }
  op.dtype = compute_dtype(inputs, output);
  op.inputs = std::move(inputs);
  op.output = std::move(output);
  op.attrs = std::move(attrs);
  return op;
}

StepProgram build_step_program(const std::string& path, const parallel::StepOptions& options,
                               UpdateKernel update) {
  StepProgram result;
  static_cast<parallel::StepGraph&>(result) = parallel::build_step_graph(path, options);
  const Graph* g = result.step;
  const std::size_t trainable = result.param_names.size();

  // Which node produced each output, and which nodes the loss depends on (the forward).
  const Node* out = g->output;
  std::unordered_set<const Node*> forward;
  std::vector<const Node*> stack{out->inputs[0]};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!forward.insert(n).second) continue;
    for (const Node* in : n->inputs) stack.push_back(in);
  }
  std::unordered_map<const Node*, int> last_op;  // node -> index of its last op
  Dataflow flow;
  for (const Node* p : g->params) flow.bind(p, {flow.fresh(p->type)});
  Flattener flat(result.ops, result.warnings, flow);
  for (const Node* n : g->nodes) {
    flat.node(*n, forward.count(n) ? Phase::Forward : Phase::Backward, 0);
    last_op[n] = static_cast<int>(result.ops.size()) - 1;
  }
  std::unordered_set<const Node*> gradients;
  for (std::size_t i = 0; i < trainable; ++i) {
    StepParam p;
    p.name = result.param_names[i];
    p.type = g->params[i]->type;
    p.bytes = sem::type_bytes(p.type);
    const Node* grad = out->inputs[i + 1];
    gradients.insert(grad);
    p.grad_op = last_op.count(grad) ? last_op.at(grad) : -1;
    p.update = update_ops(options.optimizer, p.type, p.state_tensors, update);
    const auto& param = flow.refs(g->params[i]);
    const auto& gradient = flow.refs(grad);
    if (!param.empty())
      connect_update(p.update, param[0], gradient.size() == 1 ? gradient[0] : TensorRef{}, flow);
    result.params.push_back(std::move(p));
  }
  for (std::size_t i = trainable; i < g->params.size(); ++i)
    result.input_bytes += sem::type_bytes(g->params[i]->type);
  result.activation_peak = activation_peak(*g, gradients) + result.input_bytes;
  return result;
}

double node_cost(const Node& n) {
  if (!n.prim || !n.type) return 0;
  std::vector<TypeP> in;
  for (const Node* x : n.inputs) in.push_back(x->type);
  const StepOp op = make_step_op(*n.prim, in, n.type, n.attrs, Phase::Forward);
  return op.cost.flops + op.cost.bytes;
}

}  // namespace spora::sim
