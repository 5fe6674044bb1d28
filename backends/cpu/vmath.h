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
//
// With AVX-512, tanh and gelu have a second form (end of this file): piecewise polynomials
// from 32-entry tables, one `vpermt2ps` per coefficient for 16 lanes, written with intrinsics
// (GCC does not vectorise a table lookup into a permute): 18 instructions each, no division,
// and more accurate (tanh 0.99 ulp, gelu 0.013 of the tolerance). The CPU backend's f32 tanh
// and gelu kernels and the fused kernels' explicit AVX-512 loops use it; everything else (the
// portable and AVX2 paths, loops GCC vectorises) uses the functions above.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// A generated kernel unit that does not use the table forms defines SPORA_VM_NO_TABLE_FORMS
// (backends/codegen: <immintrin.h> alone costs 0.15 s of every kernel's compile).
#if defined(__x86_64__) && !defined(SPORA_VM_NO_TABLE_FORMS)
#include <immintrin.h>
#endif

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

// ---- Table forms of tanh and gelu (AVX-512) -------------------------------------------------
//
// With AVX-512 the two functions above are replaced by piecewise polynomials whose coefficients
// come from 32-entry tables, looked up for 16 lanes at once by one `vpermt2ps` (two zmm
// registers hold a table): no division, no exponential, no select. tanh16 / gelu16 are the
// vector forms, tanh_table / gelu_table their scalar twins, which give the same bits (same
// operations, explicit FMA): tails and tests use them. The _n forms map an array.
//
// tanh: a = min(12, |x|) (nan passes), interval from the bits of a: u = max(bits >> 21, 491),
// slot u & 31 (the tables are stored rotated): [0, 1/16) (odd polynomial a + c3 a^3 + c5 a^5,
// relative), then 4 intervals per binade up to 8, [8, 10), [10, 12) and [12, inf) where the
// polynomial is the constant 1. On each, c0 + t (c1 + ... + t c5), t = a - m, where m is a
// float near the middle whose tanh is within 2^-12 ulp of an f32 (c0 = that f32, Gal's
// accurate tables), so t is exact (Sterbenz) and c0 adds no rounding. Result: the sign of x
// put back. 0.99 ulp at most over all floats (the worst below 1/16, where 1 + t^2 (...) rounds
// before the product; above it 0.73), tests/cpu/vmath_test.cpp; 18 vector instructions
// against tanh()'s 25 above, one of them a division.
//
// gelu: x Phi(xc), xc clamped through its bits to [-5.875, 6] (two integer mins, as gelu()
// does); 32 intervals of 0.375 from -5.875: k = (int)((xc + 5.875) / 0.375) (an FMA, rounded,
// then truncated: which interval does not need to be exact), t = xc - m_k, Phi = c0 + t (c1 +
// ... + t c5). m_k: in [-5.5, 4) a float near the interval's start whose Phi is within 2^-12
// ulp of an f32 (c0, as tanh's); from 4 on m_k = start - 1 and c0 = 1, the polynomial giving
// Phi - 1, so Phi rounds to exactly 1 where it should (gelu(x) = x from about 5.42 on);
// interval 0 has m_0 = -5.875 and c0 = 0, so xc = -5.875 gives Phi = 0 exactly (gelu(-inf) =
// -inf * 0 = nan, as the reference); the last one, [5.75, 6.125), is the constant 1. t is
// within half an ulp of xc - m_k (not always exact: 1e-8 at most, 4e-9 in Phi). Phi is within
// 8e-9 of the exact value (absolute), so gelu is within 1 ulp plus 1e-8 |x|: 0.013 of the
// backend tolerance at most (gelu() above: 0.80 of it). 18 vector instructions against
// gelu()'s 20 above, one of them a division.
//
// Tables: backends/cpu/tools/fit_vmath_tables.py prints them (mpmath: weighted least squares
// with Lawson reweighting toward minimax, on Chebyshev points).
#if !defined(SPORA_VM_NO_TABLE_FORMS)
namespace tab {
alignas(64) inline constexpr float kTanhM[32] = {
    2.2501092f, 2.74952292f, 3.24937725f, 3.75008559f,
    4.49812365f, 5.50036287f, 6.49897337f, 7.5130353f,
    8.66434002f, 0.0f, 0.0f, 0.0f,
    0.0703241304f, 0.0859252959f, 0.101560496f, 0.117191508f,
    0.140629709f, 0.171887636f, 0.203132033f, 0.234345883f,
    0.281243235f, 0.34375155f, 0.406266391f, 0.468766272f,
    0.562476516f, 0.687473178f, 0.812374413f, 0.937473834f,
    1.1251353f, 1.37474239f, 1.62498569f, 1.87500703f,
};
alignas(64) inline constexpr float kTanhC0[32] = {
    0.97803086f, 0.991851985f, 0.996993899f, 0.998894632f,
    0.999752283f, 0.999966621f, 0.99999547f, 0.999999404f,
    0.99999994f, 1.0f, 1.0f, 0.0f,
    0.0702084303f, 0.085714452f, 0.101212747f, 0.116657943f,
    0.13970992f, 0.170214579f, 0.200383469f, 0.230148137f,
    0.274055332f, 0.330822498f, 0.385297924f, 0.437201947f,
    0.509812593f, 0.596356273f, 0.67089802f, 0.734059453f,
    0.809347749f, 0.879768491f, 0.925344169f, 0.954045892f,
};
alignas(64) inline constexpr float kTanhC1[32] = {
    0.0434556343f, 0.0162296426f, 0.00600316655f, 0.00220951531f,
    0.000495384447f, 6.67581262e-05f, 9.06010791e-06f, 1.19218282e-06f,
    1.1861993e-07f, 0.0f, 0.0f, 1.0f,
    0.995070755f, 0.992653012f, 0.989755988f, 0.986390948f,
    0.980481148f, 0.971027017f, 0.959846437f, 0.947031856f,
    0.924893677f, 0.890556455f, 0.851545513f, 0.808854461f,
    0.740091145f, 0.644359171f, 0.549895823f, 0.461156726f,
    0.344956219f, 0.226007402f, 0.143738165f, 0.0897964388f,
};
alignas(64) inline constexpr float kTanhC2[32] = {
    -0.042499736f, -0.0160964802f, -0.00598470913f, -0.00220691157f,
    -0.000494645559f, -6.66719716e-05f, -9.04844546e-06f, -1.19091897e-06f,
    -1.19412263e-07f, 0.0f, 0.0f, 0.0f,
    -0.0698623434f, -0.0850846171f, -0.10017582f, -0.115070246f,
    -0.136983022f, -0.16528295f, -0.192337304f, -0.217957631f,
    -0.253472f, -0.294616073f, -0.328098714f, -0.353632748f,
    -0.377307504f, -0.384267569f, -0.368924081f, -0.338516563f,
    -0.279191494f, -0.198835343f, -0.133007705f, -0.0856699944f,
};
alignas(64) inline constexpr float kTanhC3[32] = {
    0.0270823687f, 0.0105559845f, 0.0039658607f, 0.00146801444f,
    0.000329636707f, 4.44398866e-05f, 6.0324619e-06f, 7.92790047e-07f,
    8.37128127e-08f, 0.0f, 0.0f, -0.333332986f,
    -0.326785088f, -0.323590279f, -0.319778591f, -0.315372348f,
    -0.307689756f, -0.295542121f, -0.281407297f, -0.265514821f,
    -0.238832459f, -0.199386641f, -0.157432854f, -0.115009315f,
    -0.054341808f, 0.0143734794f, 0.0642115474f, 0.0947722793f,
    0.110978149f, 0.099593699f, 0.0751656443f, 0.0518012159f,
};
alignas(64) inline constexpr float kTanhC4[32] = {
    -0.012383326f, -0.00515206857f, -0.00198027049f, -0.000739107491f,
    -0.00017259529f, -2.32995371e-05f, -3.16366732e-06f, -4.1523765e-07f,
    -4.1239268e-08f, 0.0f, 0.0f, 0.0f,
    0.0459478684f, 0.0545130484f, 0.0641020089f, 0.0737276077f,
    0.0889650658f, 0.105380729f, 0.120241001f, 0.133825108f,
    0.149832278f, 0.164062276f, 0.169954821f, 0.168102801f,
    0.153266966f, 0.119454689f, 0.0799355656f, 0.0433637127f,
    0.00364789227f, -0.0211011525f, -0.0251283161f, -0.0208497159f,
};
alignas(64) inline constexpr float kTanhC5[32] = {
    0.00397671387f, 0.00191629364f, 0.000771233754f, 0.000292946177f,
    6.85907216e-05f, 9.31889372e-06f, 1.2619912e-06f, 1.70629107e-07f,
    9.87045468e-09f, 0.0f, 0.0f, 0.13304019f,
    0.12360809f, 0.108041838f, 0.105984382f, 0.1059293f,
    0.114326365f, 0.102182284f, 0.0898099765f, 0.0790799558f,
    0.0590154156f, 0.0320509635f, 0.00601940649f, -0.0170923397f,
    -0.0433422439f, -0.0615242049f, -0.062667951f, -0.0530773178f,
    -0.0321119726f, -0.00955097843f, 0.00138152286f, 0.00459700497f,
};
alignas(64) inline constexpr float kGeluM[32] = {
    -5.875f, -5.49934816f, -5.12359142f, -4.74968195f,
    -4.37445068f, -3.99975991f, -3.62498045f, -3.24886656f,
    -2.87479949f, -2.49992514f, -2.12438536f, -1.74987769f,
    -1.37458408f, -0.999970555f, -0.624855459f, -0.249949232f,
    0.125017777f, 0.500127137f, 0.875405371f, 1.25000525f,
    1.62509561f, 2.00001311f, 2.37690806f, 2.75082111f,
    3.12504673f, 3.50019598f, 3.87593627f, 3.25f,
    3.625f, 4.0f, 4.375f, 5.75f,
};
alignas(64) inline constexpr float kGeluC0[32] = {
    0.0f, 1.90598897e-08f, 1.49885096e-07f, 1.01868409e-06f,
    6.08693199e-06f, 3.17033882e-05f, 0.000144491656f, 0.000579329091f,
    0.00202142075f, 0.00621097768f, 0.0168189667f, 0.0400697105f,
    0.0846302137f, 0.158662379f, 0.266032964f, 0.401313305f,
    0.549745262f, 0.69150722f, 0.809323311f, 0.894351184f,
    0.947928905f, 0.977250576f, 0.991270781f, 0.997027695f,
    0.999111116f, 0.999767542f, 0.999946892f, 1.0f,
    1.0f, 1.0f, 1.0f, 1.0f,
};
alignas(64) inline constexpr float kGeluC1[32] = {
    5.88828764e-09f, 1.08296796e-07f, 7.96233223e-07f, 5.04047694e-06f,
    2.79107444e-05f, 0.000133980793f, 0.000559136213f, 0.00203656172f,
    0.00640177308f, 0.017531421f, 0.0417752489f, 0.0862956196f,
    0.155101091f, 0.241978377f, 0.328191161f, 0.386673152f,
    0.395836383f, 0.352042347f, 0.271958172f, 0.182647958f,
    0.106521972f, 0.0539897606f, 0.0236644521f, 0.00907303859f,
    0.0030217797f, 0.000872056931f, 0.000218124755f, -0.000593175238f,
    -0.000120520956f, -2.12123414e-05f, -3.23364702e-06f, 0.0f,
};
alignas(64) inline constexpr float kGeluC2[32] = {
    1.95076655e-06f, 2.89502822e-07f, 2.00378622e-06f, 1.18393864e-05f,
    6.06677495e-05f, 0.000267088559f, 0.00101205613f, 0.00330718188f,
    0.00920323003f, 0.0219197106f, 0.044383239f, 0.0755100921f,
    0.10659381f, 0.120965809f, 0.102515198f, 0.0483195186f,
    -0.0247279461f, -0.0880108848f, -0.119024478f, -0.114157468f,
    -0.0865634456f, -0.0539979041f, -0.0281270556f, -0.0124788256f,
    -0.00472028693f, -0.00152518367f, -0.000422214536f, 0.00163007248f,
    0.000336288154f, 5.99872801e-05f, 9.2534583e-06f, 0.0f,
};
alignas(64) inline constexpr float kGeluC3[32] = {
    -2.07675021e-05f, 6.16344892e-07f, 3.74166871e-06f, 1.95463072e-05f,
    8.85796981e-05f, 0.000344569533f, 0.00114713842f, 0.00325626228f,
    0.00773685798f, 0.0152691575f, 0.0243428983f, 0.02957494f,
    0.0230582897f, 0.000232309292f, -0.0330866501f, -0.0603526793f,
    -0.0651227832f, -0.0442700535f, -0.0107495198f, 0.0171436537f,
    0.0292469524f, 0.0270944871f, 0.0183777288f, 0.00992715452f,
    0.00439821929f, 0.00162229966f, 0.000503161922f, -0.00172056525f,
    -0.000359304482f, -6.47885972e-05f, -1.00906282e-05f, 0.0f,
};
alignas(64) inline constexpr float kGeluC4[32] = {
    7.5519376e-05f, 2.30899218e-07f, 1.97200211e-06f, 1.22107767e-05f,
    6.04382294e-05f, 0.000240104171f, 0.000773102394f, 0.00201033428f,
    0.00410118699f, 0.00629032543f, 0.0062116147f, 0.000856171886f,
    -0.0101637989f, -0.0213809498f, -0.0236779917f, -0.0122501682f,
    0.0070640319f, 0.021626424f, 0.0230469275f, 0.0136097018f,
    0.00199041795f, -0.00504061067f, -0.00643421663f, -0.00473905494f,
    -0.00257463567f, -0.00110528956f, -0.000386558328f, 0.000822833972f,
    0.000173512846f, 3.15613761e-05f, 4.95427321e-06f, 0.0f,
};
alignas(64) inline constexpr float kGeluC5[32] = {
    -8.86510534e-05f, 1.59550041e-06f, 7.76964134e-06f, 3.16152255e-05f,
    0.000107005726f, 0.000295391539f, 0.000646510744f, 0.0010540752f,
    0.00105048285f, -0.000120295656f, -0.00275171734f, -0.00553375669f,
    -0.00565484539f, -0.00125833112f, 0.00563129131f, 0.00978573598f,
    0.00764558418f, 0.00107157137f, -0.0046457327f, -0.00602643145f,
    -0.00381795689f, -0.00088680262f, 0.000817156804f, 0.0011351303f,
    0.000795065716f, 0.00039820245f, 0.000155268586f, -0.00014985232f,
    -3.18480561e-05f, -5.83427482e-06f, -9.2173218e-07f, 0.0f,
};
}  // namespace tab

SPORA_INLINE float tanh_table(float x) {
  float a = std::fabs(x);
  float ac = 12.0f < a ? 12.0f : a;  // nan stays
  uint32_t u = static_cast<uint32_t>(float_to_bits(ac)) >> 21;
  const unsigned s = (u > 491u ? u : 491u) & 31u;
  float t = ac - tab::kTanhM[s];
  float h = tab::kTanhC5[s];
  h = std::fma(h, t, tab::kTanhC4[s]);
  h = std::fma(h, t, tab::kTanhC3[s]);
  h = std::fma(h, t, tab::kTanhC2[s]);
  h = std::fma(h, t, tab::kTanhC1[s]);
  return std::copysign(std::fma(h, t, tab::kTanhC0[s]), x);
}

SPORA_INLINE float gelu_table(float x) {
  uint32_t u = static_cast<uint32_t>(float_to_bits(x));
  u = u < 0xc0bc0000u ? u : 0xc0bc0000u;  // -5.875f
  int32_t i = static_cast<int32_t>(u);
  i = i < 0x40c00000 ? i : 0x40c00000;  // 6.0f
  float xc = bits_to_float(i);
  const int32_t k = static_cast<int32_t>(std::fma(xc, 2.66666675f, 15.666667f));
  float t = xc - tab::kGeluM[k];
  float p = tab::kGeluC5[k];
  p = std::fma(p, t, tab::kGeluC4[k]);
  p = std::fma(p, t, tab::kGeluC3[k]);
  p = std::fma(p, t, tab::kGeluC2[k]);
  p = std::fma(p, t, tab::kGeluC1[k]);
  return x * std::fma(p, t, tab::kGeluC0[k]);
}

#if defined(__x86_64__)
#define SPORA_VM_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))

SPORA_VM_AVX512 SPORA_INLINE __m512 table16(const float* t, __m512i k) {
  return _mm512_permutex2var_ps(_mm512_load_ps(t), k, _mm512_load_ps(t + 16));
}

SPORA_VM_AVX512 SPORA_INLINE __m512 tanh16(__m512 x) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
  __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(x)));
  __m512 ac = _mm512_min_ps(_mm512_set1_ps(12.0f), a);  // (12 < a) ? 12 : a
  __m512i s = _mm512_max_epu32(_mm512_srli_epi32(_mm512_castps_si512(ac), 21),
                               _mm512_set1_epi32(491));
  __m512 t = _mm512_sub_ps(ac, table16(tab::kTanhM, s));
  __m512 h = table16(tab::kTanhC5, s);
  h = _mm512_fmadd_ps(h, t, table16(tab::kTanhC4, s));
  h = _mm512_fmadd_ps(h, t, table16(tab::kTanhC3, s));
  h = _mm512_fmadd_ps(h, t, table16(tab::kTanhC2, s));
  h = _mm512_fmadd_ps(h, t, table16(tab::kTanhC1, s));
  __m512 r = _mm512_fmadd_ps(h, t, table16(tab::kTanhC0, s));
  // r | (x & sign): r >= +0, so this is copysign.
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(r),
                                                       _mm512_castps_si512(x), sign, 0xf8));
}

SPORA_VM_AVX512 SPORA_INLINE __m512 gelu16(__m512 x) {
  __m512i u = _mm512_min_epu32(_mm512_castps_si512(x),
                               _mm512_set1_epi32(static_cast<int32_t>(0xc0bc0000u)));
  __m512 xc = _mm512_castsi512_ps(_mm512_min_epi32(u, _mm512_set1_epi32(0x40c00000)));
  __m512i k = _mm512_cvttps_epi32(
      _mm512_fmadd_ps(xc, _mm512_set1_ps(2.66666675f), _mm512_set1_ps(15.666667f)));
  __m512 t = _mm512_sub_ps(xc, table16(tab::kGeluM, k));
  __m512 p = table16(tab::kGeluC5, k);
  p = _mm512_fmadd_ps(p, t, table16(tab::kGeluC4, k));
  p = _mm512_fmadd_ps(p, t, table16(tab::kGeluC3, k));
  p = _mm512_fmadd_ps(p, t, table16(tab::kGeluC2, k));
  p = _mm512_fmadd_ps(p, t, table16(tab::kGeluC1, k));
  return _mm512_mul_ps(x, _mm512_fmadd_ps(p, t, table16(tab::kGeluC0, k)));
}

// y[i] = F(x[i]), i < n; y may be x. Two vectors per iteration (independent chains side by
// side), the last n % 16 by the scalar twin.
#define SPORA_VM_MAP16(NAME, V16, SCALAR)                                        \
  SPORA_VM_AVX512 inline void NAME(const float* x, float* y, int64_t n) {        \
    int64_t i = 0;                                                               \
    for (; i + 32 <= n; i += 32) {                                               \
      __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);        \
      _mm512_storeu_ps(y + i, V16(a));                                           \
      _mm512_storeu_ps(y + i + 16, V16(b));                                      \
    }                                                                            \
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, V16(_mm512_loadu_ps(x + i))); \
    for (; i < n; ++i) y[i] = SCALAR(x[i]);                                      \
  }
SPORA_VM_MAP16(tanh_n_avx512, tanh16, tanh_table)
SPORA_VM_MAP16(gelu_n_avx512, gelu16, gelu_table)
#undef SPORA_VM_MAP16
#endif  // __x86_64__
#endif  // SPORA_VM_NO_TABLE_FORMS

}  // namespace spora::cpu::vm
