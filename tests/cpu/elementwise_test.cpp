// CPU elementwise and compare kernels against the reference kernels: every op, every dtype the
// reference accepts, shapes from scalars and empty tensors to parallel sizes, every broadcast
// fast path, special values, errors, and the in-place reuse contract.
#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

const std::vector<Shape> kShapes = {{}, {0}, {1}, {3}, {17}, {1031}, {2, 3, 4}, {0, 5}, {300, 347}};

struct UnaryCase {
  const char* name;
  bool int_ok;
  bool exact_f32;  // the f32 kernel is the reference's own formula
  double lo, hi;   // input range
};

const UnaryCase kUnary[] = {
    {"neg", true, true, -5, 5},         {"abs", true, true, -5, 5},
    {"sign", true, true, -5, 5},        {"square", true, true, -5, 5},
    {"relu", true, true, -5, 5},        {"floor", true, true, -5, 5},
    {"ceil", true, true, -5, 5},        {"round", true, true, -5, 5},
    {"exp", false, false, -90, 90},     {"log", false, false, 1e-30, 1e4},
    {"sqrt", false, true, 0, 100},      {"rsqrt", false, true, 1e-3, 100},
    {"tanh", false, false, -12, 12},    {"sigmoid", false, false, -30, 30},
    {"gelu", false, false, -12, 12},    {"sin", false, true, -10, 10},
    {"cos", false, true, -10, 10},      {"erf", false, false, -6, 6},
    {"log1p", false, true, -0.9, 10},   {"expm1", false, true, -5, 5},
    {"reciprocal", false, true, -5, 5},
};

TEST(CpuElementwise, UnaryMatchesReference) {
  Gen gen(1);
  int checked = 0;
  for (const UnaryCase& c : kUnary) {
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64}) {
      bool is_int = dt == DType::i32 || dt == DType::i64;
      if (is_int && !c.int_ok) continue;  // rejected by the shape rule: no kernel sees it
      for (const Shape& s : kShapes) {
        Tensor x = gen.tensor(dt, s, c.lo, c.hi);
        if (s.size() == 1 && s[0] == 17) gen.specials(x, 3);
        Tol tol = (dt == DType::f32 && !c.exact_f32) ? Tol::approx : Tol::exact;
        EXPECT_TRUE(agree(c.name, {x}, {}, tol)) << c.name;
        ++checked;
      }
    }
    // bool is rejected the same way
    EXPECT_TRUE(agree(c.name, {gen.tensor(DType::boolean, {3})}, {}, Tol::exact));
  }
  EXPECT_GT(checked, 300);
}

// Dense sweeps of the vectorised f32 functions through every compiled instruction-set path.
TEST(CpuElementwise, VectorisedMathEveryIsa) {
  const int64_t n = 200001;
  struct Range {
    const char* name;
    double lo, hi;
  };
  const Range ranges[] = {{"exp", -104, 89},    {"exp", -1, 1},    {"log", 1e-38, 1e5},
                          {"log", 0.5, 2},      {"tanh", -10, 10}, {"tanh", -1e-3, 1e-3},
                          {"sigmoid", -90, 90}, {"gelu", -10, 10}, {"erf", -5, 5},
                          {"erf", -0.1, 0.1}};
  Isa saved = force_isa(Isa::base);
  for (Isa level : {Isa::base, Isa::avx2, Isa::avx512}) {
    force_isa(level);
    for (const Range& r : ranges) {
      Tensor x = Tensor::empty(DType::f32, {n});
      for (int64_t i = 0; i < n; ++i)
        x.data<float>()[i] = static_cast<float>(r.lo + (r.hi - r.lo) * double(i) / double(n - 1));
      EXPECT_TRUE(agree(r.name, {x}, {}, Tol::approx)) << r.name << " isa " << int(level);
    }
  }
  force_isa(saved);
}

struct ShapePair {
  Shape a, b;
};
const std::vector<ShapePair> kPairs = {{{}, {}},
                                       {{5}, {5}},
                                       {{}, {7}},
                                       {{7}, {}},
                                       {{4, 5}, {5}},
                                       {{5}, {4, 5}},
                                       {{4, 1}, {4, 5}},
                                       {{4, 5}, {4, 1}},
                                       {{2, 1, 3}, {4, 1}},
                                       {{1, 6, 1}, {5, 1, 7}},
                                       {{0, 3}, {3}},
                                       {{3, 0}, {1}},
                                       {{17}, {1}},
                                       {{300, 347}, {347}},
                                       {{300, 347}, {300, 347}},
                                       {{300, 1}, {300, 347}},
                                       {{}, {300, 347}},
                                       {{2, 150, 347}, {150, 1}},
                                       {{1031}, {1031}}};

TEST(CpuElementwise, BinaryMatchesReferenceOnEveryBroadcast) {
  Gen gen(2);
  int checked = 0;
  for (const char* op :
       {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "maximum", "minimum"}) {
    std::string name = op;
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64}) {
      bool is_int = dt == DType::i32 || dt == DType::i64;
      for (const ShapePair& p : kPairs) {
        // The large (parallel) shapes in two dtypes: the split is dtype-agnostic.
        if (numel_of(p.a) + numel_of(p.b) > 50000 && dt != DType::f32 && dt != DType::i64) continue;
        Tensor a = gen.tensor(dt, p.a, -10, 10);
        Tensor b = gen.tensor(dt, p.b, -10, 10);
        if (name == "pow") {
          a = gen.tensor(dt, p.a, 0.1, 3, -4, 4);
          b = gen.tensor(dt, p.b, -3, 3, 0, 5);
        }
        if (is_int && (name == "floordiv" || name == "mod"))
          for (int64_t i = 0; i < b.numel(); ++i)
            if (b.get(i) == 0) b.set(i, 3);
        if (!is_int && p.a.size() == 1 && p.a[0] == 17) gen.specials(a, 2);
        EXPECT_TRUE(agree(name, {a, b}, {}, Tol::exact));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 550);
}

TEST(CpuElementwise, BinaryErrorsMatchReference) {
  Gen gen(3);
  Tensor a = gen.tensor(DType::i32, {4});
  Tensor zero = vec_t(DType::i32, {4}, {1, 2, 0, 3});
  Tensor neg = vec_t(DType::i64, {2}, {2, -3});
  EXPECT_TRUE(agree("floordiv", {a, zero}, {}, Tol::exact));
  EXPECT_TRUE(agree("mod", {a, zero}, {}, Tol::exact));
  EXPECT_EQ(user_error_of([&] { cpu_call("mod", {a, zero}); }), "integer division by zero");
  EXPECT_EQ(user_error_of([&] {
              cpu_call("pow", {gen.tensor(DType::i64, {2}), neg});
            }),
            "integer pow with a negative exponent -3");
  // An empty result divides nothing.
  EXPECT_TRUE(agree("floordiv", {gen.tensor(DType::i32, {0, 4}), zero}, {}, Tol::exact));
  EXPECT_FALSE(user_error_of([&] {
                 cpu_call("add", {gen.tensor(DType::f32, {2, 3}), gen.tensor(DType::f32, {4})});
               }).empty());
  EXPECT_TRUE(agree("add", {gen.tensor(DType::boolean, {3}), gen.tensor(DType::boolean, {3})}, {},
                    Tol::exact));
}

TEST(CpuCompare, ComparisonsAndLogicalOps) {
  Gen gen(4);
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
      for (const ShapePair& p : kPairs) {
        if (numel_of(p.a) + numel_of(p.b) > 50000 && dt != DType::f32 && dt != DType::i32) continue;
        Tensor a = gen.tensor(dt, p.a, -3, 3, -3, 3);
        Tensor b = gen.tensor(dt, p.b, -3, 3, -3, 3);
        if (is_float(dt)) {  // equal values and nan
          for (int64_t i = 0; i < std::min(a.numel(), b.numel()); i += 3) a.set(i, b.get(i));
          gen.specials(b, 5);
        }
        EXPECT_TRUE(agree(op, {a, b}, {}, Tol::exact)) << op;
      }
    }
  }
  for (const char* op : {"logical_and", "logical_or"})
    for (const ShapePair& p : kPairs)
      EXPECT_TRUE(agree(op, {gen.tensor(DType::boolean, p.a), gen.tensor(DType::boolean, p.b)}, {},
                        Tol::exact));
  for (const Shape& s : kShapes)
    EXPECT_TRUE(agree("logical_not", {gen.tensor(DType::boolean, s)}, {}, Tol::exact));
}

TEST(CpuCompare, WhereBroadcastsAllThree) {
  Gen gen(5);
  struct Triple {
    Shape c, a, b;
  };
  const Triple cases[] = {{{}, {}, {}},
                          {{5}, {5}, {5}},
                          {{5}, {}, {5}},
                          {{5}, {5}, {}},
                          {{4, 1}, {5}, {4, 5}},
                          {{3, 1, 2}, {4, 1}, {1}},
                          {{0, 2}, {2}, {2}},
                          {{300, 347}, {347}, {300, 347}},
                          {{300, 347}, {300, 347}, {300, 347}},
                          {{347}, {300, 1}, {}},
                          {{300, 347}, {300, 347}, {}},    // ReLU's derivative: scalar b
                          {{300, 347}, {1}, {300, 347}}};  // scalar a
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean})
    for (const Triple& t : cases)
      EXPECT_TRUE(agree("where",
                        {gen.tensor(DType::boolean, t.c), gen.tensor(dt, t.a), gen.tensor(dt, t.b)},
                        {}, Tol::exact));
}

TEST(CpuCompare, CastEveryPairOfDtypes) {
  Gen gen(6);
  const DType all[] = {DType::f32,     DType::f64, DType::i32, DType::i64,
                       DType::boolean, DType::f16, DType::bf16};
  for (DType from : all) {
    for (DType to : all) {
      for (const Shape& s : kShapes) {
        Tensor x = gen.tensor(from, s, -1e3, 1e3, -100000, 100000);
        if (from == DType::f32 || from == DType::f64) {
          gen.specials(x, 4);
          if (x.numel() > 5) {
            x.set(1, 3e9);    // beyond i32: clamped
            x.set(2, -3e19);  // beyond i64: clamped
            x.set(3, 0.5);
          }
        }
        if (from == DType::i64 && x.numel() > 2) x.set(1, 9007199254740993.0);  // rounds twice
        EXPECT_TRUE(agree("cast", {x}, A({{"dtype", to}}), Tol::exact))
            << dtype_name(from) << " -> " << dtype_name(to);
      }
    }
  }
  // i64 values that double rounding through f64 changes: 2^53 + 1, and beyond 2^31
  Tensor big = Tensor::empty(DType::i64, {3});
  big.data<int64_t>()[0] = (int64_t{1} << 53) + 1;
  big.data<int64_t>()[1] = (int64_t{1} << 40) + 12345;
  big.data<int64_t>()[2] = -(int64_t{1} << 62) - 3;
  for (DType to : {DType::f32, DType::f64, DType::i32, DType::boolean})
    EXPECT_TRUE(agree("cast", {big}, A({{"dtype", to}}), Tol::exact));
}

// ---- in-place reuse -------------------------------------------------------------------------

// A uniquely owned input (given up by the caller) is overwritten with the result; the result
// equals the one computed into new storage; a shared input is never touched.
TEST(CpuInPlace, UniqueInputsAreReusedSharedOnesNever) {
  Gen gen(7);
  struct Case {
    std::string name;
    std::vector<Shape> shapes;
    size_t reused;  // which input's storage the result may take
  };
  const Case cases[] = {{"exp", {{1000}}, 0},
                        {"neg", {{5, 7}}, 0},
                        {"add", {{40, 30}, {30}}, 0},
                        {"mul", {{}, {40, 30}}, 1},
                        {"sub", {{40, 30}, {40, 30}}, 0},
                        {"gelu", {{70000}}, 0},
                        {"where", {{40, 30}, {40, 30}, {30}}, 1},
                        {"softmax", {{64, 10}}, 0},
                        {"log_softmax", {{64, 10}}, 0},
                        {"softmax", {{3, 1000}}, 0},
                        {"log_softmax", {{3, 1000}}, 0},
                        {"layer_norm", {{8, 300}}, 0},
                        {"dropout", {{1000}}, 0}};
  for (const Case& c : cases) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < c.shapes.size(); ++i)
      xs.push_back(
          gen.tensor(c.name == "where" && i == 0 ? DType::boolean : DType::f32, c.shapes[i]));
    Value fresh = cpu_call(c.name, {xs.begin(), xs.end()});  // shared inputs: new storage
    // Shared: the caller keeps xs; inputs must be unchanged.
    std::vector<Tensor> before;
    for (const Tensor& t : xs) before.push_back(t.clone());
    {
      std::vector<Value> in(xs.begin(), xs.end());
      Value r = cpu_kernel(c.name)(in, with_defaults(prim(c.name), {}));
      for (size_t i = 0; i < xs.size(); ++i) {
        EXPECT_TRUE(matches(before[i], xs[i], Tol::exact)) << c.name << " changed a shared input";
        EXPECT_NE(r.tensor.raw(), xs[i].raw());
      }
    }
    // Unique: the caller gives the inputs up.
    std::vector<Value> in;
    for (const Tensor& t : xs) in.push_back(t.clone());
    const void* buffer = in[c.reused].tensor.raw();
    Value r = cpu_kernel(c.name)(in, with_defaults(prim(c.name), {}));
    EXPECT_EQ(r.tensor.raw(), buffer) << c.name << " did not reuse its input";
    EXPECT_TRUE(matches(fresh, r, Tol::exact)) << c.name;
  }
}

}  // namespace
}  // namespace spora::cpu::testing
