// Products out of loop bodies.
//
// Rewrites: in the body of a loop, matmul(gather(X, i, axis=0), W), where X and W are computed
// outside the body (free variables of it), becomes gather(P, i, axis=0) with P = matmul(X, W)
// (same attributes) computed once before the loop: slice i of one product over all of X's
// slices. An RNN's input projection, x_t @ W_ih for each step t, becomes one [T m, k] x [k, n]
// product that the GEMM blocks can spread over the cores, where it was T products of m rows
// each (PyTorch's nn.RNN computes its input projection the same way).
//
// When: the slice has rank 2 or more (X has rank 3 or more), W has rank 2, and the loop visits
// about every slice, so P does no work the loop would not: a for_range with constant bounds and
// at least T / 2 iterations (T = X's leading extent). A loop whose trip count is unknown
// (a backward pass's loop over its tape) only reads a P already hoisted for the same X, W and
// attributes and visible from it: the backward pass's recomputed forward reads the forward
// loop's P instead of computing the product again.
//
// Not exact to the last bit: P's rows come from another GEMM call than the slice's product,
// and a BLAS result for an element can depend on the size of the call it is in.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same values
// up to that rounding. Cost: one walk of each loop body.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void hoist_loop_products(ir::Module& m);

}  // namespace spora::passes
