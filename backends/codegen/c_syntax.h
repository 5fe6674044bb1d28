// The C spelling of kernel IR nodes (semantics/kernel_ir/kernel_ir.h), shared by the C++ and
// CUDA printers (emit_cpp.cpp, emit_cuda.cpp): types, literals, index expressions, operands,
// expressions and statements. Names: values v<id>, row accumulators a<id>, totals t<k>,
// coordinates c<axis>, loop variables r and j; a copy of an interleaved body adds _a, _b, ...
#pragma once

#include <string>

#include "semantics/kernel_ir/kernel_ir.h"

namespace spora::codegen {

std::string c_type(DType d);         // a value's type: float, double, int32_t, int64_t, bool
std::string c_buffer_type(DType d);  // a buffer's element type (bool: uint8_t)
std::string c_acc_type(DType d);     // an accumulator's type (i32: int)
std::string c_literal(double v, DType d);
std::string c_copy_suffix(int copy);  // "", "_a", "_b", ...
std::string c_var(const kir::Var& v);
std::string c_index(const kir::Ix& x);
// The terms of a sum of x other than its last, each followed by " + " (x = (r * N + j):
// "r * N + "); "" when x is not a sum.
std::string c_index_prefix(const kir::Ix& x);
std::string c_operand(const kir::Operand& o);
std::string c_acc_name(const kir::Accumulator& a);
std::string c_expr(const kir::Expr& e);
std::string c_stmt(const kir::Stmt& s);
// The definitions of the loop_expr functions k calls (loop_expr.h: sp_<name> for f32 and f64),
// each guarded so that a unit of several kernels defines it once; "" when it calls none.
std::string c_loop_expr_defs(const kir::Kernel& k);

}  // namespace spora::codegen
