// A primitive row's `loop_expr` facet: how the C++ and CUDA printers write a real elementwise
// primitive with a loop form (semantics/kernel_ir/kernel_ir.h kLoopFormFacet) inside a fused
// loop: one C expression per dtype in its operands `a` (and `b`), using the C math library's
// functions (exp, expf, fabs, ...; both targets provide them). The printers define it as the
// function sp_<name> of the kernels that call it (c_syntax.h c_loop_expr_defs).
#pragma once

#include <string>

namespace spora::codegen {

struct LoopExpr {
  int arity = 1;    // 1 or 2
  std::string f32;  // e.g. "a / (1.0f + fabsf(a))"
  std::string f64;  // e.g. "a / (1.0 + fabs(a))"
};
inline constexpr const char* kLoopExprFacet = "loop_expr";

}  // namespace spora::codegen
