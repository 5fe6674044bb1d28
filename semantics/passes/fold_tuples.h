// Tuple and record folding, and loop-invariant state elimination: the "tuple and closure
// elimination" of the simplification pipeline (pipeline.h). After inlining, autodiff's
// packing of values and backpropagator state into tuples meets the unpacking, and this pass
// cancels the two.
//
// Rewrites (uses of the left side read the right side):
//   tuple_get(make_tuple(x0, ..., xn), i)                 -> xi   (negative i counts from the end)
//   record_get(make_record(f0, ..., fn, names), field)    -> the field's value
//   make_tuple(tuple_get(t, 0), ..., tuple_get(t, n-1))   -> t    when t has exactly n elements
//   make_record(record_get(r, a), record_get(r, b), ...)  -> r    when the record types agree
//   tuple_get(if(c, @t, @e), i)                           -> x
//       when both branches return make_tuple whose element i is the same node x of an
//       enclosing graph (a value computed before the `if`, which it only passes through)
//   a loop state element that the body returns unchanged (element k of the body's make_tuple
//   is the body's own state parameter k) is loop-invariant: inside the body (and a while's
//   condition) the parameter reads the initial value instead, tuple_get(loop, k) reads the
//   initial value, and when the loop is a TupleFlow (util.h: private bodies, only read by
//   tuple_get) the element is removed from the loop altogether.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same values
// and effects. Nodes left without uses stay for eliminate_dead_code. Algorithm:
//   1. Walk the graphs parents first, each node list in order, pointing inputs through the
//      replacements so far; replace a node matching one of the first four rules.
//   2. For each if/loop node, the `if` rule and the loop-invariant rule (with a fresh use
//      index, after step 1's replacements are applied).
//   3. Apply the replacements everywhere and take replaced nodes out.
// Cost: linear in the module.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void fold_tuples(ir::Module& m);

}  // namespace spora::passes
