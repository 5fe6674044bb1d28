// Elementwise unary and binary primitives, comparisons, where, cast, logical ops.
#include <cmath>

#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

TEST(Elementwise, ConformanceBroadcast) {  // c01: a * b + 1.0
  Value a = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Value b = T({3}, {10, 20, 30});
  Value y = call("add", {call("mul", {a, b}), S(1.0)});
  EXPECT_EQ(fmt(y), "[[11.0, 41.0, 91.0], [41.0, 101.0, 181.0]]");
}

TEST(Elementwise, BroadcastBothSides) {
  Value a = T({2, 1}, {1, 2});
  Value b = T({1, 3}, {10, 20, 30});
  EXPECT_EQ(fmt(call("sub", {a, b})), "[[-9.0, -19.0, -29.0], [-8.0, -18.0, -28.0]]");
  EXPECT_EQ(infer("add", {ty(f32, {4, 1, 3}), ty(f32, {2, 1})})->str(), "f32[4,2,3]");
  EXPECT_EQ(infer("add", {ty(f32, {sem::kDynamicDim, 3}), ty(f32, {3})})->str(), "f32[?,3]");
}

TEST(Elementwise, BinaryErrors) {
  EXPECT_EQ(infer_error("add", {ty(f32, {2}), ty(f64, {2})}),
            "add operand types do not match: f32[2] and f64[2]");
  EXPECT_EQ(infer_error("mul", {ty(f32, {2, 3}), ty(f32, {4})}),
            "cannot broadcast f32[2,3] and f32[4]");
  EXPECT_EQ(infer_error("add", {ty(b8, {2}), ty(b8, {2})}),
            "add does not accept bool operands: bool[2] and bool[2]");
  EXPECT_EQ(call_error("floordiv", {T({1}, {3}, i32), T({1}, {0}, i32)}),
            "integer division by zero");
  EXPECT_EQ(call_error("pow", {T({1}, {3}, i32), T({1}, {-1}, i32)}),
            "integer pow with a negative exponent -1");
}

TEST(Elementwise, DivIsTrueDivision) {
  EXPECT_EQ(fmt(call("div", {T({2}, {7, -7}, i32), T({2}, {2, 2}, i32)})), "[3.5, -3.5]");
  EXPECT_EQ(infer("div", {ty(i32, {2}), ty(i32, {2})})->str(), "f32[2]");
  EXPECT_EQ(fmt(call("div", {T({1}, {1}), T({1}, {4})})), "[0.25]");
}

TEST(Elementwise, FloorDivAndModPythonSemantics) {
  Value a = T({4}, {7, -7, 7, -7}, i32), b = T({4}, {2, 2, -2, -2}, i32);
  EXPECT_EQ(fmt(call("floordiv", {a, b})), "[3, -4, -4, 3]");
  EXPECT_EQ(fmt(call("mod", {a, b})), "[1, 1, -1, -1]");
  Value fa = T({4}, {7.5, -7.5, 7.5, -7.5}), fb = T({4}, {2, 2, -2, -2});
  EXPECT_EQ(fmt(call("floordiv", {fa, fb})), "[3.0, -4.0, -4.0, 3.0]");
  EXPECT_EQ(fmt(call("mod", {fa, fb})), "[1.5, 0.5, -0.5, -1.5]");
  EXPECT_EQ(fmt(call("mod", {T({1}, {27}, i64), T({1}, {2}, i64)})), "[1]");  // c04 collatz
  EXPECT_EQ(fmt(call("floordiv", {S(1.0, f64), S(0.1, f64)})), "9.0");  // Python: 1 // 0.1 == 9.0
  EXPECT_EQ(fmt(call("mod", {S(4, i32), S(-2, i32)})), "0");
}

TEST(Elementwise, PowMaximumMinimum) {
  EXPECT_EQ(fmt(call("pow", {T({3}, {2, 3, -2}, i32), T({3}, {10, 0, 3}, i32)})), "[1024, 1, -8]");
  EXPECT_EQ(fmt(call("pow", {T({2}, {4, 2}), S(0.5)})), "[2.0, 1.4142135]");
  EXPECT_EQ(fmt(call("maximum", {T({3}, {1, 5, -1}), T({3}, {2, 3, -4})})), "[2.0, 5.0, -1.0]");
  EXPECT_EQ(fmt(call("minimum", {T({3}, {1, 5, -1}, i64), S(0, i64)})), "[0, 0, -1]");
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(fmt(call("maximum", {T({1}, {nan}), T({1}, {1})})), "[nan]");
}

TEST(Elementwise, IntegerArithmetic) {
  EXPECT_EQ(fmt(call("add", {call("mul", {S(3, i32), S(27, i32)}), S(1, i32)})), "82");
  EXPECT_EQ(fmt(call("sub", {T({2}, {1, 2}, i64), T({2}, {5, 5}, i64)})), "[-4, -3]");
  // Wrapping, not undefined behaviour.
  EXPECT_EQ(fmt(call("add", {S(2147483647, i32), S(1, i32)})), "-2147483648");
}

TEST(Elementwise, UnaryMath) {
  Value x = T({3}, {-1.0, 0.0, 2.0});
  expect_values(call("neg", {x}), {1, 0, -2});
  expect_values(call("exp", {x}), {std::exp(-1.0), 1, std::exp(2.0)});
  expect_values(call("abs", {x}), {1, 0, 2});
  expect_values(call("tanh", {x}), {std::tanh(-1.0), 0, std::tanh(2.0)});
  expect_values(call("sigmoid", {x}), {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-2.0))});
  expect_values(call("relu", {x}), {0, 0, 2});
  expect_values(call("gelu", {x}), {-0.15865525393145707, 0, 1.9544997361036416});
  expect_values(call("sin", {x}), {std::sin(-1.0), 0, std::sin(2.0)});
  expect_values(call("cos", {x}), {std::cos(-1.0), 1, std::cos(2.0)});
  expect_values(call("sign", {x}), {-1, 0, 1});
  expect_values(call("erf", {x}), {std::erf(-1.0), 0, std::erf(2.0)});
  expect_values(call("square", {x}), {1, 0, 4});
  expect_values(call("expm1", {x}), {std::expm1(-1.0), 0, std::expm1(2.0)});
  Value p = T({3}, {0.25, 1.0, 4.0});
  expect_values(call("log", {p}), {std::log(0.25), 0, std::log(4.0)});
  expect_values(call("sqrt", {p}), {0.5, 1, 2});
  expect_values(call("rsqrt", {p}), {2, 1, 0.5});
  expect_values(call("log1p", {p}), {std::log1p(0.25), std::log(2.0), std::log(5.0)});
  expect_values(call("reciprocal", {p}), {4, 1, 0.25});
  Value r = T({5}, {-1.5, -0.5, 0.5, 1.5, 2.7});
  EXPECT_EQ(fmt(call("floor", {r})), "[-2.0, -1.0, 0.0, 1.0, 2.0]");
  EXPECT_EQ(fmt(call("ceil", {r})), "[-1.0, -0.0, 1.0, 2.0, 3.0]");
  EXPECT_EQ(fmt(call("round", {r})), "[-2.0, -0.0, 0.0, 2.0, 3.0]");
  EXPECT_EQ(fmt(call("sigmoid", {T({2}, {-1000, 1000})})), "[0.0, 1.0]");
}

TEST(Elementwise, UnaryIntegers) {
  Value x = T({3}, {-3, 0, 4}, i32);
  EXPECT_EQ(fmt(call("neg", {x})), "[3, 0, -4]");
  EXPECT_EQ(fmt(call("abs", {x})), "[3, 0, 4]");
  EXPECT_EQ(fmt(call("sign", {x})), "[-1, 0, 1]");
  EXPECT_EQ(fmt(call("square", {x})), "[9, 0, 16]");
  EXPECT_EQ(fmt(call("relu", {x})), "[0, 0, 4]");
  EXPECT_EQ(fmt(call("floor", {x})), "[-3, 0, 4]");
  EXPECT_EQ(infer_error("exp", {ty(i32, {3})}), "exp expects a floating-point tensor, got i32[3]");
  EXPECT_EQ(infer_error("neg", {ty(b8, {3})}), "neg expects a numeric tensor, got bool[3]");
  EXPECT_EQ(infer("sqrt", {ty(f64, {2, 2})})->str(), "f64[2,2]");
}

TEST(Compare, ComparisonsGiveBool) {
  Value a = T({3}, {1, 2, 3}), b = T({3}, {2, 2, 2});
  EXPECT_EQ(fmt(call("eq", {a, b})), "[false, true, false]");
  EXPECT_EQ(fmt(call("ne", {a, b})), "[true, false, true]");
  EXPECT_EQ(fmt(call("lt", {a, b})), "[true, false, false]");
  EXPECT_EQ(fmt(call("le", {a, b})), "[true, true, false]");
  EXPECT_EQ(fmt(call("gt", {a, S(2)})), "[false, false, true]");
  EXPECT_EQ(fmt(call("ge", {T({2, 1}, {1, 3}, i32), T({2}, {1, 2}, i32)})),
            "[[true, false], [true, true]]");
  EXPECT_EQ(fmt(call("ne", {S(27, i32), S(1, i32)})), "true");
  EXPECT_EQ(infer_error("lt", {ty(f32, {2}), ty(i32, {2})}),
            "lt operand types do not match: f32[2] and i32[2]");
}

TEST(Compare, LogicalOps) {
  Value a = T({4}, {1, 1, 0, 0}, b8), b = T({4}, {1, 0, 1, 0}, b8);
  EXPECT_EQ(fmt(call("logical_and", {a, b})), "[true, false, false, false]");
  EXPECT_EQ(fmt(call("logical_or", {a, b})), "[true, true, true, false]");
  EXPECT_EQ(fmt(call("logical_not", {a})), "[false, false, true, true]");
  EXPECT_EQ(infer_error("logical_and", {ty(f32, {4}), ty(b8, {4})}),
            "logical_and expects bool operands, got f32[4]");
}

TEST(Compare, WhereBroadcasts) {
  Value c = T({2, 1}, {1, 0}, b8);
  Value a = T({3}, {1, 2, 3}), b = S(-1);
  EXPECT_EQ(fmt(call("where", {c, a, b})), "[[1.0, 2.0, 3.0], [-1.0, -1.0, -1.0]]");
  EXPECT_EQ(infer_error("where", {ty(f32, {2}), ty(f32, {2}), ty(f32, {2})}),
            "where condition must be bool, got f32[2]");
  EXPECT_EQ(infer_error("where", {ty(b8, {2}), ty(f32, {2}), ty(i32, {2})}),
            "where operand types do not match: f32[2] and i32[2]");
}

TEST(Compare, Cast) {
  EXPECT_EQ(fmt(call("cast", {T({3}, {-1.7, 0.2, 2.9})}, A({{"dtype", Attr{i32}}}))), "[-1, 0, 2]");
  EXPECT_EQ(fmt(call("cast", {T({2}, {0, 3}, i32)}, A({{"dtype", Attr{f64}}}))), "[0.0, 3.0]");
  EXPECT_EQ(fmt(call("cast", {T({2}, {0, 3}, i32)}, A({{"dtype", Attr{b8}}}))), "[false, true]");
  EXPECT_EQ(fmt(call("cast", {T({2}, {1, 0}, b8)}, A({{"dtype", Attr{f32}}}))), "[1.0, 0.0]");
  EXPECT_EQ(fmt(call("cast", {S(1e30)}, A({{"dtype", Attr{i32}}}))), "2147483647");
}

}  // namespace
}  // namespace spora::ops::testing
