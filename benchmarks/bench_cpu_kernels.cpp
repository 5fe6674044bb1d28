// The CPU backend's kernels against the reference kernels, on the shapes of the W1-W6
// workloads: matmul 64x784x512, the LeNet first convolution and its two gradients, the 2x2
// max pooling of its output and that pooling's gradient, the W5 elementwise chain
// y = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x) on 4M floats (op by op, and whole with
// intermediates handed over by move so the kernels reuse them in place),
// softmax / cross_entropy on 64x10 logits and layer_norm on 8x128x256, and W2's products
// (w2_products/<policy>: the eight GEMMs of a W2 training step, as the graph runs them, through
// the backend's gemm, blocks and all, with SPORA_GEMM's policy per variant; the _b16 variants
// start every B operand 16 bytes past the 64-byte alignment tensors have, which changes how
// oneDNN runs the forward products: benchmarks/results/w2_gemm_alignment_amd_epyc.txt), and
// gemm_row_blocks (W4's [1024, 256] products with k = 1024 cut into row blocks of R rows, one
// library call each: what the backend's row blocks cost, benchmarks/results/gemm_rows64_ab_*).
//
//   build/bin/bench_cpu_kernels [--benchmark_filter=W5]
//
// The CPU kernels run one thread while the machine is oversubscribed (backends/cpu/README.md);
// SPORA_BENCH_ALL_THREADS=1 makes them use every OpenMP thread regardless.
//
// Each benchmark comes in a /ref and a /cpu variant; the ratio is the speed-up.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/blas.h"
#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm_choice.h"
#include "backends/cpu/kernels.h"
#include "backends/runtime/runtime.h"
#include "ops/ops.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace {

using namespace spora;
using sem::Attr;
using sem::Attrs;
using sem::Tensor;
using sem::Value;

void setup() {
  static bool once = [] {
    ops::register_all();
    runtime::install();
    cpu::register_kernels();
    if (const char* all = std::getenv("SPORA_BENCH_ALL_THREADS"); all && all[0] == '1')
      cpu::set_load_adaptive(false);
    return true;
  }();
  (void)once;
}

const sem::Primitive& prim(const std::string& name) {
  setup();
  return *sem::Registry::instance().find(name);
}

const sem::RefKernel& kernel(const std::string& name, bool cpu) {
  const sem::Primitive& p = prim(name);
  return cpu ? *p.facet<sem::RefKernel>(sem::kCpuKernelFacet) : p.eval;
}

Attrs attrs_of(const std::string& name, std::vector<std::pair<std::string, Attr>> given) {
  const sem::Primitive& p = prim(name);
  Attrs out;
  for (const auto& ps : p.params) {
    if (ps.kind != sem::ParamSpec::Kind::Attr) continue;
    bool found = false;
    for (auto& [n, v] : given)
      if (n == ps.name) {
        out.set(n, v);
        found = true;
      }
    if (!found && ps.default_value) out.set(ps.name, *ps.default_value);
  }
  return out;
}

Tensor random(DType dt, sem::Shape shape, double lo = -1, double hi = 1, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = Tensor::empty(dt, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  return t;
}

// One primitive on fixed inputs (kept alive by the caller: no in-place reuse).
void run(benchmark::State& state, const std::string& name, const std::vector<Value>& in,
         const Attrs& attrs, bool cpu) {
  const sem::RefKernel& k = kernel(name, cpu);
  for (auto _ : state) {
    Value v = k(in, attrs);
    benchmark::DoNotOptimize(v.tensor.raw());
  }
}

#define SPORA_PAIR(NAME, ...)                                                                      \
  void BM_##NAME(benchmark::State& state, bool cpu){__VA_ARGS__} BENCHMARK_CAPTURE(BM_##NAME, ref, \
                                                                                   false)          \
      ->Unit(benchmark::kMillisecond);                                                             \
  BENCHMARK_CAPTURE(BM_##NAME, cpu, true)->Unit(benchmark::kMillisecond);

SPORA_PAIR(Matmul_64x784x512, {
  static Tensor a = random(DType::f32, {64, 784}), b = random(DType::f32, {784, 512});
  run(state, "matmul", {a, b}, {}, cpu);
})

// The weight transposes of a backward pass (W2's 512 x 512 and 784 x 512 layers): 8 x 8
// register blocks with AVX2, and the same kernel on the plain x86-64 path (the tiled gathering
// loop) for the ratio.
SPORA_PAIR(Transpose_512x512, {
  static Tensor x = random(DType::f32, {512, 512});
  run(state, "transpose", {x}, {}, cpu);
})
SPORA_PAIR(Transpose_784x512, {
  static Tensor x = random(DType::f32, {784, 512});
  run(state, "transpose", {x}, {}, cpu);
})
// W4's shapes: the transpose of its feed-forward activations [1024, 1024] (the second layer's
// weight gradient), and the attention heads' permute [8, 128, 4, 64] -> [8, 4, 128, 64] (runs
// of 64 contiguous elements).
SPORA_PAIR(Transpose_1024x1024, {
  static Tensor x = random(DType::f32, {1024, 1024});
  run(state, "transpose", {x}, {}, cpu);
})
// The same transpose with its input in memory, as a training step's backward reads an activation
// its forward wrote long before: 64 inputs (256 MiB) taken in turn.
SPORA_PAIR(Transpose_1024x1024_cold, {
  static std::vector<Tensor> xs = [] {
    std::vector<Tensor> v;
    for (uint64_t i = 0; i < 64; ++i) v.push_back(random(DType::f32, {1024, 1024}, -1, 1, i));
    return v;
  }();
  const sem::RefKernel& k = kernel("transpose", cpu);
  size_t i = 0;
  for (auto _ : state) {
    Value v = k({xs[i++ % xs.size()]}, {});
    benchmark::DoNotOptimize(v.tensor.raw());
  }
})
SPORA_PAIR(Permute_heads_8x128x4x64, {
  static Tensor x = random(DType::f32, {8, 128, 4, 64});
  Attrs a;
  a.set("axes", std::vector<int64_t>{0, 2, 1, 3});
  run(state, "permute", {x}, a, cpu);
})
void BM_Transpose_512x512_base_isa(benchmark::State& state) {
  static Tensor x = random(DType::f32, {512, 512});
  const cpu::Isa saved = cpu::force_isa(cpu::Isa::base);
  run(state, "transpose", {x}, {}, true);
  cpu::force_isa(saved);
}
BENCHMARK(BM_Transpose_512x512_base_isa)->Unit(benchmark::kMillisecond);

// f16/bf16 (backends/cpu/half.h): the casts (F16C for f16), and a bf16 matmul (upcast, sgemm,
// one rounding).
SPORA_PAIR(Cast_1M_f32_to_f16, {
  static Tensor x = random(DType::f32, {1 << 20});
  run(state, "cast", {x}, attrs_of("cast", {{"dtype", Attr{DType::f16}}}), cpu);
})
SPORA_PAIR(Cast_1M_f16_to_f32, {
  static Tensor x = random(DType::f16, {1 << 20});
  run(state, "cast", {x}, attrs_of("cast", {{"dtype", Attr{DType::f32}}}), cpu);
})
SPORA_PAIR(Cast_1M_f32_to_bf16, {
  static Tensor x = random(DType::f32, {1 << 20});
  run(state, "cast", {x}, attrs_of("cast", {{"dtype", Attr{DType::bf16}}}), cpu);
})
SPORA_PAIR(Matmul_64x784x512_bf16, {
  static Tensor a = random(DType::bf16, {64, 784}), b = random(DType::bf16, {784, 512});
  run(state, "matmul", {a, b}, {}, cpu);
})

// LeNet layer 1: x [64, 1, 28, 28] * w [6, 1, 5, 5], padding 2, bias.
Attrs lenet_attrs(const std::string& name, bool with_shape, sem::Shape shape = {}) {
  std::vector<std::pair<std::string, Attr>> a = {{"padding", Attr{std::vector<int64_t>{2}}}};
  if (with_shape) a.push_back({"shape", Attr{shape}});
  return attrs_of(name, a);
}
Tensor& lenet_x() {
  static Tensor x = random(DType::f32, {64, 1, 28, 28});
  return x;
}
Tensor& lenet_w() {
  static Tensor w = random(DType::f32, {6, 1, 5, 5});
  return w;
}
Tensor& lenet_g() {
  static Tensor g = random(DType::f32, {64, 6, 28, 28});
  return g;
}

SPORA_PAIR(Conv2d_LeNet1, {
  static Tensor b = random(DType::f32, {6});
  run(state, "conv2d", {lenet_x(), lenet_w(), b}, lenet_attrs("conv2d", false), cpu);
})
SPORA_PAIR(Conv2dInputGrad_LeNet1, {
  run(state, "conv2d_input_grad", {lenet_g(), lenet_w()},
      lenet_attrs("conv2d_input_grad", true, {64, 1, 28, 28}), cpu);
})
SPORA_PAIR(Conv2dWeightGrad_LeNet1, {
  run(state, "conv2d_weight_grad", {lenet_x(), lenet_g()},
      lenet_attrs("conv2d_weight_grad", true, {6, 1, 5, 5}), cpu);
})

// LeNet layer 2: x [64, 6, 14, 14] * w [16, 6, 5, 5], no padding, bias (W3's largest
// convolution: per image a [16, 150] x [150, 100] product).
Attrs lenet2_attrs(const std::string& name, bool with_shape, sem::Shape shape = {}) {
  return with_shape ? attrs_of(name, {{"shape", Attr{shape}}}) : attrs_of(name, {});
}
Tensor& lenet2_x() {
  static Tensor x = random(DType::f32, {64, 6, 14, 14});
  return x;
}
Tensor& lenet2_g() {
  static Tensor g = random(DType::f32, {64, 16, 10, 10});
  return g;
}
SPORA_PAIR(Conv2d_LeNet2, {
  static Tensor w = random(DType::f32, {16, 6, 5, 5}), b = random(DType::f32, {16});
  run(state, "conv2d", {lenet2_x(), w, b}, lenet2_attrs("conv2d", false), cpu);
})
SPORA_PAIR(Conv2dInputGrad_LeNet2, {
  static Tensor w = random(DType::f32, {16, 6, 5, 5});
  run(state, "conv2d_input_grad", {lenet2_g(), w},
      lenet2_attrs("conv2d_input_grad", true, {64, 6, 14, 14}), cpu);
})
SPORA_PAIR(Conv2dWeightGrad_LeNet2, {
  run(state, "conv2d_weight_grad", {lenet2_x(), lenet2_g()},
      lenet2_attrs("conv2d_weight_grad", true, {16, 6, 5, 5}), cpu);
})

// LeNet's first pooling: 2x2, stride 2, on the first convolution's output [64, 6, 28, 28], and
// its gradient (the largest pooling of W3's step).
Attrs pool2_attrs(const std::string& name) {
  return attrs_of(name, {{"kernel", Attr{std::vector<int64_t>{2}}}});
}
SPORA_PAIR(MaxPool2d_LeNet1, { run(state, "max_pool2d", {lenet_g()}, pool2_attrs("max_pool2d"), cpu); })
SPORA_PAIR(MaxPool2dGrad_LeNet1, {
  static Tensor g = random(DType::f32, {64, 6, 14, 14});
  run(state, "max_pool2d_grad", {lenet_g(), g}, pool2_attrs("max_pool2d_grad"), cpu);
})

// ---- W5: y = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x) on 4M floats ----------------------------

constexpr int64_t kW5 = int64_t{1} << 22;
Tensor& w5_x() {
  static Tensor x = random(DType::f32, {kW5}, -3, 3);
  return x;
}
Value scalar(double v) { return Tensor::scalar(DType::f32, v); }

SPORA_PAIR(W5_mul_scalar, { run(state, "mul", {w5_x(), scalar(1.5)}, {}, cpu); })
SPORA_PAIR(W5_add_scalar, { run(state, "add", {w5_x(), scalar(0.25)}, {}, cpu); })
SPORA_PAIR(W5_gelu, { run(state, "gelu", {w5_x()}, {}, cpu); })
SPORA_PAIR(W5_tanh, { run(state, "tanh", {w5_x()}, {}, cpu); })
SPORA_PAIR(W5_add, { run(state, "add", {w5_x(), w5_x()}, {}, cpu); })

// The whole chain; `moved`: each intermediate is handed to its last user by move (what the
// interpreter does), so the kernels write into it in place instead of allocating.
void w5_chain(benchmark::State& state, bool cpu, bool moved) {
  const auto& mul = kernel("mul", cpu);
  const auto& add = kernel("add", cpu);
  const auto& gelu = kernel("gelu", cpu);
  const auto& tanh = kernel("tanh", cpu);
  Value c15 = scalar(1.5), c025 = scalar(0.25), c075 = scalar(0.75);
  Attrs none;
  // Arguments by value: a moved argument is the input vector's only reference to its tensor.
  auto call1 = [&](const sem::RefKernel& k, Value a) {
    std::vector<Value> in;
    in.push_back(std::move(a));
    return k(in, none);
  };
  auto call2 = [&](const sem::RefKernel& k, Value a, Value b) {
    std::vector<Value> in;
    in.push_back(std::move(a));
    in.push_back(std::move(b));
    return k(in, none);
  };
  for (auto _ : state) {
    Value x = w5_x();
    Value t1 = call2(mul, x, c15);
    Value t2 = moved ? call2(add, std::move(t1), c025) : call2(add, t1, c025);
    Value t3 = moved ? call1(gelu, std::move(t2)) : call1(gelu, t2);
    Value t4 = moved ? call2(mul, std::move(t3), c075) : call2(mul, t3, c075);
    Value t5 = call1(tanh, x);
    Value y = moved ? call2(add, std::move(t4), std::move(t5)) : call2(add, t4, t5);
    benchmark::DoNotOptimize(y.tensor.raw());
  }
  state.SetItemsProcessed(state.iterations() * kW5);
}
BENCHMARK_CAPTURE(w5_chain, ref, false, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(w5_chain, cpu, true, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(w5_chain, cpu_moved, true, true)->Unit(benchmark::kMillisecond);

// ---- small nn ops ---------------------------------------------------------------------------

Tensor& logits() {
  static Tensor x = random(DType::f32, {64, 10}, -4, 4);
  return x;
}

SPORA_PAIR(Softmax_64x10, { run(state, "softmax", {logits()}, attrs_of("softmax", {}), cpu); })
SPORA_PAIR(CrossEntropy_64x10, {
  static Tensor labels = [] {
    Tensor t = Tensor::empty(DType::i32, {64});
    for (int64_t i = 0; i < 64; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
    return t;
  }();
  run(state, "cross_entropy", {logits(), labels}, attrs_of("cross_entropy", {}), cpu);
})
SPORA_PAIR(LayerNorm_8x128x256, {
  static Tensor x = random(DType::f32, {8, 128, 256});
  static Tensor g = random(DType::f32, {256}), b = random(DType::f32, {256});
  run(state, "layer_norm", {x, g, b}, attrs_of("layer_norm", {}), cpu);
})
SPORA_PAIR(Sum_4M, { run(state, "sum", {w5_x()}, attrs_of("sum", {}), cpu); })
// A bias's gradient in W4's backward pass: the column sums of an [8, 128, 256] cotangent, and
// of the feed-forward's [8, 128, 1024] one.
SPORA_PAIR(SumColumns_8x128x256, {
  static Tensor x = random(DType::f32, {8, 128, 256});
  run(state, "sum", {x},
      attrs_of("sum", {{"axis", Attr{std::vector<int64_t>{0, 1}}}, {"keepdims", Attr{true}}}), cpu);
})
SPORA_PAIR(SumColumns_8x128x1024, {
  static Tensor x = random(DType::f32, {8, 128, 1024});
  run(state, "sum", {x},
      attrs_of("sum", {{"axis", Attr{std::vector<int64_t>{0, 1}}}, {"keepdims", Attr{true}}}), cpu);
})

// ---- W2's products --------------------------------------------------------------------------

// The eight products of a W2 step (MLP 784-512-512-10, batch 64) with the transposes the fused
// graph gives them: three forward, the three weight gradients (X^T G, k = 64) and the two hidden
// input gradients (G W^T); the first layer's input gradient is not computed.
void w2_products(benchmark::State& state, cpu::GemmPolicy policy, int64_t b_offset) {
  setup();
  struct P {
    bool ta, tb;
    int64_t m, n, k;
  };
  const std::vector<P> ps = {{false, false, 64, 512, 784}, {false, false, 64, 512, 512},
                             {false, false, 64, 10, 512},  {true, false, 512, 10, 64},
                             {false, true, 64, 512, 10},   {true, false, 512, 512, 64},
                             {false, true, 64, 512, 512},  {true, false, 784, 512, 64}};
  std::vector<Tensor> a, b, c;
  for (size_t i = 0; i < ps.size(); ++i) {
    const P& p = ps[i];
    a.push_back(
        random(DType::f32, p.ta ? sem::Shape{p.k, p.m} : sem::Shape{p.m, p.k}, -1, 1, 2 * i));
    b.push_back(random(DType::f32, {p.n * p.k + b_offset}, -1, 1, 2 * i + 1));
    c.push_back(Tensor::empty(DType::f32, {p.m, p.n}));
  }
  const cpu::GemmPolicy before = cpu::set_gemm_policy(policy);
  int64_t flops = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < ps.size(); ++i) {
      const P& p = ps[i];
      cpu::gemm(p.ta, p.tb, p.m, p.n, p.k, 1.0f, a[i].data<float>(), p.ta ? p.m : p.k,
                b[i].data<float>() + b_offset, p.tb ? p.k : p.n, 0.0f, c[i].data<float>(), p.n);
      flops += 2 * p.m * p.n * p.k;
    }
    benchmark::ClobberMemory();
  }
  cpu::set_gemm_policy(before);
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(flops) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(w2_products, autotune, cpu::GemmPolicy::autotune, 0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(w2_products, openblas, cpu::GemmPolicy::openblas, 0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(w2_products, onednn, cpu::GemmPolicy::onednn, 0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(w2_products, openblas_b16, cpu::GemmPolicy::openblas, 4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(w2_products, onednn_b16, cpu::GemmPolicy::onednn, 4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---- W4's products ----------------------------------------------------------------------------

// The 2-D products of a W4 step (Transformer block, 1024 tokens of width 256, feed-forward 1024)
// with the transposes the fused graph gives them, one per Arg, through the backend's gemm as
// the step runs it (blocks, library choice): the forward's projections (NN 1024 x 256 x 256) and
// feed-forward products, then the backward's input cotangents (NT) and weight cotangents (TN).
// A product's rate next to its forward twin's says what the backward pays for its transposes.
struct GemmShape {
  const char* name;
  bool ta, tb;
  int64_t m, n, k;
};
const std::vector<GemmShape>& w4_shapes() {
  static const std::vector<GemmShape> v = {
      {"proj", false, false, 1024, 256, 256},   {"fc1", false, false, 1024, 1024, 256},
      {"fc2", false, false, 1024, 256, 1024},   {"proj_dx", false, true, 1024, 256, 256},
      {"fc1_dx", false, true, 1024, 256, 1024}, {"fc2_dx", false, true, 1024, 1024, 256},
      {"proj_dw", true, false, 256, 256, 1024}, {"fc1_dw", true, false, 256, 1024, 1024},
      {"fc2_dw", true, false, 1024, 256, 1024}};
  return v;
}
void w4_products(benchmark::State& state) {
  setup();
  const GemmShape& p = w4_shapes()[static_cast<size_t>(state.range(0))];
  state.SetLabel(p.name);
  const Tensor a = random(DType::f32, p.ta ? sem::Shape{p.k, p.m} : sem::Shape{p.m, p.k}, -1, 1, 1);
  const Tensor b = random(DType::f32, p.tb ? sem::Shape{p.n, p.k} : sem::Shape{p.k, p.n}, -1, 1, 2);
  Tensor c = Tensor::empty(DType::f32, {p.m, p.n});
  for (auto _ : state) {
    cpu::gemm(p.ta, p.tb, p.m, p.n, p.k, 1.0f, a.data<float>(), p.ta ? p.m : p.k, b.data<float>(),
              p.tb ? p.k : p.n, 0.0f, c.data<float>(), p.n);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      static_cast<double>(2 * p.m * p.n * p.k) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}
BENCHMARK(w4_products)->DenseRange(0, 8)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- GEMM row blocks --------------------------------------------------------------------------

// W4's [1024, 256] = op(A) op(B) products with k = 1024 (its second feed-forward product and, in
// the backward, that product's weight and input cotangents: NN, TN, NT), on one thread, cut into
// blocks of R rows, each one call of the library that packs the whole of B again: what the row
// blocks of backends/cpu/blas.cpp cost against one call. Args: transposes (0 NN, 1 TN, 2 NT),
// R, library (0 OpenBLAS, 1 oneDNN).
void gemm_row_blocks(benchmark::State& state) {
  setup();
  const bool ta = state.range(0) == 1, tb = state.range(0) == 2, onednn = state.range(2) == 1;
  const int64_t rows = state.range(1), m = 1024, n = 256, k = 1024;
  if (onednn && !cpu::have_onednn()) {
    state.SkipWithError("built without oneDNN");
    return;
  }
  const Tensor a = random(DType::f32, ta ? sem::Shape{k, m} : sem::Shape{m, k}, -1, 1, 1);
  const Tensor b = random(DType::f32, tb ? sem::Shape{n, k} : sem::Shape{k, n}, -1, 1, 2);
  Tensor c = Tensor::empty(DType::f32, {m, n});
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const float* pa = a.data<float>();
  for (auto _ : state) {
    for (int64_t r = 0; r < m; r += rows) {
      const float* block_a = ta ? pa + r : pa + r * lda;
      float* block_c = c.data<float>() + r * n;
      if (onednn)
        cpu::onednn_sgemm(ta, tb, rows, n, k, 1.0f, block_a, lda, b.data<float>(), ldb, 0.0f,
                          block_c, n);
      else
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), 1.0f, block_a,
                    static_cast<int>(lda), b.data<float>(), static_cast<int>(ldb), 0.0f, block_c,
                    static_cast<int>(n));
    }
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(
      2.0 * static_cast<double>(m * n * k) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}
BENCHMARK(gemm_row_blocks)
    ->ArgsProduct({{0, 1, 2}, {32, 64, 128, 1024}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
