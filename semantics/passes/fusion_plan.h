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
// Statements are target-neutral C: `const float v3 = sp_exp(v2);`, loads `in0[...]`, stores
// `out1[...] = ...`, calls of `sp_*` helpers that each target's prelude defines (see
// backends/codegen/), `SP_CHECK(cond)` for a data-dependent error (a label out of range: the
// kernel then reports failure and the group runs node by node, which raises the error).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::passes {

// One input or output tensor of a kernel: contiguous row-major.
struct KernelBuffer {
  DType dtype = DType::f32;
  sem::Shape shape;
  int64_t numel() const;
};

enum class ReduceOp { Sum, Prod, Max, Min, All, Any };
const char* reduce_op_name(ReduceOp op);

// An accumulator: row accumulators live in one pass of one row; totals span the whole loop
// nest. After its loop the emitter leaves the final value in `var` (max/min: nan if any
// element was nan).
struct Accumulator {
  std::string var;    // "a3", "t0"
  ReduceOp op = ReduceOp::Sum;
  std::string ctype;  // "double" (float sums and products), "float", "int" (all/any)
  std::string value;  // the accumulated expression (a variable of the body or of the row)
};

struct KernelPass {
  std::vector<std::string> pre;       // row statements before the inner loop
  std::vector<std::string> body;      // one element of the inner loop
  std::vector<Accumulator> accs;      // row accumulators updated at the end of the body
  std::vector<std::string> post;      // row statements after the inner loop
  std::vector<size_t> body_totals;    // totals (indices) updated at the end of the body
  std::vector<size_t> post_totals;    // totals updated at the end of post
};

struct KernelPlan {
  std::vector<KernelBuffer> inputs;   // in0, in1, ...: the group's inputs, then the anchor's result
  std::vector<KernelBuffer> outputs;  // out0, out1, ...
  sem::Shape domain;                  // the iteration domain B
  int64_t rows = 1;                   // outer iterations (variable r)
  int64_t inner = 1;                  // inner iterations (variable j)
  bool splittable = false;            // no row reductions: inner may be split across threads
  std::vector<std::string> row_setup;    // decodes the row coordinates from r
  std::vector<std::string> inner_setup;  // decodes the inner coordinates from j (every pass)
  // Row reductions over several axes (a channel of NCHW): the inner coordinates as nested
  // loops, outermost first (extent each), and j as an expression of them. Empty: one loop
  // over j. A target may use either form (CUDA strides threads over j and decodes).
  std::vector<std::pair<std::string, int64_t>> inner_nest;
  std::string inner_index;
  std::vector<KernelPass> passes;        // reduction passes, then the final pass (never empty)
  std::vector<Accumulator> totals;
  std::vector<std::string> epilogue;     // after the loop nest: scalar outputs
  bool checks = false;                   // some statement is an SP_CHECK
  // The output-fusable anchor (matmul, conv2d): index of the IR node in the group's node
  // list, or -1. Its result is the last input.
  int anchor = -1;
  // Per input: true when every read is at the domain's own flat index and the input has the
  // domain's element count, so an output of the same size and dtype may overwrite it in place.
  std::vector<bool> in_place_ok;
  std::string describe;                  // one line: domain, passes, totals (for comments)
};

// A candidate group: its applies in schedule order (scalar constants may be listed too), its
// external inputs (in the order of the kernel's inputs; scalar constants among them become
// literals) and the members read outside the group (in output order).
struct GroupSpec {
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Node*> inputs;
  std::vector<const ir::Node*> outputs;
};

// The loop nest of a group, or nullopt with the reason in *why (when given).
std::optional<KernelPlan> plan_group(const GroupSpec& group, std::string* why = nullptr);

// The group of a fused graph (fusion.h): its parameters are the inputs, its nodes the group,
// its output one member or a make_tuple of the outputs.
GroupSpec group_of(const ir::Graph& fused);

}  // namespace spora::passes
