// The Module arena and the small structural queries of ir.h (nesting, free variables).
#include "semantics/ir/ir.h"

#include <algorithm>
#include <unordered_set>

namespace spora::ir {

TypeP Graph::function_type() const {
  std::vector<TypeP> param_types;
  param_types.reserve(params.size());
  for (const Node* p : params) param_types.push_back(p->type);
  return sem::Type::function(std::move(param_types), result_type());
}

bool Graph::has_flag(std::string_view f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

std::string Module::unique_name(std::string base) {
  if (base.empty()) base = "g";
  if (!find_graph(base)) return base;
  for (int& i = next_suffix_[base];;) {
    std::string candidate = base + "." + std::to_string(++i);
    if (!find_graph(candidate)) return candidate;
  }
}

Graph* Module::add_graph(std::string name, Graph* parent) {
  auto g = std::make_unique<Graph>();
  g->name = unique_name(std::move(name));
  g->parent = parent;
  name_index_[g->name] = g.get();
  graphs_.push_back(std::move(g));
  return graphs_.back().get();
}

Node* Module::add_param(Graph* g, std::string name, TypeP type, lang::SourceLoc loc) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Parameter;
  n->type = std::move(type);
  n->loc = loc;
  n->graph = g;
  n->name = std::move(name);
  g->params.push_back(n.get());
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

Node* Module::add_constant(Graph* g, Value value, lang::SourceLoc loc) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Constant;
  n->type = value.type();
  n->value = std::move(value);
  n->loc = loc;
  n->graph = g;
  g->nodes.push_back(n.get());
  nodes_.push_back(std::move(n));
  Node* added = nodes_.back().get();
  if (on_add) on_add(added);
  return added;
}

Node* Module::add_graph_constant(Graph* g, Graph* target, lang::SourceLoc loc) {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Constant;
  n->graph_value = target;
  // The type is the target's signature as it stands now; a caller that references a graph
  // before building its body sets `type` again once the body is done.
  n->type = target->function_type();
  n->loc = loc;
  n->graph = g;
  g->nodes.push_back(n.get());
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

namespace {

// The result type of a structured control-flow apply, from ir.h's typing of the four
// primitives (their registry rows may have no shape rule): if gives its branch's result, the
// loops the tuple of their state operands. Null when the operands do not have that form.
TypeP control_flow_type(std::string_view prim, const std::vector<Node*>& inputs) {
  size_t state_from = prim == "while" ? 2 : prim == "for_range" ? 4 : prim == "for_each" ? 2 : 0;
  if (prim == "if") {
    if (inputs.size() != 3 || !inputs[1] || !inputs[1]->type) return nullptr;
    return inputs[1]->type->result;
  }
  if (state_from == 0 || inputs.size() < state_from) return nullptr;
  std::vector<TypeP> state;
  for (size_t i = state_from; i < inputs.size(); ++i) {
    if (!inputs[i]) return nullptr;
    state.push_back(inputs[i]->type);
  }
  return sem::Type::tuple(std::move(state));
}

}  // namespace

Node* Module::add_apply(Graph* g, const sem::Primitive* prim, std::vector<Node*> inputs,
                        Attrs attrs, TypeP type, lang::SourceLoc loc) {
  if (!prim) throw lang::InternalError("add_apply: null primitive");
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Apply;
  n->prim = prim;
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  if (!type && prim->infer) {
    // Convenience for passes and tests: a null type means "what the shape rule says".
    std::vector<TypeP> in_types;
    in_types.reserve(n->inputs.size());
    for (const Node* in : n->inputs) in_types.push_back(in ? in->type : nullptr);
    type = prim->infer(in_types, n->attrs);
  } else if (!type) {
    type = control_flow_type(prim->name, n->inputs);
  }
  n->type = std::move(type);
  n->loc = loc;
  n->graph = g;
  g->nodes.push_back(n.get());
  nodes_.push_back(std::move(n));
  Node* added = nodes_.back().get();
  if (on_add) on_add(added);
  return added;
}

Node* Module::add_call(Graph* g, Graph* callee, std::vector<Node*> inputs, TypeP type,
                       lang::SourceLoc loc) {
  if (!callee) throw lang::InternalError("add_call: null callee");
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Apply;
  n->callee = callee;
  n->inputs = std::move(inputs);
  n->type = type ? std::move(type) : callee->result_type();
  n->loc = loc;
  n->graph = g;
  g->nodes.push_back(n.get());
  nodes_.push_back(std::move(n));
  Node* added = nodes_.back().get();
  if (on_add) on_add(added);
  return added;
}

Graph* Module::find_graph(std::string_view name) const {
  auto it = name_index_.find(std::string(name));
  if (it != name_index_.end() && it->second->name == name) return it->second;
  for (const auto& g : graphs_) {
    if (g->name == name) {
      name_index_[g->name] = g.get();
      return g.get();
    }
  }
  return nullptr;
}

void Module::remove_graph(Graph* g) {
  std::unordered_set<const Graph*> doomed;
  for (const auto& c : graphs_)
    if (is_within(c.get(), g)) doomed.insert(c.get());
  if (entry && doomed.count(entry)) entry = nullptr;
  std::erase_if(name_index_, [&](const auto& kv) { return doomed.count(kv.second) > 0; });
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return doomed.count(n->graph) > 0; });
  std::erase_if(graphs_,
                [&](const std::unique_ptr<Graph>& c) { return doomed.count(c.get()) > 0; });
}

void Module::erase_nodes(const std::unordered_set<const Node*>& dead) {
  if (dead.empty()) return;
  std::erase_if(nodes_, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
}

std::vector<Graph*> Module::children(const Graph* g) const {
  std::vector<Graph*> out;
  for (const auto& c : graphs_)
    if (c->parent == g) out.push_back(c.get());
  return out;
}

bool is_within(const Graph* g, const Graph* ancestor) {
  for (; g; g = g->parent)
    if (g == ancestor) return true;
  return false;
}

namespace {

// Walks g and the nested graphs it references (graph constants, direct calls), collecting
// nodes that live outside `root`.
struct FreeVariableWalk {
  const Graph* root;
  std::vector<Node*> out;
  std::unordered_set<const Node*> seen;
  std::unordered_set<const Graph*> visited;

  void use(Node* n) {
    if (n && n->graph && !is_within(n->graph, root) && seen.insert(n).second) out.push_back(n);
  }
  void enter(const Graph* g) {
    if (!g || !is_within(g, root) || !visited.insert(g).second) return;
    for (Node* n : g->nodes) {
      for (Node* in : n->inputs) use(in);
      enter(n->graph_value);
      enter(n->callee);
    }
    use(g->output);
  }
};

}  // namespace

std::vector<Node*> free_variables(const Graph* g) {
  FreeVariableWalk walk{g, {}, {}, {}};
  walk.enter(g);
  return std::move(walk.out);
}

}  // namespace spora::ir
