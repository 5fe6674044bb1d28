// Algebraic simplification: a table of rewrite rules (simplify.cpp; the rule language is
// pattern.h), applied to every node.
//
// The rules, by group (x, y any node; 0 and 1 any tensor of zeros/ones as pattern.h
// recognises them; every replacement must have exactly the rewritten node's type, so e.g.
// x * 1 -> x only fires when 1 does not broadcast x to a larger shape, x / 1 never for
// integer x, whose division gives f32):
//   neutral elements     x * 1, 1 * x, x / 1, x ** 1, x + 0, 0 + x, x - 0 -> x;  0 - x -> -x
//   negation             --x -> x;  x + -y -> x - y;  x - -y -> x + y
//   zeros                x * 0, 0 * x, matmul(0, x), matmul(x, 0) -> 0;  an op that maps
//                        zeros to zeros (neg, sum, transpose, reshape, broadcast_to, cast...)
//                        of 0 -> 0   (0: the zero operand itself, or zeros(shape, dtype))
//   ones                 sum(1) -> full(n), n the elements each result element adds, where
//                        the dtype holds n exactly (f32 2^24, f16 2048, bf16 256): exact
//   shapes               transpose/permute of transpose/permute -> x when the permutations
//                        compose to the identity, else one permute; transpose/permute by the
//                        identity -> x; reshape of a reshape (flatten, squeeze, unsqueeze,
//                        expand_dims) -> one reshape
//   same type            reshape (and the other reshapes), broadcast_to, cast, and the
//                        reductions sum/mean/prod/max/min -> x when the result has x's type
//                        (a reshape to the same shape, a cast to the same dtype, a broadcast
//                        or a reduction that changes nothing); identity(x) -> x
//
// Exactness. Most rules are exact in IEEE arithmetic. Two groups are not, and are the usual
// compiler licences (XLA's algebraic simplifier, LLVM's nsz / nnan):
//   - signed zeros: x + 0 -> x and 0 - x -> -x give -0.0 where IEEE gives +0.0 for x = -0.0;
//   - finite math: x * 0 -> 0 and matmul with a zero operand -> 0 assume x is finite (IEEE
//     gives nan for inf * 0 and nan * 0). These rules are what make autodiff's symbolic zeros
//     (zeros of unused adjoints) vanish, like JAX's Zero type does.
// stop_gradient is not removed (it matters to a later differentiation).
//
// Assumes a module that verifies; guarantees the module verifies and computes the same values
// up to the two licences above, with the same effects (effectful nodes are never matched as
// roots, and a replaced node's operands stay where they are). Algorithm: walk the graphs
// parents first, each node list in order (inputs are simplified before their users); rewrite
// a node by the first rule that applies, then the replacement again if it is new (a chain of
// at most 8 rewrites); replaced nodes leave their lists, their operands stay for
// eliminate_dead_code. Cost: linear in the module (rules are indexed by root primitive).
// SPORA_DEBUG_PASSES=2 prints each rule as it fires.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void simplify_algebra(ir::Module& m);

}  // namespace spora::passes
