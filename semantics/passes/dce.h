// Dead code elimination.
//
// Rewrites:
//   - nodes whose values nothing live reads (transitively) are taken out of their graphs;
//   - graphs nothing live runs or names are removed: nested graphs (unused closures and
//     bodies) and top-level graphs the entry does not reach (with no entry, every top-level
//     graph is kept: the module is a library);
//   - elements of tuple-valued control flow nobody reads (util.h TupleFlow): an `if` stops
//     returning them; a loop stops carrying a state element when nothing but that element's
//     own next value depends on it (the body's other results, its effects and the `while`
//     condition do not), e.g. a tape or an accumulator whose result is dropped.
//
// Never removed: effectful nodes (prim->effectful: print, assert) and nodes that run graphs
// holding one (calls, if/while/for_range/for_each; util.h Effects), the entry graph, and
// graphs named by a live graph's flags ("custom_grad=<graph>").
// Like XLA and LLVM, it treats run-time errors and non-termination as non-effects: a dead
// `gather` whose index would be out of range, or a dead effect-free loop that would never
// end, is removed. `assert` is how a program demands a check.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same
// values, with the same effects in the same order. Algorithm:
//   1. Liveness by worklist: a live graph makes its output, its effectful nodes and the
//      graphs its flags name live; a live node makes its inputs and the graph it calls or
//      names (callee, graph constant) live. Roots: the entry, or every top-level graph.
//   2. Take dead nodes out of live graphs; remove the outermost dead graphs.
//   3. For each tuple-valued if/loop, find the unread elements (loops: whose state parameter
//      is not live when only the other elements, the effects and the condition are roots;
//      repeated until stable) and drop them; if any was dropped, run steps 1 and 2 again.
// Cost: linear in the module for steps 1-2; step 3 adds a walk of each loop body per round.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void eliminate_dead_code(ir::Module& m);

}  // namespace spora::passes
