// Inlining of direct calls (algorithm in inline.h).
#include "semantics/passes/inline.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

// Steps 1 and 2: the call structure's strongly connected components (Tarjan), callees first.
class CallOrder {
 public:
  explicit CallOrder(const Module& m) {
    for (const auto& g : m.graphs()) {
      if (g->parent) edges_[g->parent].push_back(g.get());
      for (const Node* n : g->nodes)
        if (n->callee) {
          edges_[g.get()].push_back(n->callee);
          if (n->callee == g.get()) recursive_.insert(g.get());
        }
    }
    for (const auto& g : m.graphs())
      if (!index_.count(g.get())) visit(g.get());
  }

  const std::vector<Graph*>& order() const { return order_; }
  bool recursive(const Graph* g) const { return recursive_.count(g) > 0; }

 private:
  std::unordered_map<const Graph*, std::vector<Graph*>> edges_;
  std::unordered_map<const Graph*, int> index_, low_;
  std::vector<Graph*> stack_;
  std::unordered_set<const Graph*> on_stack_, recursive_;
  std::vector<Graph*> order_;

  void visit(Graph* g) {
    const int i = static_cast<int>(index_.size());
    index_[g] = low_[g] = i;
    stack_.push_back(g);
    on_stack_.insert(g);
    for (Graph* h : edges_[g]) {
      if (!index_.count(h)) {
        visit(h);
        low_[g] = std::min(low_[g], low_[h]);
      } else if (on_stack_.count(h)) {
        low_[g] = std::min(low_[g], index_[h]);
      }
    }
    if (low_[g] != index_[g]) return;
    // g roots a component: pop it, callees of it are already in order_.
    auto first = std::find(stack_.begin(), stack_.end(), g);
    const bool cycle = stack_.end() - first > 1;
    for (auto it = first; it != stack_.end(); ++it) {
      on_stack_.erase(*it);
      if (cycle) recursive_.insert(*it);
      order_.push_back(*it);
    }
    stack_.erase(first, stack_.end());
  }
};

}  // namespace

void inline_calls(Module& m) {
  const CallOrder calls(m);
  auto inlinable = [&](const Node* n) {
    return n->callee && !calls.recursive(n->callee) && !keeps_call(*n->callee);
  };

  // 3. Rebuild each graph's list, callees first.
  Splicer splicer(m);
  Substitution replaced;
  std::unordered_set<Graph*> inlined;
  for (Graph* g : calls.order()) {
    if (std::none_of(g->nodes.begin(), g->nodes.end(), inlinable)) continue;
    std::vector<Node*> old = std::move(g->nodes);
    g->nodes.clear();
    for (Node* n : old) {
      replaced.rewrite_inputs(*n);
      if (!inlinable(n)) {
        g->nodes.push_back(n);
        continue;
      }
      replaced.replace(n, splicer.splice(g, *n->callee, n->inputs));
      inlined.insert(n->callee);
    }
    // Uses of the replaced calls are in g and the graphs nested in it; g may be copied into
    // its callers next, so they are redirected now.
    for (const auto& h : m.graphs()) {
      if (!ir::is_within(h.get(), g)) continue;
      for (Node* n : h->nodes) replaced.rewrite_inputs(*n);
      h->output = replaced(h->output);
    }
  }

  // 4. Inlined graphs nothing names any more go (the outermost ones: nested ones go with them).
  //    Without an entry, top-level graphs are the module's interface and stay.
  const Uses uses(m);
  std::unordered_set<const Graph*> named;
  for (const auto& g : m.graphs())
    for (const Graph* t : flag_targets(m, *g)) named.insert(t);
  std::vector<Graph*> doomed;
  for (Graph* g : inlined)
    if (g != m.entry && (m.entry || g->parent) && uses.references(g) == 0 && !named.count(g))
      doomed.push_back(g);
  std::unordered_set<const Graph*> outermost;
  for (Graph* g : doomed)
    if (std::none_of(doomed.begin(), doomed.end(),
                     [&](const Graph* d) { return d != g && ir::is_within(g, d); }))
      outermost.insert(g);
  std::vector<Graph*> ordered;  // module order, for a deterministic result
  for (const auto& g : m.graphs())
    if (outermost.count(g.get())) ordered.push_back(g.get());
  for (Graph* g : ordered) m.remove_graph(g);
}

}  // namespace spora::passes
