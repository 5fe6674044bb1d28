#include "autodiff/copy.h"

#include <fmt/format.h>

#include <algorithm>

#include "lang/diagnostics.h"

namespace spora::autodiff {

bool keeps_call(const ir::Graph& callee) {
  for (const auto& f : callee.flags)
    if (f == "checkpoint" || f.rfind("custom_grad=", 0) == 0) return true;
  return false;
}

ir::Graph* custom_grad_of(const ir::Module& m, const ir::Graph& g) {
  for (const auto& f : g.flags)
    if (f.rfind("custom_grad=", 0) == 0) return m.find_graph(f.substr(12));
  return nullptr;
}

namespace {
// Graphs called (directly) by g or the graphs nested in it.
void callees(const ir::Graph& g, std::vector<const ir::Graph*>& out) {
  for (const ir::Node* n : g.nodes) {
    if (n->callee) out.push_back(n->callee);
    if (n->graph_value && n->graph_value->parent) callees(*n->graph_value, out);
  }
}
}  // namespace

bool is_recursive(const ir::Graph& g) {
  std::vector<const ir::Graph*> work, seen;
  callees(g, work);
  while (!work.empty()) {
    const ir::Graph* h = work.back();
    work.pop_back();
    if (h == &g) return true;
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    callees(*h, work);
  }
  return false;
}

void move_before(ir::Node* n, ir::Node* before) {
  auto& nodes = n->graph->nodes;
  auto it = std::find(nodes.begin(), nodes.end(), n);
  if (it == nodes.end()) throw lang::InternalError("move_before: node not in its graph");
  nodes.erase(it);
  auto at = std::find(nodes.begin(), nodes.end(), before);
  if (at == nodes.end()) throw lang::InternalError("move_before: anchor not in the graph");
  nodes.insert(at, n);
}

ir::Node* copy_body(ir::Module& m, ir::Graph* dst, const ir::Graph& src, const std::vector<ir::Node*>& args,
                    ir::CloneMap& map, std::vector<const ir::Graph*>& stack) {
  if (args.size() != src.params.size())
    throw lang::InternalError("copy_body: @" + src.name + " takes " + std::to_string(src.params.size()) +
                              " arguments, given " + std::to_string(args.size()));
  // A graph still being lowered has no output yet: a derivative taken inside the function's own
  // body (grad(f) within f) would need the derivative of itself to every order.
  if (!src.output)
    throw lang::UserError(
        fmt::format("cannot differentiate '{}' inside its own definition: its derivative "
                    "would contain the derivative of itself, to every order",
                    src.name));
  for (size_t i = 0; i < args.size(); ++i) map.nodes[src.params[i]] = args[i];
  stack.push_back(&src);
  for (ir::Node* n : src.nodes) {
    if (n->is_constant()) {
      if (n->graph_value) {
        ir::Graph* target = n->graph_value;
        if (target->parent && ir::is_within(target, &src)) target = ir::clone_graph(m, *target, dst, map);
        map.nodes[n] = m.add_graph_constant(dst, target, n->loc);
      } else {
        map.nodes[n] = m.add_constant(dst, n->value, n->loc);
      }
      continue;
    }
    std::vector<ir::Node*> ins;
    ins.reserve(n->inputs.size());
    for (ir::Node* x : n->inputs) ins.push_back(map.node(x));
    if (n->callee && !keeps_call(*n->callee) && !is_recursive(*n->callee) &&
        std::find(stack.begin(), stack.end(), n->callee) == stack.end()) {
      map.nodes[n] = copy_body(m, dst, *n->callee, ins, map, stack);
      continue;
    }
    map.nodes[n] = n->callee ? m.add_call(dst, n->callee, std::move(ins), n->type, n->loc)
                             : m.add_apply(dst, n->prim, std::move(ins), n->attrs, n->type, n->loc);
  }
  stack.pop_back();
  return map.node(src.output);
}

}  // namespace spora::autodiff
