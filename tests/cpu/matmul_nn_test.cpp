// CPU matmul and nn kernels against the reference kernels: matmul in every NumPy form
// (1-D operands, broadcast batches, empty and k = 0 shapes, integers exactly), softmax,
// log_softmax, logsumexp and cross_entropy (including logits of 1e4), layer_norm, layer_norm_grad,
// batch_norm and dropout (the reference's mask exactly).
#include <omp.h>

#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

TEST(CpuMatmul, EveryFormMatchesReference) {
  Gen gen(21);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{3}, {3}},
                        {{4}, {4, 5}},
                        {{4, 5}, {5}},
                        {{2, 3}, {3, 4}},
                        {{1, 1}, {1, 1}},
                        {{64, 784}, {784, 51}},
                        {{2, 3, 4}, {4, 5}},
                        {{4, 5}, {2, 5, 3}},
                        {{2, 1, 3, 4}, {3, 4, 2}},
                        {{5, 3, 4}, {5, 4, 2}},
                        {{0, 3}, {3, 4}},
                        {{3, 0}, {0, 4}},
                        {{2, 0}, {0}},
                        {{0, 2, 3}, {3, 1}},
                        {{7}, {2, 7, 3}},
                        {{2, 7, 3}, {3}},
                        {{33, 17}, {17, 65}}};
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    for (const Case& c : cases) {
      Tensor a = gen.tensor(dt, c.a, -1, 1, -50, 50);
      Tensor b = gen.tensor(dt, c.b, -1, 1, -50, 50);
      int64_t k = c.a.back();
      EXPECT_TRUE(agree("matmul", {a, b}, {}, Tol::scaled, product_scale(a, b, k)))
          << a.type()->str() << " @ " << b.type()->str();
    }
  }
  // Shape errors and bool operands: the reference's errors.
  EXPECT_TRUE(agree("matmul", {gen.tensor(DType::f32, {2, 3}), gen.tensor(DType::f32, {4, 5})}, {},
                    Tol::exact));
  EXPECT_TRUE(
      agree("matmul", {gen.tensor(DType::f32, {}), gen.tensor(DType::f32, {4})}, {}, Tol::exact));
  // Integer products wrap like the reference's.
  Tensor big = vec_t(DType::i32, {1, 2}, {2147483647, 2147483647});
  Tensor two = vec_t(DType::i32, {2, 1}, {3, 5});
  EXPECT_TRUE(agree("matmul", {big, two}, {}, Tol::exact));
}

// Batched products run every block of every product as one task (blas.h gemm_batch): products
// cut into blocks with a ragged last one ([200, 70] x [70, 300]: blocks of 160 columns, then
// 140), products just large enough to be cut in two (2M multiply-adds and up: [40, 90] x
// [90, 600] in columns of 304 and 296, and its transpose in rows), many small products
// (attention's per-head shape, smaller), and broadcast batches. Each matches the reference, and
// the same bits come out on one thread as on the team.
TEST(CpuMatmul, BatchedProductsInParallelMatchReferenceAndOneThread) {
  Gen gen(23);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 200, 70}, {3, 70, 300}}, {{3, 300, 70}, {3, 70, 200}}, {{40, 90}, {90, 600}},
      {{600, 90}, {90, 40}},        {{32, 32, 16}, {32, 16, 24}}, {{2, 1, 130, 40}, {3, 40, 129}},
      {{5, 1, 33}, {5, 33, 257}}};
  for (DType dt : {DType::f32, DType::f64}) {
    for (const auto& [sa, sb] : cases) {
      Tensor a = gen.tensor(dt, sa), b = gen.tensor(dt, sb);
      EXPECT_TRUE(agree("matmul", {a, b}, {}, Tol::scaled, product_scale(a, b, sa.back())))
          << a.type()->str() << " @ " << b.type()->str();
      const Value team = cpu_call("matmul", {a, b});
      const Value one = cpu_call_one_thread("matmul", {a, b});
      EXPECT_TRUE(matches(team, one, Tol::exact)) << a.type()->str() << " @ " << b.type()->str();
    }
  }
}

// transpose_a / transpose_b go to BLAS as transa / transb, operands read where they lie: every
// form against the reference (which multiplies transposed copies), blocked and ragged products,
// the stacked-rows shortcut's shapes ([b, m, k] @ [n, k]^T), broadcast batches, vectors, k = 0,
// integers (the reference's loops), and the rank errors; one thread gives the team's bits.
TEST(CpuMatmul, TransposeFlagsMatchReferenceOnEveryPath) {
  Gen gen(29);
  struct Case {
    Shape a, b;  // as stored
    bool ta, tb;
  };
  const Case cases[] = {{{784, 64}, {784, 51}, true, false},
                        {{64, 784}, {51, 784}, false, true},
                        {{70, 200}, {300, 70}, true, true},
                        {{3, 17, 33}, {17, 65}, true, false},
                        {{3, 33, 17}, {65, 17}, false, true},
                        {{3, 200, 70}, {3, 300, 200}, true, true},
                        {{2, 1, 40, 130}, {3, 40, 129}, true, false},
                        {{7}, {2, 5, 7}, false, true},
                        {{7, 5}, {7}, true, false},
                        {{0, 3}, {0, 4}, true, false},
                        {{3, 4}, {0, 4}, false, true},
                        {{8, 128, 256}, {8, 128, 64}, true, false}};
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    for (const Case& c : cases) {
      if (dt == DType::i32 && c.a.size() + c.b.size() > 4) continue;  // the loops are slow
      Attrs attrs;
      if (c.ta) attrs.set("transpose_a", true);
      if (c.tb) attrs.set("transpose_b", true);
      Tensor a = gen.tensor(dt, c.a, -1, 1, -50, 50), b = gen.tensor(dt, c.b, -1, 1, -50, 50);
      const int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
      const std::string what =
          a.type()->str() + (c.ta ? "^T @ " : " @ ") + b.type()->str() + (c.tb ? "^T" : "");
      EXPECT_TRUE(agree("matmul", {a, b}, attrs, Tol::scaled, product_scale(a, b, k))) << what;
      if (dt == DType::i32) continue;
      const Value team = cpu_call("matmul", {a, b}, attrs);
      const Value one = cpu_call_one_thread("matmul", {a, b}, attrs);
      EXPECT_TRUE(matches(team, one, Tol::exact)) << what;
    }
  }
  Attrs ta;
  ta.set("transpose_a", true);
  EXPECT_TRUE(agree("matmul", {gen.tensor(DType::f32, {3}), gen.tensor(DType::f32, {3, 4})}, ta,
                    Tol::exact));
  EXPECT_TRUE(agree("matmul", {gen.tensor(DType::f32, {3, 2}), gen.tensor(DType::f32, {2, 4})}, ta,
                    Tol::exact));
}

TEST(CpuNn, SoftmaxFamilyOnEveryAxis) {
  Gen gen(22);
  const std::vector<Shape> shapes = {{1}, {10}, {64, 10}, {3, 4, 5}, {2, 0, 3}, {5, 1}, {8, 1031}};
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : shapes) {
      Tensor x = gen.tensor(dt, s, -5, 5);
      for (int64_t axis = -static_cast<int64_t>(s.size()); axis < static_cast<int64_t>(s.size());
           ++axis)
        for (const char* op : {"softmax", "log_softmax"})
          EXPECT_TRUE(agree(op, {x}, A({{"axis", Attr{axis}}}), Tol::approx))
              << op << " " << x.type()->str() << " axis " << axis;
      // logsumexp over axis sets
      for (int64_t mask = 0; mask < (int64_t{1} << s.size()); ++mask) {
        std::vector<int64_t> axes;
        for (size_t a = 0; a < s.size(); ++a)
          if (mask >> a & 1) axes.push_back(static_cast<int64_t>(a));
        for (bool keep : {false, true})
          EXPECT_TRUE(
              agree("logsumexp", {x}, A({{"axis", Attr{axes}}, {"keepdims", keep}}), Tol::approx))
              << x.type()->str() << " axes " << sem::attr_str(Attr{axes});
      }
      EXPECT_TRUE(agree("logsumexp", {x}, {}, Tol::approx));
    }
  }
  // Huge logits stay finite; -inf and nan rows follow the reference.
  Tensor huge = vec_t(DType::f32, {2, 3}, {1e4, -1e4, 0, 3e4, 3e4, -3e4});
  for (const char* op : {"softmax", "log_softmax", "logsumexp"})
    EXPECT_TRUE(agree(op, {huge}, {}, Tol::approx)) << op;
  Tensor odd = vec_t(DType::f32, {3, 2}, {-INFINITY, -INFINITY, NAN, 1, INFINITY, 1});
  for (const char* op : {"softmax", "log_softmax", "logsumexp"})
    EXPECT_TRUE(agree(op, {odd}, {}, Tol::approx)) << op;
  EXPECT_TRUE(agree("softmax", {gen.tensor(DType::f32, {})}, {}, Tol::exact));  // error
  EXPECT_TRUE(
      agree("softmax", {gen.tensor(DType::f32, {3})}, A({{"axis", Attr{int64_t{2}}}}), Tol::exact));
}

TEST(CpuNn, CrossEntropyHardAndSoftLabels) {
  Gen gen(23);
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s :
         std::vector<Shape>{{10}, {64, 10}, {4, 5, 3}, {2, 3, 2, 2}, {0, 4}, {7, 1}}) {
      Shape ls = s;
      ls.erase(ls.begin() + (s.size() >= 2 ? 1 : 0));
      int64_t C = s[s.size() >= 2 ? 1 : 0];
      Tensor x = gen.tensor(dt, s, -4, 4);
      Tensor hard = gen.tensor(DType::i64, ls, 0, 0, 0, C - 1);
      Tensor hard32 = gen.tensor(DType::i32, ls, 0, 0, 0, C - 1);
      Tensor soft = gen.tensor(dt, s, 0, 1);
      for (const char* red : {"mean", "sum", "none"}) {
        Attrs a = A({{"reduction", Attr{std::string(red)}}});
        EXPECT_TRUE(agree("cross_entropy", {x, hard}, a, Tol::approx)) << x.type()->str() << red;
        EXPECT_TRUE(agree("cross_entropy", {x, hard32}, a, Tol::approx)) << x.type()->str() << red;
        EXPECT_TRUE(agree("cross_entropy", {x, soft}, a, Tol::approx)) << x.type()->str() << red;
      }
    }
  }
  // Logits of 1e4: finite, the reference's values.
  Tensor big = vec_t(DType::f32, {2, 3}, {1e4, 0, -1e4, -1e4, 1e4 + 5, 1e4});
  Tensor lab = vec_t(DType::i32, {2}, {1, 2});
  EXPECT_TRUE(agree("cross_entropy", {big, lab}, A({{"reduction", Attr{std::string("none")}}}),
                    Tol::approx));
  Value l = cpu_call("cross_entropy", {big, lab});
  EXPECT_TRUE(std::isfinite(l.tensor.get(0)));
  // mean of 1e4 (row 0: label 1 against 1e4) and 5 + log(1 + e^-5) (row 1)
  EXPECT_NEAR(l.tensor.get(0), (1e4 + 5 + std::log1p(std::exp(-5.0))) / 2, 1e-2);
  // Out-of-range labels: the reference's error for the first one.
  Tensor bad = vec_t(DType::i32, {2}, {1, 7});
  EXPECT_TRUE(agree("cross_entropy", {big, bad}, {}, Tol::exact));
  EXPECT_EQ(user_error_of([&] {
              cpu_call("cross_entropy", {big, bad});
            }),
            "cross_entropy label 7 is out of range for 3 classes");
}

TEST(CpuNn, LayerNormAndBatchNorm) {
  Gen gen(24);
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : std::vector<Shape>{{5}, {8, 128, 256}, {3, 4, 5}, {0, 4}, {2, 1}}) {
      Tensor x = gen.tensor(dt, s, -3, 5);
      for (int64_t nd = 1; nd <= static_cast<int64_t>(s.size()); ++nd) {
        Shape norm(s.end() - nd, s.end());
        Tensor g = gen.tensor(dt, norm), b = gen.tensor(dt, norm);
        Attrs a = A({{"ndim", Attr{nd}}, {"eps", Attr{1e-5}}});
        EXPECT_TRUE(agree("layer_norm", {x}, a, Tol::approx)) << x.type()->str() << " " << nd;
        EXPECT_TRUE(agree("layer_norm", {x, g, b}, a, Tol::approx));
        EXPECT_TRUE(agree("layer_norm", {x, g}, a, Tol::approx));
        EXPECT_TRUE(agree("layer_norm", {x, Value(), b}, a, Tol::approx));
        // The result cancels (g - mean(g) - xhat mean(g xhat)): compared at a fixed scale of 4,
        // above its terms rstd |g| on the long rows (|g| <= 2, rstd about 0.4).
        Tensor dy = gen.tensor(dt, s, -2, 2);
        EXPECT_TRUE(agree("layer_norm_grad", {x, dy}, a, Tol::scaled, 4)) << x.type()->str() << nd;
      }
    }
    // Rows with a large offset: computed in double like the reference.
    Tensor off = gen.tensor(dt, {4, 300}, 1000, 1001);
    EXPECT_TRUE(agree("layer_norm", {off}, A({{"ndim", Attr{int64_t{1}}}}), Tol::approx));
    EXPECT_TRUE(agree("layer_norm_grad", {off, gen.tensor(dt, {4, 300})},
                      A({{"ndim", Attr{int64_t{1}}}}), Tol::scaled, 8));
    for (const Shape& s : std::vector<Shape>{{16, 3}, {8, 4, 5, 5}, {2, 3, 7}, {1, 2, 1, 1}}) {
      int64_t C = s[1];
      Tensor x = gen.tensor(dt, s, -2, 3);
      Tensor g = gen.tensor(dt, {C}), b = gen.tensor(dt, {C});
      Tensor rm = gen.tensor(dt, {C}), rv = gen.tensor(dt, {C}, 0.5, 2);
      for (bool training : {false, true})
        EXPECT_TRUE(
            agree("batch_norm", {x, g, b, rm, rv},
                  A({{"training", Attr{training}}, {"momentum", Attr{0.1}}, {"eps", Attr{1e-5}}}),
                  Tol::approx))
            << x.type()->str() << " training " << training;
    }
  }
}

TEST(CpuNn, DropoutReproducesTheReferenceMask) {
  Gen gen(25);
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : std::vector<Shape>{{}, {17}, {300, 347}, {0, 3}}) {
      Tensor x = gen.tensor(dt, s);
      for (double p : {0.0, 0.1, 0.5, 0.9, 1.0})
        for (int64_t seed : {0, 7, 123456789})
          for (bool training : {true, false})
            EXPECT_TRUE(
                agree("dropout", {x},
                      A({{"p", Attr{p}}, {"seed", Attr{seed}}, {"training", Attr{training}}}),
                      Tol::exact))
                << x.type()->str() << " p " << p << " seed " << seed;
    }
  }
  // About p of the elements are dropped.
  Tensor ones = Tensor::full(DType::f32, {100000}, 1.0);
  Value y = cpu_call("dropout", {ones}, A({{"p", Attr{0.25}}, {"seed", Attr{int64_t{3}}}}));
  int64_t zeros = 0;
  for (int64_t i = 0; i < 100000; ++i) zeros += y.tensor.data<float>()[i] == 0;
  EXPECT_NEAR(static_cast<double>(zeros) / 100000, 0.25, 0.01);
}

}  // namespace
}  // namespace spora::cpu::testing
