// Operator fusion: groups of primitive applies become one node each.
// One algorithm over the fusion-kind lattice of fusion_kind.h
// (elementwise < broadcast < injective < reduction < output-fusable < opaque), after TVM's
// FuseOps (src/relay/transforms/fuse_ops.cc), with two additions: reductions take
// elementwise epilogues (softmax, layer_norm and their gradients become single row kernels),
// and a last phase merges siblings and producer/consumer groups (horizontal and multi-output
// fusion).
//
// Rewrites: in every graph (loop bodies included), each group of two or more applies becomes
//
//   @fused graph @fused_step(%p0: f32[64,512], %p1: f32[512]) -> f32[64,512] {
//     %0 = add(%p0, %p1) : f32[64,512]
//     %1 = relu(%0) : f32[64,512]
//     return %1
//   }
//   ...
//   %7 = call @fused_step(%5, %b1) : f32[64,512]
//
// a top-level graph flagged "fused" whose parameters are the group's inputs and whose result
// is its output (or a tuple of its outputs, read back with tuple_get), called where the group
// was. Scalar constants the group reads are copied into it. The interpreter runs such a call
// with the group's compiled kernel (backends/codegen), or node by node when there is none.
//
// First, every matmul whose operand is a transpose of its last two axes reads the transpose's
// input instead, with its transpose_a / transpose_b flag toggled (fold_transposes_into_products):
// the GEMM reads the operand where it lies (BLAS's transa / transb) and no transposed copy is
// made; the transposes left unread are removed (dead code elimination). Reverse mode writes
// a product's cotangents with such transposes (ops/matmul.cpp). An operand permuted by q and
// then transposed, with q keeping the last axis innermost (attention's keys: heads(k)
// transposed, [0,2,3,1]), is read as permute(x, q) with the flag toggled: the permute an
// earlier node already computes (the forward's heads(k), when the backward transposes it
// again), else a new one in its place, which copies contiguous runs where the transpose moved
// single elements (and which common subexpression elimination then merges with an equal
// permute computed later: the backward's heads(k)). Last, a permute p of a product that
// nothing else reads, p moving its last axis, computes the product transposed (operands
// exchanged, flags toggled) and permutes it by p with the last two axes' roles exchanged when
// that keeps the last axis innermost (the keys' gradient q^T dS laid out as heads).
//
// Algorithm, per graph (nodes in schedule order; scalar constants take no part):
//   1. Dataflow: the users of each node in its graph; a node read by the graph's output, by a
//      nested graph (a closure) or by another graph escapes (its post-dominator is the exit).
//      A node running a nested graph depends on the nested graph's free variables; effectful
//      nodes are chained in their order (ordering edges, for the cycle check only).
//   2. Post-dominator tree: in reverse schedule order, ipdom(n) = the lowest common ancestor of
//      n's users (the exit when n escapes).
//   3. Union-find over groups, each with the greatest kind of its members. Three phases over
//      the nodes in schedule order; node n (with the kind of its group when n is the group's
//      root) joins the group of d = ipdom(n), with every node on every path n -> d, when:
//        phase 0  n output-fusable  and every node on the paths is <= broadcast
//        phase 0,1 n <= broadcast   and the paths are <= injective, d <= reduction or
//                                   output-fusable
//        phase 1  n injective       and the paths and d are <= injective
//        phase 1  n reduction       and the paths are <= broadcast or reductions, d <= reduction
//   4. Phase 2: groups that read the same input (of more than one element), and groups that
//      read another group's output, merge pairwise, first come first served.
//   Every merge must keep the group within `max_group_size` members, keep the group convex (no
//   path leaves it and comes back: contracting it cannot create a cycle, so a schedule exists)
//   and be one loop nest (plan_group in fusion_plan.h); otherwise it is not made.
//   5. Each group of two or more members (not only views and transposes, which the backend's
//      copy engine moves at least as fast) becomes a fused graph and a call;
//      the graph's node list is re-scheduled (stable topological order, effects in order).
//
// Assumes a module that verifies (run after optimize). Guarantees the module verifies and
// computes the same values with the same effects; fused graphs run node by node compute
// exactly what the group computed.
#pragma once

#include <cstddef>
#include <string>

#include "semantics/ir/ir.h"

namespace spora::passes {

inline constexpr const char* kFusedFlag = "fused";

struct FusionOptions {
  size_t max_group_size = 64;  // members (applies) per group
  bool horizontal = true;      // phase 4: siblings and producer/consumer groups
  bool fold_transposes = true;  // matmul(transpose(x), y) -> matmul(x, y, transpose_a=true)
};

struct FusionStats {
  size_t groups = 0;             // fused graphs made
  size_t fused_nodes = 0;        // applies moved into them
  size_t folded_transposes = 0;  // transposes of products and their operands made flags
};

// The first step of fuse_operators, on its own: the number of transposes folded into flags.
size_t fold_transposes_into_products(ir::Module& m);

FusionStats fuse_operators(ir::Module& m, const FusionOptions& options = {});

// Is g a fusion group (a graph fuse_operators made)?
bool is_fused_graph(const ir::Graph& g);

}  // namespace spora::passes
