// Products out of loop bodies (hoist.h).
#include "semantics/passes/hoist.h"

#include <algorithm>
#include <optional>

#include "lang/diagnostics.h"
#include "semantics/passes/util.h"
#include "semantics/registry.h"

namespace spora::passes {

namespace {

bool is_free_in(const Node* v, const Graph* body) { return v && v->graph != body; }

// matmul(gather(X, i, axis=0), W) with X and W free in `body`: X's node, else null.
const Node* hoistable(const Node& n, const Graph* body) {
  if (!n.is_prim("matmul") || n.inputs.size() != 2 || n.graph != body) return nullptr;
  const Node* g = n.inputs[0];
  const Node* w = n.inputs[1];
  if (!g || !g->is_prim("gather") || g->graph != body || g->inputs.size() != 2) return nullptr;
  const Node* x = g->inputs[0];
  if (!is_free_in(x, body) || !is_free_in(w, body)) return nullptr;
  if (!x->type || !x->type->is_tensor() || !w->type || !w->type->is_tensor()) return nullptr;
  if (x->type->rank() < 3 || w->type->rank() != 2 || x->type->shape[0] < 1) return nullptr;
  if (!g->attrs.has("axis")) return nullptr;
  const int64_t axis = g->attrs.get_int("axis");
  if (axis != 0 && axis != -x->type->rank()) return nullptr;
  const sem::TypeP& idx = g->inputs[1]->type;
  if (!idx || !idx->is_tensor() || idx->rank() != 0) return nullptr;
  return x;
}

struct Hoisted {
  const Node* x;
  const Node* w;
  sem::Attrs attrs;
  Node* product;
};

class Hoister {
 public:
  explicit Hoister(Module& m) : m_(m) {}

  // The loop `loop` (in graph G, its body named by `body_const`) runs `body`.
  void visit(Node& loop, Node* body_const, Graph* body, Substitution& replaced) {
    const std::optional<int64_t> trips = constant_trip_count(loop);
    struct Slice {
      Node* at;  // the product it replaces
      Node* slice;
    };
    std::vector<Slice> slices;
    const std::vector<Node*> nodes = body->nodes;  // add_apply appends to the list (then undone)
    for (Node* n : nodes) {
      replaced.rewrite_inputs(*n);
      const Node* x = hoistable(*n, body);
      if (!x) continue;
      Node* w = n->inputs[1];
      Node* p = find(x, w, n->attrs, body_const);
      if (!p) {
        if (!trips || *trips * 2 < x->type->shape[0]) continue;
        p = hoist(const_cast<Node*>(x), w, n->attrs, body_const, n->loc);
        if (!p) continue;
      }
      sem::Attrs ga;
      ga.set("axis", int64_t{0});
      Node* slice;
      try {
        slice = m_.add_apply(body, sem::Registry::instance().find("gather"),
                             {p, n->inputs[0]->inputs[1]}, ga, nullptr, n->loc);
      } catch (const lang::UserError&) {
        continue;
      }
      // add_apply appended the slice: it belongs where n is.
      body->nodes.pop_back();
      if (!sem::same_type(slice->type, n->type)) continue;
      slices.push_back({n, slice});
      replaced.replace(n, slice);
    }
    for (const auto& [at, slice] : slices)
      body->nodes.insert(std::find(body->nodes.begin(), body->nodes.end(), at), slice);
  }

 private:
  // A product hoisted for the same X, W and attributes that the body sees: listed in the
  // body's graph before the node that names the body.
  Node* find(const Node* x, const Node* w, const sem::Attrs& attrs, const Node* body_const) const {
    const std::vector<Node*>& list = body_const->graph->nodes;
    const auto at = std::find(list.begin(), list.end(), body_const);
    for (const Hoisted& h : hoisted_)
      if (h.x == x && h.w == w && h.attrs == attrs && h.product->graph == body_const->graph &&
          std::find(list.begin(), at, h.product) != at)
        return h.product;
    return nullptr;
  }

  // P = matmul(X, W) in the loop's graph, just before the node that names the body (the body
  // sees what its graph computed before that node, and X and W, free in the body, are among it).
  Node* hoist(Node* x, Node* w, const sem::Attrs& attrs, Node* body_const, lang::SourceLoc loc) {
    Graph* g = body_const->graph;
    Node* p;
    try {
      p = m_.add_apply(g, sem::Registry::instance().find("matmul"), {x, w}, attrs, nullptr, loc);
    } catch (const lang::UserError&) {
      return nullptr;
    }
    g->nodes.pop_back();
    g->nodes.insert(std::find(g->nodes.begin(), g->nodes.end(), body_const), p);
    hoisted_.push_back({x, w, attrs, p});
    return p;
  }

  Module& m_;
  std::vector<Hoisted> hoisted_;
};

}  // namespace

void hoist_loop_products(Module& m) {
  Substitution replaced;
  Hoister hoister(m);
  const Uses uses(m);
  for (Graph* g : parents_first(m)) {
    // Snapshot: hoisting inserts nodes into g's list.
    const std::vector<Node*> nodes = g->nodes;
    for (Node* n : nodes) {
      replaced.rewrite_inputs(*n);
      if (!is_loop(*n)) continue;
      Node* body_const = n->inputs[loop_body_operand(*n)];
      Graph* body = body_const ? body_const->graph_value : nullptr;
      if (!body || !runs_privately(body, *n, uses)) continue;
      hoister.visit(*n, body_const, body, replaced);
    }
    g->output = replaced(g->output);
  }
  replaced.apply(m);
}

}  // namespace spora::passes
