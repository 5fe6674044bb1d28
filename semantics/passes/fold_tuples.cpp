// Tuple/record folding and loop-invariant state elimination (rules in fold_tuples.h).
#include "semantics/passes/fold_tuples.h"

#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (!s.empty()) {
    size_t end = s.find(',', begin);
    out.push_back(s.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

// The element index of tuple_get(t, index=i) on a tuple of n elements, or -1.
int64_t element_index(const Node& get, size_t n) {
  int64_t i = get.attrs.get_int("index");
  if (i < 0) i += static_cast<int64_t>(n);
  return i >= 0 && i < static_cast<int64_t>(n) ? i : -1;
}

// ---- step 1: projections of constructors, constructors of projections ----------------------

Node* fold_tuple_get(const Node& n) {
  const Node* t = n.inputs[0];
  if (!t->is_prim("make_tuple")) return nullptr;
  const int64_t i = element_index(n, t->inputs.size());
  return i < 0 ? nullptr : t->inputs[static_cast<size_t>(i)];
}

Node* fold_record_get(const Node& n) {
  const Node* r = n.inputs[0];
  if (!r->is_prim("make_record")) return nullptr;
  const std::vector<std::string> names = split_names(r->attrs.get_string("names"));
  for (size_t i = 0; i < names.size() && i < r->inputs.size(); ++i)
    if (names[i] == n.attrs.get_string("field")) return r->inputs[i];
  return nullptr;
}

// make_tuple(tuple_get(t, 0), ..., tuple_get(t, n-1)) -> t.
Node* fold_make_tuple(const Node& n) {
  if (n.inputs.empty() || !n.inputs[0]->is_prim("tuple_get")) return nullptr;
  Node* t = n.inputs[0]->inputs[0];
  if (!sem::same_type(t->type, n.type)) return nullptr;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Node* x = n.inputs[i];
    if (!x->is_prim("tuple_get") || x->inputs[0] != t ||
        element_index(*x, n.inputs.size()) != static_cast<int64_t>(i))
      return nullptr;
  }
  return t;
}

// make_record(record_get(r, a), record_get(r, b), ..., names="a,b,...") -> r.
Node* fold_make_record(const Node& n) {
  if (n.inputs.empty() || !n.inputs[0]->is_prim("record_get")) return nullptr;
  Node* r = n.inputs[0]->inputs[0];
  if (!sem::same_type(r->type, n.type)) return nullptr;
  const std::vector<std::string> names = split_names(n.attrs.get_string("names"));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Node* x = n.inputs[i];
    if (i >= names.size() || !x->is_prim("record_get") || x->inputs[0] != r ||
        x->attrs.get_string("field") != names[i])
      return nullptr;
  }
  return r;
}

Node* fold_node(const Node& n) {
  if (n.is_prim("tuple_get")) return fold_tuple_get(n);
  if (n.is_prim("record_get")) return fold_record_get(n);
  if (n.is_prim("make_tuple")) return fold_make_tuple(n);
  if (n.is_prim("make_record")) return fold_make_record(n);
  return nullptr;
}

void fold_projections(Module& m) {
  Substitution replaced;
  for (Graph* g : parents_first(m)) {
    for (Node* n : g->nodes) {
      replaced.rewrite_inputs(*n);
      if (Node* r = fold_node(*n)) replaced.replace(n, r);
    }
  }
  replaced.apply(m);
}

// ---- step 2: control flow -------------------------------------------------------------------

// Element i of what a branch returns when it returns a make_tuple, else null.
Node* branch_element(const Graph* branch, size_t i) {
  const Node* out = branch ? branch->output : nullptr;
  if (!out || !out->is_prim("make_tuple") || i >= out->inputs.size()) return nullptr;
  return out->inputs[i];
}

// tuple_get(if(c, @t, @e), i) -> x when both branches pass x, a value from outside, through.
void fold_if(const Node& n, const Uses& uses, Substitution& replaced) {
  const Graph *then_graph = graph_operand(n, 1), *else_graph = graph_operand(n, 2);
  for (Node* get : uses.users(&n)) {
    if (!get->is_prim("tuple_get") || get->inputs[0] != &n) continue;
    const int64_t i = element_index(*get, n.type->elems.size());
    if (i < 0) continue;
    Node* x = branch_element(then_graph, static_cast<size_t>(i));
    if (x && x == branch_element(else_graph, static_cast<size_t>(i)) &&
        ir::is_within(n.graph, x->graph))
      replaced.replace(get, x);
  }
}

// Loop-invariant state: parameters read the initial value; the element goes when it can.
void fold_loop(Module& m, Node& loop, const Uses& uses, Substitution& replaced) {
  Graph* body = graph_operand(loop, loop_body_operand(loop));
  Graph* cond = loop.is_prim("while") ? graph_operand(loop, 0) : nullptr;
  const size_t elements = loop.type->elems.size();
  if (!runs_privately(body, loop, uses) || (cond && !runs_privately(cond, loop, uses)) ||
      !branch_element(body, 0) || body->output->inputs.size() != elements)
    return;
  const size_t first_param = loop_state_param(loop), first_operand = loop_state_operand(loop);
  std::vector<bool> invariant(elements, false);
  bool any = false;
  for (size_t k = 0; k < elements; ++k) {
    Node* param = body->params[first_param + k];
    if (body->output->inputs[k] != param) continue;
    Node* init = loop.inputs[first_operand + k];
    invariant[k] = any = true;
    replaced.replace(param, init);
    if (cond) replaced.replace(cond->params[k], init);
    for (Node* get : uses.users(&loop))
      if (get->is_prim("tuple_get") && element_index(*get, elements) == static_cast<int64_t>(k))
        replaced.replace(get, init);
  }
  TupleFlow flow;
  if (any && TupleFlow::inspect(loop, uses, flow)) flow.drop(m, invariant);
}

void fold_control_flow(Module& m) {
  std::vector<Node*> nodes;
  for (const auto& g : m.graphs())
    for (Node* n : g->nodes)
      if (is_control_flow(*n) && n->type && n->type->kind == sem::Type::Kind::Tuple)
        nodes.push_back(n);
  if (nodes.empty()) return;
  const Uses uses(m);
  Substitution replaced;
  for (Node* n : nodes) {
    if (n->is_prim("if"))
      fold_if(*n, uses, replaced);
    else
      fold_loop(m, *n, uses, replaced);
  }
  replaced.apply(m);  // step 3
}

}  // namespace

void fold_tuples(Module& m) {
  fold_projections(m);
  fold_control_flow(m);
}

}  // namespace spora::passes
