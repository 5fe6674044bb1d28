// Deep copies of modules and graphs (see clone.h).
//
// Both copies run the same two steps over a list of source graphs whose copies already exist
// (so forward references, recursion and closures resolve whatever the order):
//   1. every parameter and node is created with its scalar fields and no inputs
//   2. inputs, graph constants, callees and outputs are pointed through the map
#include "semantics/ir/clone.h"

#include <unordered_set>

namespace spora::ir {

Node* CloneMap::node(const Node* n) const {
  auto it = nodes.find(n);
  return it != nodes.end() ? it->second : const_cast<Node*>(n);
}

Graph* CloneMap::graph(const Graph* g) const {
  auto it = graphs.find(g);
  return it != graphs.end() ? it->second : const_cast<Graph*>(g);
}

namespace {

// Step 1 for one graph: shallow copies of params and nodes.
void copy_nodes(Module& dst, const Graph& g, CloneMap& map) {
  Graph* to = map.graphs.at(&g);
  to->loc = g.loc;
  to->flags = g.flags;
  for (const Node* p : g.params) map.nodes[p] = dst.add_param(to, p->name, p->type, p->loc);
  for (const Node* n : g.nodes) {
    Node* c = nullptr;
    if (n->is_constant() && n->graph_value) {
      c = dst.add_graph_constant(to, map.graph(n->graph_value), n->loc);
    } else if (n->is_constant()) {
      c = dst.add_constant(to, n->value, n->loc);
    } else if (n->callee) {
      c = dst.add_call(to, map.graph(n->callee), {}, sem::Type::unit(), n->loc);
    } else {
      // A placeholder type keeps add_apply from running the shape rule on no inputs.
      c = dst.add_apply(to, n->prim, {}, n->attrs, sem::Type::unit(), n->loc);
    }
    c->kind = n->kind;
    c->type = n->type;
    c->name = n->name;
    map.nodes[n] = c;
  }
}

// Step 2 for one graph.
void link_nodes(const Graph& g, CloneMap& map) {
  for (const Node* n : g.nodes) {
    Node* c = map.nodes.at(n);
    c->inputs.clear();
    for (const Node* in : n->inputs) c->inputs.push_back(map.node(in));
  }
  map.graphs.at(&g)->output = g.output ? map.node(g.output) : nullptr;
}

}  // namespace

std::unique_ptr<Module> clone_module(const Module& m, CloneMap* out) {
  auto copy = std::make_unique<Module>();
  CloneMap local;
  CloneMap& map = out ? *out : local;
  for (const auto& g : m.graphs()) map.graphs[g.get()] = copy->add_graph(g->name);
  for (const auto& g : m.graphs()) map.graphs[g.get()]->parent = map.graph(g->parent);
  for (const auto& g : m.graphs()) copy_nodes(*copy, *g, map);
  for (const auto& g : m.graphs()) link_nodes(*g, map);
  copy->entry = m.entry ? map.graph(m.entry) : nullptr;
  return copy;
}

Graph* clone_graph(Module& dst, const Graph& g, Graph* new_parent, CloneMap& map) {
  // The graphs to copy: g, then nested graphs as its nodes reach them (parents come first:
  // a nested graph is only visible from inside its parent).
  std::vector<const Graph*> order{&g};
  std::unordered_set<const Graph*> seen{&g};
  for (size_t i = 0; i < order.size(); ++i)
    for (const Node* n : order[i]->nodes)
      for (const Graph* t : {n->graph_value, n->callee})
        if (t && t != &g && is_within(t, &g) && seen.insert(t).second) order.push_back(t);

  for (const Graph* h : order)
    map.graphs[h] = dst.add_graph(h->name, h == &g ? new_parent : map.graph(h->parent));
  for (const Graph* h : order) copy_nodes(dst, *h, map);
  for (const Graph* h : order) link_nodes(*h, map);
  return map.graphs.at(&g);
}

}  // namespace spora::ir
