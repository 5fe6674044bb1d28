// nn primitives (softmax family, cross_entropy, norms, dropout) and conv/pooling.
#include <cmath>

#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

Attr I(int64_t v) { return Attr{v}; }
Attr L(std::vector<int64_t> v) { return Attr{std::move(v)}; }
Attr Str(const char* s) { return Attr{std::string(s)}; }

Value logits_c09() { return T({2, 3}, {1000, 1001, 999, 0.1, 0.2, 0.3}); }

TEST(NN, SoftmaxHugeLogits) {  // c09
  Value s = call("softmax", {logits_c09()});
  expect_values(s, {0.2447284710547976, 0.6652409557748218, 0.09003057317038045,
                    0.30060960535572734, 0.3322249935333473, 0.3671654011109255});
  Value l = call("log_softmax", {logits_c09()}, A({{"axis", I(-1)}}));
  expect_values(l, {-1.4076059644443804, -0.4076059644443804, -2.4076059644443806,
                    -1.201942848229244, -1.101942848229244, -1.001942848229244});
  Value s0 = call("softmax", {T({2, 2}, {0, 1000, 0, 1000})}, A({{"axis", I(0)}}));
  EXPECT_EQ(fmt(s0), "[[0.5, 0.5], [0.5, 0.5]]");
  EXPECT_EQ(fmt(call("softmax", {T({2}, {-1e30, 1e30})})), "[0.0, 1.0]");
  EXPECT_EQ(infer_error("softmax", {ty(f32, {2, 3})}, A({{"axis", I(2)}})),
            "axis 2 is out of range for f32[2,3]");
  EXPECT_EQ(infer_error("softmax", {ty(i32, {3})}), "softmax expects a float tensor, got i32[3]");
}

TEST(NN, LogSumExp) {
  Value x = logits_c09();
  expect_values(call("logsumexp", {x}, A({{"axis", L({1})}})),
                {1001.4076059644444, 1.301942848229244});
  EXPECT_EQ(call("logsumexp", {x}, A({{"axis", L({1})}, {"keepdims", Attr{true}}})).type()->str(),
            "f32[2,1]");
  expect_values(call("logsumexp", {T({2}, {0, 0}, f64)}), {std::log(2.0)});
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(fmt(call("logsumexp", {T({2}, {-inf, -inf})})), "-inf");
}

TEST(NN, CrossEntropy) {
  Value y = T({2}, {1, 2}, i32);
  expect_values(call("cross_entropy", {logits_c09(), y}), {0.7047744063368122});
  expect_values(call("cross_entropy", {logits_c09(), y}, A({{"reduction", Str("sum")}})),
                {1.4095488126736244});
  Value none =
      call("cross_entropy", {logits_c09(), T({2}, {1, 2}, i64)}, A({{"reduction", Str("none")}}));
  expect_values(none, {0.4076059644443804, 1.001942848229244});
  // Hand value: logits [0, ln 3] label 0 -> -log(1/4) = ln 4.
  expect_values(call("cross_entropy", {T({2}, {0, std::log(3.0)}), S(0, i32)}), {std::log(4.0)});
  // Soft targets equal to one-hot give the same loss.
  Value soft = T({2, 3}, {0, 1, 0, 0, 0, 1});
  expect_values(call("cross_entropy", {logits_c09(), soft}), {0.7047744063368122});
  EXPECT_EQ(call_error("cross_entropy", {logits_c09(), T({2}, {1, 3}, i32)}),
            "cross_entropy label 3 is out of range for 3 classes");
  EXPECT_EQ(infer_error("cross_entropy", {ty(f32, {2, 3}), ty(i32, {3})}),
            "cross_entropy labels do not match logits: f32[2,3] and i32[3]");
  EXPECT_EQ(
      infer_error("cross_entropy", {ty(f32, {2, 3}), ty(i32, {2})}, A({{"reduction", Str("avg")}})),
      "cross_entropy reduction must be \"mean\", \"sum\" or \"none\", got \"avg\"");
  // [N, C, d] logits with [N, d] labels.
  Value x3 = T({1, 2, 2}, {0, 0, 0, std::log(3.0)});  // position 0: [0,0]; position 1: [0, ln3]
  expect_values(
      call("cross_entropy", {x3, T({1, 2}, {1, 1}, i32)}, A({{"reduction", Str("none")}})),
      {std::log(2.0), std::log(4.0 / 3.0)});
}

TEST(NN, LayerNorm) {
  Value x = T({2, 3}, {1, 2, 3, 2, 4, 6});
  double a = 1 / std::sqrt(2.0 / 3 + 1e-5), b = 2 / std::sqrt(8.0 / 3 + 1e-5);
  expect_values(call("layer_norm", {x}), {-a, 0, a, -b, 0, b}, 1e-5);
  Value g = T({3}, {1, 2, 3}), be = T({3}, {0, 0, 1});
  expect_values(call("layer_norm", {x, g, be}), {-a, 0, 3 * a + 1, -b, 0, 3 * b + 1}, 1e-5);
  expect_values(call("layer_norm", {x, Value(), be}), {-a, 0, a + 1, -b, 0, b + 1}, 1e-5);
  // Over both axes: values 1 2 3 2 4 6, mean 3, deviations -2 -1 0 -1 1 3, var 16/6.
  double s = 1 / std::sqrt(16.0 / 6 + 1e-5);
  expect_values(call("layer_norm", {x}, A({{"ndim", I(2)}})), {-2 * s, -s, 0, -s, s, 3 * s}, 1e-5);
  EXPECT_EQ(infer_error("layer_norm", {ty(f32, {2, 3}), ty(f32, {2})}),
            "layer_norm gamma f32[2] does not match f32[3] for input f32[2,3]");
}

TEST(NN, BatchNorm) {
  Value x = T({4, 1}, {1, 2, 3, 4});
  Value rm = T({1}, {0}), rv = T({1}, {1});
  Value one = T({1}, {1}), zero = T({1}, {0});
  Value out = call("batch_norm", {x, one, zero, rm, rv}, A({{"training", Attr{true}}}));
  ASSERT_EQ(out.kind, Value::Kind::Tuple);
  double s = 1 / std::sqrt(1.25 + 1e-5);
  expect_values(out.items()[0], {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 1e-5);
  expect_values(out.items()[1], {0.25});
  expect_values(out.items()[2], {0.9 + 0.1 * 5.0 / 3.0});
  Value g = T({1}, {2}), b = T({1}, {1});
  Value ev = call("batch_norm", {x, g, b, rm, rv});
  double e = 2 / std::sqrt(1 + 1e-5);
  expect_values(ev, {e + 1, 2 * e + 1, 3 * e + 1, 4 * e + 1}, 1e-5);
  // NCHW: channel statistics over N, H, W.
  Value x4 = T({2, 2, 1, 1}, {1, 10, 3, 20});
  Value o4 =
      call("batch_norm", {x4, T({2}, {1, 1}), T({2}, {0, 0}), T({2}, {0, 0}), T({2}, {1, 1})},
           A({{"training", Attr{true}}}));
  expect_values(o4.items()[1], {0.2, 1.5});
  EXPECT_EQ(
      infer("batch_norm", {ty(f32, {2, 3}), ty(f32, {3}), ty(f32, {3}), ty(f32, {3}), ty(f32, {3})},
            A({{"training", Attr{true}}}))
          ->str(),
      "(f32[2,3], f32[3], f32[3])");
  EXPECT_EQ(infer_error("batch_norm",
                        {ty(f32, {2, 3}), ty(f32, {3}), ty(f32, {3}), ty(f32, {2}), ty(f32, {3})}),
            "batch_norm running_mean f32[2] does not match f32[3] for input f32[2,3]");
}

TEST(NN, Dropout) {
  std::vector<double> ones(10000, 1.0);
  Value x = T({10000}, ones);
  Value a = call("dropout", {x}, A({{"seed", I(7)}}));
  Value b = call("dropout", {x}, A({{"seed", I(7)}}));
  Value c = call("dropout", {x}, A({{"seed", I(8)}}));
  EXPECT_EQ(fmt(a), fmt(b));
  EXPECT_NE(fmt(a), fmt(c));
  int kept = 0;
  for (int64_t i = 0; i < 10000; ++i) {
    double v = a.tensor.get(i);
    EXPECT_TRUE(v == 0.0 || v == 2.0);
    kept += v != 0;
  }
  EXPECT_NEAR(kept / 10000.0, 0.5, 0.03);
  EXPECT_EQ(fmt(call("dropout", {T({2}, {1, 2})}, A({{"training", Attr{false}}}))), "[1.0, 2.0]");
  EXPECT_EQ(fmt(call("dropout", {T({2}, {1, 2})}, A({{"p", Attr{1.0}}}))), "[0.0, 0.0]");
  EXPECT_EQ(infer_error("dropout", {ty(f32, {2})}, A({{"p", Attr{1.5}}})),
            "dropout probability must be in [0, 1], got 1.5");
}

// ---- conv / pooling -------------------------------------------------------------------------

Value c10_x() { return T({1, 1, 4, 4}, {1, 2, 0, -1, 0.5, -0.5, 3, 1, 2, 1, -2, 0, 0, 1.5, 1, 2}); }

TEST(Conv, ConformanceC10) {
  Value w = T({1, 1, 2, 2}, {1, -1, 0.5, 0.25});
  Value y = call("conv2d", {c10_x(), w}, A({{"stride", L({1})}, {"padding", L({0})}}));
  EXPECT_EQ(fmt(y), "[[[[-0.875, 2.5, 2.75], [2.25, -3.5, 1.0], [1.375, 4.0, -1.0]]]]");
  Value p = call("max_pool2d", {y}, A({{"kernel", L({2})}, {"stride", L({1})}}));
  EXPECT_EQ(fmt(p), "[[[[2.5, 2.75], [4.0, 4.0]]]]");
  EXPECT_EQ(fmt(call("sum", {p})), "13.25");
}

TEST(Conv, StridePaddingGroupsBias) {
  Value x = T({1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  Value w = T({2, 1, 2, 2}, {1, 0, 0, 1, 1, 1, 1, 1});
  Value b = T({2}, {10, 20});
  Value y =
      call("conv2d", {x, w, b}, A({{"stride", L({2})}, {"padding", L({1})}, {"groups", I(2)}}));
  EXPECT_EQ(fmt(y), "[[[[11.0, 13.0], [17.0, 24.0]], [[21.0, 22.0], [22.0, 24.0]]]]");
  // groups=1 with 2 input channels: weight [1, 2, 1, 1] sums channel0 + 2 * channel1.
  Value y1 = call("conv2d", {x, T({1, 2, 1, 1}, {1, 2})});
  EXPECT_EQ(fmt(y1), "[[[[3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]]]");
}

TEST(Conv, DilationAndPairs) {
  Value x = T({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Value w = T({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(fmt(call("conv2d", {x, w}, A({{"dilation", L({2})}}))), "[[[[20.0]]]]");
  EXPECT_EQ(infer("conv2d", {ty(f32, {1, 1, 5, 7}), ty(f32, {1, 1, 3, 3})},
                  A({{"stride", L({2, 1})}, {"padding", L({1, 0})}}))
                ->str(),
            "f32[1,1,3,5]");
  // Width stride 2, height stride 1 on the 3x3 input with a 1x1 kernel.
  EXPECT_EQ(fmt(call("conv2d", {x, T({1, 1, 1, 1}, {1})}, A({{"stride", L({1, 2})}}))),
            "[[[[1.0, 3.0], [4.0, 6.0], [7.0, 9.0]]]]");
}

TEST(Conv, Errors) {
  EXPECT_EQ(infer_error("conv2d", {ty(f32, {1, 3, 4, 4}), ty(f32, {2, 2, 3, 3})}),
            "conv2d channels do not match: input f32[1,3,4,4] and weight f32[2,2,3,3] (groups=1)");
  EXPECT_EQ(
      infer_error("conv2d", {ty(f32, {1, 4, 4, 4}), ty(f32, {3, 2, 3, 3})}, A({{"groups", I(2)}})),
      "conv2d channels do not match: input f32[1,4,4,4] and weight f32[3,2,3,3] (groups=2)");
  EXPECT_EQ(infer_error("conv2d", {ty(f32, {1, 1, 2, 2}), ty(f32, {1, 1, 3, 3})}),
            "conv2d kernel f32[3,3] with dilation [1,1] does not fit input f32[1,1,2,2] with "
            "padding [0,0]");
  EXPECT_EQ(infer_error("conv2d", {ty(f32, {1, 1, 4, 4}), ty(f32, {2, 1, 3, 3}), ty(f32, {3})}),
            "conv2d bias f32[3] does not match weight f32[2,1,3,3]");
  EXPECT_EQ(infer_error("conv2d", {ty(f32, {4, 4}), ty(f32, {1, 1, 3, 3})}),
            "conv2d expects a 4-D input [N, C, H, W], got f32[4,4]");
  EXPECT_EQ(infer_error("conv2d", {ty(f32, {1, 1, 4, 4}), ty(f32, {1, 1, 3, 3})},
                        A({{"stride", L({1, 1, 1})}})),
            "conv2d stride must be an int or a pair of ints, got [1,1,1]");
}

TEST(Pool, MaxAndAvg) {
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = i + 1;
  Value x = T({1, 1, 4, 4}, v);
  EXPECT_EQ(fmt(call("avg_pool2d", {x}, A({{"kernel", L({2})}}))),
            "[[[[3.5, 5.5], [11.5, 13.5]]]]");
  EXPECT_EQ(fmt(call("max_pool2d", {x}, A({{"kernel", L({2})}}))),
            "[[[[6.0, 8.0], [14.0, 16.0]]]]");
  EXPECT_EQ(fmt(call("max_pool2d", {x},
                     A({{"kernel", L({2})}, {"stride", L({2})}, {"padding", L({1})}}))),
            "[[[[1.0, 3.0, 4.0], [9.0, 11.0, 12.0], [13.0, 15.0, 16.0]]]]");
  EXPECT_EQ(fmt(call("avg_pool2d", {x}, A({{"kernel", L({2})}, {"padding", L({1})}}))),
            "[[[[0.25, 1.25, 1.0], [3.5, 8.5, 5.0], [3.25, 7.25, 4.0]]]]");
  EXPECT_EQ(fmt(call("max_pool2d", {x}, A({{"kernel", L({1, 4})}}))),
            "[[[[4.0], [8.0], [12.0], [16.0]]]]");
  EXPECT_EQ(infer_error("max_pool2d", {ty(f32, {1, 1, 4, 4})},
                        A({{"kernel", L({2})}, {"padding", L({2})}})),
            "max_pool2d padding [2,2] must be between 0 and half the kernel [2,2]");
  EXPECT_EQ(infer_error("max_pool2d", {ty(f32, {1, 1, 1, 4})}, A({{"kernel", L({2})}})),
            "max_pool2d kernel [2,2] does not fit input f32[1,1,1,4] with padding [0,0]");
}

}  // namespace
}  // namespace spora::ops::testing
