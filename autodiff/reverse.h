// Reverse-mode automatic differentiation as a transform of the IR.
//
// The lowering has emitted the forward computation of the function being differentiated as a
// region of a graph (graph mode: part of the program; eager mode: the op-by-op tape). The
// backward pass is emitted after it, into the same graph (or one nested in it), as ordinary
// IR: the derivative of a program is another program, printed by `spora ir --stage grad`.
//
// Algorithm (one Reverse per region):
//  1. Seed the adjoint of the output with dout; adjoints are SVals (autodiff/emitter.h): a
//     node, or per-element parts for tuples and records, so structure never needs packing.
//  2. Walk the region's nodes backwards. For each node with a non-zero adjoint:
//       make_tuple / tuple_get / make_record / record_get   route adjoint parts;
//       a primitive                                         its "vjp" rule (autodiff/rules.h);
//       if(c, @T, @E)      a backward `if` on the same condition whose branches recompute
//                          their forward and return the adjoints of the free variables;
//       while / for_range / for_each
//                          the forward loop is rewritten (once) to record each iteration's
//                          state on a tape list; the backward is a for_range over the
//                          iterations in reverse that recomputes one iteration's forward from
//                          the taped state and back-propagates through it, carrying the
//                          state adjoint and the accumulated free-variable adjoints;
//       call @G            @G's custom rule (custom_grad=) if it has one, else a generated
//                          backward graph @G.bwd(args..., dout) that recomputes G's forward
//                          (recursion and @checkpoint: memory for compute).
//  3. Adjoints of nodes defined outside the region are what the caller reads: the inputs, and
//     for nested regions the free variables of the body.
// Activity: in the outermost region only nodes that depend on the inputs (through their
// inputs; calls and graph references count as depending) take adjoints, so nothing is emitted
// for values the function only reads (grad(f)(w, xs): no adjoint of xs). Graph mode's dead-code
// pass removed such adjoints anyway; eager mode runs the derivative as it is emitted.
#pragma once

#include <vector>

#include "semantics/ir/ir.h"

namespace spora::autodiff {

std::vector<ir::Node*> reverse_region(ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                                      const std::vector<ir::Node*>& inputs, ir::Node* output, ir::Node* dout);

}  // namespace spora::autodiff
