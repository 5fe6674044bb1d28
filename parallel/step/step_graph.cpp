// Building the training step's graph (step_graph.h): lower with the batch constant set,
// capture the first reverse-mode region, re-derive it in a graph of its own, optimise.
#include "parallel/step/step_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_set>

#include "lang/ast.h"
#include "semantics/ad_hooks.h"
#include "semantics/ir/clone.h"
#include "semantics/lower.h"
#include "semantics/passes/dce.h"
#include "semantics/passes/fold_tuples.h"
#include "semantics/passes/inline.h"
#include "semantics/passes/pipeline.h"

namespace spora::parallel {

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

// Restores the autodiff hook however the lowering ends.
struct HookGuard {
  sem::AutodiffHooks& hooks;
  decltype(sem::AutodiffHooks::reverse) saved;
  ~HookGuard() { hooks.reverse = saved; }
};

// A name for a differentiated leaf: its own debug name, or its source's.
std::string leaf_name(const Node* leaf, std::size_t i) {
  for (const Node* n = leaf; n; n = n->is_apply() && n->inputs.size() == 1 ? n->inputs[0] : nullptr)
    if (!n->name.empty()) return n->name;
  return fmt::format("param{}", i);
}

// Recomputation made explicit (step_graph.h, "Recomputation"): the calls of checkpointed
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

}  // namespace

Graph* copy_step_region(ir::Module& m, const StepRegion& cap, const ReverseHook& reverse,
                        const std::string& name, std::vector<std::string>& leaf_names,
                        std::vector<Node*>* externals) {
  Graph* g = m.add_graph(name);
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
      user_error(
          fmt::format("the differentiated function uses the graph @{} from outside; "
                      "a training step cannot copy it",
                      n->graph_value->name));
    const TypeP& t = n->type;
    if (!t || (t->kind != Type::Kind::Tensor && t->kind != Type::Kind::Tuple &&
               t->kind != Type::Kind::Record))
      user_error(
          fmt::format("the differentiated function reads a {} from outside; a training "
                      "step can only take tensors, tuples and records",
                      t ? t->str() : "value"));
    map.nodes[n] = m.add_param(g, n->name.empty() ? "input" : n->name, t, n->loc);
    if (externals) externals->push_back(n);
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

StepGraph build_step_graph(const std::string& path, const StepOptions& options) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  std::unique_ptr<sem::Program> program = sem::load_program(sources, path, diags);
  if (!program || diags.has_errors()) user_error(diagnostics_text(diags));

  StepGraph result;
  lang::Expr* batch = find_batch_constant(*program, options.batch_name);
  if (!batch)
    user_error(
        fmt::format("{} has no module-level `let {} = <integer>`: {}", path,
                    options.batch_name, options.batch_use));
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
  StepRegion cap;
  bool captured = false;
  const auto reverse = guard.saved;
  hooks.reverse = [&cap, &captured, reverse](ir::Module& m, const std::vector<Node*>& region, Graph* into,
                                  const std::vector<Node*>& inputs, Node* output, Node* dout) {
    if (!captured) {
      captured = true;
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
  if (!captured)
    user_error(
        fmt::format("'{}' in {} takes no derivative: a training step calls "
                    "value_and_grad(loss)(...) or grad(loss)(...)",
                    options.entry, path));
  if (cap.inputs.empty())
    user_error("the derivative is taken with respect to no floating-point tensor");

  Graph* g = copy_step_region(*result.module, cap, reverse, "step", result.param_names);
  result.loss_type = cap.output->type->str();
  result.module->entry = g;
  passes::optimize(*result.module);
  inline_checkpoints(*result.module);
  g = result.module->entry;
  result.step = g;

  const Node* out = g->output;
  if (!out || !out->is_prim("make_tuple") || out->inputs.size() != cap.inputs.size() + 1)
    throw lang::InternalError("the step does not return (loss, gradients...) after optimisation");
  // The optimizer's update is the consumer's (step_graph.h, 4.); its name is checked here.
  if (options.optimizer != "sgd" && options.optimizer != "momentum" && options.optimizer != "adam")
    user_error(fmt::format("unknown optimizer '{}' (sgd, momentum, adam)", options.optimizer));
  return result;
}

}  // namespace spora::parallel
