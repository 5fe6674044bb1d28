// Sums of products out of loop bodies.
//
// Rewrites: a loop state c that the body only updates as c' = c + transpose(A) @ B (A: [r, p],
// B: [r, q], computed in the body; the transpose a permute(A, axes=[1, 0]) or the matmul's
// transpose_a flag) becomes two run-time lists the body pushes A and B onto, and after the loop
// one product of their stacked rows: list_tmatmul_sum(LA, LB, c0) = c0 + [n r, p]^T x [n r, q]
// (ops/tape.cpp), where c0 is the state's initial value. c itself is passed through unchanged
// and dead-code elimination drops it.
//
// Reverse mode makes this pattern in the backward pass of every loop that multiplies by a
// weight: an RNN's weight gradients, sum over t of h_t^T g_t, were n accumulating products of
// r = batch rows each (W6: 100 [256, 32] x [32, 256] products and adds a step) and become two
// [256, 1600] x [1600, 256] products that the GEMM blocks spread over the cores (PyTorch's
// RNN backward computes its weight gradients the same way, one GEMM over all time steps).
//
// When: the state is a tensor the body uses nowhere else, its update's product has no other
// user, and A and B are floating matrices of one dtype with the same rows; and the lists, which
// keep every iteration's A and B alive until the loop ends (the product then stacks them), stay
// within bounds: the loop is a backward pass's loop over a tape, for_range(0, list_len(L), 1),
// whose tape already holds as many per-iteration values, or a for_range of constant trip count
// whose lists hold at most kMaxStackedElements elements in all (64 MiB of f32). Any other loop
// (an accumulation over a data set of unknown length) keeps its n products and O(1) memory.
//
// Not exact to the last bit: the sum runs inside one GEMM instead of n rounded additions.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same values
// up to that rounding. Cost: one walk of each loop body.
#pragma once

#include <cstdint>

#include "semantics/ir/ir.h"

namespace spora::passes {

inline constexpr int64_t kMaxStackedElements = int64_t{1} << 24;

void stack_loop_products(ir::Module& m);
// The same with another bound on a constant-length loop's lists (tests).
void stack_loop_products_within(ir::Module& m, int64_t max_stacked_elements);

}  // namespace spora::passes
