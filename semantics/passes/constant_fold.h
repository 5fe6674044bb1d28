// Constant folding: evaluate at compile time what only depends on constants.
//
// Rewrites:
//   - an apply of a primitive with a reference kernel, not effectful and not touching stateful
//     values (util.h), with at least one input and every input constant, whose result is a
//     tensor of at most 4096 elements, becomes a constant holding prim->eval's result. Inputs
//     count as constant when they are constant nodes (tensors, strings, tuples) or applies of
//     input-less primitives with at most 4096 elements (zeros, ones, full, arange, normal,
//     uniform: deterministic, see cse.h), which are evaluated on demand but left in place:
//     they are the compact form of their value;
//   - `if` whose condition is constant becomes a copy of the branch it takes (util.h
//     Splicer), and uses of its result read the branch's result;
//   - a loop that runs no iteration (`while` whose condition graph returns a constant false;
//     `for_range` with constant bounds and an empty range) becomes make_tuple of its initial
//     state.
// A folded apply turns into a constant in place (same node: its uses do not change).
//
// Left alone: an evaluation that fails (an integer division by zero, an index out of range)
// stays an apply, so the error is raised at run time at its source location; results that
// are not tensors (make_tuple stays a make_tuple, so fold_tuples sees it); parallel
// annotations (shard_hint, stage_boundary: family "annotation"), whose node is the message.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same values
// (kernels are the interpreter's) with the same effects. Algorithm: walk the graphs parents
// first, each node list in order, so a fold makes its users foldable in the same walk; a
// spliced branch is walked like the rest. Cost: linear in the module plus the kernels' work.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

// Results larger than this many elements stay computed at run time.
constexpr int64_t kMaxFoldedElements = 4096;

void fold_constants(ir::Module& m);

}  // namespace spora::passes
