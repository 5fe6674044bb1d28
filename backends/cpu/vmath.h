// Branch-free f32 transcendental functions that GCC vectorises inside `#pragma omp simd`
// loops (each call is inlined; both sides of a select are computed): exp, log, tanh, erf,
// sigmoid and gelu. Maximum errors against glibc, checked by tests/cpu/vmath_test.cpp over
// dense ranges: relative errors below 1e-6 (gelu: absolute, see there), so every f32
// kernel built on them is within the backend's 1e-5 relative / 1e-6 absolute tolerance of
// the reference kernel.
//
// Algorithms (Cephes single precision, S. Moshier): exp by x = n ln2 + r and a degree-6
// polynomial, 2^n assembled in the exponent bits (two factors, so subnormal results round
// once); log by frexp in the bits and a degree-8 polynomial of m - 1; tanh by an odd
// polynomial below 0.625 and 1 - 2 / (exp(2|x|) + 1) above; erf by x P(x^2) below 1 and
// 1 - erfc above, with the Chebyshev fit of Numerical Recipes' erfcc (fractional error
// below 1.2e-7); gelu by a clamped rational erf (below). Special values (nan, +-inf, +-0,
// subnormals, overflow) follow glibc.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels.h"

namespace spora::cpu::vm {

SPORA_INLINE float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
SPORA_INLINE int32_t float_to_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i;
}

// e ** x.
SPORA_INLINE float exp(float x) {
  // Clamped so 2^n stays representable as two normal factors; nan passes the clamps.
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 89.0f ? 89.0f : xc;
  // n = round(x / ln2) with the 1.5 * 2^23 trick (exact for |n| < 2^22), r = x - n ln2.
  constexpr float kShift = 12582912.0f;
  float t = xc * 1.44269504088896341f + kShift;
  int32_t n = float_to_bits(t) - float_to_bits(kShift);
  float nf = t - kShift;
  float r = xc - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * (r * r) + r + 1.0f;
  int32_t n1 = n >> 1, n2 = n - n1;
  return y * bits_to_float((n1 + 127) << 23) * bits_to_float((n2 + 127) << 23);
}

// Natural logarithm.
SPORA_INLINE float log(float x) {
  constexpr float kMinNormal = 1.17549435e-38f;
  bool sub = x < kMinNormal;
  float xs = sub ? x * 8388608.0f : x;  // subnormals scaled by 2^23
  int32_t bits = float_to_bits(xs);
  int32_t e = ((bits >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = bits_to_float((bits & 0x807fffff) | 0x3f000000);  // in [0.5, 1)
  bool low = m < 0.707106781186547524f;
  float f = low ? m + m - 1.0f : m - 1.0f;
  float fe = static_cast<float>(low ? e - 1 : e);
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + fe * 0.693359375f;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  r = x == kInf ? kInf : r;
  r = x == 0.0f ? -kInf : r;
  r = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : r;
  return x != x ? x : r;
}

// Hyperbolic tangent. (A clamped rational x P(x^2) / Q(x^2), as erf_rational below, timed
// 2.3x faster in a standalone loop but is 3.5-6 ulp off where this is 0.5-1.3: enough to move
// W6's 50-step RNN gradients by 1e-4.)
SPORA_INLINE float tanh(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = std::copysign(p * z * a + a, x);  // keeps -0
  float e = exp(a + a);
  float big = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
  return a < 0.625f ? small : big;
}

// erf(x) for |x| < 1 (x P(x^2)) and erfc(|x|) for |x| >= 1 (the Chebyshev fit); both are
// computed, the caller selects.
struct ErfParts {
  float small, erfc;
};
SPORA_INLINE ErfParts erf_parts(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float p = 7.853861353153693e-5f;
  p = p * z - 8.010193625184903e-4f;
  p = p * z + 5.188327685732524e-3f;
  p = p * z - 2.685381193529856e-2f;
  p = p * z + 1.128358514861418e-1f;
  p = p * z - 3.761262582423300e-1f;
  p = p * z + 1.128379165726710e+0f;
  float t = 1.0f / (1.0f + 0.5f * a);
  float q = 0.17087277f;
  q = q * t - 0.82215223f;
  q = q * t + 1.48851587f;
  q = q * t - 1.13520398f;
  q = q * t + 0.27886807f;
  q = q * t - 0.18628806f;
  q = q * t + 0.09678418f;
  q = q * t + 0.37409196f;
  q = q * t + 1.00002368f;
  return {x * p, t * exp(q * t - z - 1.26551223f)};
}

// The error function.
SPORA_INLINE float erf(float x) {
  ErfParts e = erf_parts(x);
  return std::fabs(x) < 1.0f ? e.small : std::copysign(1.0f - e.erfc, x);
}

// erf as x P(x^2) / Q(x^2) with |x| clamped to 4 (erf rounds to +-1 in f32
// beyond 3.92), P of degree 6 and Q of degree 5 in s = x^2 / 16 (2.0e-9 in
// exact arithmetic, 2.9e-7 relative measured in f32; our own weighted least-squares fit:
// Sanathanan-Koerner iteration, then Lawson reweighting toward minimax). XLA's form for f32
// erf. No exp, so cheaper than erf below, but 4-5 ulp off near +-1 (erf is within 2.5e-7,
// tests/cpu/vmath_test.cpp): gelu uses it.
SPORA_INLINE float erf_rational(float x) {
  float xc = x > 4.0f ? 4.0f : x;
  xc = xc < -4.0f ? -4.0f : xc;
  float s = xc * xc * 0.0625f;
  float p = -2.2149296200e-01f;
  p = p * s + 4.9122970889e+00f;
  p = p * s + 2.4877951428e+01f;
  p = p * s + 1.5768032371e+01f;
  p = p * s + 1.3905128133e+01f;
  p = p * s + 2.9632555831e+00f;
  p = p * s + 1.1283791694e+00f;
  float q = 6.6175787477e+01f;
  q = q * s + 8.5692851770e+01f;
  q = q * s + 6.3332743254e+01f;
  q = q * s + 2.9173372628e+01f;
  q = q * s + 7.9594515048e+00f;
  q = q * s + 1.0f;
  return xc * p / q;
}

// 1 / (1 + exp(-x)), computed from exp(-|x|) so neither side overflows.
SPORA_INLINE float sigmoid(float x) {
  float e = exp(-std::fabs(x));
  float inv = 1.0f / (1.0f + e);
  return x >= 0.0f ? inv : e * inv;
}

// x Phi(x) with the exact erf: 0.5 x (1 + erf(x / sqrt 2)). For x < 0, 1 + erf is a
// difference of nearly equal numbers, so the result is accurate in absolute terms, not
// relative ones, in the negative tail (|y| < 3e-6 there): at most 1.2e-6 from the exact
// value, at most 0.89 of the backend's 1e-6 + 1e-5 |y| tolerance (0.73 where the compiler
// contracts to FMA). PyTorch's vectorised CPU GELU and XLA's share this. An erfc-based form
// keeps the tail's relative accuracy (what this function was before: exp and a division
// more) and timed 2.4x slower in a standalone loop.
SPORA_INLINE float gelu(float x) {
  return 0.5f * x * (1.0f + erf_rational(x * 0.70710678118654752440f));
}

}  // namespace spora::cpu::vm
