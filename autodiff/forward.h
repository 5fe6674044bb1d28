// Forward-mode automatic differentiation (jvp) as a transform of the IR.
//
// Like reverse mode (autodiff/reverse.h) it works on the region the lowering emitted for one
// call of the function; tangents are emitted after it, each node's tangent from its inputs'
// tangents by the primitive's "jvp" rule. Structured control flow recomputes its primal
// alongside: an `if` whose branches return (value, tangent), loops whose state carries the
// tangents next to the values; calls use a generated @G.jvp(args..., tangents...) graph.
#pragma once

#include <vector>

#include "semantics/ir/ir.h"

namespace spora::autodiff {

ir::Node* forward_region(ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                         const std::vector<ir::Node*>& inputs, const std::vector<ir::Node*>& tangents,
                         ir::Node* output);

}  // namespace spora::autodiff
