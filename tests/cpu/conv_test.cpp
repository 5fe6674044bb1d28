// CPU convolution and pooling kernels against the reference kernels: conv2d and both of its
// derivative helpers over strides, paddings, dilations and groups (bias or not, f32 and f64),
// and the pooling kernels with their helpers (exact, nan and ties included).
#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(t.get(i)));
  return m;
}

struct ConvCase {
  Shape x, w;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

const ConvCase kConv[] = {
    {{64, 1, 28, 28}, {6, 1, 5, 5}, 1, 1, 2, 2, 1, 1, 1, true},  // LeNet layer 1
    {{2, 3, 7, 9}, {4, 3, 3, 3}, 1, 1, 0, 0, 1, 1, 1, false},
    {{2, 4, 9, 8}, {6, 2, 3, 2}, 2, 1, 1, 0, 1, 2, 2, true},
    {{1, 6, 11, 11}, {6, 1, 3, 3}, 2, 3, 2, 1, 2, 1, 6, true},  // depthwise
    {{3, 2, 5, 5}, {3, 2, 1, 1}, 1, 1, 0, 0, 1, 1, 1, true},    // 1 x 1
    {{2, 2, 4, 4}, {2, 2, 4, 4}, 1, 1, 0, 0, 1, 1, 1, false},   // one output pixel
    {{0, 2, 4, 4}, {3, 2, 3, 3}, 1, 1, 1, 1, 1, 1, 1, true},    // no images
    {{2, 2, 6, 5}, {3, 2, 2, 3}, 3, 2, 1, 1, 1, 1, 1, false},
    // stride 1, output as wide as the input: im2col's shifted runs
    {{2, 3, 6, 7}, {4, 3, 3, 3}, 1, 1, 1, 1, 1, 1, 1, true},
    {{1, 2, 9, 8}, {2, 2, 3, 3}, 1, 1, 0, 2, 2, 2, 1, false},    // dilated
    {{1, 1, 3, 5}, {1, 1, 3, 3}, 1, 1, 3, 1, 1, 1, 1, false},    // rows of padding only
    {{2, 2, 5, 1}, {3, 2, 3, 1}, 1, 1, 1, 0, 1, 1, 1, true},     // one column
    {{4, 6, 14, 14}, {16, 6, 5, 5}, 1, 1, 0, 0, 1, 1, 1, true},  // LeNet layer 2: rows of 10
    // No padding, 5 x 5: rows of 1, 2, 3, 5, 8, 16, 17 and 33 elements (im2col's block copies
    // of 4 to 64 bytes and beyond, in f32 and f64).
    {{1, 2, 6, 5}, {3, 2, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
    {{1, 2, 7, 6}, {2, 2, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
    {{2, 1, 5, 7}, {2, 1, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
    {{1, 2, 6, 9}, {2, 2, 5, 5}, 1, 1, 0, 0, 1, 1, 1, true},
    {{1, 2, 5, 12}, {2, 2, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
    {{1, 1, 6, 20}, {2, 1, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
    {{1, 2, 5, 21}, {2, 2, 5, 5}, 1, 1, 0, 0, 1, 1, 1, true},
    {{1, 1, 6, 37}, {2, 1, 5, 5}, 1, 1, 0, 0, 1, 1, 1, false},
};

Attrs conv_attrs(const ConvCase& c) {
  return A({{"stride", Attr{std::vector<int64_t>{c.sh, c.sw}}},
            {"padding", Attr{std::vector<int64_t>{c.ph, c.pw}}},
            {"dilation", Attr{std::vector<int64_t>{c.dh, c.dw}}},
            {"groups", Attr{c.groups}}});
}

TEST(CpuConv, Conv2dAndItsGradients) {
  Gen gen(31);
  for (DType dt : {DType::f32, DType::f64}) {
    for (const ConvCase& c : kConv) {
      Tensor x = gen.tensor(dt, c.x, -1, 1), w = gen.tensor(dt, c.w, -1, 1);
      Tensor b = gen.tensor(dt, {c.w[0]}, -1, 1);
      Attrs a = conv_attrs(c);
      std::vector<Value> in{x, w};
      if (c.bias) in.push_back(b);
      const int64_t K = c.w[1] * c.w[2] * c.w[3];
      EXPECT_TRUE(agree("conv2d", in, a, Tol::scaled, max_abs(x) * max_abs(w) * K + 1))
          << x.type()->str() << " * " << w.type()->str();
      Value y = ref_call("conv2d", in, a);
      Tensor g = gen.tensor(dt, y.tensor.shape(), -1, 1);
      Attrs ax = a, aw = a;
      ax.set("shape", Attr{c.x});
      aw.set("shape", Attr{c.w});
      const int64_t taps_x = c.w[0] / c.groups * c.w[2] * c.w[3];
      const int64_t taps_w = c.x[0] * y.tensor.shape()[2] * y.tensor.shape()[3];
      EXPECT_TRUE(
          agree("conv2d_input_grad", {g, w}, ax, Tol::scaled, max_abs(g) * max_abs(w) * taps_x))
          << x.type()->str();
      EXPECT_TRUE(
          agree("conv2d_weight_grad", {x, g}, aw, Tol::scaled, max_abs(x) * max_abs(g) * taps_w))
          << x.type()->str();
    }
  }
  // Int stride/padding attributes, and geometry errors: the reference's.
  Tensor x = gen.tensor(DType::f32, {1, 2, 5, 5}), w = gen.tensor(DType::f32, {3, 2, 3, 3});
  Attrs ints = A({{"stride", Attr{int64_t{2}}},
                  {"padding", Attr{int64_t{1}}},
                  {"dilation", Attr{int64_t{1}}},
                  {"groups", Attr{int64_t{1}}}});
  EXPECT_TRUE(agree("conv2d", {x, w}, ints, Tol::scaled, 20));
  EXPECT_TRUE(agree("conv2d", {x, gen.tensor(DType::f32, {3, 2, 9, 9})}, {}, Tol::exact));
  EXPECT_TRUE(agree("conv2d", {x, w}, A({{"groups", Attr{int64_t{2}}}}), Tol::exact));
  EXPECT_TRUE(agree("conv2d", {x, w}, A({{"stride", Attr{int64_t{0}}}}), Tol::exact));
}

struct PoolCase {
  Shape x;
  int64_t kh, kw;
  std::vector<int64_t> stride;  // empty: none
  int64_t ph, pw;
};

const PoolCase kPool[] = {{{2, 3, 8, 8}, 2, 2, {}, 0, 0},      {{1, 2, 7, 9}, 3, 3, {2, 2}, 1, 1},
                          {{2, 1, 6, 6}, 3, 2, {1, 1}, 1, 1},  {{1, 1, 5, 5}, 5, 5, {}, 2, 2},
                          {{3, 2, 9, 7}, 2, 3, {3, 1}, 1, 0},  {{0, 2, 4, 4}, 2, 2, {}, 0, 0},
                          {{64, 6, 28, 28}, 2, 2, {}, 0, 0},   {{2, 3, 9, 11}, 3, 3, {2, 2}, 0, 0},
                          {{1, 2, 7, 9}, 2, 3, {1, 2}, 0, 0},  {{2, 2, 19, 37}, 2, 2, {}, 0, 0},
                          {{1, 3, 8, 40}, 1, 2, {1, 1}, 0, 0}, {{1, 2, 12, 12}, 2, 2, {3, 3}, 0, 0},
                          {{2, 2, 19, 36}, 2, 2, {}, 0, 0},    {{3, 1, 2, 2}, 2, 2, {}, 0, 0}};

Attrs pool_attrs(const PoolCase& c) {
  Attrs a = A({{"kernel", Attr{std::vector<int64_t>{c.kh, c.kw}}},
               {"padding", Attr{std::vector<int64_t>{c.ph, c.pw}}}});
  if (!c.stride.empty()) a.set("stride", Attr{c.stride});
  return a;
}

TEST(CpuConv, PoolingAndItsHelpersExactly) {
  Gen gen(32);
  // Every compiled path (the 2x2 planes' loops are compiled per instruction set).
  const Isa saved = force_isa(Isa::base);
  for (Isa level : {Isa::base, Isa::avx2, Isa::avx512})
    for (DType dt : {DType::f32, DType::f64}) {
      force_isa(level);
      for (const PoolCase& c : kPool) {
        for (int variant = 0; variant < 4; ++variant) {
          // 0: random; 1: few distinct values (ties); 2: with nan, inf and signed zeros; 3: only
          // -1, -0 and +0 (windows whose maximum is a zero of either sign, no nan)
          Tensor x = gen.tensor(dt, c.x, -2, 2);
          if (variant == 1)
            for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::floor(x.get(i)));
          if (variant == 2) gen.specials(x, 5);
          if (variant == 3)
            for (int64_t i = 0; i < x.numel(); ++i) {
              const double v = x.get(i);
              x.set(i, v < -1 ? -1.0 : v < 0.5 ? -0.0 : 0.0);
            }
          Attrs a = pool_attrs(c);
          for (const char* op : {"max_pool2d", "avg_pool2d"})
            EXPECT_TRUE(agree(op, {x}, a, Tol::exact)) << op << " " << x.type()->str();
          Value y = ref_call("max_pool2d", {x}, a);
          Tensor g = gen.tensor(dt, y.tensor.shape(), -1, 1);
          if (variant == 2) gen.specials(g, 6);  // -0 gradients too: the sum gives +0
          Tensor t = gen.tensor(dt, c.x, -1, 1);
          EXPECT_TRUE(agree("max_pool2d_grad", {x, g}, a, Tol::exact))
              << x.type()->str() << " isa " << int(level);
          EXPECT_TRUE(agree("max_pool2d_select", {x, t}, a, Tol::exact))
              << x.type()->str() << " isa " << int(level);
          Attrs as = a;
          as.set("shape", Attr{c.x});
          EXPECT_TRUE(agree("avg_pool2d_grad", {g}, as, Tol::exact)) << x.type()->str();
        }
      }
    }
  force_isa(saved);
  Tensor x = gen.tensor(DType::f32, {1, 1, 4, 4});
  EXPECT_TRUE(agree(
      "max_pool2d", {x},
      A({{"kernel", Attr{std::vector<int64_t>{2}}}, {"padding", Attr{std::vector<int64_t>{2}}}}),
      Tol::exact));  // padding above half the kernel: error
  EXPECT_TRUE(agree("avg_pool2d", {x}, A({{"kernel", Attr{std::vector<int64_t>{5}}}}),
                    Tol::exact));  // does not fit
}

}  // namespace
}  // namespace spora::cpu::testing
