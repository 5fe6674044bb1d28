// The IR verifier (it runs after every pass in debug and test builds).
//
// verify(m) lists every broken invariant, as `@graph: %node = op: problem` with the names the
// printer gives (printer.h NodeNames), so a message can be read next to a dump:
//
//   structure   graph names are unique; a parent is a graph of the module and no graph is
//               its own ancestor; the entry is a top-level graph of the module; each node is in
//               exactly one list, with node->graph that graph; params are Parameters, node
//               lists hold Constants and Applies; every graph has an output
//   scoping     an input (or the output) is a parameter of the graph, a node listed before
//               the user in the graph, or a node of an enclosing graph (a closure); never one
//               of a sibling or a nested graph, never a detached node
//   graphs      a graph constant names a graph of the module visible from its graph (top-level,
//               or nested in the graph or one enclosing it) and has that graph's function type;
//               so does a callee
//   types       every node has a type; a primitive apply has the type prim->infer gives (when
//               the row has a shape rule); a call passes the callee's parameter types and has
//               its result type; a constant's value has the node's type
//   control     if(c, @t, @e): c a bool scalar, t and e take no parameters and return the
//   flow        node's type; while(@cond, @body, s...): cond (S...) -> bool scalar,
//               body (S...) -> (S...), result (S...); for_range(start, stop, step, @body, s...):
//               start/stop/step scalars of one integer dtype I, body (I, S...) -> (S...);
//               for_each(it, @body, s...): it an iterator of E, body (E, S...) -> (S...).
//               Graph operands must be graph constants.
//
// Effectful nodes (print, assert) are checked like any other node; whether a pass dropped one
// can only be seen by comparing modules: effectful_counts() gives the numbers to compare.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::ir {

// Every problem found; empty when the module is well formed.
std::vector<std::string> verify(const Module& m);
// Throws lang::InternalError listing the problems (one per line), prefixed by `context`
// (e.g. "after inline") when given.
void verify_or_throw(const Module& m, std::string_view context = {});

// How many applies of each effectful primitive the module holds (for pass tests).
std::map<std::string, int> effectful_counts(const Module& m);

}  // namespace spora::ir
