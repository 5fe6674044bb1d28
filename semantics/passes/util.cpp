// The passes' shared machinery (see util.h).
#include "semantics/passes/util.h"

#include <algorithm>
#include <cmath>

#include "lang/diagnostics.h"
#include "semantics/ir/clone.h"

namespace spora::passes {

namespace {

constexpr std::string_view kCustomGrad = "custom_grad=";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

// ---- the shape of nodes and graphs ---------------------------------------------------------

bool keeps_call(const Graph& g) {
  for (const std::string& f : g.flags)
    if (f == "checkpoint" || f == "noinline" || starts_with(f, kCustomGrad)) return true;
  return false;
}

std::vector<Graph*> flag_targets(const Module& m, const Graph& g) {
  std::vector<Graph*> out;
  for (const std::string& f : g.flags)
    if (starts_with(f, kCustomGrad))
      if (Graph* t = m.find_graph(f.substr(kCustomGrad.size()))) out.push_back(t);
  return out;
}

bool is_loop(const Node& n) {
  return n.is_prim("while") || n.is_prim("for_range") || n.is_prim("for_each");
}

bool is_control_flow(const Node& n) { return n.is_prim("if") || is_loop(n); }

size_t loop_state_operand(const Node& loop) { return loop.is_prim("for_range") ? 4 : 2; }
size_t loop_body_operand(const Node& loop) { return loop.is_prim("for_range") ? 3 : 1; }

std::optional<int64_t> int_constant(const Node* n) {
  const sem::Value* v = n ? tensor_constant(*n) : nullptr;
  if (!v || v->tensor.numel() != 1) return std::nullopt;
  const double d = v->tensor.item();
  if (d != std::floor(d)) return std::nullopt;
  return static_cast<int64_t>(d);
}

std::optional<int64_t> constant_trip_count(const Node& loop) {
  if (!loop.is_prim("for_range")) return std::nullopt;
  const auto lo = int_constant(loop.inputs[0]), hi = int_constant(loop.inputs[1]),
             step = int_constant(loop.inputs[2]);
  if (!lo || !hi || !step || *step == 0) return std::nullopt;
  const int64_t span = *step > 0 ? *hi - *lo : *lo - *hi;
  const int64_t s = std::abs(*step);
  return span <= 0 ? 0 : (span + s - 1) / s;
}
size_t loop_state_param(const Node& loop) { return loop.is_prim("while") ? 0 : 1; }

Graph* graph_operand(const Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] ? n.inputs[i]->graph_value : nullptr;
}

bool is_stateful_type(const sem::TypeP& t) {
  if (!t) return false;
  switch (t->kind) {
    case sem::Type::Kind::List:
    case sem::Type::Kind::Iterator:
      return true;
    case sem::Type::Kind::Tuple:
    case sem::Type::Kind::Record:
      return std::any_of(t->elems.begin(), t->elems.end(), is_stateful_type);
    default:
      return false;
  }
}

bool touches_state(const Node& n) {
  if (is_stateful_type(n.type)) return true;
  return std::any_of(n.inputs.begin(), n.inputs.end(),
                     [](const Node* in) { return in && is_stateful_type(in->type); });
}

const sem::Value* tensor_constant(const Node& n) {
  if (!n.is_constant() || n.graph_value || !n.value.is_tensor()) return nullptr;
  return &n.value;
}

size_t node_count(const Module& m) {
  size_t count = 0;
  for (const auto& g : m.graphs()) count += g->nodes.size();
  return count;
}

// ---- effects --------------------------------------------------------------------------------

Effects::Effects(const Module& m) {
  // runners[h]: the graphs holding a node that runs h. Effects flow from h to its runners.
  std::unordered_map<const Graph*, std::vector<const Graph*>> runners;
  std::vector<const Graph*> work;
  for (const auto& g : m.graphs()) {
    for (const Node* n : g->nodes) {
      if (n->prim && n->prim->effectful && effectful_graphs_.insert(g.get()).second)
        work.push_back(g.get());
      if (n->callee) runners[n->callee].push_back(g.get());
      for (const Node* in : n->inputs)
        if (in && in->graph_value) runners[in->graph_value].push_back(g.get());
    }
  }
  while (!work.empty()) {
    const Graph* h = work.back();
    work.pop_back();
    for (const Graph* g : runners[h])
      if (effectful_graphs_.insert(g).second) work.push_back(g);
  }
}

bool Effects::node(const Node* n) const {
  if (!n->is_apply()) return false;
  if (n->prim && n->prim->effectful) return true;
  if (n->callee && graph(n->callee)) return true;
  return std::any_of(n->inputs.begin(), n->inputs.end(), [&](const Node* in) {
    return in && in->graph_value && graph(in->graph_value);
  });
}

// ---- uses -----------------------------------------------------------------------------------

Uses::Uses(const Module& m) {
  for (const auto& g : m.graphs()) {
    if (g->output) returned_.insert(g->output);
    for (Node* n : g->nodes) {
      if (n->graph_value) ++references_[n->graph_value];
      if (n->callee) ++references_[n->callee];
      for (const Node* in : n->inputs) {
        if (!in) continue;
        // Once per user, however many times it reads `in` (n's pushes are consecutive).
        std::vector<Node*>& list = users_[in];
        if (list.empty() || list.back() != n) list.push_back(n);
      }
    }
  }
}

const std::vector<Node*>& Uses::users(const Node* n) const {
  static const std::vector<Node*> kNone;
  auto it = users_.find(n);
  return it == users_.end() ? kNone : it->second;
}

int Uses::references(const Graph* g) const {
  auto it = references_.find(g);
  return it == references_.end() ? 0 : it->second;
}

// ---- substitution ---------------------------------------------------------------------------

void Substitution::replace(Node* old_node, Node* new_node) {
  if (old_node == new_node) return;
  if ((*this)(new_node) == old_node)
    throw lang::InternalError("Substitution: replacing a node by one that it replaces");
  map_[old_node] = new_node;
}

Node* Substitution::operator()(Node* n) const {
  auto it = map_.find(n);
  if (it == map_.end()) return n;
  Node* target = (*this)(it->second);
  it->second = target;  // path compression
  return target;
}

void Substitution::rewrite_inputs(Node& n) const {
  for (Node*& in : n.inputs) in = (*this)(in);
}

void Substitution::apply(Module& m) const {
  if (map_.empty()) return;
  for (const auto& g : m.graphs()) {
    for (Node* n : g->nodes) rewrite_inputs(*n);
    if (g->output) g->output = (*this)(g->output);
  }
  for (const auto& g : m.graphs())
    std::erase_if(g->nodes, [&](const Node* n) { return map_.count(n) > 0; });
}

void erase_nodes(Module& m, const std::unordered_set<const Node*>& doomed) {
  if (doomed.empty()) return;
  for (const auto& g : m.graphs())
    std::erase_if(g->nodes, [&](const Node* n) { return doomed.count(n) > 0; });
}

// ---- graphs ---------------------------------------------------------------------------------

std::vector<Graph*> parents_first(const Module& m) {
  std::vector<std::pair<size_t, Graph*>> by_depth;
  for (const auto& g : m.graphs()) {
    size_t depth = 0;
    for (const Graph* p = g->parent; p; p = p->parent) ++depth;
    by_depth.emplace_back(depth, g.get());
  }
  std::stable_sort(by_depth.begin(), by_depth.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Graph*> out;
  out.reserve(by_depth.size());
  for (const auto& [depth, g] : by_depth) out.push_back(g);
  return out;
}

namespace {

// A copy of n appended to g: its scalar fields; inputs and graph references as they are (the
// caller points them through its map).
Node* copy_node(Module& m, Graph* g, const Node& n) {
  Node* c = nullptr;
  if (n.is_constant() && n.graph_value)
    c = m.add_graph_constant(g, n.graph_value, n.loc);
  else if (n.is_constant())
    c = m.add_constant(g, n.value, n.loc);
  else if (n.callee)
    c = m.add_call(g, n.callee, n.inputs, n.type, n.loc);
  else
    c = m.add_apply(g, n.prim, n.inputs, n.attrs, n.type, n.loc);
  c->type = n.type;
  c->name = n.name;
  return c;
}

}  // namespace

Splicer::Splicer(Module& m) : m_(m) {
  for (const auto& g : m.graphs()) names_.insert(g->name);
}

std::string Splicer::fresh_name(const std::string& base) {
  for (int& k = next_.try_emplace(base, 1).first->second;; ++k) {
    std::string name = base + "." + std::to_string(k);
    if (names_.insert(name).second) {
      ++k;
      return name;
    }
  }
}

Node* Splicer::splice(Graph* dst, const Graph& body, const std::vector<Node*>& args) {
  if (args.size() != body.params.size())
    throw lang::InternalError("splice: @" + body.name + " takes " +
                              std::to_string(body.params.size()) + " arguments, given " +
                              std::to_string(args.size()));
  ir::CloneMap map;
  std::vector<Node*> copies;
  // 1. The parameters are the arguments; each node gets a copy at the end of dst.
  for (size_t i = 0; i < args.size(); ++i) map.nodes[body.params[i]] = args[i];
  for (const Node* n : body.nodes) copies.push_back(map.nodes[n] = copy_node(m_, dst, *n));
  // 2. The nested graphs the copies reach, parents first (a graph is only named from inside
  //    its parent, so the walk enters a parent before its children).
  std::vector<const Graph*> nested;
  std::unordered_set<const Graph*> seen;
  auto reach = [&](const Graph* t) {
    if (t && t != &body && ir::is_within(t, &body) && seen.insert(t).second) nested.push_back(t);
  };
  for (const Node* n : body.nodes) {
    reach(n->graph_value);
    reach(n->callee);
  }
  for (size_t i = 0; i < nested.size(); ++i)
    for (const Node* n : nested[i]->nodes) {
      reach(n->graph_value);
      reach(n->callee);
    }
  for (const Graph* h : nested) {
    Graph* g =
        m_.add_graph(fresh_name(h->name), h->parent == &body ? dst : map.graphs.at(h->parent));
    g->loc = h->loc;
    g->flags = h->flags;
    map.graphs[h] = g;
    for (const Node* p : h->params) map.nodes[p] = m_.add_param(g, p->name, p->type, p->loc);
    for (const Node* n : h->nodes) copies.push_back(map.nodes[n] = copy_node(m_, g, *n));
  }
  // 3. Every copy reads copies: inputs, graph references, outputs.
  for (Node* c : copies) {
    for (Node*& in : c->inputs) in = map.node(in);
    if (c->graph_value) c->graph_value = map.graph(c->graph_value);
    if (c->callee) c->callee = map.graph(c->callee);
  }
  for (const Graph* h : nested)
    map.graphs.at(h)->output = h->output ? map.node(h->output) : nullptr;
  return map.node(body.output);
}

// ---- tuple-valued control flow --------------------------------------------------------------

bool runs_privately(const Graph* g, const Node& n, const Uses& uses) {
  if (!g || !g->parent || !ir::is_within(g, n.graph) || uses.references(g) != 1) return false;
  size_t operands = 0;
  for (const Node* in : n.inputs)
    if (in && in->graph_value == g) {
      ++operands;
      if (uses.users(in).size() != 1 || uses.returned(in)) return false;
    }
  return operands == 1;
}

namespace {

bool builds_tuple(const Graph* g, size_t elements) {
  const Node* out = g->output;
  return out && out->graph == g && out->is_prim("make_tuple") && out->inputs.size() == elements;
}

}  // namespace

bool TupleFlow::inspect(const Node& n, const Uses& uses, TupleFlow& out) {
  if (!is_control_flow(n) || !n.type || n.type->kind != sem::Type::Kind::Tuple) return false;
  TupleFlow f;
  f.node = const_cast<Node*>(&n);
  f.elements = n.type->elems.size();
  if (n.is_prim("if")) {
    f.producers = {graph_operand(n, 1), graph_operand(n, 2)};
    if (f.producers[0] == f.producers[1]) return false;
  } else {
    f.body = graph_operand(n, loop_body_operand(n));
    f.producers = {f.body};
    if (n.is_prim("while")) {
      f.cond = graph_operand(n, 0);
      if (!runs_privately(f.cond, n, uses) || f.cond == f.body) return false;
    }
    if (n.inputs.size() != loop_state_operand(n) + f.elements) return false;
  }
  for (const Graph* g : f.producers)
    if (!runs_privately(g, n, uses) || !builds_tuple(g, f.elements)) return false;
  if (uses.returned(&n)) return false;
  f.gets.assign(f.elements, {});
  for (Node* u : uses.users(&n)) {
    if (!u->is_prim("tuple_get") || u->inputs.size() != 1) return false;
    int64_t k = u->attrs.get_int("index");
    if (k < 0) k += static_cast<int64_t>(f.elements);
    if (k < 0 || k >= static_cast<int64_t>(f.elements)) return false;
    f.gets[static_cast<size_t>(k)].push_back(u);
  }
  out = std::move(f);
  return true;
}

Node* TupleFlow::body_result(size_t k) const { return body->output->inputs[k]; }
Node* TupleFlow::body_param(size_t k) const { return body->params[loop_state_param(*node) + k]; }
Node* TupleFlow::cond_param(size_t k) const { return cond ? cond->params[k] : nullptr; }
Node* TupleFlow::init(size_t k) const { return node->inputs[loop_state_operand(*node) + k]; }

void TupleFlow::drop(Module& m, const std::vector<bool>& dropped) const {
  static const sem::Primitive* make_tuple = sem::Registry::instance().find("make_tuple");
  std::vector<size_t> keep;
  for (size_t k = 0; k < elements; ++k)
    if (!dropped[k]) keep.push_back(k);

  // 1. The producers return the kept elements.
  for (Graph* g : producers) {
    std::vector<Node*> kept;
    for (size_t k : keep) kept.push_back(g->output->inputs[k]);
    g->output = m.add_apply(g, make_tuple, std::move(kept), {}, nullptr, g->output->loc);
  }
  // 2. Loops lose the state operands and parameters.
  std::vector<sem::TypeP> types;
  if (body) {
    const size_t first_operand = loop_state_operand(*node), first_param = loop_state_param(*node);
    for (size_t k = elements; k-- > 0;) {
      if (!dropped[k]) continue;
      node->inputs.erase(node->inputs.begin() + static_cast<long>(first_operand + k));
      body->params.erase(body->params.begin() + static_cast<long>(first_param + k));
      if (cond) cond->params.erase(cond->params.begin() + static_cast<long>(k));
    }
    for (size_t i = first_operand; i < node->inputs.size(); ++i)
      types.push_back(node->inputs[i]->type);
  } else {
    for (size_t k : keep) types.push_back(node->type->elems[k]);
  }
  node->type = sem::Type::tuple(std::move(types));
  // 3. Graph constants take the new signatures; tuple_gets the new indices.
  for (Node* in : node->inputs)
    if (in->graph_value) in->type = in->graph_value->function_type();
  for (size_t i = 0; i < keep.size(); ++i)
    for (Node* get : gets[keep[i]]) get->attrs.set("index", static_cast<int64_t>(i));
}

}  // namespace spora::passes
