// Deep copies of IR, for passes that rewrite a copy (autodiff, inlining, specialisation).
//
// clone_module copies every graph and node of a module: same graph names and order, same
// nesting, same node order, types (shared: types are immutable), values (tensor storage is
// shared: values are never mutated in place), attributes and locations. The copy prints
// identically.
//
// clone_graph copies one graph and the graphs nested in it that it reaches (through graph
// constants and calls, transitively; an unreferenced nested graph is dead and not copied) into
// a module, which may be the one it comes from, under a new parent. A reference to a node or
// graph outside the copied set goes through the map: pre-seed map.nodes to substitute (e.g.
// free variables of a body by values of the graph it is inlined into); unmapped references are
// kept as they are. Copied graphs get names made unique in the destination ("f" -> "f.1").
#pragma once

#include <memory>
#include <unordered_map>

#include "semantics/ir/ir.h"

namespace spora::ir {

// Old node/graph -> its copy (or substitute).
struct CloneMap {
  std::unordered_map<const Node*, Node*> nodes;
  std::unordered_map<const Graph*, Graph*> graphs;
  // The mapped node (graph), or the original when it has no entry.
  Node* node(const Node* n) const;
  Graph* graph(const Graph* g) const;
};

// `map`, when given, receives old -> new for every node and graph.
std::unique_ptr<Module> clone_module(const Module& m, CloneMap* map = nullptr);

// Returns the copy of g; map receives old -> new for the copied nodes and graphs.
Graph* clone_graph(Module& dst, const Graph& g, Graph* new_parent, CloneMap& map);

}  // namespace spora::ir
