// The lowering calls automatic differentiation through these hooks, so that semantics/ never
// includes autodiff/ (autodiff depends on semantics). autodiff::install()
// fills them at start-up.
//
// Both transforms work on a *region*: the nodes (in order) that the lowering has just
// emitted into one graph for one call of the function being differentiated (in graph mode a piece
// of the graph being built; in eager mode the op-by-op tape). Structured control flow in the
// region (if/while/for_range/for_each with nested body graphs) and calls of recursive,
// @checkpoint or @custom_grad graphs are handled; everything else is primitive applications.
#pragma once

#include <functional>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::sem {

struct AutodiffHooks {
  // Reverse mode: emits into `into` (the region's graph or one nested in it) the adjoints of
  // `inputs` (nodes defined before the region) for the cotangent `dout` of `output`. Returns
  // one node per input: its adjoint, with the input's type (zeros when nothing flows).
  std::function<std::vector<ir::Node*>(ir::Module& m, const std::vector<ir::Node*>& region,
                                       ir::Graph* into, const std::vector<ir::Node*>& inputs,
                                       ir::Node* output, ir::Node* dout)>
      reverse;
  // Forward mode: emits into `into` the tangent of `output` given one tangent per input
  // (with the input's type). Returns the tangent (with the output's type).
  std::function<ir::Node*(ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                          const std::vector<ir::Node*>& inputs, const std::vector<ir::Node*>& tangents,
                          ir::Node* output)>
      forward;
};

AutodiffHooks& autodiff_hooks();

}  // namespace spora::sem
