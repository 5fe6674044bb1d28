// The CUDA backend against the reference kernels. Without a CUDA device (the development and
// CI machines) every test that runs a kernel skips with "no CUDA device: ..."; the probe and
// the coverage list are checked everywhere.
//
// Each case runs a row's reference kernel on host inputs and its "kernel.cuda" facet on the
// same inputs copied to the device, and compares: f32 within 1e-4 relative (+1e-5 absolute),
// f64 within 1e-10, integers and bools exactly, nan matching nan; a user error of the
// reference must be the CUDA kernel's too.
#include <set>

#include "backends/cuda/cuda.h"
#include "tests/cpu/cpu_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace spora::cuda::testing {
namespace {

using cpu::testing::A;
using cpu::testing::Gen;
using cpu::testing::user_error_of;
using cpu::testing::with_defaults;
using sem::Attr;
using sem::Attrs;

using sem::Shape;
using sem::Tensor;
using sem::Value;

const sem::Primitive& row(const std::string& name) {
  static bool once = [] {
    cpu::testing::prim("add");  // ops and CPU kernels registered
    register_kernels();
    return true;
  }();
  (void)once;
  return cpu::testing::prim(name);
}

bool close(double want, double got, DType dt) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || !is_float(dt)) return want == got;
  if (dt == DType::f64) return std::abs(want - got) <= 1e-10 * std::abs(want) + 1e-12;
  return std::abs(want - got) <= 1e-4 * std::abs(want) + 1e-5;
}

::testing::AssertionResult same(const Value& want, const Value& got) {
  if (want.kind != got.kind) return ::testing::AssertionFailure() << "kinds differ";
  if (!want.is_tensor()) return ::testing::AssertionSuccess();
  const Tensor& w = want.tensor;
  const Tensor g = to_host(got.tensor);
  if (w.dtype() != g.dtype() || w.shape() != g.shape())
    return ::testing::AssertionFailure()
           << "type " << g.type()->str() << ", want " << w.type()->str();
  for (int64_t i = 0; i < w.numel(); ++i)
    if (!close(w.get(i), g.get(i), w.dtype()))
      return ::testing::AssertionFailure() << "element " << i << " of " << w.type()->str()
                                           << ": got " << g.get(i) << ", want " << w.get(i);
  return ::testing::AssertionSuccess();
}

// The reference on the host inputs against the CUDA facet on device copies.
::testing::AssertionResult agree(const std::string& name, const std::vector<Value>& in,
                                 const Attrs& given = {}) {
  const sem::Primitive& p = row(name);
  const Attrs attrs = with_defaults(p, given);
  const sem::RefKernel* k = p.facet<sem::RefKernel>(sem::kCudaKernelFacet);
  if (!k) return ::testing::AssertionFailure() << name << " has no kernel.cuda facet";
  std::vector<Value> dev;
  for (const Value& v : in) dev.push_back(to_device(v));
  Value want, got;
  const std::string ref_err = user_error_of([&] { want = p.eval(in, attrs); });
  const std::string cuda_err = user_error_of([&] { got = (*k)(dev, attrs); });
  std::string shapes;
  for (const Value& v : in) shapes += (v.is_tensor() ? v.type()->str() : std::string("none")) + " ";
  if (!ref_err.empty() || !cuda_err.empty()) {
    if (ref_err == cuda_err) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << name << " on " << shapes << ": errors differ: reference '" << ref_err << "', cuda '"
           << cuda_err << "'";
  }
  if (got.is_tensor() && got.tensor.device().is_cpu() && got.tensor.numel() > 0)
    return ::testing::AssertionFailure() << name << " left its result on the host";
  auto r = same(want, got);
  if (!r) r << " [" << name << " on " << shapes << attrs.items().size() << " attrs]";
  return r;
}

Value t(DType dt, Shape s, Gen& g, double lo = -2, double hi = 2) {
  return g.tensor(dt, std::move(s), lo, hi);
}

// ---- everywhere -----------------------------------------------------------------------------

TEST(GpuProbe, AvailableOrSaysWhyWithoutCrashing) {
  std::string why;
  const bool ok = cuda_available(&why);
  if (ok) {
    EXPECT_TRUE(why.empty());
    EXPECT_TRUE(built_with_cuda());
  } else {
    EXPECT_EQ(why.rfind("no CUDA device: ", 0), 0u) << why;
    // Asking twice gives the same answer (the probe is cached, the sticky error cleared).
    std::string again;
    EXPECT_FALSE(cuda_available(&again));
    EXPECT_EQ(why, again);
    EXPECT_NE(
        user_error_of([] { install(); }).find("the CUDA backend cannot start: no CUDA device"),
        std::string::npos);
  }
}

TEST(GpuCoverage, EveryRowWithAReferenceKernelHasACudaFacet) {
  row("add");
  if (!built_with_cuda()) GTEST_SKIP() << "no CUDA device: Spora was built without CUDA";
  int native = 0, host = 0;
  std::set<std::string> listed;
  std::string host_rows;
  for (const Coverage& c : coverage()) {
    listed.insert(c.name);
    (c.kind == Coverage::Kind::Native ? native : host)++;
    if (c.kind == Coverage::Kind::Host) host_rows += " " + c.name;
  }
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    if (!p->eval) continue;
    EXPECT_NE(p->facet<sem::RefKernel>(sem::kCudaKernelFacet), nullptr) << p->name;
    EXPECT_TRUE(listed.count(p->name)) << p->name << " is missing from the coverage list";
  }
  // The families issue 8 names have CUDA kernels.
  for (const char* name :
       {"add", "mul", "exp", "sum", "max", "argmax", "matmul", "softmax", "log_softmax",
        "cross_entropy", "layer_norm", "transpose", "broadcast_to", "conv2d", "conv2d_input_grad",
        "conv2d_weight_grad", "zeros", "where", "cast"}) {
    bool found = false;
    for (const Coverage& c : coverage())
      if (c.name == name) found = c.kind == Coverage::Kind::Native;
    EXPECT_TRUE(found) << name << " has no native CUDA kernel";
  }
  EXPECT_GE(native, 70);
  std::printf("cuda coverage: %d rows native, %d on the host fallback:%s\n", native, host,
              host_rows.c_str());
}

TEST(GpuCoverage, KernelForFollowsTheBackend) {
  const sem::Primitive& p = row("add");
  if (!built_with_cuda()) GTEST_SKIP() << "no CUDA device: Spora was built without CUDA";
  const sem::Backend saved = sem::backend();
  sem::set_backend(sem::Backend::Cuda);
  EXPECT_EQ(&sem::kernel_for(p), p.facet<sem::RefKernel>(sem::kCudaKernelFacet));
  sem::set_backend(sem::Backend::Cpu);
  EXPECT_EQ(&sem::kernel_for(p), p.facet<sem::RefKernel>(sem::kCpuKernelFacet));
  sem::set_backend(sem::Backend::Reference);
  EXPECT_EQ(&sem::kernel_for(p), &p.eval);
  sem::set_backend(saved);
}

// ---- on a GPU -------------------------------------------------------------------------------

TEST(GpuMemory, AllocatorCachesBlocksAndCopiesRoundTrip) {
  REQUIRE_GPU();
  row("add");
  const DeviceMemoryStats before = memory_stats();
  Gen g(1);
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64, DType::boolean}) {
    for (Shape s : {Shape{}, Shape{0}, Shape{3, 5}, Shape{1000, 37}}) {
      Tensor h = g.tensor(dt, s);
      Tensor d = to_device(h);
      EXPECT_EQ(d.device().kind, sem::Device::Kind::cuda);
      Tensor back = to_host(d);
      ASSERT_EQ(back.shape(), h.shape());
      EXPECT_EQ(std::memcmp(back.raw(), h.raw(), h.nbytes()), 0) << h.type()->str();
    }
  }
  // The same sizes again come from the cache.
  for (int i = 0; i < 3; ++i) Tensor d = to_device(g.tensor(DType::f32, {1000, 37}));
  const DeviceMemoryStats after = memory_stats();
  EXPECT_GT(after.hits, before.hits);
  EXPECT_GT(after.cached_bytes, 0);
  EXPECT_GE(after.reserved_bytes, after.live_bytes + after.cached_bytes);
  empty_cache();
  EXPECT_EQ(memory_stats().cached_bytes, 0);
}

TEST(GpuKernels, Unary) {
  REQUIRE_GPU();
  Gen g(2);
  for (const char* name : {"neg", "abs", "sign", "square", "relu", "floor", "ceil", "round", "exp",
                           "tanh", "sigmoid", "gelu", "sin", "cos", "erf", "expm1", "reciprocal"}) {
    for (Shape s : {Shape{}, Shape{0}, Shape{3, 5}, Shape{7, 33, 2}}) {
      Value x = t(DType::f32, s, g);
      if (s.size() == 2) g.specials(x.tensor);
      EXPECT_TRUE(agree(name, {x}));
    }
    EXPECT_TRUE(agree(name, {t(DType::f64, {4, 9}, g)}));
  }
  for (const char* name : {"log", "sqrt", "rsqrt", "log1p"}) {
    EXPECT_TRUE(agree(name, {t(DType::f32, {6, 7}, g, 0.01, 5)}));
    EXPECT_TRUE(agree(name, {t(DType::f64, {6, 7}, g, 0.01, 5)}));
  }
  // Integers go to the host fallback, with the reference's result.
  EXPECT_TRUE(agree("abs", {t(DType::i32, {5}, g)}));
}

TEST(GpuKernels, BinaryWithBroadcasting) {
  REQUIRE_GPU();
  Gen g(3);
  const std::pair<Shape, Shape> shapes[] = {
      {{4, 5}, {4, 5}}, {{4, 1}, {1, 5}},          {{2, 3, 4}, {4}},    {{0, 3}, {3}},
      {{}, {2, 2}},     {{2, 1, 3, 1}, {5, 1, 4}}, {{257, 3}, {257, 1}}};
  for (const char* name :
       {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"}) {
    for (auto& [a, b] : shapes)
      EXPECT_TRUE(agree(name, {t(DType::f32, a, g), t(DType::f32, b, g)}));
    EXPECT_TRUE(agree(name, {t(DType::f64, {3, 4}, g), t(DType::f64, {4}, g)}));
  }
  for (const char* name : {"floordiv", "mod"}) {
    for (auto& [a, b] : shapes)
      EXPECT_TRUE(agree(name, {t(DType::f32, a, g, -9, 9), t(DType::f32, b, g, 0.5, 3)}));
    EXPECT_TRUE(agree(name, {t(DType::f64, {3, 4}, g, -9, 9), t(DType::f64, {4}, g, -3, -0.5)}));
  }
  EXPECT_TRUE(agree("pow", {t(DType::f32, {4, 5}, g, 0.1, 3), t(DType::f32, {5}, g, -2, 2)}));
  Value x = t(DType::f32, {4, 5}, g), y = t(DType::f32, {4, 5}, g);
  g.specials(x.tensor, 3);
  EXPECT_TRUE(agree("maximum", {x, y}));
  EXPECT_TRUE(agree("lt", {x, y}));
  // Mismatched shapes: the reference's error.
  EXPECT_TRUE(agree("add", {t(DType::f32, {2, 3}, g), t(DType::f32, {4}, g)}));
  // Integers: host fallback.
  EXPECT_TRUE(agree("add", {t(DType::i64, {3}, g), t(DType::i64, {2, 3}, g)}));
}

TEST(GpuKernels, WhereCastFill) {
  REQUIRE_GPU();
  Gen g(4);
  EXPECT_TRUE(agree(
      "where", {t(DType::boolean, {4, 1}, g), t(DType::f32, {4, 5}, g), t(DType::f32, {5}, g)}));
  EXPECT_TRUE(
      agree("where", {t(DType::boolean, {6}, g), t(DType::i64, {6}, g), t(DType::i64, {}, g)}));
  Value x = t(DType::f32, {40}, g, -3e9, 3e9);
  g.specials(x.tensor, 5);
  for (DType to : {DType::f64, DType::i32, DType::i64, DType::boolean}) {
    EXPECT_TRUE(agree("cast", {x}, A({{"dtype", to}})));
    EXPECT_TRUE(agree("cast", {t(DType::boolean, {9}, g)}, A({{"dtype", to}})));
    EXPECT_TRUE(agree("cast", {t(DType::i64, {9}, g)}, A({{"dtype", to}})));
  }
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::boolean}) {
    EXPECT_TRUE(agree("zeros", {}, A({{"shape", std::vector<int64_t>{3, 4}}, {"dtype", dt}})));
    EXPECT_TRUE(agree("ones", {}, A({{"shape", std::vector<int64_t>{0, 4}}, {"dtype", dt}})));
    EXPECT_TRUE(
        agree("full", {}, A({{"shape", std::vector<int64_t>{5}}, {"value", 2.5}, {"dtype", dt}})));
  }
}

TEST(GpuKernels, Reductions) {
  REQUIRE_GPU();
  Gen g(5);
  const Attr axes[] = {Attr{},
                       Attr{int64_t{0}},
                       Attr{int64_t{-1}},
                       Attr{std::vector<int64_t>{0, 2}},
                       Attr{std::vector<int64_t>{1, 2}},
                       Attr{std::vector<int64_t>{}}};
  for (const char* name : {"sum", "mean", "prod", "max", "min"}) {
    for (const Attr& axis : axes) {
      for (bool keep : {false, true}) {
        Attrs at = A({{"axis", axis}, {"keepdims", keep}});
        EXPECT_TRUE(agree(name, {t(DType::f32, {5, 6, 7}, g, 0.5, 1.5)}, at));
        EXPECT_TRUE(agree(name, {t(DType::f64, {3, 1, 4}, g)}, at));
      }
    }
    EXPECT_TRUE(
        agree(name, {t(DType::f32, {3, 2000}, g, 0.9, 1.1)}, A({{"axis", Attr{int64_t{1}}}})));
    EXPECT_TRUE(agree(name, {t(DType::f32, {0, 3}, g)}, A({{"axis", Attr{int64_t{0}}}})));
    Value x = t(DType::f32, {4, 9}, g);
    g.specials(x.tensor, 5);
    EXPECT_TRUE(agree(name, {x}, A({{"axis", Attr{int64_t{1}}}})));
  }
  for (const char* name : {"argmax", "argmin"}) {
    EXPECT_TRUE(agree(name, {t(DType::f32, {5, 6, 7}, g)}, A({{"axis", Attr{int64_t{1}}}})));
    EXPECT_TRUE(agree(name, {t(DType::f64, {5, 600}, g)}, A({{"axis", Attr{int64_t{-1}}}})));
    EXPECT_TRUE(agree(name, {t(DType::f32, {5, 6}, g)}));
    // Ties and nans: the first index.
    Tensor ties = cpu::testing::vec_t(DType::f32, {2, 4}, {1, 3, 3, 0, 2, NAN, 5, NAN});
    EXPECT_TRUE(agree(name, {ties}, A({{"axis", Attr{int64_t{1}}}})));
    EXPECT_TRUE(agree(name, {t(DType::f32, {0, 3}, g)}, A({{"axis", Attr{int64_t{0}}}})));
  }
  EXPECT_TRUE(agree("sum", {t(DType::i32, {4, 5}, g)}, A({{"axis", Attr{int64_t{0}}}})));  // host
}

TEST(GpuKernels, Matmul) {
  REQUIRE_GPU();
  Gen g(6);
  const std::pair<Shape, Shape> shapes[] = {{{5, 7}, {7, 3}},
                                            {{7}, {7, 3}},
                                            {{5, 7}, {7}},
                                            {{7}, {7}},
                                            {{2, 5, 7}, {7, 3}},
                                            {{2, 5, 7}, {2, 7, 3}},
                                            {{5, 7}, {2, 7, 3}},
                                            {{0, 7}, {7, 3}},
                                            {{5, 0}, {0, 3}},
                                            {{128, 256}, {256, 96}},
                                            {{2, 1, 4, 5}, {3, 5, 2}},
                                            {{3, 4}, {5, 6}}};
  for (auto& [a, b] : shapes) {
    EXPECT_TRUE(agree("matmul", {t(DType::f32, a, g), t(DType::f32, b, g)}));
    EXPECT_TRUE(agree("matmul", {t(DType::f64, a, g), t(DType::f64, b, g)}));
  }
  // transpose_a / transpose_b as cuBLAS's operations (shapes as stored): 2-D, one side
  // unbatched, both batched, ragged sizes.
  struct Flagged {
    Shape a, b;
    bool ta, tb;
  };
  const Flagged flagged[] = {
      {{7, 5}, {7, 3}, true, false},          {{5, 7}, {3, 7}, false, true},
      {{7, 5}, {3, 7}, true, true},           {{2, 7, 5}, {7, 3}, true, false},
      {{2, 5, 7}, {2, 3, 7}, false, true},    {{256, 128}, {96, 256}, true, true},
      {{3, 33, 17}, {3, 33, 65}, true, false}};
  for (const Flagged& f : flagged) {
    Attrs attrs;
    if (f.ta) attrs.set("transpose_a", true);
    if (f.tb) attrs.set("transpose_b", true);
    EXPECT_TRUE(agree("matmul", {t(DType::f32, f.a, g), t(DType::f32, f.b, g)}, attrs));
    EXPECT_TRUE(agree("matmul", {t(DType::f64, f.a, g), t(DType::f64, f.b, g)}, attrs));
  }
}

TEST(GpuKernels, SoftmaxCrossEntropyLayerNorm) {
  REQUIRE_GPU();
  Gen g(7);
  for (const char* name : {"softmax", "log_softmax"}) {
    for (int64_t axis : {-1, 0, 1}) {
      EXPECT_TRUE(agree(name, {t(DType::f32, {4, 6, 3}, g, -50, 50)}, A({{"axis", axis}})));
      EXPECT_TRUE(agree(name, {t(DType::f64, {4, 6, 3}, g)}, A({{"axis", axis}})));
    }
    EXPECT_TRUE(agree(name, {t(DType::f32, {3, 5000}, g, -80, 80)}));
    Tensor inf =
        cpu::testing::vec_t(DType::f32, {2, 3}, {-INFINITY, 1, 2, -INFINITY, -INFINITY, -INFINITY});
    EXPECT_TRUE(agree(name, {inf}));
    EXPECT_TRUE(agree(name, {t(DType::f32, {0, 4}, g)}));
  }
  for (const char* red : {"mean", "sum", "none"}) {
    Attrs at = A({{"reduction", std::string(red)}});
    EXPECT_TRUE(agree("cross_entropy",
                      {t(DType::f32, {8, 10}, g, -5, 5), g.tensor(DType::i32, {8}, 0, 0, 0, 9)},
                      at));
    EXPECT_TRUE(agree("cross_entropy",
                      {t(DType::f64, {4, 5, 3}, g), g.tensor(DType::i64, {4, 3}, 0, 0, 0, 4)}, at));
    EXPECT_TRUE(
        agree("cross_entropy", {t(DType::f32, {6}, g), g.tensor(DType::i64, {}, 0, 0, 0, 5)}, at));
    // Soft labels: host fallback.
    EXPECT_TRUE(
        agree("cross_entropy", {t(DType::f32, {3, 4}, g), t(DType::f32, {3, 4}, g, 0, 1)}, at));
  }
  // A label out of range: the reference's error.
  EXPECT_TRUE(agree("cross_entropy",
                    {t(DType::f32, {3, 4}, g), cpu::testing::vec_t(DType::i32, {3}, {0, 4, 1})}));
  EXPECT_TRUE(agree("layer_norm",
                    {t(DType::f32, {6, 16}, g), t(DType::f32, {16}, g), t(DType::f32, {16}, g)}));
  EXPECT_TRUE(
      agree("layer_norm", {t(DType::f32, {3, 4, 5}, g, 10, 11)}, A({{"ndim", int64_t{2}}})));
  EXPECT_TRUE(agree("layer_norm", {t(DType::f64, {2, 700}, g), t(DType::f64, {700}, g), Value()}));
  EXPECT_TRUE(agree("layer_norm_grad", {t(DType::f64, {6, 300}, g), t(DType::f64, {6, 300}, g)}));
  EXPECT_TRUE(agree("layer_norm_grad", {t(DType::f32, {8, 256}, g), t(DType::f32, {8, 256}, g)}));
}

TEST(GpuKernels, ConvolutionAndGradients) {
  REQUIRE_GPU();
  Gen g(8);
  struct Case {
    Shape x, w;
    std::vector<int64_t> stride, pad, dil;
  };
  const Case cases[] = {{{2, 3, 9, 8}, {4, 3, 3, 2}, {2, 1}, {1}, {1, 2}},
                        {{1, 1, 5, 5}, {2, 1, 1, 1}, {1}, {0}, {1}},
                        {{3, 2, 7, 7}, {5, 2, 3, 3}, {1}, {1}, {1}}};
  for (const Case& c : cases) {
    Attrs at = A({{"stride", c.stride}, {"padding", c.pad}, {"dilation", c.dil}});
    Value x = t(DType::f32, c.x, g), w = t(DType::f32, c.w, g), b = t(DType::f32, {c.w[0]}, g);
    EXPECT_TRUE(agree("conv2d", {x, w, b}, at));
    EXPECT_TRUE(agree("conv2d", {x, w}, at));
    Value y = row("conv2d").eval({x, w}, with_defaults(row("conv2d"), at));
    Value gy = t(DType::f32, y.tensor.shape(), g);
    Attrs ai = at, aw = at;
    ai.set("shape", std::vector<int64_t>(c.x.begin(), c.x.end()));
    aw.set("shape", std::vector<int64_t>(c.w.begin(), c.w.end()));
    EXPECT_TRUE(agree("conv2d_input_grad", {gy, w}, ai));
    EXPECT_TRUE(agree("conv2d_weight_grad", {x, gy}, aw));
  }
  // Grouped convolution: host fallback.
  EXPECT_TRUE(agree("conv2d", {t(DType::f32, {1, 4, 5, 5}, g), t(DType::f32, {2, 2, 3, 3}, g)},
                    A({{"groups", int64_t{2}}})));
}

TEST(GpuKernels, ShapeOpsAndViews) {
  REQUIRE_GPU();
  Gen g(9);
  EXPECT_TRUE(agree("transpose", {t(DType::f32, {3, 4}, g)}));
  EXPECT_TRUE(agree("transpose", {t(DType::i64, {2, 3, 4}, g)},
                    A({{"axes", std::vector<int64_t>{1, 0, 2}}})));
  EXPECT_TRUE(agree("permute", {t(DType::f64, {2, 3, 4}, g)},
                    A({{"axes", std::vector<int64_t>{2, 0, 1}}})));
  EXPECT_TRUE(agree("broadcast_to", {t(DType::f32, {3, 1}, g)},
                    A({{"shape", std::vector<int64_t>{2, 3, 4}}})));
  EXPECT_TRUE(
      agree("broadcast_to", {t(DType::boolean, {}, g)}, A({{"shape", std::vector<int64_t>{5}}})));
  EXPECT_TRUE(
      agree("reshape", {t(DType::f32, {3, 4}, g)}, A({{"shape", std::vector<int64_t>{2, -1}}})));
  EXPECT_TRUE(agree("flatten", {t(DType::f32, {2, 3, 4}, g)}));
  EXPECT_TRUE(agree("identity", {t(DType::f32, {2}, g)}));
  // Host fallbacks: correct results, and the row is reported as used.
  EXPECT_TRUE(agree("concat", {Value::tuple({t(DType::f32, {2, 3}, g), t(DType::f32, {1, 3}, g)})},
                    A({{"axis", int64_t{0}}})));
  EXPECT_TRUE(
      agree("one_hot", {g.tensor(DType::i32, {4}, 0, 0, 0, 3)}, A({{"num_classes", int64_t{4}}})));
  EXPECT_TRUE(
      agree("uniform", {}, A({{"shape", std::vector<int64_t>{3, 3}}, {"seed", int64_t{7}}})));
  std::vector<std::string> used = fallbacks_used();
  EXPECT_TRUE(std::find(used.begin(), used.end(), "concat") != used.end());
}

}  // namespace
}  // namespace spora::cuda::testing
