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
// Speed: on this machine (Xeon with AVX-512 and AMX, Sapphire Rapids class) every zmm
// arithmetic, logic, compare and integer instruction issues on the same two ports (0 and 5):
// about two per cycle in all, an addition costs the same as an FMA (measured: a mix of
// independent FMAs and additions runs no faster than FMAs alone). So the total instruction
// count matters, not only the multiply/FMA count (on AMD Zen 4 additions and logic would go
// to other pipes). The divider runs beside (one vdivps zmm per ~4 ns measured, ~9 cycles).
// The W5 chain gelu(x * 1.5 + 0.25) * 0.75 + tanh(x) compiles to 55 zmm instructions with
// two divisions, 46 of them arithmetic or logic and 32 of those multiply/FMA (60, 49 and 35
// before the gelu in x and the tanh in |x| of 2026-11-30; 81 zmm instructions before
// 2026-11-29): count them with `objdump -d` on a cached kernel (backends/codegen/README.md).
// Clamps are written so that GCC emits one instruction (an integer min on the bits, or a
// select it can fold); reciprocal approximations with Newton steps were not used: they cost
// more vector instructions than the division they replace. Coefficients that are not
// Cephes': backends/cpu/tools/fit_vmath.py.
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
// Within 1.15 ulp of tanh on [0, 12], 1.19 on [0.001, 1] (dense sweeps, tests/cpu/
// vmath_test.cpp; the same with FMA contraction; the worst is just above 0.625; 1.27-1.30
// before 2026-11-30, when 2 / (e + 1) took two roundings), so W6's 50-step RNN keeps its
// results. e^2a is not exp(): |x| is clamped to 10 (tanh rounds to 1 from 9.01 on), so 2^n is
// one factor made by one shift of the rounding constant's bits, and 2a >= 1.25 where it is
// used, so a degree-4 polynomial of expm1(r) - r, |r| <= ln2 / 2, suffices (2.3e-8 relative,
// our Chebyshev fit). Both sides are computed (vectorised select): 25 vector instructions, 17
// of them multiply/FMA. Not used: a clamped rational x P(x^2) / Q(x^2), as erf_rational below,
// is fewer instructions but was 3.5-6 ulp off, enough to move W6's 50-step RNN gradients by
// 1e-4: above 0.55 its result is in [0.5, 1), where each rounding of x P, Q or their ratio
// costs up to an ulp, unlike 1 - (small correction). Measured 2026-11-30 (max ulp with FMA /
// without): e^r as a Pade ratio (E + O) / (E - O), E = r^2 + 10, O = r (r^2 / 12 + 5), three
// multiply/FMA fewer: 1.34 / 1.57 as 1 - 2 (E - O) / ((s + 1) E + (s - 1) O), 1.5-4.4 in other
// arrangements; s e^r / 2 as s (em2 + 1/2), one FMA fewer for the same instruction count:
// 1.27 / 1.34; the single formula expm1(2a) / (expm1(2a) + 2): 2.4 below 0.2, where rounding
// 2a + 2 costs up to one ulp.
SPORA_INLINE float tanh_big(float a) {
  // e^2a = 2^n e^r, n = round(2a / ln2) with the shift trick; the shift constant carries the
  // exponent bias, so (bits of t) << 23 is 2^n. The clamp is an integer min on the bits (a
  // >= 0); nan would become 10 here, so tanh() sends it to the polynomial side.
  // Written in a, not 2a: h = r / 2 = a - n ln2 / 2, and the polynomial's coefficients times
  // powers of 2 give the same bits as with r (scaling by 2 is exact), without the a + a.
  int32_t ab = float_to_bits(a);
  float ac = bits_to_float(ab < 0x41200000 ? ab : 0x41200000);  // 10.0f
  constexpr float kShift = 12582912.0f + 127.0f;
  float t = ac * 2.88539008177792682f + kShift;
  float nf = t - kShift;
#ifdef __FMA__
  // One FMA, one rounding: h is within 2^-27 + n 1e-9 of a - n ln2 / 2 (the fused kernels,
  // -march=native). Without FMA, ln2 / 2 in two parts, the first exact in the product.
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
// tests/cpu/vmath_test.cpp): gelu uses its coefficients, rewritten for x / sqrt 2 (below).
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
// above written in x itself: with X = x^2 and erf(x / sqrt 2) = x P(X) / Q(X),
//   Phi(x) = N / D,  N = Q + x P (one FMA),  D = 2 Q = Q + Q,
// where P and Q are erf_rational's coefficients times 2^-k (s = X / 2), 1 / sqrt 2 folded into
// P, both divided by Q's leading coefficient so that Q is monic (its first step an addition):
// backends/cpu/tools/fit_vmath.py derives them. Against x (0.5 + 0.5 erf_rational(x / sqrt 2))
// this saves the scaling of x, Q's leading multiply, the 0.5 + 0.5 e step and a clamp
// instruction: 20 vector instructions, 14 multiply/FMA (22 and 17 before 2026-11-30).
// For x < 0, N is a difference of nearly equal numbers, so Phi is accurate in absolute terms,
// not relative ones, in the negative tail (|y| < 3e-6 there): gelu is at most 1.2e-6 from the
// exact value, at most 0.80 of the backend's 1e-6 + 1e-5 |y| tolerance with FMA contraction
// and 0.84 without (0.73 and 0.89 before; tests/cpu/vmath_test.cpp), 0.83 in a loop vectorised
// as the fused kernel's (0.82 before): the worst is between -5.8 and -5. PyTorch's vectorised CPU
// GELU and XLA's share this accuracy. An erfc-based form keeps the tail's relative accuracy
// (what this function was before: exp and a division more) and timed 2.4x slower in a
// standalone loop. Refitted rationals of one degree less (one FMA fewer) exceed the tolerance
// in the portable build (fit_vmath.py says by how much).
// x is clamped through its bits by two integer mins (one instruction each): unsigned, which
// leaves positive floats alone and limits negative ones to -6.375, then signed, which limits
// positive ones to 5.625. At 5.625 N / D rounds to exactly 1 (with and without FMA
// contraction; 1 - Phi(5.625) = 9e-9 < half an ulp), so gelu(x) = x beyond. At -6.375 the
// rational overshoots (erf_R - 1 = +4e-7 in exact arithmetic), so N < 0 with a margin of
// several roundings, and an integer max on N's bits raises it to 0: gelu is 0 below (the
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
