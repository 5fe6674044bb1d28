// f16 / bf16 conversions (semantics/half.h, backends/cpu/half.h): hand-computed IEEE 754
// binary16 and bfloat16 bit patterns for rounding to nearest even, ties, overflow, subnormals,
// signed zeros, infinities and nan, through the reference cast and the CPU cast on every
// compiled instruction-set path (F16C and the integer code agree bit for bit).
#include "backends/cpu/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "cpu_test_util.h"
#include "semantics/half.h"

namespace spora::cpu::testing {
namespace {

constexpr DType f16 = DType::f16, bf16 = DType::bf16, f32 = DType::f32, f64 = DType::f64;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// A 1-D tensor of `dt` holding `values` (set from double: exact for these inputs).
Tensor make(DType dt, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dt, {static_cast<int64_t>(values.size())});
  if (dt == f32) {
    for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = static_cast<float>(values[i]);
  } else {
    for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  }
  return t;
}
Tensor halves(DType dt, const std::vector<uint16_t>& hs) {
  Tensor t = Tensor::empty(dt, {static_cast<int64_t>(hs.size())});
  std::memcpy(t.raw(), hs.data(), hs.size() * 2);
  return t;
}
std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.raw(), out.size() * 2);
  return out;
}

// The cast of x to `to` by the reference and by the CPU kernel on every instruction set.
template <class Check>
void each_cast(const Tensor& x, DType to, Check&& check) {
  check(ref_call("cast", {x}, A({{"dtype", Attr{to}}})).tensor, "reference");
  Isa saved = force_isa(Isa::base);
  for (Isa level : {Isa::base, Isa::avx2, Isa::avx512}) {
    force_isa(level);
    check(cpu_call("cast", {x}, A({{"dtype", Attr{to}}})).tensor,
          "cpu isa " + std::to_string(static_cast<int>(level)));
  }
  force_isa(saved);
}

void expect_halves(const Tensor& x, DType to, const std::vector<uint16_t>& want) {
  each_cast(x, to, [&](const Tensor& got, const std::string& who) {
    ASSERT_EQ(got.dtype(), to) << who;
    std::vector<uint16_t> g = bits16(got);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(g[i], want[i]) << who << ": element " << i << " of " << x.type()->str() << " ("
                               << x.get(static_cast<int64_t>(i)) << ") to " << dtype_name(to);
  });
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(Half, F32ToF16RoundsToNearestEven) {
  const std::vector<double> v = {
      1.0,
      -2.0,
      0.1,
      1.0 / 3,
      65504,
      65519.99609375,
      65520,
      1e6,
      kInf,
      -kInf,
      0.0,
      -0.0,
      std::ldexp(1.0, -14),              // smallest normal
      std::ldexp(1023.0, -24),           // largest subnormal
      std::ldexp(1.0, -24),              // smallest subnormal
      std::ldexp(1.0, -25),              // half of it: tie to even 0
      std::ldexp(3.0, -25),              // 1.5 units: tie to even 2
      std::ldexp(1.0, -25) * 1.0000001,  // just above the tie: 1 unit
      -std::ldexp(5.0, -26),             // -1.25 units: -1
      1.0 + std::ldexp(1.0, -11),        // tie: even 0x3c00
      1.0 + std::ldexp(3.0, -11),        // tie: even 0x3c02
      std::ldexp(1023.5, -24),           // subnormal tie rounding up into the normals
  };
  expect_halves(make(f32, v), f16, {0x3c00, 0xc000, 0x2e66, 0x3555, 0x7bff, 0x7bff, 0x7c00, 0x7c00,
                                    0x7c00, 0xfc00, 0x0000, 0x8000, 0x0400, 0x03ff, 0x0001, 0x0000,
                                    0x0002, 0x0001, 0x8001, 0x3c00, 0x3c02, 0x0400});
}

TEST(Half, F32ToF16NanIsQuietWithItsSign) {
  Tensor x = Tensor::empty(f32, {4});
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa00000u};  // q, -q, s, s
  std::memcpy(x.raw(), nans, sizeof nans);
  // Payload truncated to its top 10 bits, quiet bit set (what vcvtps2ph does).
  expect_halves(x, f16, {0x7e00, 0xfe00, 0x7e00, 0x7f00});
}

TEST(Half, F32ToBf16RoundsToNearestEven) {
  const std::vector<double> v = {1.0,
                                 -1.0,
                                 1.0 + std::ldexp(1.0, -8),  // tie: even 0x3f80
                                 1.0 + std::ldexp(3.0, -8),  // tie: even 0x3f82
                                 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -20),
                                 3.3895313892515355e38,              // largest bf16
                                 std::numeric_limits<float>::max(),  // rounds up to inf
                                 kInf,
                                 -kInf,
                                 -0.0,
                                 1e-40,  // f32 subnormal 0x000116c2: bf16 subnormal 0x0001
                                 0.1};
  expect_halves(make(f32, v), bf16,
                {0x3f80, 0xbf80, 0x3f80, 0x3f82, 0x3f81, 0x7f7f, 0x7f80, 0x7f80, 0xff80, 0x8000,
                 0x0001, 0x3dcd});
  Tensor x = Tensor::empty(f32, {3});
  const uint32_t nans[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u};
  std::memcpy(x.raw(), nans, sizeof nans);
  expect_halves(x, bf16, {0x7fc0, 0xffc0, 0x7fc0});
}

TEST(Half, F64RoundsOnceNotThroughF32) {
  // 1 + 2^-11 + 2^-40: f32 would round it to the tie 1 + 2^-11 and then to even 1.0; rounded
  // once it is just above the tie.
  const std::vector<double> v = {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
                                 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40),
                                 65519.999999,
                                 65520.0,
                                 -1e300,
                                 1e-300,
                                 -1e-300};
  expect_halves(make(f64, v), f16, {0x3c01, 0x3c00, 0x7bff, 0x7c00, 0xfc00, 0x0000, 0x8000});
  const std::vector<double> w = {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), 1e300};
  expect_halves(make(f64, w), bf16, {0x3f81, 0x7f80});
}

TEST(Half, IntegersToLowPrecision) {
  // f16 spacing is 2 from 2048 and 32 from 32768: 2049 and 2051 are ties (to even), 65505
  // rounds down to 65504, 70000 overflows.
  expect_halves(make(DType::i32, {0, -1, 2049, 2051, 65505, 70000, -70000}), f16,
                {0x0000, 0xbc00, 0x6800, 0x6802, 0x7bff, 0x7c00, 0xfc00});
  expect_halves(make(DType::i64, {257, 259, 1 << 20}), bf16, {0x4380, 0x4382, 0x4980});
  expect_halves(make(DType::boolean, {0, 1}), f16, {0x0000, 0x3c00});
}

TEST(Half, WideningIsExact) {
  Tensor h = halves(f16, {0x0001, 0x03ff, 0x0400, 0x7bff, 0xfc00, 0x8000, 0x3555, 0x7c01, 0xfe00});
  const uint32_t want[] = {bits(std::ldexp(1.0f, -24)),
                           bits(std::ldexp(1023.0f, -24)),
                           bits(std::ldexp(1.0f, -14)),
                           bits(65504.0f),
                           0xff800000u,
                           0x80000000u,
                           bits(0.333251953125f),
                           0x7fc02000u,
                           0xffc00000u};
  each_cast(h, f32, [&](const Tensor& got, const std::string& who) {
    for (int64_t i = 0; i < 9; ++i)
      EXPECT_EQ(bits(got.data<float>()[i]), want[i]) << who << ": element " << i;
  });
  Tensor b = halves(bf16, {0x3f80, 0x0001, 0xff80, 0x7fc1});
  each_cast(b, f32, [&](const Tensor& got, const std::string& who) {
    EXPECT_EQ(bits(got.data<float>()[0]), 0x3f800000u) << who;
    EXPECT_EQ(bits(got.data<float>()[1]), 0x00010000u) << who;
    EXPECT_EQ(bits(got.data<float>()[2]), 0xff800000u) << who;
    EXPECT_EQ(bits(got.data<float>()[3]), 0x7fc10000u) << who;
  });
}

TEST(Half, LowPrecisionToIntegersAndBool) {
  Tensor h = halves(f16, {0x3e00, 0xbe00, 0x7e00, 0x7c00, 0x8000});  // 1.5 -1.5 nan inf -0
  each_cast(h, DType::i32, [&](const Tensor& got, const std::string& who) {
    const int32_t want[] = {1, -1, 0, 2147483647, 0};
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got.data<int32_t>()[i], want[i]) << who << " " << i;
  });
  each_cast(h, DType::boolean, [&](const Tensor& got, const std::string& who) {
    const uint8_t want[] = {1, 1, 1, 1, 0};
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(got.data<uint8_t>()[i], want[i]) << who << " " << i;
  });
  each_cast(h, bf16, [&](const Tensor& got, const std::string& who) {  // exact through f32
    EXPECT_EQ(bits16(got), (std::vector<uint16_t>{0x3fc0, 0xbfc0, 0x7fc0, 0x7f80, 0x8000})) << who;
  });
}

TEST(Half, EveryF16WidensAndNarrowsBackOnEveryPath) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  Tensor h = halves(f16, all);
  Tensor want = Tensor::empty(f32, {65536});
  for (uint32_t i = 0; i < 65536; ++i) want.data<float>()[i] = half::f16_to_f32(all[i]);
  each_cast(h, f32, [&](const Tensor& got, const std::string& who) {
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << who;
    for (uint32_t i = 0; i < 65536; ++i) {  // the software widening agrees with the F16C one
      if (!std::isnan(got.data<float>()[i])) {
        ASSERT_EQ(got.get(i), h.get(i)) << who << " " << i;
      }
    }
  });
  // Non-nan halves survive f16 -> f32 -> f16; nans come back quiet.
  Tensor wide = cpu_call("cast", {h}, A({{"dtype", Attr{f32}}})).tensor;
  each_cast(wide, f16, [&](const Tensor& got, const std::string& who) {
    std::vector<uint16_t> g = bits16(got);
    for (uint32_t i = 0; i < 65536; ++i) {
      const bool nan = (i & 0x7c00u) == 0x7c00u && (i & 0x3ffu);
      ASSERT_EQ(g[i], nan ? (i | 0x200u) : i) << who << " " << i;
    }
  });
}

TEST(Half, RandomF32BitPatternsAgreeAcrossPaths) {
  std::mt19937 rng(7);
  Tensor x = Tensor::empty(f32, {200000});
  for (int64_t i = 0; i < x.numel(); ++i) {
    uint32_t u = rng();
    if (i % 2) u = (u & 0x80ffffffu) | ((100u + rng() % 50u) << 23);  // near the f16 range
    x.data<float>()[i] = from_bits(u);
  }
  for (DType to : {f16, bf16}) {
    std::vector<uint16_t> want(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i)
      want[i] =
          to == f16 ? half::f32_to_f16(x.data<float>()[i]) : half::f32_to_bf16(x.data<float>()[i]);
    each_cast(x, to, [&](const Tensor& got, const std::string& who) {
      EXPECT_EQ(bits16(got), want) << who << " to " << dtype_name(to);
    });
  }
}

}  // namespace
}  // namespace spora::cpu::testing
