// Copying a graph's body into another graph, the building block of every transform that
// recomputes a forward pass (a branch, a loop iteration, a checkpointed or recursive call).
#pragma once

#include <vector>

#include "semantics/ir/clone.h"
#include "semantics/ir/ir.h"

namespace spora::autodiff {

// Appends copies of src's nodes to dst, with src's parameters bound to `args`; returns the
// copy of src's output. Graphs nested in src are cloned under dst (their free variables
// remapped through `map`). Calls are inlined recursively, except calls of graphs on `stack`
// and of recursive graphs, and of graphs flagged "checkpoint" or "custom_grad=...", which stay calls.
// `map` receives old -> new for every copied node.
ir::Node* copy_body(ir::Module& m, ir::Graph* dst, const ir::Graph& src, const std::vector<ir::Node*>& args,
                    ir::CloneMap& map, std::vector<const ir::Graph*>& stack);

// Does g call itself (directly, through other graphs, or from its nested graphs)?
bool is_recursive(const ir::Graph& g);
// Does this call stay a call under autodiff (instead of being inlined)?
bool keeps_call(const ir::Graph& callee);
// The graph named by a "custom_grad=<name>" flag, or null.
ir::Graph* custom_grad_of(const ir::Module& m, const ir::Graph& g);

// Moves `n` (just appended to its graph) to right before `before` in the same graph.
void move_before(ir::Node* n, ir::Node* before);

}  // namespace spora::autodiff
