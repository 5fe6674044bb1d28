// Sums of products out of loop bodies (stack_products.h).
#include "semantics/passes/stack_products.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/passes/util.h"
#include "semantics/registry.h"
#include "semantics/shape_rules.h"
#include "semantics/types.h"

namespace spora::passes {

namespace {

const sem::Primitive* prim(const char* name) { return sem::Registry::instance().find(name); }

bool float_matrix(const sem::TypeP& t) {
  return t && t->is_tensor() && t->rank() == 2 && is_float(t->dtype);
}

// An update c + transpose(A) @ B of state parameter c, as the body returns it.
struct Update {
  size_t element;  // the state's index
  Node* a;         // [r, p]
  Node* b;         // [r, q]
};

// The update of element k when the body's result k is add(c, P) or add(P, c), P the product.
std::optional<Update> update_of(const TupleFlow& f, size_t k, const Uses& uses) {
  Node* c = f.body_param(k);
  Node* out = f.body_result(k);
  if (!float_matrix(c->type) || !out->is_prim("add") || out->graph != f.body ||
      out->inputs.size() != 2 || !sem::same_type(out->type, c->type))
    return std::nullopt;
  // The body's result only: the accumulated value is not read inside the body (nor by a while
  // loop's condition).
  if (uses.users(out).size() != 1 || uses.users(c).size() != 1) return std::nullopt;
  if (f.cond && !uses.users(f.cond_param(k)).empty()) return std::nullopt;
  Node* p = out->inputs[0] == c ? out->inputs[1] : out->inputs[1] == c ? out->inputs[0] : nullptr;
  if (!p || p == c || !p->is_prim("matmul") || p->graph != f.body || p->inputs.size() != 2 ||
      uses.users(p).size() != 1 || !sem::same_type(p->type, c->type))
    return std::nullopt;
  const sem::MatmulFlags flags = sem::matmul_flags(p->attrs);
  if (flags.b) return std::nullopt;
  Node* a = p->inputs[0];
  Node* b = p->inputs[1];
  if (!flags.a) {
    if (!a->is_prim("permute") || a->inputs.size() != 1 || !a->attrs.has("axes"))
      return std::nullopt;
    if (a->attrs.get_ints("axes") != std::vector<int64_t>{1, 0}) return std::nullopt;
    a = a->inputs[0];
  }
  if (!float_matrix(a->type) || !float_matrix(b->type) || a->type->dtype != b->type->dtype ||
      a->type->shape[0] != b->type->shape[0] || a->type->dtype != c->type->dtype ||
      c->type->shape != sem::Shape{a->type->shape[1], b->type->shape[1]})
    return std::nullopt;
  return Update{k, a, b};
}

// Whether the lists may hold every iteration's operands: a backward pass's loop over a tape
// (for_range(0, list_len(L), 1): L holds as many elements already), or a loop of constant trip
// count whose lists hold at most `budget` elements in all.
bool memory_bounded(const Node& loop, const std::vector<Update>& updates, int64_t budget) {
  if (loop.is_prim("for_range") && loop.inputs[1]->is_prim("list_len") &&
      int_constant(loop.inputs[0]) == 0 && int_constant(loop.inputs[2]) == 1)
    return true;
  const std::optional<int64_t> trips = constant_trip_count(loop);
  if (!trips) return false;
  std::vector<const Node*> pushed;
  int64_t per_iteration = 0;
  for (const Update& u : updates)
    for (const Node* x : {u.a, u.b})
      if (std::find(pushed.begin(), pushed.end(), x) == pushed.end()) {
        pushed.push_back(x);
        per_iteration += x->type->shape[0] * x->type->shape[1];
      }
  return *trips <= budget / std::max<int64_t>(per_iteration, 1);
}

// Rewrites the updates of loop f (inspected, its updates found).
void rewrite(Module& m, const TupleFlow& f, const std::vector<Update>& updates,
             Substitution& replaced) {
  Node* loop = f.node;
  Graph* g = loop->graph;
  Graph* body = f.body;
  const auto before_loop = [&](Node* n) {  // add_* appended n to g: it belongs before the loop
    g->nodes.pop_back();
    g->nodes.insert(std::find(g->nodes.begin(), g->nodes.end(), loop), n);
    return n;
  };
  std::vector<Node*> results(body->output->inputs);
  std::vector<sem::TypeP> types = loop->type->elems;
  struct Lists {
    size_t la, lb;  // their elements in the loop's result
  };
  std::vector<Lists> lists;
  std::vector<std::pair<Node*, size_t>> stacked;  // a node pushed once, read by every sum
  for (const Update& u : updates) {
    Lists l{};
    for (Node* x : {u.a, u.b}) {
      size_t& slot = x == u.a ? l.la : l.lb;
      const auto seen =
          std::find_if(stacked.begin(), stacked.end(), [&](const auto& e) { return e.first == x; });
      if (seen != stacked.end()) {
        slot = seen->second;
        continue;
      }
      const sem::TypeP list_type = sem::Type::list(x->type);
      sem::Attrs ea;
      ea.set("elem", x->type->str());
      Node* init = before_loop(m.add_apply(g, prim("list_empty"), {}, ea, list_type, loop->loc));
      loop->inputs.push_back(init);
      Node* param = m.add_param(body, "stack", list_type, loop->loc);
      if (f.cond) m.add_param(f.cond, "stack", list_type, loop->loc);
      Node* push = m.add_apply(body, prim("list_push"), {param, x}, {}, list_type, loop->loc);
      results.push_back(push);
      types.push_back(list_type);
      slot = results.size() - 1;
      stacked.emplace_back(x, slot);
    }
    results[u.element] = f.body_param(u.element);  // passed through; dead code then
    lists.push_back(l);
  }
  body->output = m.add_apply(body, prim("make_tuple"), results, {}, nullptr, body->output->loc);
  loop->type = sem::Type::tuple(types);
  for (Node* in : loop->inputs)
    if (in->graph_value) in->type = in->graph_value->function_type();
  // After the loop: each sum, in place of the state's final value.
  std::vector<Node*> added;
  for (size_t i = 0; i < updates.size(); ++i) {
    const Update& u = updates[i];
    auto get = [&](size_t k) {
      sem::Attrs ia;
      ia.set("index", static_cast<int64_t>(k));
      Node* n = m.add_apply(g, prim("tuple_get"), {loop}, ia, types[k], loop->loc);
      g->nodes.pop_back();
      added.push_back(n);
      return n;
    };
    Node* la = get(lists[i].la);
    Node* lb = get(lists[i].lb);
    Node* sum = m.add_apply(g, prim("list_tmatmul_sum"), {la, lb, f.init(u.element)}, {},
                            f.body_param(u.element)->type, loop->loc);
    g->nodes.pop_back();
    added.push_back(sum);
    for (Node* old : f.gets[u.element]) replaced.replace(old, sum);
  }
  const auto after = std::find(g->nodes.begin(), g->nodes.end(), loop);
  g->nodes.insert(after + 1, added.begin(), added.end());
}

}  // namespace

void stack_loop_products(Module& m) { stack_loop_products_within(m, kMaxStackedElements); }

void stack_loop_products_within(Module& m, int64_t budget) {
  Substitution replaced;
  std::optional<Uses> uses;  // counted again after each rewrite (rewrites are rare)
  for (Graph* g : parents_first(m)) {
    const std::vector<Node*> nodes = g->nodes;  // rewriting inserts nodes into g's list
    for (Node* n : nodes) {
      replaced.rewrite_inputs(*n);
      if (!is_loop(*n)) continue;
      if (!uses) uses.emplace(m);
      TupleFlow f;
      if (!TupleFlow::inspect(*n, *uses, f) || !f.body) continue;
      std::vector<Update> updates;
      for (size_t k = 0; k < f.elements; ++k)
        if (auto u = update_of(f, k, *uses); u && !f.gets[k].empty()) updates.push_back(*u);
      if (updates.empty() || !memory_bounded(*n, updates, budget)) continue;
      rewrite(m, f, updates, replaced);
      uses.reset();
    }
    g->output = replaced(g->output);
  }
  replaced.apply(m);
}

}  // namespace spora::passes
