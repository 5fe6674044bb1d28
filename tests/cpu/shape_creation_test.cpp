// CPU shape and creation kernels against the reference kernels (all exact): permutations and
// transposes (tiled and not), broadcast_to, slices with every index form, slice_grad, concat,
// stack, gather, scatter_add with repeated indices, one_hot, the storage-sharing views, and
// the creation ops including the seeded random ones (semantics/rng.h bit for bit).
#include <limits>

#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

constexpr int64_t kOmit = std::numeric_limits<int64_t>::max();
const DType kAll[] = {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean, DType::f16};

TEST(CpuShape, PermuteTransposeBroadcast) {
  Gen gen(41);
  for (DType dt : kAll) {
    for (const Shape& s : std::vector<Shape>{
             {}, {5}, {3, 4}, {2, 3, 4}, {0, 3}, {300, 347}, {4, 1, 3, 5}, {64, 33, 65}}) {
      Tensor x = gen.tensor(dt, s);
      EXPECT_TRUE(agree("transpose", {x}, {}, Tol::exact)) << x.type()->str();
      std::vector<int64_t> perm(s.size());
      for (size_t i = 0; i < s.size(); ++i) perm[i] = static_cast<int64_t>(i);
      int tries = 0;
      do {
        EXPECT_TRUE(agree("permute", {x}, A({{"axes", Attr{perm}}}), Tol::exact))
            << x.type()->str() << " " << sem::attr_str(Attr{perm});
      } while (std::next_permutation(perm.begin(), perm.end()) && ++tries < 24);
    }
    Tensor x = gen.tensor(dt, {3, 1, 4});
    for (const Shape& to : std::vector<Shape>{{3, 5, 4}, {2, 3, 1, 4}, {2, 3, 7, 4}, {3, 0, 4}})
      EXPECT_TRUE(agree("broadcast_to", {x}, A({{"shape", Attr{to}}}), Tol::exact));
    EXPECT_TRUE(agree("broadcast_to", {gen.tensor(dt, {})}, A({{"shape", Attr{Shape{300, 347}}}}),
                      Tol::exact));
    EXPECT_TRUE(agree("broadcast_to", {gen.tensor(dt, {347})},
                      A({{"shape", Attr{Shape{300, 347}}}}), Tol::exact));
    // Runs of one element repeated: a column to rows of odd lengths, a scalar to a rank 3.
    for (const Shape& to : std::vector<Shape>{{5, 301}, {2, 5, 33}, {5, 1}})
      EXPECT_TRUE(
          agree("broadcast_to", {gen.tensor(dt, {5, 1})}, A({{"shape", Attr{to}}}), Tol::exact))
          << sem::attr_str(Attr{to});
    EXPECT_TRUE(agree("broadcast_to", {gen.tensor(dt, {})},
                      A({{"shape", Attr{Shape{8, 128, 257}}}}), Tol::exact));
  }
  Tensor x = gen.tensor(DType::f32, {2, 3});
  EXPECT_TRUE(agree("permute", {x}, A({{"axes", Attr{std::vector<int64_t>{0, 0}}}}), Tol::exact));
  EXPECT_TRUE(agree("broadcast_to", {x}, A({{"shape", Attr{Shape{4, 3}}}}), Tol::exact));
}

// Transposes of 4-byte elements take 8 x 8 register blocks with AVX2: every compiled path, on
// shapes with ragged edges, power-of-two strides and a leading batch, and on the activations of
// W2 and W4, equals the reference.
TEST(CpuShape, TransposeBlocksEqualTheReferenceOnEveryPath) {
  Gen gen(43);
  const Isa saved = force_isa(Isa::base);
  for (Isa level : {Isa::base, Isa::avx2, Isa::avx512}) {
    force_isa(level);
    for (DType dt : {DType::f32, DType::i32, DType::f64}) {
      for (const Shape& s : std::vector<Shape>{{8, 8},
                                               {9, 8},
                                               {8, 17},
                                               {512, 512},
                                               {784, 512},
                                               {13, 31},
                                               {3, 40, 24},
                                               {2, 7, 9, 33},
                                               {130, 70},
                                               {1000, 300},
                                               {64, 784},
                                               {1024, 1024},
                                               {3, 200, 129}}) {
        Tensor x = gen.tensor(dt, s);
        std::vector<int64_t> perm(s.size());
        for (size_t i = 0; i < s.size(); ++i) perm[i] = static_cast<int64_t>(i);
        std::swap(perm[s.size() - 1], perm[s.size() - 2]);
        EXPECT_TRUE(agree("permute", {x}, A({{"axes", Attr{perm}}}), Tol::exact))
            << x.type()->str() << " isa " << int(level);
        EXPECT_TRUE(agree("transpose", {x}, {}, Tol::exact)) << x.type()->str();
      }
    }
  }
  force_isa(saved);
}

TEST(CpuShape, ViewsShareStorage) {
  Gen gen(42);
  Tensor x = gen.tensor(DType::f32, {2, 3, 1, 4});
  struct Case {
    const char* op;
    Attrs attrs;
  };
  const Case cases[] = {{"reshape", A({{"shape", Attr{std::vector<int64_t>{6, -1}}}})},
                        {"reshape", A({{"shape", Attr{std::vector<int64_t>{24}}}})},
                        {"flatten", A({{"start_axis", Attr{int64_t{1}}}})},
                        {"flatten", A({{"start_axis", Attr{int64_t{-2}}}})},
                        {"squeeze", {}},
                        {"squeeze", A({{"axis", Attr{int64_t{2}}}})},
                        {"unsqueeze", A({{"axis", Attr{int64_t{-1}}}})},
                        {"expand_dims", A({{"axis", Attr{int64_t{0}}}})},
                        {"identity", {}},
                        {"stop_gradient", {}}};
  for (const Case& c : cases) {
    EXPECT_TRUE(agree(c.op, {x}, c.attrs, Tol::exact)) << c.op;
    EXPECT_EQ(cpu_call(c.op, {x}, c.attrs).tensor.raw(), x.raw()) << c.op;
  }
  // Errors: the reference's.
  EXPECT_TRUE(agree("reshape", {x}, A({{"shape", Attr{std::vector<int64_t>{5, -1}}}}), Tol::exact));
  EXPECT_TRUE(agree("squeeze", {x}, A({{"axis", Attr{int64_t{0}}}}), Tol::exact));
  EXPECT_TRUE(agree("unsqueeze", {x}, A({{"axis", Attr{int64_t{9}}}}), Tol::exact));
  EXPECT_TRUE(agree("flatten", {gen.tensor(DType::f32, {})}, {}, Tol::exact));
}

Attrs slice_attrs(std::vector<int64_t> starts, std::vector<int64_t> stops,
                  std::vector<int64_t> steps, std::vector<int64_t> squeeze = {}) {
  return A({{"starts", Attr{starts}},
            {"stops", Attr{stops}},
            {"steps", Attr{steps}},
            {"squeeze", Attr{squeeze}}});
}

TEST(CpuShape, SlicesAndSliceGrad) {
  Gen gen(43);
  const std::vector<Attrs> slices = {
      slice_attrs({1, 0}, {3, kOmit}, {1, 2}),
      slice_attrs({0}, {1}, {1}, {0}),
      slice_attrs({0, -1}, {kOmit, 0}, {1, 1}, {1}),
      slice_attrs({kOmit}, {kOmit}, {-1}),
      slice_attrs({-2, 5}, {-100, -9}, {-1, -2}),
      slice_attrs({2, 1}, {2, 3}, {1, 1}),  // empty
      slice_attrs({1, 2}, {0, 0}, {1, 1}, {0, 1}),
      slice_attrs({5}, {kOmit}, {1}),  // index 5 of 4: error
      slice_attrs({0}, {4}, {0}),      // step 0: error
  };
  for (DType dt : kAll) {
    Tensor x = gen.tensor(dt, {4, 6});
    for (const Attrs& a : slices) {
      EXPECT_TRUE(agree("slice", {x}, a, Tol::exact)) << dtype_name(dt);
      Value y;
      if (user_error_of([&] { y = ref_call("slice", {x}, a); }).empty()) {
        Attrs ga = a;
        ga.set("shape", Attr{Shape{4, 6}});
        EXPECT_TRUE(agree("slice_grad", {y}, ga, Tol::exact)) << dtype_name(dt);
      }
    }
  }
  Tensor big = gen.tensor(DType::f32, {300, 347});
  EXPECT_TRUE(agree("slice", {big}, slice_attrs({kOmit, 3}, {kOmit, 300}, {-2, 3}), Tol::exact));
}

TEST(CpuShape, ConcatStackGatherScatterOneHot) {
  Gen gen(44);
  for (DType dt : kAll) {
    Tensor a = gen.tensor(dt, {2, 3, 4}), b = gen.tensor(dt, {2, 1, 4}),
           c = gen.tensor(dt, {2, 0, 4});
    EXPECT_TRUE(agree("concat", {a, b, c}, A({{"axis", Attr{int64_t{1}}}}), Tol::exact));
    EXPECT_TRUE(agree("concat", {a, a}, A({{"axis", Attr{int64_t{-1}}}}), Tol::exact));
    EXPECT_TRUE(agree("concat", {a, b}, A({{"axis", Attr{int64_t{0}}}}), Tol::exact));  // error
    for (int64_t axis = -4; axis < 4; ++axis)
      EXPECT_TRUE(agree("stack", {a, a, a}, A({{"axis", Attr{axis}}}), Tol::exact)) << axis;
    for (DType it : {DType::i32, DType::i64}) {
      Tensor idx = gen.tensor(it, {2, 5}, 0, 0, -3, 2);
      for (int64_t axis = -3; axis < 3; ++axis)
        EXPECT_TRUE(agree("gather", {a, idx}, A({{"axis", Attr{axis}}}), Tol::exact)) << axis;
      EXPECT_TRUE(agree("gather", {a, vec_t(it, {1}, {7})}, {}, Tol::exact));  // error
    }
  }
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    Tensor x = gen.tensor(dt, {5, 3});
    Tensor idx = vec_t(DType::i64, {6}, {0, 4, 4, -1, 2, 0});  // repeated indices accumulate
    EXPECT_TRUE(agree("scatter_add", {x, idx, gen.tensor(dt, {6, 3})}, {}, Tol::exact));
    EXPECT_TRUE(agree("scatter_add", {x, vec_t(DType::i32, {2}, {1, 1}), gen.tensor(dt, {5, 2})},
                      A({{"axis", Attr{int64_t{1}}}}), Tol::exact));
    Tensor big = gen.tensor(dt, {400, 300});
    EXPECT_TRUE(agree("scatter_add",
                      {big, gen.tensor(DType::i32, {50}, 0, 0, 0, 299), gen.tensor(dt, {400, 50})},
                      A({{"axis", Attr{int64_t{1}}}}), Tol::exact));
  }
  for (DType dt : {DType::f32, DType::i32, DType::boolean, DType::f64, DType::bf16}) {
    EXPECT_TRUE(agree("one_hot", {gen.tensor(DType::i32, {4, 3}, 0, 0, 0, 4)},
                      A({{"num_classes", Attr{int64_t{5}}}, {"dtype", Attr{dt}}}), Tol::exact));
    EXPECT_TRUE(agree("one_hot", {vec_t(DType::i64, {2}, {1, 9})},
                      A({{"num_classes", Attr{int64_t{5}}}, {"dtype", Attr{dt}}}), Tol::exact));
  }
}

TEST(CpuCreation, FillsRangesAndSeededRandomness) {
  for (DType dt : kAll) {
    for (const Shape& s : std::vector<Shape>{{}, {0}, {7}, {300, 347}}) {
      EXPECT_TRUE(agree("zeros", {}, A({{"shape", Attr{s}}, {"dtype", Attr{dt}}}), Tol::exact));
      EXPECT_TRUE(agree("ones", {}, A({{"shape", Attr{s}}, {"dtype", Attr{dt}}}), Tol::exact));
      for (double v : {2.5, -7.9, 1e20, -0.0})
        EXPECT_TRUE(agree("full", {},
                          A({{"shape", Attr{s}}, {"value", Attr{v}}, {"dtype", Attr{dt}}}),
                          Tol::exact));
    }
    EXPECT_TRUE(
        agree("arange", {}, A({{"start", Attr{int64_t{10}}}, {"dtype", Attr{dt}}}), Tol::exact));
    EXPECT_TRUE(agree(
        "arange", {},
        A({{"start", Attr{0.5}}, {"stop", Attr{-3.0}}, {"step", Attr{-0.3}}, {"dtype", Attr{dt}}}),
        Tol::exact));
  }
  EXPECT_TRUE(agree(
      "arange", {},
      A({{"start", Attr{int64_t{1}}}, {"stop", Attr{int64_t{5}}}, {"step", Attr{int64_t{0}}}}),
      Tol::exact));                                                              // error
  EXPECT_TRUE(agree("zeros", {}, A({{"shape", Attr{Shape{-1}}}}), Tol::exact));  // error
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : std::vector<Shape>{{}, {5}, {300, 347}}) {
      for (int64_t seed : {0, 1, 42, -5}) {
        EXPECT_TRUE(agree("normal", {},
                          A({{"mean", Attr{1.5}},
                             {"std", Attr{2.0}},
                             {"shape", Attr{s}},
                             {"seed", Attr{seed}},
                             {"dtype", Attr{dt}}}),
                          Tol::exact));
        EXPECT_TRUE(agree("uniform", {},
                          A({{"low", Attr{-1.0}},
                             {"high", Attr{3.0}},
                             {"shape", Attr{s}},
                             {"seed", Attr{seed}},
                             {"dtype", Attr{dt}}}),
                          Tol::exact));
      }
    }
    // A range so narrow that rounding reaches `high`: stepped back below it.
    EXPECT_TRUE(agree("uniform", {},
                      A({{"low", Attr{1.0}},
                         {"high", Attr{1.0000001}},
                         {"shape", Attr{Shape{1000}}},
                         {"dtype", Attr{dt}}}),
                      Tol::exact));
  }
}

}  // namespace
}  // namespace spora::cpu::testing
