// f16 / bf16 on the CPU: vectorised conversions between f32 buffers and the 16-bit float
// dtypes, and the generic way every kernel computes on them.
//
// Conversions round like the reference (semantics/half.h) bit for bit. f16 uses the F16C
// instructions (vcvtps2ph / vcvtph2ps, through intrinsics: GCC 12 emits them from _Float16
// conversions only one element at a time) in the AVX2 and AVX-512 versions and the
// branch-free integer code elsewhere; bf16 always uses
// the integer code, which vectorises (AVX-512 BF16's vcvtneps2bf16 flushes subnormal inputs to
// zero, so it is not used).
//
// Computing on f16/bf16 follows PyTorch on the CPU: a kernel reads its low-precision inputs as
// f32, runs the f32 kernel (f32 accumulation: GEMM, sums, softmax, normalisation) and rounds each
// floating result once to the low dtype. set_kernel (kernels.cpp) wraps every CPU kernel this
// way (`with_low_precision`), so no kernel is written twice.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels.h"

namespace spora::cpu {

inline bool is_low(DType d) { return d == DType::f16 || d == DType::bf16; }

// y[i] = x[i] rounded to `low` (f16 or bf16), in parallel chunks.
void f32_to_low(const float* x, uint16_t* y, int64_t n, DType low);
// y[i] = x[i] widened to f32 (exact).
void low_to_f32(const uint16_t* x, float* y, int64_t n, DType low);

// A new f32 tensor of a low-precision x; a new `low` tensor of an f32 x.
Tensor upcast(const Tensor& x);
Tensor downcast(const Tensor& x, DType low);

// A CPU kernel that also takes f16/bf16 inputs: when some input tensor (or a `dtype`
// attribute) is low precision, the inputs are widened to f32, `k` runs, and every f32 tensor of
// its result is rounded to that low dtype. Other calls go straight to `k`. Mixed low dtypes
// (f16 with bf16) are rejected earlier by the shape rules.
CpuKernel with_low_precision(CpuKernel k);

}  // namespace spora::cpu
