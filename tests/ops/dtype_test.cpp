// The reference kernels across dtypes: f32, f64, i32, i64 and bool where the op allows them.
#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

Attr L(std::vector<int64_t> v) { return Attr{std::move(v)}; }

TEST(Dtypes, ArithmeticAndReductionsEveryNumericDtype) {
  for (DType d : {f32, f64, i32, i64}) {
    SCOPED_TRACE(std::string(dtype_name(d)));
    Value a = T({2, 2}, {1, 2, 3, 4}, d), b = T({2}, {10, 20}, d);
    Value s = call("add", {a, b});
    EXPECT_EQ(s.tensor.dtype(), d);
    expect_values(s, {11, 22, 13, 24});
    expect_values(call("mul", {a, b}), {10, 40, 30, 80});
    expect_values(call("matmul", {a, a}), {7, 10, 15, 22});
    expect_values(call("sum", {a}, A({{"axis", L({0})}})), {4, 6});
    expect_values(call("max", {a}), {4});
    expect_values(call("transpose", {a}), {1, 3, 2, 4});
    expect_values(call("concat", {a, a}), {1, 2, 3, 4, 1, 2, 3, 4});
    expect_values(call("where", {T({2}, {1, 0}, b8), a, b}), {1, 20, 3, 20});
    expect_values(call("floordiv", {a, T({1}, {3}, d)}), {0, 0, 1, 1});
    expect_values(call("mod", {a, T({1}, {3}, d)}), {1, 2, 0, 1});
    expect_values(call("pow", {a, T({1}, {2}, d)}), {1, 4, 9, 16});
    EXPECT_EQ(fmt(call("lt", {a, b})), "[[true, true], [true, true]]");
  }
}

TEST(Dtypes, F64KeepsDoublePrecision) {
  Value x = T({1}, {0.1}, f64), y = T({1}, {0.2}, f64);
  EXPECT_EQ(fmt(call("add", {x, y})), "[0.30000000000000004]");
  EXPECT_EQ(fmt(call("add", {T({1}, {0.1}), T({1}, {0.2})})), "[0.3]");  // f32: 0.3 round-trips
  EXPECT_EQ(fmt(call("exp", {S(1, f64)})), "2.718281828459045");
  EXPECT_EQ(fmt(call("softmax", {T({2}, {0, 0}, f64)})), "[0.5, 0.5]");
}

TEST(Dtypes, BoolTensorsMoveThroughShapeOps) {
  Value b = T({2, 2}, {1, 0, 0, 1}, b8);
  EXPECT_EQ(fmt(call("transpose", {b})), "[[true, false], [false, true]]");
  EXPECT_EQ(fmt(call("reshape", {b}, A({{"shape", L({4})}}))), "[true, false, false, true]");
  EXPECT_EQ(fmt(call("eq", {b, T({2}, {1, 1}, b8)})), "[[true, false], [false, true]]");
  EXPECT_EQ(fmt(call("max", {b})), "true");
  EXPECT_EQ(fmt(call("stack", {b, b}, A({{"axis", Attr{int64_t{2}}}}))),
            "[[[true, true], [false, false]], [[false, false], [true, true]]]");
}

TEST(Dtypes, HalfPrecisionComputesInF32AndRoundsOnce) {
  // f16 / bf16 reference kernels widen to f32 and round the result once
  // (semantics/low_precision.h): 2049 is not an f16 (spacing 2 from 2048), 2048 + 1 rounds to
  // even 2048, 2048 + 3 to 2052.
  Tensor h = T({2}, {2048, 2048}, DType::f16);
  Tensor one_three = T({2}, {1, 3}, DType::f16);
  Value s = call("add", {h, one_three});
  EXPECT_EQ(s.type()->str(), "f16[2]");
  EXPECT_EQ(fmt(s), "[2048.0, 2052.0]");
  EXPECT_EQ(fmt(call("cast", {one_three}, A({{"dtype", Attr{f32}}}))), "[1.0, 3.0]");
  EXPECT_EQ(fmt(call("reshape", {one_three}, A({{"shape", L({2, 1})}}))), "[[1.0], [3.0]]");
}

}  // namespace
}  // namespace spora::ops::testing
