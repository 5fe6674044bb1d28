// Lowering of one fusion group to a loop nest (a KernelPlan): what the fusion pass (fusion.h)
// asks before it commits a group, and what backends/codegen prints as C++ or CUDA. It lives
// here, not in the backends, because "can this group be one kernel?" is a question about the
// IR: shapes, dtypes, reduction axes.
//
// A group is a set of applies (in schedule order) with external inputs and outputs. Its nodes
// may be elementwise/broadcast/injective ops, reductions (sum mean prod max min all any, and
// softmax, log_softmax, logsumexp, layer_norm, cross_entropy, which are first decomposed into
// those), at most one output-fusable anchor (matmul, conv2d: computed by its library kernel
// before the loop nest, whose result the nest reads like an input), and scalar constants.
//
// The loop nest (every group is one of these):
//
//   totals = init                                       // whole-group reductions
//   parallel for r in [0, rows):                        // the outer (row) axes O of domain B
//     decode row coordinates from r
//     pass 0:  accumulators; for j in [0, inner): body; accumulate    // inner axes I
//              post: row values from the accumulators
//     pass 1 .. pass P-1: the same, reading the earlier passes' row values
//     final pass: for j in [0, inner): elementwise outputs, totals += ...
//                 post: row outputs, totals += ...
//   epilogue: scalar outputs from the totals
//
//   - Domain B: the input shape of the group's row reductions, which must all reduce the same
//     axes R of the same shape (softmax, layer_norm and their gradients reduce one row in
//     several passes: max then sum of exp; mean, variance, then the output). Then O = B \ R
//     and I = R. A group without row reductions iterates its output shape: I = the last axis
//     (O the others), or every axis (rows = 1, `flat`) when no operand needs per-axis
//     coordinates; the emitter may then split the inner loop into chunks across threads.
//     A column reduction (the domain's contiguous last axis not reduced) of 4096 elements or
//     more is refused: this nest would read it at a stride, the library kernel does better.
//   - Totals: reductions over every axis of their input (sum(x), the mean of cross_entropy);
//     their input is elementwise over B or a row value. Only scalar epilogue nodes may read a
//     total.
//   - Every node is evaluated at coordinates derived from the domain's (c0, c1, ... for B's
//     axes; r, j the loop indices; f the flat index) by its consumers' index maps: NumPy
//     broadcasting, permutations, reshapes (flat index preserved), slices, one_hot. A node read
//     at two index expressions is computed twice; one read at row-invariant coordinates is
//     hoisted out of the inner loop.
//
// Statements are the typed nodes of the kernel IR (semantics/kernel_ir/kernel_ir.h): loads,
// elementwise primitives, stores, and range checks of data-dependent indices (a label out of
// range: the kernel then reports failure and the group runs node by node, which raises the
// error). Index expressions are built and compared as structures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"
#include "semantics/kernel_ir/kernel_ir.h"

namespace spora::passes {

// The loop nest of a group is a kernel of the kernel IR.
using KernelBuffer = kir::Buffer;
using ReduceOp = kir::ReduceOp;
using Accumulator = kir::Accumulator;
using KernelPass = kir::Pass;
using KernelPlan = kir::Kernel;
using kir::reduce_op_name;

// A candidate group: its applies in schedule order (scalar constants may be listed too), its
// external inputs (in the order of the kernel's inputs; scalar constants among them become
// literals) and the members read outside the group (in output order).
struct GroupSpec {
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Node*> inputs;
  std::vector<const ir::Node*> outputs;
};

// The loop nest of a group (verified: kir::verify), or nullopt with the reason in *why (when
// given).
std::optional<KernelPlan> plan_group(const GroupSpec& group, std::string* why = nullptr);

// The group of a fused graph (fusion.h): its parameters are the inputs, its nodes the group,
// its output one member or a make_tuple of the outputs.
GroupSpec group_of(const ir::Graph& fused);

}  // namespace spora::passes
