// Computing on f16 / bf16 (semantics/low_precision.h): every elementwise, reduction and
// normalisation row, and matmul, takes low-precision tensors on the reference and on the CPU,
// computes in f32 and rounds once. Checked against the same op in f64 on the same (exactly
// representable) inputs, rounded to the storage type: within 1 ulp of it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_test_util.h"
#include "semantics/half.h"

namespace spora::cpu::testing {
namespace {

constexpr DType f16 = DType::f16, bf16 = DType::bf16, f64 = DType::f64;

// Ordered integer of a 16-bit float (adjacent values differ by 1; -0 and +0 are 0).
int ordered(uint16_t b) { return (b & 0x8000u) ? -static_cast<int>(b & 0x7fffu) : b; }

uint16_t round_low(double v, DType low) {
  return low == f16 ? half::f64_to_f16(v) : half::f64_to_bf16(v);
}

// got (a low tensor) is within `ulps` of want (f64) rounded to got's dtype; nan matches nan.
::testing::AssertionResult within_ulps(const Tensor& want, const Tensor& got, DType low,
                                       int ulps = 1) {
  if (got.dtype() != low || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "got " << got.type()->str() << ", want "
                                         << dtype_name(low) << sem::shape_str(want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get(i);
    const uint16_t g = got.data<uint16_t>()[i];
    const uint16_t r = round_low(w, low);
    if (std::isnan(w) && std::isnan(got.get(i))) continue;
    const uint16_t inf_bits = low == f16 ? 0x7c00u : 0x7f80u;
    const bool inf = (g & 0x7fffu) == inf_bits || (r & 0x7fffu) == inf_bits;
    if (std::abs(ordered(g) - ordered(r)) > ulps || (inf && g != r))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got.get(i) << " (0x" << std::hex << g << "), want "
             << std::dec << w << " rounded to 0x" << std::hex << r;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string op;
  std::vector<Shape> shapes;
  double lo = -2, hi = 2;
  std::vector<std::pair<std::string, Attr>> attrs = {};
};

// Runs `c` on low inputs (the reference and the CPU kernel) and on their f64 copies.
void check(const Case& c, DType low, uint64_t seed, int ulps = 1) {
  Gen gen(seed);
  std::vector<Value> lows, wides;
  for (const Shape& s : c.shapes) {
    Tensor t = gen.tensor(low, s, c.lo, c.hi);  // set() rounds to the low dtype
    lows.emplace_back(t);
    wides.emplace_back(t.cast(f64));  // exact
  }
  Attrs attrs = A(c.attrs);
  Value want = ref_call(c.op, wides, attrs);
  for (const bool cpu : {false, true}) {
    Value got = cpu ? cpu_call(c.op, lows, attrs) : ref_call(c.op, lows, attrs);
    const std::string who =
        c.op + " on " + std::string(dtype_name(low)) + (cpu ? " (cpu)" : " (reference)");
    if (want.kind == Value::Kind::Tuple) {
      for (size_t k = 0; k < want.items().size(); ++k)
        EXPECT_TRUE(within_ulps(want.items()[k].tensor, got.items()[k].tensor, low, ulps))
            << who << " result " << k;
    } else if (!is_float(want.tensor.dtype())) {  // argmax: the same indices
      ASSERT_EQ(got.tensor.dtype(), want.tensor.dtype()) << who;
      for (int64_t i = 0; i < want.tensor.numel(); ++i)
        EXPECT_EQ(got.tensor.get(i), want.tensor.get(i)) << who << " element " << i;
    } else {
      EXPECT_TRUE(within_ulps(want.tensor, got.tensor, low, ulps)) << who;
    }
  }
}

const char* kUnary[] = {"neg", "abs",  "sign",    "square", "relu", "floor", "ceil", "round",
                        "exp", "tanh", "sigmoid", "gelu",   "sin",  "cos",   "erf",  "expm1"};
const char* kPositive[] = {"log", "sqrt", "rsqrt", "log1p", "reciprocal"};
const char* kBinary[] = {"add", "sub", "mul", "div", "maximum", "minimum"};

TEST(HalfCompute, ElementwiseRowsRoundOnce) {
  for (DType low : {bf16, f16}) {
    for (const char* op : kUnary) check({op, {{3, 257}}}, low, 1);
    for (const char* op : kPositive) check({op, {{3, 257}}, 0.05, 4}, low, 2);
    for (const char* op : kBinary) check({op, {{4, 65}, {65}}}, low, 3);
    check({"pow", {{4, 65}, {65}}, 0.1, 2}, low, 4);
  }
}

TEST(HalfCompute, ReductionsAccumulateWide) {
  for (DType low : {bf16, f16}) {
    // 4096 terms: an f16 or bf16 accumulator would be off by far more than an ulp.
    check({"sum", {{4096}}, 0, 1}, low, 5);
    check({"mean", {{8, 512}}, 0, 1, {{"axis", Attr{std::vector<int64_t>{1}}}}}, low, 6);
    check({"max", {{8, 33}}, -2, 2, {{"axis", Attr{std::vector<int64_t>{0}}}}}, low, 7);
    check({"min", {{8, 33}}}, low, 8);
    check({"prod", {{6, 5}}, 0.5, 1.5, {{"axis", Attr{std::vector<int64_t>{1}}}}}, low, 9);
    check({"argmax", {{8, 33}}, -2, 2, {{"axis", Attr{int64_t{1}}}}}, low, 10);
  }
}

TEST(HalfCompute, SoftmaxNormalisationAndMatmul) {
  for (DType low : {bf16, f16}) {
    check({"softmax", {{4, 100}}, -4, 4}, low, 11);
    check({"log_softmax", {{4, 100}}, -4, 4}, low, 12);
    check({"logsumexp", {{4, 100}}, -4, 4}, low, 13);
    check({"layer_norm", {{4, 64}, {64}, {64}}}, low, 14);
    // 512-term dot products in f32 (upcast + sgemm + one rounding).
    check({"matmul", {{8, 512}, {512, 16}}, -1, 1}, low, 15);
    check({"matmul", {{2, 3, 64}, {64, 5}}, -1, 1}, low, 16);  // batched
  }
}

TEST(HalfCompute, ConvolutionPoolingAndBatchNorm) {
  for (DType low : {bf16, f16}) {
    check({"conv2d", {{2, 3, 9, 9}, {4, 3, 3, 3}, {4}}, -1, 1, {{"padding", Attr{int64_t{1}}}}},
          low, 20);
    check({"max_pool2d", {{2, 3, 8, 8}}, -2, 2, {{"kernel", Attr{std::vector<int64_t>{2}}}}}, low,
          21);
    check({"avg_pool2d", {{2, 3, 8, 8}}, -2, 2, {{"kernel", Attr{std::vector<int64_t>{2}}}}}, low,
          22);
    // Inference: normalised by the running statistics (positive variances).
    Gen gen(23);
    std::vector<Value> in = {gen.tensor(low, {4, 3, 5}), gen.tensor(low, {3}), gen.tensor(low, {3}),
                             gen.tensor(low, {3}), gen.tensor(low, {3}, 0.5, 2)};
    std::vector<Value> wide;
    for (const Value& v : in) wide.emplace_back(v.tensor.cast(f64));
    const Attrs a = A({{"training", Attr{false}}});
    Value want = ref_call("batch_norm", wide, a);
    for (const bool cpu : {false, true}) {
      Value got = cpu ? cpu_call("batch_norm", in, a) : ref_call("batch_norm", in, a);
      const Value& w0 = want.kind == Value::Kind::Tuple ? want.items()[0] : want;
      const Value& g0 = got.kind == Value::Kind::Tuple ? got.items()[0] : got;
      EXPECT_TRUE(within_ulps(w0.tensor, g0.tensor, low)) << "batch_norm " << (cpu ? "cpu" : "ref");
    }
  }
}

TEST(HalfCompute, CrossEntropyWithIntegerLabels) {
  for (DType low : {bf16, f16}) {
    Gen gen(17);
    Tensor logits = gen.tensor(low, {6, 10}, -3, 3);
    Tensor labels = gen.tensor(DType::i32, {6}, 0, 0, 0, 9);
    Value want = ref_call("cross_entropy", {logits.cast(f64), labels});
    for (const bool cpu : {false, true}) {
      Value got = cpu ? cpu_call("cross_entropy", {logits, labels})
                      : ref_call("cross_entropy", {logits, labels});
      EXPECT_TRUE(within_ulps(want.tensor, got.tensor, low)) << (cpu ? "cpu" : "reference");
    }
  }
}

TEST(HalfCompute, ShapeAndCreationRowsKeepTheDtype) {
  Gen gen(18);
  Tensor x = gen.tensor(f16, {2, 3});
  Value t = cpu_call("transpose", {x});
  ASSERT_EQ(t.tensor.type()->str(), "f16[3,2]");
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(t.tensor.get(j * 2 + i), x.get(i * 3 + j));
  Value z = ref_call(
      "full", {},
      A({{"shape", Attr{std::vector<int64_t>{2}}}, {"value", Attr{0.1}}, {"dtype", Attr{bf16}}}));
  ASSERT_EQ(z.tensor.type()->str(), "bf16[2]");
  EXPECT_EQ(z.tensor.data<uint16_t>()[0], 0x3dcd);  // 0.1 rounded to bf16
  // Random rows round each double draw once (the f64 draw, rounded), and uniform stays below
  // high: in f16 the draws in [1 - 2^-12, 1) round to 1.0, about 16 of 65536.
  const std::vector<int64_t> n = {65536};
  for (const bool cpu : {false, true}) {
    auto call = [&](const std::string& op, DType dt) {
      Attrs a = A({{"shape", Attr{n}}, {"dtype", Attr{dt}}});
      return (cpu ? cpu_call(op, {}, a) : ref_call(op, {}, a)).tensor;
    };
    Tensor g = call("normal", f16), g64 = call("normal", f64);
    Tensor u = call("uniform", f16), u64 = call("uniform", f64);
    ASSERT_EQ(g.dtype(), f16);
    int stepped = 0;
    for (int64_t i = 0; i < n[0]; ++i) {
      ASSERT_EQ(g.data<uint16_t>()[i], half::f64_to_f16(g64.data<double>()[i])) << i;
      const uint16_t want = half::f64_to_f16(u64.data<double>()[i]);
      ASSERT_LT(u.get(i), 1.0) << i;
      if (want == 0x3c00) {
        EXPECT_EQ(u.data<uint16_t>()[i], 0x3bff) << i;  // the largest f16 below 1
        ++stepped;
      } else {
        ASSERT_EQ(u.data<uint16_t>()[i], want) << i;
      }
    }
    EXPECT_GT(stepped, 0) << "no draw rounded up to high: the test checks nothing";
  }
}

TEST(HalfCompute, MixingDtypesIsAnError) {
  Gen gen(19);
  Tensor a = gen.tensor(bf16, {3});
  Tensor b = gen.tensor(DType::f32, {3});
  EXPECT_EQ(
      user_error_of([&] {
        prim("add").infer({a.type(), b.type()}, {});
      }),
      "add operand types do not match: bf16[3] and f32[3] (mixed precision is explicit: cast one "
      "of them, e.g. cast(x, f32), or let set_amp insert the casts)");
}

}  // namespace
}  // namespace spora::cpu::testing
