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
// polynomial below 0.625 and 1 - 2 / (exp(2|x|) + 1) above (a cheaper exp of its own: the
// argument is in [1.25, 20]); erf by x P(x^2) below 1 and 1 - erfc above, with the Chebyshev
// fit of Numerical Recipes' erfcc (fractional error below 1.2e-7); gelu by a clamped
// rational erf (below). Special values (nan, +-inf, +-0, subnormals, overflow) follow glibc.
//
// Speed: a zmm vector of these costs about half a cycle per vector instruction (two
// AVX-512 ports); the divider (one vdivps zmm blocks it for about 8.5 cycles) runs beside. The
// W5 chain gelu(x * 1.5 + 0.25) * 0.75 + tanh(x) compiles to 60 zmm instructions with
// two divisions (81 before the cheaper tanh and gelu of 2026-11-29): count them with
// `objdump -d` on a cached kernel (backends/codegen/README.md). Clamps are written so
// that GCC emits one instruction (an integer min on the bits, or a select it can fold);
// reciprocal approximations with Newton steps were not used: they cost more vector
// instructions than the division they replace, and the divider is not the bottleneck.
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

// Hyperbolic tangent: the odd polynomial below 0.625, 1 - 2 / (e^2a + 1) above (a = |x|).
// Within 1.32 ulp of tanh everywhere (dense sweep, tests/cpu/vmath_test.cpp; the worst is
// just above 0.625), the same as with exp() above, so W6's 50-step RNN keeps its results.
// e^2a is not exp(): 2a is clamped to 20 (tanh rounds to 1 from 9.01 on), so 2^n is one
// factor made by one shift of the rounding constant's bits, and 2a >= 1.25 where it is used,
// so a degree-4 polynomial of expm1(r) - r, |r| <= ln2 / 2, suffices (2.3e-8 relative, our
// Chebyshev fit). (A clamped rational x P(x^2) / Q(x^2), as erf_rational below, timed faster
// still but is 3.5-6 ulp off: enough to move W6's 50-step RNN gradients by 1e-4; the single
// formula expm1(2a) / (expm1(2a) + 2) is 2.4 ulp off below 0.2, where rounding 2a + 2 costs
// up to one ulp.)
SPORA_INLINE float tanh_big(float a) {
  // e^2a = 2^n e^r, n = round(2a / ln2) with the shift trick; the shift constant carries the
  // exponent bias, so (bits of t) << 23 is 2^n. nan passes the clamp and stays nan.
  // Written in a, not 2a: r / 2 = a - n ln2 / 2 and the polynomial's coefficients times 2^k
  // give the same bits as with 2a (scaling by 2 is exact), without the addition a + a.
  int32_t ab = float_to_bits(a);
  float ac = bits_to_float(ab < 0x41200000 ? ab : 0x41200000);  // 10.0f
  constexpr float kShift = 12582912.0f + 127.0f;
  float t = ac * 2.88539008177792682f + kShift;
  float nf = t - kShift;
#ifdef __FMA__
  // One rounding: r is exact to 2^-26 + n 1e-9.
  float h = std::fma(nf, -0.346573590279972655f, ac);
#else
  float h = ac - nf * 0.3466796875f;
  h = h - nf * -1.06097220e-4f;
#endif
  // (e^r - 1) / 2 with r = 2h: the coefficients of expm1(r) = r + r^2 q(r) times 2^(k+1).
  float q = 1.3926197669e-3f * 32.0f;
  q = q * h + 8.3631903256e-3f * 16.0f;
  q = q * h + 4.1666554533e-2f * 8.0f;
  q = q * h + 1.6666576922e-1f * 4.0f;
  q = q * h + 1.0f;
  float em2 = q * (h * h) + h;
  // 2 / (e^2a + 1) = 1 / (s em2 + s / 2 + 1 / 2), s = 2^n (s / 2 + 1 / 2 is exact).
  float s = bits_to_float(float_to_bits(t) << 23);
  return 1.0f - 1.0f / (s * em2 + (s * 0.5f + 0.5f));
}
SPORA_INLINE float tanh(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * a + a;
  // nan takes the polynomial (tanh_big's clamp would make it 10).
  return std::copysign(a >= 0.625f ? tanh_big(a) : small, x);  // keeps -0
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
//
// erf_rational_core takes |xc| <= 4 already clamped; the coefficients are those of the fit
// times 16^-k (exact in binary), so s = xc^2 needs no scaling and the results are the same
// bits as with s = xc^2 / 16.
SPORA_INLINE float erf_rational_core(float xc) {
  float s = xc * xc;
  float p = -1.3202009264e-08f;
  p = p * s + 4.6847317208e-06f;
  p = p * s + 3.7960740156e-04f;
  p = p * s + 3.8496172056e-03f;
  p = p * s + 5.4316908121e-02f;
  p = p * s + 1.8520347774e-01f;
  p = p * s + 1.1283792257e+00f;
  float q = 6.3110150222e-05f;
  q = q * s + 1.3075690949e-03f;
  q = q * s + 1.5462095849e-02f;
  q = q * s + 1.1395848542e-01f;
  q = q * s + 4.9746572971e-01f;
  q = q * s + 1.0f;
  return xc * p / q;
}

SPORA_INLINE float erf_rational(float x) {
  float xc = x > 4.0f ? 4.0f : x;
  xc = xc < -4.0f ? -4.0f : xc;
  return erf_rational_core(xc);
}

// 1 / (1 + exp(-x)), computed from exp(-|x|) so neither side overflows.
SPORA_INLINE float sigmoid(float x) {
  float e = exp(-std::fabs(x));
  float inv = 1.0f / (1.0f + e);
  return x >= 0.0f ? inv : e * inv;
}

// x Phi(x) with the exact erf, Phi(x) = (1 + erf(x / sqrt 2)) / 2, through the rational erf
// above written in x itself: with X = x^2 and erf(x / sqrt 2) = x P(X) / Q(X) (erf_rational's
// coefficients times 2^-k for X = 2 s, 1 / sqrt 2 folded into P, both divided by Q's leading
// coefficient so that Q is monic),
//   Phi(x) = N / D,  N = Q + x P (one FMA),  D = 2 Q.
// 11 multiply-adds fewer than x (0.5 + 0.5 erf_rational(x / sqrt 2)) by... none: the saving is
// the scaling of x, the 0.5 + 0.5 e step and Q's leading multiply (see tools/fit_erf.py).
// For x < 0, N is a difference of nearly equal numbers, so Phi is accurate in absolute terms,
// not relative ones, in the negative tail (|y| < 3e-6 there): gelu is at most 1.1e-6 from the
// exact value, at most 0.89 of the backend's 1e-6 + 1e-5 |y| tolerance (see the test). PyTorch's
// vectorised CPU GELU and XLA's share this accuracy. An erfc-based form keeps the tail's
// relative accuracy (what this function was before: exp and a division more) and timed 2.4x
// slower in a standalone loop.
// x is clamped through its bits, two integer mins (one instruction each): unsigned, which
// leaves positive floats alone and limits negative ones to -6.375, then signed, which limits
// positive ones to 5.625. At 5.625 N / D rounds to exactly 1 (with and without FMA
// contraction; 1 - Phi(5.625) = 9e-9 < half an ulp), so gelu(x) = x beyond. At -6.375 the
// rational overshoots (erf_rational(4.5) = 1 + 4e-7 in exact arithmetic), N < 0 with a margin
// of 3-4 roundings, and N is raised to 0 by an integer max on its bits: gelu is 0 below (the
// exact value is above -5e-8 there). nan and +-inf are carried by x: gelu(-inf) = -inf * 0 =
// nan, as the reference's formula gives. -0 stays -0.
SPORA_INLINE float gelu(float x) {
  uint32_t u = static_cast<uint32_t>(float_to_bits(x));
  u = u < 0xc0cc0000u ? u : 0xc0cc0000u;  // -6.375f
  int32_t i = static_cast<int32_t>(u);
  i = i < 0x40b40000 ? i : 0x40b40000;  // 5.625f
  float xc = bits_to_float(i);
  float X = xc * xc;
  float p = -7.3959818110e-05f;
  p = p * X + 5.2489269525e-02f;
  p = p * X + 8.5064907074e+00f;
  p = p * X + 1.7252947998e+02f;
  p = p * X + 4.8686752930e+03f;
  p = p * X + 3.3201285156e+04f;
  p = p * X + 4.0456737500e+05f;
  float q = X + 4.1437679291e+01f;
  q = q * X + 9.8000689697e+02f;
  q = q * X + 1.4445662109e+04f;
  q = q * X + 1.2611999219e+05f;
  q = q * X + 5.0704996875e+05f;
  int32_t n = float_to_bits(xc * p + q);
  n = n > 0 ? n : 0;
  return x * (bits_to_float(n) / (q + q));
}

}  // namespace spora::cpu::vm
