// The `decompose` facet of a composite primitive's row: how the fusion planner
// (fusion_plan.h) writes it with simpler loop operations inside a fused kernel. softmax, for
// example, is a keepdims max, a subtraction, exp, a keepdims sum and a division; the planner
// then schedules those like any other members of the group. A row with a Reduction or
// Broadcast fusion kind and no loop form of its own (kernel_ir.h loop_form, the planner's
// built-in elementwise, shape and reduction kinds) needs this facet to be fused; without it the
// planner refuses the group, which then runs node by node.
//
// The function gets the node (its attributes and result type) and its inputs as values of the
// planner, builds the result with the LoopBuilder and returns it. Values have a dtype and a
// static shape; arithmetic follows NumPy broadcasting and keeps the first operand's dtype.
// It calls fail() for a case it cannot write (a dtype, an attribute value): the group then
// runs node by node, and `spora ir --stage kernels` prints the reason.
//
//   p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(
//       [](passes::LoopBuilder& b, const ir::Node& n, const passes::LoopValues& in) {
//         return b.binary("mul", in[0], b.unary("sigmoid", in[0]));  // silu
//       });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"
#include "semantics/kernel_ir/kernel_ir.h"
#include "semantics/types.h"

namespace spora::passes {

// A value inside the loop nest being planned (the planner's node; opaque here).
struct LoopValue {};
using LoopValues = std::vector<LoopValue*>;

class LoopBuilder {
 public:
  virtual ~LoopBuilder() = default;
  virtual DType dtype(const LoopValue* v) const = 0;
  virtual const sem::Shape& shape(const LoopValue* v) const = 0;
  // A scalar constant.
  virtual LoopValue* literal(double v, DType d) = 0;
  // A unary or binary elementwise primitive by name (one with a loop form: kir::unary_fn,
  // kir::binary_fn), on floating-point values.
  virtual LoopValue* unary(const std::string& op, LoopValue* x) = 0;
  virtual LoopValue* binary(const std::string& op, LoopValue* x, LoopValue* y) = 0;
  // A reduction over `axes` (non-negative, any order) that keeps them as 1, in x's dtype;
  // mean divides a Sum by the count.
  virtual LoopValue* reduce(kir::ReduceOp op, bool mean, LoopValue* x,
                            std::vector<int64_t> axes) = 0;
  virtual LoopValue* cast(LoopValue* x, DType d) = 0;          // x itself when it has dtype d
  virtual LoopValue* reshape(LoopValue* x, sem::Shape s) = 0;  // same element count
  // x where it is finite, else 0 (the shift of a max-subtracted exponential).
  virtual LoopValue* finite_or_zero(LoopValue* x) = 0;
  // 1 where the integer label equals the index along `axis` of shape `s`, else 0, in dtype d;
  // labels has s's shape without `axis`.
  virtual LoopValue* one_hot(LoopValue* labels, DType d, sem::Shape s, int64_t axis) = 0;
  [[noreturn]] virtual void fail(const std::string& why) = 0;
};

using DecomposeFn =
    std::function<LoopValue*(LoopBuilder& b, const ir::Node& n, const LoopValues& in)>;
inline constexpr const char* kDecomposeFacet = "decompose";

}  // namespace spora::passes
