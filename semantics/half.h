// Conversions between the 16-bit float dtypes (IEEE 754 binary16 `f16`, bfloat16 `bf16`, both
// stored as uint16_t) and f32 / f64: the one definition the reference (sem::Tensor get, set and
// cast) and the CPU kernels (backends/cpu/half.h) share, so both round the same way.
//
// - Narrowing rounds to nearest, ties to even, once: f64 goes to f32 with round-to-odd first
//   (24 bits are more than 11 + 2, so the second rounding cannot create a tie), never through
//   an f32 rounded to nearest (double rounding).
// - f16: values from 65520 up overflow to inf (the largest finite half is 65504); magnitudes
//   below 2^-14 become subnormals (unit 2^-24), below 2^-25 zero; -0 stays -0.
// - bf16: the top 16 bits of the f32 after rounding to nearest even; f32's range, so only
//   values from 3.3961775e38 up overflow.
// - nan stays nan with its sign, made quiet (f16: quiet bit 0x0200, bf16: 0x0040), its payload
//   truncated: what the x86 F16C instructions (vcvtps2ph, vcvtph2ps) do, so the CPU kernels
//   that use them agree bit for bit.
// - Widening is exact (a signalling f16 nan widens quiet, as vcvtph2ps does).
//
// The bodies are branch-free selects over integer and float operations, so the compiler
// vectorises loops over them. They need IEEE round-to-nearest float addition (no -ffast-math,
// no flush-to-zero), which Spora never changes.
#pragma once

#include <cstdint>
#include <cstring>

namespace spora::half {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32 -> f16, round to nearest even.
inline uint16_t f32_to_f16(float f) {
  const uint32_t u = bits_of(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal halves (a >= 2^-14): rebias the exponent (15 - 127) and add 0xfff plus the lowest
  // kept bit, so the 13 dropped bits round to nearest even; a carry out of the mantissa bumps
  // the exponent (65520 becomes 0x7c00, inf).
  const uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;
  // Subnormals and zero: adding 0.5 (ulp 2^-24, the half subnormal unit) rounds the value to
  // a multiple of 2^-24 in float arithmetic; the multiple is then the low bits.
  const uint32_t sub = bits_of(float_of(a) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  const uint32_t big = a > 0x7f800000u ? nan : 0x7c00u;  // nan, or inf / >= 65536
  const uint32_t h = a >= 0x47800000u ? big : (a < 0x38800000u ? sub : normal);
  return static_cast<uint16_t>(sign | h);
}

// f16 -> f32, exact.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa
  const uint32_t exp = em & 0x0f800000u;
  const uint32_t normal = em + 0x38000000u;  // rebias 127 - 15
  // Subnormals: set the exponent to 2^-14 and subtract its implicit one (exact).
  const uint32_t sub = bits_of(float_of(em + 0x38800000u) - float_of(0x38800000u));
  const uint32_t special = (em + 0x70000000u) | (em > 0x0f800000u ? 0x00400000u : 0u);
  const uint32_t r = exp == 0x0f800000u ? special : (exp == 0 ? sub : normal);
  return float_of(sign | r);
}

// f32 -> bf16, round to nearest even.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// bf16 -> f32, exact.
inline float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

// f64 -> f32 rounded to odd: truncated toward zero, with the lowest bit set when inexact.
// A value rounded to odd to p + 2 or more bits then rounds to p bits like the exact value.
inline float f64_to_f32_odd(double d) {
  float f = static_cast<float>(d);
  const double back = static_cast<double>(f);
  if (back != d && d == d) {
    uint32_t u = bits_of(f);
    if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) --u;  // rounded away from zero: step back
    f = float_of(u | 1u);
  }
  return f;
}

inline uint16_t f64_to_f16(double d) { return f32_to_f16(f64_to_f32_odd(d)); }
inline uint16_t f64_to_bf16(double d) { return f32_to_bf16(f64_to_f32_odd(d)); }

}  // namespace spora::half
