// One unary math primitive as one block: every fact of its registry row in one place. The
// built-in rows (ops/elementwise.cpp) and a program's own rows (a test's, a user's extension)
// are added the same way, and the row then has automatic differentiation, fusion with generated
// CPU and CUDA code, a cost and a sharding rule with no other edit.
//
//   ops::add_unary_math(sem::Registry::instance(), {
//       .name = "softsign", .doc = "x / (1 + |x|)",
//       .f = [](double x) { return x / (1 + std::fabs(x)); },
//       .deriv = [](autodiff::Emitter& e, ir::Node* x, ir::Node*, ir::Node* g) { ... },
//       .loop = {1, "a / (1.0f + fabsf(a))", "a / (1.0 + fabs(a))"},
//       .flops = 3});
#pragma once

#include <functional>
#include <string>

#include "autodiff/rules.h"
#include "backends/codegen/loop_expr.h"
#include "semantics/amp.h"
#include "semantics/registry.h"

namespace spora::ops {

struct UnaryMath {
  std::string name;
  std::string doc;                  // one line, for `spora ops`
  std::function<double(double)> f;  // the reference kernel on one element (f32: rounded)
  // The derivative applied to g (a cotangent or a tangent: the Jacobian is diagonal), given x
  // and y = f(x): g * f'(x). Null: not differentiable.
  std::function<ir::Node*(autodiff::Emitter& e, ir::Node* x, ir::Node* y, ir::Node* g)> deriv;
  codegen::LoopExpr loop;  // how generated loops write it (backends/codegen/loop_expr.h)
  double flops = 10;   // per element, for the cost model (semantics/cost.h)
  sem::AmpClass amp = sem::AmpClass::Promote;  // its autocast class (semantics/amp.h)
};

// Adds the row: its shape rule (a floating-point tensor, whose type the result keeps), its
// reference kernel, vjp and jvp, fusion kind (elementwise), loop_expr, amp (when not Promote),
// cost and sharding (every dimension keeps its layout) facets. Throws lang::InternalError if the
// name is taken.
sem::Primitive& add_unary_math(sem::Registry& r, const UnaryMath& row);

}  // namespace spora::ops
