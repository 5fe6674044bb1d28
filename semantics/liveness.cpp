// Liveness of one graph's values (liveness.h).
#include "semantics/liveness.h"

#include <algorithm>
#include <unordered_set>

namespace spora::sem {

using ir::Graph;
using ir::Node;

bool is_control_flow(const Node& n) {
  if (!n.prim) return false;
  const std::string& p = n.prim->name;
  return p == "if" || p == "while" || p == "for_range" || p == "for_each";
}

namespace {

// Nodes of `owner` read while graph `b` runs: by b itself, by the graphs it names, and so on.
// Only graphs nested in owner can read its nodes.
class NestedUses {
 public:
  explicit NestedUses(const Graph& owner) : owner_(owner) {}

  std::vector<const Node*> of(const Graph* b) {
    std::vector<const Node*> out;
    std::unordered_set<const Graph*> seen;
    walk(b, seen, out);
    return out;
  }

  bool inside(const Graph* b) const { return b && b != &owner_ && ir::is_within(b, &owner_); }

 private:
  void walk(const Graph* b, std::unordered_set<const Graph*>& seen, std::vector<const Node*>& out) {
    if (!inside(b) || !seen.insert(b).second) return;
    auto see = [&](const Node* x) {
      if (!x) return;
      if (x->graph == &owner_) out.push_back(x);
      if (x->graph_value) walk(x->graph_value, seen, out);
    };
    for (const Node* m : b->nodes) {
      if (m->graph_value) walk(m->graph_value, seen, out);
      if (m->callee) walk(m->callee, seen, out);
      for (const Node* x : m->inputs) see(x);
    }
    see(b->output);
  }

  const Graph& owner_;
};

}  // namespace

Liveness analyze_liveness(const Graph& g) {
  Liveness l;
  l.num_params = g.params.size();
  l.num_nodes = g.nodes.size();
  l.forever = static_cast<long>(l.num_nodes);
  const size_t slots = l.num_params + l.num_nodes;
  for (const Node* p : g.params) l.slot.emplace(p, l.slot.size());
  for (const Node* n : g.nodes) l.slot.emplace(n, l.slot.size());
  l.last_use.assign(slots, -1);
  l.release_after.resize(l.num_nodes);
  l.move_input.resize(l.num_nodes);
  l.runs_graph.assign(l.num_nodes, false);

  NestedUses nested(g);
  std::vector<std::vector<size_t>> nested_at(l.num_nodes);  // slots a nested run reads at i
  auto use = [&](const Node* x, long pos) {
    if (!x || x->graph != &g) return;
    auto it = l.slot.find(x);
    if (it == l.slot.end()) return;  // not listed (the verifier reports it)
    l.last_use[it->second] = std::max(l.last_use[it->second], pos);
  };
  auto use_nested = [&](const Graph* b, long pos) {
    for (const Node* y : nested.of(b)) {
      use(y, pos);
      if (pos < l.forever) {
        auto it = l.slot.find(y);
        if (it != l.slot.end()) nested_at[static_cast<size_t>(pos)].push_back(it->second);
      }
    }
  };

  for (size_t i = 0; i < l.num_nodes; ++i) {
    const Node* n = g.nodes[i];
    const long pos = static_cast<long>(i);
    const bool control = is_control_flow(*n);
    l.runs_graph[i] = control || n->callee != nullptr;
    for (const Node* x : n->inputs) {
      use(x, pos);
      if (x && nested.inside(x->graph_value)) use_nested(x->graph_value, control ? pos : l.forever);
    }
    if (nested.inside(n->callee)) use_nested(n->callee, pos);
  }
  if (g.output) {
    use(g.output, l.forever);
    if (nested.inside(g.output->graph_value)) use_nested(g.output->graph_value, l.forever);
  }

  // Releases (rule 4) and moves (rule 5).
  for (size_t s = 0; s < slots; ++s) {
    const long last = l.last_use[s];
    if (last == l.forever) continue;
    if (last >= 0) {
      l.release_after[static_cast<size_t>(last)].push_back(s);
    } else if (s < l.num_params) {
      l.release_at_start.push_back(s);
    } else {
      l.release_after[s - l.num_params].push_back(s);
    }
  }
  for (size_t i = 0; i < l.num_nodes; ++i) {
    const Node* n = g.nodes[i];
    auto& moves = l.move_input[i];
    moves.assign(n->inputs.size(), false);
    for (size_t k = 0; k < n->inputs.size(); ++k) {
      const Node* x = n->inputs[k];
      if (!x || x->graph != &g) continue;
      auto it = l.slot.find(x);
      if (it == l.slot.end() || l.last_use[it->second] != static_cast<long>(i)) continue;
      bool later = false;
      for (size_t j = k + 1; j < n->inputs.size(); ++j) later = later || n->inputs[j] == x;
      const auto& na = nested_at[i];
      if (!later && std::find(na.begin(), na.end(), it->second) == na.end()) moves[k] = true;
    }
  }

  // Long-lived values (rule 6): runners[r] = number of graph-running nodes before position r.
  std::vector<size_t> runners(l.num_nodes + 1, 0);
  for (size_t i = 0; i < l.num_nodes; ++i) runners[i + 1] = runners[i] + (l.runs_graph[i] ? 1 : 0);
  l.long_lived.assign(slots, false);
  for (size_t s = l.num_params; s < slots; ++s) {
    const long def = l.defined_at(s);
    const long last = std::min(l.last_use[s], l.forever - 1);
    if (last > def && runners[static_cast<size_t>(last) + 1] > runners[static_cast<size_t>(def) + 1])
      l.long_lived[s] = true;
  }
  if (g.parent && g.output && g.output->graph == &g) {
    auto mark = [&](const Node* x) {
      auto it = l.slot.find(x);
      if (x && x->graph == &g && it != l.slot.end()) l.long_lived[it->second] = true;
    };
    mark(g.output);
    if (g.output->is_prim("make_tuple") || g.output->is_prim("make_record"))
      for (const Node* x : g.output->inputs) mark(x);
  }
  return l;
}

}  // namespace spora::sem
