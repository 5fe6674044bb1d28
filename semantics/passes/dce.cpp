// Dead code elimination (algorithm in dce.h).
#include "semantics/passes/dce.h"

#include <algorithm>
#include <unordered_set>

#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

// Step 1: which nodes and graphs are live. With `scopes`, only nodes and graphs nested in one
// of them are considered (the rest is assumed live by whoever asks).
class Liveness {
 public:
  Liveness(const Module& m, const Effects& effects, std::vector<const Graph*> scopes = {})
      : m_(m), effects_(effects), scopes_(std::move(scopes)) {}

  // g runs: its output, its effects and the graphs its flags name are live.
  void graph(Graph* g) {
    if (!g || !in_scope(g) || !graphs_.insert(g).second) return;
    graph(g->parent);  // a graph only runs inside an activation of its parent
    node(g->output);
    for (Node* n : g->nodes)
      if (effects_.node(n)) node(n);
    for (Graph* t : flag_targets(m_, *g)) graph(t);
  }

  void node(Node* n) {
    if (!n || !in_scope(n->graph) || !nodes_.insert(n).second) return;
    work_.push_back(n);
  }

  // g runs, but its roots are the caller's business (a loop body whose results are chosen).
  void running(Graph* g) { graphs_.insert(g); }

  // Propagates to a fixed point.
  void run() {
    while (!work_.empty()) {
      Node* n = work_.back();
      work_.pop_back();
      for (Node* in : n->inputs) node(in);
      graph(n->graph_value);
      graph(n->callee);
    }
  }

  bool live(const Node* n) const { return nodes_.count(n) > 0; }
  bool live(const Graph* g) const { return graphs_.count(g) > 0; }

 private:
  const Module& m_;
  const Effects& effects_;
  std::vector<const Graph*> scopes_;
  std::unordered_set<const Node*> nodes_;
  std::unordered_set<const Graph*> graphs_;
  std::vector<Node*> work_;

  bool in_scope(const Graph* g) const {
    if (scopes_.empty()) return true;
    return std::any_of(scopes_.begin(), scopes_.end(),
                       [&](const Graph* s) { return ir::is_within(g, s); });
  }
};

// Steps 1 and 2.
void remove_dead(Module& m) {
  const Effects effects(m);
  Liveness live(m, effects);
  for (const auto& g : m.graphs())
    if (m.entry ? g.get() == m.entry : !g->parent) live.graph(g.get());
  live.run();

  std::vector<Graph*> dead;
  for (const auto& g : m.graphs()) {
    if (live.live(g.get()))
      std::erase_if(g->nodes, [&](const Node* n) { return !live.live(n); });
    else if (!g->parent || live.live(g->parent))
      dead.push_back(g.get());  // the outermost dead graphs
  }
  for (Graph* g : dead) m.remove_graph(g);
}

// Step 3 for a loop: which of the unread elements can go. An element stays when its state
// parameter is live with the other elements' results, the body's effects and the condition
// as roots.
std::vector<bool> droppable_state(const Module& m, const Effects& effects, const TupleFlow& f,
                                  std::vector<bool> drop) {
  for (;;) {
    std::vector<const Graph*> scopes{f.body};
    if (f.cond) scopes.push_back(f.cond);
    Liveness live(m, effects, scopes);
    live.running(f.body);  // so that graphs nested in it do not make all its results live
    for (size_t k = 0; k < f.elements; ++k)
      if (!drop[k]) live.node(f.body_result(k));
    for (Node* n : f.body->nodes)
      if (effects.node(n)) live.node(n);
    live.graph(f.cond);
    live.run();
    bool changed = false;
    for (size_t k = 0; k < f.elements; ++k) {
      if (drop[k] && (live.live(f.body_param(k)) || (f.cond && live.live(f.cond_param(k))))) {
        drop[k] = false;
        changed = true;
      }
    }
    if (!changed) return drop;
  }
}

// Step 3. Returns whether an element was dropped.
bool drop_unread_elements(Module& m) {
  const bool any = std::any_of(m.graphs().begin(), m.graphs().end(), [](const auto& g) {
    return std::any_of(g->nodes.begin(), g->nodes.end(),
                       [](const Node* n) { return is_control_flow(*n); });
  });
  if (!any) return false;
  const Uses uses(m);
  const Effects effects(m);
  std::vector<TupleFlow> flows;
  for (const auto& g : m.graphs())
    for (const Node* n : g->nodes) {
      TupleFlow f;
      if (TupleFlow::inspect(*n, uses, f)) flows.push_back(std::move(f));
    }
  bool dropped = false;
  for (const TupleFlow& f : flows) {
    std::vector<bool> drop(f.elements);
    for (size_t k = 0; k < f.elements; ++k) drop[k] = f.gets[k].empty();
    if (f.body) drop = droppable_state(m, effects, f, std::move(drop));
    if (std::none_of(drop.begin(), drop.end(), [](bool d) { return d; })) continue;
    f.drop(m, drop);
    dropped = true;
  }
  return dropped;
}

}  // namespace

void eliminate_dead_code(Module& m) {
  remove_dead(m);
  if (drop_unread_elements(m)) remove_dead(m);
}

}  // namespace spora::passes
