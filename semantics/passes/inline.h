// Inlining of direct graph calls (the first of the simplifications that
// leave first-order, straight-line backward graphs).
//
// Rewrites: every `%r = call @f(args...)` whose callee can be inlined becomes a copy of @f's
// nodes at the call's place, @f's parameters bound to the arguments; uses of %r read the copy
// of @f's output. Graphs nested in @f (closures, loop bodies) are cloned under the caller
// (util.h Splicer). Afterwards, graphs that were inlined and are no longer named by any node or
// flag are removed; the entry graph always stays, and so do top-level graphs of a module
// without an entry (a library: its graphs are its interface).
//
// Stays a call: a callee that is recursive (on a cycle of calls, counting a call made from a
// graph nested in the callee: `f`'s loop body calling `f` is recursion), or flagged
// "checkpoint", "custom_grad=<graph>" or "noinline" (autodiff and the runtime need those call
// boundaries). Other flags do not keep a call: a @jit graph is inlined into its caller like
// any other (the caller is compiled as a whole).
//
// Assumes a module that verifies. Guarantees: the module verifies; the values of the entry
// (and of every remaining graph) are unchanged, effects included and in the same order; no
// inlinable call is left, because callees are inlined before their callers:
//   1. Build the call structure: an edge from each graph to the graphs it calls and to the
//      graphs nested in it.
//   2. Its strongly connected components (Tarjan), callees first. A graph in a component with
//      more than one graph, or calling itself, is recursive.
//   3. For each graph in that order, rebuild its node list: an inlinable call is replaced by
//      a copy of its callee's body (already free of inlinable calls, by the order).
//   4. Remove the inlined graphs nothing names any more (see above for which stay).
// Cost: linear in the size of the result (which inlining may make much larger than the input:
// a chain of graphs each calling the next twice doubles at every level).
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void inline_calls(ir::Module& m);

}  // namespace spora::passes
