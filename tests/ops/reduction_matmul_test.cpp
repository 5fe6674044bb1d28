// Reductions and matmul.
#include <cmath>

#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

Attr ints_(std::vector<int64_t> v) { return Attr{std::move(v)}; }
Attr int_(int64_t v) { return Attr{v}; }

TEST(Reduction, Conformance) {  // c01
  Value a = T({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(fmt(call("sum", {a}, A({{"axis", ints_({0})}}))), "[5.0, 7.0, 9.0]");
  EXPECT_EQ(fmt(call("mean", {a}, A({{"axis", ints_({1})}, {"keepdims", Attr{true}}}))),
            "[[2.0], [5.0]]");
  EXPECT_EQ(fmt(call("max", {a})), "6.0");
  Value x = T({4}, {3, -1, 4, 1.5});  // c03
  EXPECT_EQ(fmt(call("sum", {x})), "7.5");
  EXPECT_EQ(fmt(call("sub", {call("max", {x}), call("min", {x})})), "5.0");
}

TEST(Reduction, AxesNegativeAndMultiple) {
  Value a = T({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(fmt(call("sum", {a}, A({{"axis", ints_({-1})}}))), "[[6.0, 15.0], [24.0, 33.0]]");
  EXPECT_EQ(fmt(call("sum", {a}, A({{"axis", int_(-1)}}))), "[[6.0, 15.0], [24.0, 33.0]]");
  EXPECT_EQ(fmt(call("sum", {a}, A({{"axis", ints_({0, 2})}}))), "[30.0, 48.0]");
  EXPECT_EQ(fmt(call("max", {a}, A({{"axis", ints_({0, -1})}, {"keepdims", Attr{true}}}))),
            "[[[9.0], [12.0]]]");
  EXPECT_EQ(fmt(call("prod", {T({2, 2}, {1, 2, 3, 4})}, A({{"axis", ints_({1})}}))), "[2.0, 12.0]");
  EXPECT_EQ(fmt(call("min", {a}, A({{"axis", ints_({1})}}))), "[[1.0, 2.0, 3.0], [7.0, 8.0, 9.0]]");
  EXPECT_EQ(fmt(call("sum", {a}, A({{"axis", ints_({})}}))), fmt(a));  // no axes: identity
  EXPECT_EQ(fmt(call("sum", {S(3)})), "3.0");
}

TEST(Reduction, Dtypes) {
  EXPECT_EQ(fmt(call("sum", {T({3}, {1, 2, 3}, i32)})), "6");
  EXPECT_EQ(fmt(call("mean", {T({4}, {1, 2, 3, 4}, i32)})), "2.5");
  EXPECT_EQ(infer("mean", {ty(i32, {4})})->str(), "f32");
  EXPECT_EQ(fmt(call("sum", {T({3}, {1, 0, 1}, b8)})), "2");
  EXPECT_EQ(fmt(call("mean", {T({4}, {1, 0, 1, 1}, b8)})), "0.75");
  EXPECT_EQ(fmt(call("max", {T({3}, {5, -9, 7}, i64)})), "7");
  EXPECT_EQ(fmt(call("all", {T({2, 2}, {1, 0, 1, 1}, b8)}, A({{"axis", ints_({1})}}))),
            "[false, true]");
  EXPECT_EQ(fmt(call("any", {T({2, 2}, {0, 0, 1, 0}, b8)}, A({{"axis", ints_({1})}}))),
            "[false, true]");
  EXPECT_EQ(fmt(call("all", {T({2}, {1, 2}, i32)})), "true");
  // Accumulation in double: 1e8 + 1 + ... stays exact before the final rounding.
  EXPECT_EQ(fmt(call("sum", {T({3}, {16777216, 1, 1})})), "16777218.0");
  EXPECT_EQ(fmt(call("sum", {T({0}, {})})), "0.0");
}

TEST(Reduction, ArgmaxArgmin) {
  Value a = T({2, 3}, {1, 9, 9, 7, 2, 8});
  EXPECT_EQ(fmt(call("argmax", {a}, A({{"axis", int_(1)}}))), "[1, 2]");
  EXPECT_EQ(fmt(call("argmax", {a}, A({{"axis", int_(0)}}))), "[1, 0, 0]");
  EXPECT_EQ(fmt(call("argmin", {a}, A({{"axis", int_(-1)}}))), "[0, 1]");
  EXPECT_EQ(fmt(call("argmax", {a})), "1");
  EXPECT_EQ(fmt(call("argmin", {a})), "0");
  EXPECT_EQ(fmt(call("argmax", {a}, A({{"axis", int_(1)}, {"keepdims", Attr{true}}}))),
            "[[1], [2]]");
  EXPECT_EQ(infer("argmax", {ty(f32, {4, 10})}, A({{"axis", int_(1)}}))->str(), "i32[4]");
}

TEST(Reduction, Errors) {
  EXPECT_EQ(infer_error("sum", {ty(f32, {3, 4})}, A({{"axis", ints_({2})}})),
            "axis 2 is out of range for f32[3,4]");
  EXPECT_EQ(infer_error("sum", {ty(f32, {3, 4})}, A({{"axis", ints_({-3})}})),
            "axis -3 is out of range for f32[3,4]");
  EXPECT_EQ(infer_error("sum", {ty(f32, {3, 4})}, A({{"axis", ints_({1, -1})}})),
            "repeated axis in [1,-1] for f32[3,4]");
  EXPECT_EQ(infer_error("max", {ty(f32, {0})}), "max of an empty axis: f32[0]");
  EXPECT_EQ(infer_error("argmax", {ty(f32, {3})}, A({{"axis", int_(1)}})),
            "axis 1 is out of range for f32[3]");
}

TEST(Matmul, Conformance) {  // c02
  Value x = T({2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2});
  Value w = T({3, 2}, {1, 0.5, 0, -1, 2, 1});
  EXPECT_EQ(fmt(call("matmul", {x, w})), "[[[7.0, 1.5], [16.0, 3.0]], [[1.0, 0.5], [6.0, 1.0]]]");
  EXPECT_EQ(fmt(call("transpose", {w})), "[[1.0, 0.0, 2.0], [0.5, -1.0, 1.0]]");
  EXPECT_EQ(fmt(call("matmul", {w, T({2}, {1, 2})})), "[2.0, -2.0, 4.0]");
}

TEST(Matmul, OneDimensionalAndBatched) {
  EXPECT_EQ(fmt(call("matmul", {T({3}, {1, 2, 3}), T({3}, {4, 5, 6})})), "32.0");
  EXPECT_EQ(fmt(call("matmul", {T({2}, {1, 2}), T({2, 3}, {1, 2, 3, 4, 5, 6})})),
            "[9.0, 12.0, 15.0]");
  EXPECT_EQ(fmt(call("matmul", {T({2, 2}, {1, 2, 3, 4}, i32), T({2, 1}, {1, 1}, i32)})),
            "[[3], [7]]");
  // Broadcast batch: [2,1,1,2] @ [3,2,1] -> [2,3,1,1]
  Value a = T({2, 1, 1, 2}, {1, 2, 3, 4});
  Value b = T({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  EXPECT_EQ(fmt(call("matmul", {a, b})),
            "[[[[1.0]], [[2.0]], [[3.0]]], [[[3.0]], [[4.0]], [[7.0]]]]");
  EXPECT_EQ(infer("matmul", {ty(f32, {5, 1, 4, 3}), ty(f32, {6, 3, 2})})->str(), "f32[5,6,4,2]");
  EXPECT_EQ(infer("matmul", {ty(f32, {sem::kDynamicDim, 784}), ty(f32, {784, 10})})->str(),
            "f32[?,10]");
  EXPECT_EQ(infer("matmul", {ty(f32, {2, 3, 4}), ty(f32, {4})})->str(), "f32[2,3]");
}

// transpose_a / transpose_b: op(a) @ op(b), equal to the product of the transposed copies.
TEST(Matmul, TransposeFlagsEqualTheProductOfTransposedCopies) {
  auto flags = [](bool ta, bool tb) {
    sem::Attrs a;
    if (ta) a.set("transpose_a", true);
    if (tb) a.set("transpose_b", true);
    return a;
  };
  auto swapped = [](const Value& x) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < x.tensor.rank(); ++i) axes.push_back(i);
    std::swap(axes[axes.size() - 1], axes[axes.size() - 2]);
    sem::Attrs a;
    a.set("axes", axes);
    return call("permute", {x}, a);
  };
  // The operands' shapes as stored, and the flags.
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const Case cases[] = {{{3, 2}, {3, 4}, true, false},    {{2, 3}, {4, 3}, false, true},
                        {{3, 2}, {4, 3}, true, true},     {{2, 3, 2}, {3, 4}, true, false},
                        {{2, 2, 3}, {4, 3}, false, true}, {{2, 1, 3, 2}, {3, 4, 3}, true, true},
                        {{3}, {2, 4, 3}, false, true},    {{3, 2}, {3}, true, false}};
  auto numel = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  };
  double seed = 1;
  for (const Case& c : cases) {
    std::vector<double> va, vb;
    for (int64_t i = 0; i < numel(c.a); ++i) va.push_back(seed = std::fmod(seed * 7.3, 5) - 2);
    for (int64_t i = 0; i < numel(c.b); ++i) vb.push_back(seed = std::fmod(seed * 3.1, 7) - 3);
    Value a = T(c.a, va), b = T(c.b, vb);
    const std::string want = fmt(call("matmul", {c.ta ? swapped(a) : a, c.tb ? swapped(b) : b}));
    EXPECT_EQ(fmt(call("matmul", {a, b}, flags(c.ta, c.tb))), want)
        << sem::shape_str(c.a) << (c.ta ? "^T" : "") << " @ " << sem::shape_str(c.b)
        << (c.tb ? "^T" : "");
  }
  // Integers too (the reference's exact wrapping products).
  EXPECT_EQ(fmt(call("matmul", {T({2, 2}, {1, 2, 3, 4}, i32), T({2, 2}, {1, 0, 1, 1}, i32)},
                     flags(true, true))),
            "[[1, 4], [2, 6]]");
  EXPECT_EQ(infer("matmul", {ty(f32, {5, 1, 3, 4}), ty(f32, {6, 2, 3})}, flags(true, true))->str(),
            "f32[5,6,4,2]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {3, 2}), ty(f32, {4, 5})}, flags(true, false)),
            "matmul shapes do not match: f32[3,2]^T @ f32[4,5]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {3}), ty(f32, {3, 5})}, flags(true, false)),
            "matmul's transpose_a needs an operand of rank 2 or more: f32[3]^T @ f32[3,5]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {2, 3}), ty(f32, {3})}, flags(false, true)),
            "matmul's transpose_b needs an operand of rank 2 or more: f32[2,3] @ f32[3]^T");
}

TEST(Matmul, Errors) {
  EXPECT_EQ(infer_error("matmul", {ty(f32, {2, 3}), ty(f32, {4, 5})}),
            "matmul shapes do not match: f32[2,3] @ f32[4,5]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {64, 784}), ty(f32, {512, 10})}),
            "matmul shapes do not match: f32[64,784] @ f32[512,10]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {2, 2, 3}), ty(f32, {3, 3, 4})}),
            "matmul shapes do not match: f32[2,2,3] @ f32[3,3,4]");
  EXPECT_EQ(infer_error("matmul", {ty(f32), ty(f32, {3})}),
            "matmul shapes do not match: f32 @ f32[3]");
  EXPECT_EQ(infer_error("matmul", {ty(f32, {3}), ty(f64, {3})}),
            "matmul operand types do not match: f32[3] and f64[3]");
}

}  // namespace
}  // namespace spora::ops::testing
