// CPU reduction kernels against the reference kernels: every op over every axis set of ranks
// 0..4 (both loop shapes), keepdims, all dtypes, empty tensors, special values (nan, signed
// zeros, ties), long axes in parallel, and the precision of long f32 sums.
#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

const char* kOps[] = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any"};

bool is_arg(const std::string& op) { return op == "argmax" || op == "argmin"; }

// Sums and products are reordered (approx, with the f64 scale of the terms); the others exact.
::testing::AssertionResult check(const std::string& op, const Tensor& x, const Attrs& attrs) {
  bool sum_like = op == "sum" || op == "mean" || op == "prod";
  return agree(op, {x}, attrs, sum_like ? Tol::approx : Tol::exact, sum_like ? abs_sum(x) : 0);
}

// Every subset of the axes of a rank-r tensor, as attributes (none = all axes).
std::vector<Attr> axis_sets(int64_t r, bool arg) {
  std::vector<Attr> out{Attr{std::monostate{}}};
  if (arg) {
    for (int64_t a = -r; a < r; ++a) out.push_back(Attr{a});
    return out;
  }
  for (int64_t mask = 0; mask < (int64_t{1} << r); ++mask) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < r; ++a)
      if (mask >> a & 1) axes.push_back(a);
    out.push_back(Attr{axes});
  }
  if (r > 0) out.push_back(Attr{int64_t{-1}});
  return out;
}

TEST(CpuReduction, EveryAxisSetMatchesReference) {
  Gen gen(11);
  const std::vector<Shape> shapes = {{},        {1},          {7},         {0},
                                     {3, 4},    {1, 5},       {2, 3, 4},   {3, 1, 5},
                                     {2, 0, 3}, {2, 3, 4, 5}, {4, 1, 3, 1}};
  int checked = 0;
  for (const char* op : kOps) {
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
      for (const Shape& s : shapes) {
        Tensor x = gen.tensor(dt, s, -3, 3, -3, 3);
        for (const Attr& axes : axis_sets(static_cast<int64_t>(s.size()), is_arg(op))) {
          for (bool keep : {false, true}) {
            Attrs attrs = A({{"axis", axes}, {"keepdims", keep}});
            EXPECT_TRUE(check(op, x, attrs))
                << op << " " << x.type()->str() << " axis " << sem::attr_str(axes);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 3000);
}

TEST(CpuReduction, LargeTensorsInParallel) {
  Gen gen(12);
  // Long contiguous runs (blocked, parallel), many short rows, column sums (loop shape B).
  const std::vector<std::pair<Shape, Attr>> cases = {
      {{200003}, Attr{std::monostate{}}},
      {{3000, 70}, Attr{int64_t{1}}},
      {{3000, 70}, Attr{int64_t{0}}},
      {{8, 130, 70}, Attr{std::vector<int64_t>{0, 1}}},  // row blocks in parallel, the last ragged
      {{40, 3000}, Attr{std::vector<int64_t>{0}}},
      {{8, 64, 300}, Attr{std::vector<int64_t>{0, 2}}},
      {{8, 64, 300}, Attr{std::vector<int64_t>{1}}},
      {{2, 100001}, Attr{int64_t{1}}}};
  for (const auto& [shape, axes] : cases) {
    for (DType dt : {DType::f32, DType::f64, DType::i32}) {
      Tensor x = gen.tensor(dt, shape, -1, 1, -5, 5);
      for (const char* op : kOps) {
        Attr a = axes;
        if (is_arg(op) && std::holds_alternative<std::vector<int64_t>>(axes)) {
          auto v = std::get<std::vector<int64_t>>(axes);
          if (v.size() != 1) continue;
          a = Attr{v[0]};
        }
        EXPECT_TRUE(check(op, x, A({{"axis", a}})))
            << op << " " << x.type()->str() << " axis " << sem::attr_str(a);
      }
    }
  }
}

TEST(CpuReduction, NanSignedZerosAndTiesAreTheReferences) {
  Gen gen(13);
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : std::vector<Shape>{{9}, {3000}, {30, 17}, {17, 30}, {5, 4, 3}}) {
      for (int every : {2, 5, 23}) {
        Tensor x = gen.tensor(dt, s, -1, 1);
        gen.specials(x, every);
        for (const char* op : kOps) {
          for (const Attr& axes : axis_sets(static_cast<int64_t>(s.size()), is_arg(op)))
            EXPECT_TRUE(check(op, x, A({{"axis", axes}}))) << op << " " << x.type()->str();
        }
      }
    }
  }
  // Only zeros: max/min keep the first zero's sign; argmax its index.
  Tensor z = vec_t(DType::f32, {4}, {-0.0, 0.0, -0.0, 0.0});
  for (const char* op : {"max", "min", "argmax", "argmin"})
    EXPECT_TRUE(agree(op, {z}, {}, Tol::exact)) << op;
  // Zeros of random signs, long enough for every vector lane: the first zero's sign wins.
  for (int64_t n : {37, 5000}) {
    for (int trial = 0; trial < 8; ++trial) {
      // The first zero sits in another vector lane than element 0 (max: -1s before it).
      for (const char* op : {"max", "min"}) {
        Tensor big = Tensor::empty(DType::f32, {n});
        for (int64_t i = 0; i < n; ++i) big.data<float>()[i] = gen.integer(0, 1) ? -0.0f : 0.0f;
        int64_t first = 1 + trial;
        for (int64_t i = 0; i < first; ++i) big.data<float>()[i] = op[1] == 'a' ? -1.0f : 1.0f;
        big.data<float>()[first] = trial % 2 ? -0.0f : 0.0f;
        EXPECT_TRUE(agree(op, {big}, {}, Tol::exact)) << op << " trial " << trial;
        EXPECT_EQ(std::signbit(cpu_call(op, {big}).tensor.get(0)), trial % 2 == 1);
      }
    }
  }
}

TEST(CpuReduction, ErrorsMatchReference) {
  Gen gen(14);
  Tensor e = gen.tensor(DType::f32, {3, 0});
  for (const char* op : {"max", "min", "argmax"})
    EXPECT_TRUE(agree(op, {e}, A({{"axis", Attr{int64_t{1}}}}), Tol::exact)) << op;
  EXPECT_TRUE(agree("sum", {e}, A({{"axis", Attr{int64_t{5}}}}), Tol::exact));
  EXPECT_TRUE(agree("sum", {e}, A({{"axis", Attr{std::vector<int64_t>{0, 0}}}}), Tol::exact));
  EXPECT_FALSE(user_error_of([&] {
                 cpu_call("max", {e}, A({{"axis", Attr{int64_t{1}}}}));
               }).empty());
}

// Ten million copies of 0.1f: the double accumulation gives the exact sum rounded once.
TEST(CpuReduction, LongF32SumKeepsItsPrecision) {
  const int64_t n = 10'000'000;
  Tensor x = Tensor::empty(DType::f32, {n});
  std::fill(x.data<float>(), x.data<float>() + n, 0.1f);
  double exact = static_cast<double>(0.1f) * static_cast<double>(n);
  Value s = cpu_call("sum", {x});
  EXPECT_EQ(s.tensor.data<float>()[0], static_cast<float>(exact));
  Value m = cpu_call("mean", {x});
  EXPECT_EQ(m.tensor.data<float>()[0], 0.1f);
  // A float accumulator would be off by far more than one ulp:
  float naive = 0;
  for (int64_t i = 0; i < n; ++i) naive += 0.1f;
  EXPECT_GT(std::abs(naive - static_cast<float>(exact)), 1000.0f);
}

// The same input gives the same bits whatever the thread count (sums in fixed blocks, GEMMs
// in fixed blocks, the convolution's weight gradient in fixed groups of images).
TEST(CpuReduction, ResultsDoNotDependOnThreads) {
  Gen gen(15);
  Tensor x = gen.tensor(DType::f32, {1 << 20}, -1, 1);
  Tensor y = gen.tensor(DType::f32, {512, 1024}, -1, 1);
  // 1040 rows: blocks of 256, the last 16 (f64: sums in double round, so the order shows)
  Tensor z = gen.tensor(DType::f64, {8, 130, 70}, -1, 1);
  Tensor a1 = gen.tensor(DType::f32, {64, 784}), b1 = gen.tensor(DType::f32, {784, 300});
  Tensor a2 = gen.tensor(DType::f32, {300, 50}), b2 = gen.tensor(DType::f32, {50, 40});
  Tensor cx = gen.tensor(DType::f32, {16, 3, 12, 12}), cg = gen.tensor(DType::f32, {16, 4, 10, 10});
  Attrs wg = A({{"shape", Attr{Shape{4, 3, 3, 3}}}});
  auto run_all = [&] {
    return std::vector<Value>{
        cpu_call("sum", {x}),
        cpu_call("sum", {y}, A({{"axis", Attr{int64_t{0}}}})),
        cpu_call("sum", {z}, A({{"axis", Attr{std::vector<int64_t>{0, 1}}}})),
        cpu_call("mean", {z}, A({{"axis", Attr{std::vector<int64_t>{0, 1}}}})),
        cpu_call("matmul", {a1, b1}),
        cpu_call("matmul", {a2, b2}),
        cpu_call("conv2d_weight_grad", {cx, cg}, wg)};
  };
  std::vector<Value> two = run_all();
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<Value> one = run_all();
  omp_set_num_threads(saved);
  for (size_t i = 0; i < two.size(); ++i) EXPECT_TRUE(matches(two[i], one[i], Tol::exact)) << i;
}

}  // namespace
}  // namespace spora::cpu::testing
