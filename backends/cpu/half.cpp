// f16/bf16 conversions on the CPU and the wrapper that lets every kernel take them (half.h).
#include "backends/cpu/half.h"

#include <cpuid.h>
#include <immintrin.h>

#include "semantics/half.h"
#include "semantics/low_precision.h"

namespace spora::cpu {

namespace {

// The F16C versions: vcvtps2ph / vcvtph2ps, 8 elements at a time (also on AVX-512 machines: the
// conversion is bound by memory, and GCC 12's 512-bit intrinsic trips -Wmaybe-uninitialized), round
// to nearest even, nan quietened with its payload truncated: the same bits as
// half::f32_to_f16 (tests/cpu/half_test.cpp checks both), which does the tails. (GCC 12 does
// not vectorise _Float16 conversions without AVX-512 FP16, hence the intrinsics.)
constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__attribute__((target("avx2,fma,f16c"))) void to_f16_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRne));
  for (; i < n; ++i) y[i] = half::f32_to_f16(x[i]);
}
__attribute__((target("avx2,fma,f16c"))) void from_f16_avx2(const uint16_t* x, float* y,
                                                            int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = half::f16_to_f32(x[i]);
}
void to_f16_base(const float* x, uint16_t* y, int64_t n) {
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = half::f32_to_f16(x[i]);
}
void from_f16_base(const uint16_t* x, float* y, int64_t n) {
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = half::f16_to_f32(x[i]);
}

SPORA_MULTIVERSION((), to_bf16, (), (const float* x, uint16_t* y, int64_t n), (x, y, n), {
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = half::f32_to_bf16(x[i]);
})
SPORA_MULTIVERSION((), from_bf16, (), (const uint16_t* x, float* y, int64_t n), (x, y, n), {
  _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = half::bf16_to_f32(x[i]);
})

// F16C: CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
bool has_f16c() {
  static const bool yes = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return yes;
}

void to_f16(const float* x, uint16_t* y, int64_t n) {
  switch (isa()) {
    case Isa::avx512:
    case Isa::avx2:
      return has_f16c() ? to_f16_avx2(x, y, n) : to_f16_base(x, y, n);
    default:
      return to_f16_base(x, y, n);
  }
}
void from_f16(const uint16_t* x, float* y, int64_t n) {
  switch (isa()) {
    case Isa::avx512:
    case Isa::avx2:
      return has_f16c() ? from_f16_avx2(x, y, n) : from_f16_base(x, y, n);
    default:
      return from_f16_base(x, y, n);
  }
}

}  // namespace

void f32_to_low(const float* x, uint16_t* y, int64_t n, DType low) {
  parallel_for(n, 2, [&](int64_t b, int64_t e) {
    if (low == DType::f16)
      to_f16(x + b, y + b, e - b);
    else
      to_bf16(x + b, y + b, e - b);
  });
}

void low_to_f32(const uint16_t* x, float* y, int64_t n, DType low) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    if (low == DType::f16)
      from_f16(x + b, y + b, e - b);
    else
      from_bf16(x + b, y + b, e - b);
  });
}

Tensor upcast(const Tensor& x) {
  Tensor out = Tensor::empty(DType::f32, x.shape());
  low_to_f32(x.data<uint16_t>(), out.data<float>(), x.numel(), x.dtype());
  return out;
}

Tensor downcast(const Tensor& x, DType low) {
  Tensor out = Tensor::empty(low, x.shape());
  f32_to_low(x.data<float>(), out.data<uint16_t>(), x.numel(), low);
  return out;
}

CpuKernel with_low_precision(CpuKernel k) {
  return [k = std::move(k)](const RefKernel& ref, const std::vector<Value>& in,
                            const Attrs& attrs) -> Value {
    auto call = [&](const std::vector<Value>& args, const Attrs& a) { return k(ref, args, a); };
    return sem::run_widened(in, attrs, call, upcast, downcast);
  };
}

}  // namespace spora::cpu
