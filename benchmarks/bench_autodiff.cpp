// Automatic differentiation benchmarks (issue: performance of autodiff), on the reference
// interpreter. What matters here are ratios measured in one run, not absolute times:
//
//   BM_Forward/<w> vs BM_ValueAndGrad/<w>   value_and_grad time / forward time on the MLP
//                                          (W2 shapes), LeNet-5 (W3) and the transformer
//                                          block (W4): the cheap-gradient principle says <= 5,
//                                          the target is <= 3.
//   BM_LoopBackwardMemory/<n>              peak tensor memory of grad through a loop of n
//                                          iterations: grows linearly with n (the tape).
//   BM_SecondOrderLoop/<how>/<n>           time and peak memory of derivatives through a loop of
//                                          n iterations (graph mode): 0 grad, 1 grad of grad
//                                          (reverse over reverse), 2 jvp of grad (forward over
//                                          reverse); both second orders grow linearly with n.
//   BM_CheckpointMemory/<0|1>/<1|2>        peak memory of grad (order 1) and grad of grad
//                                          (order 2) through 8 blocks, without and with
//                                          @checkpoint on the block.
//   BM_CompileMlp100                       lowering + AD of a 100-layer MLP (target < 2 s).
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "autodiff/install.h"
#include "lang/parser.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/lower.h"

namespace {

std::unique_ptr<spora::ir::Module> compile(const std::string& text, spora::lang::SourceManager& sources) {
  spora::ops::register_all();
  spora::autodiff::install();
  spora::lang::DiagnosticEngine diags(sources);
  auto ast = spora::lang::parse_string(sources, "bench.sp", text, diags);
  if (!ast) return nullptr;
  spora::sem::Program program;
  program.modules.push_back(std::move(ast));
  program.module_names.push_back("");
  auto m = spora::sem::lower_program(program, diags);
  if (!m) diags.print(std::cerr);
  return m;
}

// The networks of W2, W3 and W4 of benchmarks/workloads/README.md (the MLP, LeNet-5, the
// encoder block; without biases here), each with `main` timing either the forward (mode 0) or
// value_and_grad (mode 1) of its loss.
const char* kMlp = R"(
model MLP() {
    param w1: f32[784, 512] = normal(0.0, 0.02)
    param b1: f32[512] = zeros()
    param w2: f32[512, 512] = normal(0.0, 0.02)
    param b2: f32[512] = zeros()
    param w3: f32[512, 10] = normal(0.0, 0.02)
    param b3: f32[10] = zeros()
    def forward(x) = relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3
}
def loss(net: MLP, x, y) = cross_entropy(net(x), y)
def data() = (normal(shape=(64, 784), seed=1), cast(uniform(0.0, 10.0, shape=(64,), seed=2), i32))
)";

const char* kLeNet = R"(
model LeNet() {
    param c1: f32[6, 1, 5, 5] = normal(0.0, 0.1)
    param c2: f32[16, 6, 5, 5] = normal(0.0, 0.1)
    param f1: f32[400, 120] = normal(0.0, 0.05)
    param f2: f32[120, 84] = normal(0.0, 0.05)
    param f3: f32[84, 10] = normal(0.0, 0.05)
    def forward(x) {
        let h1 = max_pool2d(relu(conv2d(x, c1, padding=2)), kernel=2)
        let h2 = max_pool2d(relu(conv2d(h1, c2)), kernel=2)
        let h = reshape(h2, (64, 400))
        return relu(relu(h @ f1) @ f2) @ f3
    }
}
def loss(net: LeNet, x, y) = cross_entropy(net(x), y)
def data() = (normal(shape=(64, 1, 28, 28), seed=1), cast(uniform(0.0, 10.0, shape=(64,), seed=2), i32))
)";

const char* kTransformer = R"(
model Block() {
    param wq: f32[256, 256] = normal(0.0, 0.05)
    param wk: f32[256, 256] = normal(0.0, 0.05)
    param wv: f32[256, 256] = normal(0.0, 0.05)
    param wo: f32[256, 256] = normal(0.0, 0.05)
    param w1: f32[256, 1024] = normal(0.0, 0.05)
    param w2: f32[1024, 256] = normal(0.0, 0.05)
    param g1: f32[256] = ones()
    param g2: f32[256] = ones()
    def heads(t) = transpose(reshape(t, (8, 128, 4, 64)), (0, 2, 1, 3))
    def forward(x) {
        let q = heads(x @ wq)
        let k = heads(x @ wk)
        let v = heads(x @ wv)
        let att = softmax(q @ transpose(k, (0, 1, 3, 2)) * 0.125, axis=-1)
        let o = reshape(transpose(att @ v, (0, 2, 1, 3)), (8, 128, 256)) @ wo
        let h = layer_norm(x + o, g1)
        return layer_norm(h + relu(h @ w1) @ w2, g2)
    }
}
def loss(net: Block, x, y) = sum(net(x))
def data() = (normal(shape=(8, 128, 256), seed=1), 0)
)";

std::string program(const char* model, const char* net, bool grad) {
  return std::string(model) + fmt::format(R"(
def main() {{
    let net = {}()
    let (x, y) = data()
    {}
}}
)",
                                          net,
                                          grad ? "let (l, g) = value_and_grad(loss)(net, x, y)\n    print(l)"
                                               : "print(loss(net, x, y))");
}

void run_workload(benchmark::State& state, const char* model, const char* net, bool grad) {
  spora::lang::SourceManager sources;
  auto m = compile(program(model, net, grad), sources);
  if (!m) {
    state.SkipWithError("compile failed");
    return;
  }
  std::ostringstream sink;
  spora::ops::set_print_stream(&sink);
  for (auto _ : state) spora::sem::Interpreter(*m).call(m->entry, {});
  spora::ops::set_print_stream(nullptr);
}

void BM_Forward_MLP(benchmark::State& s) { run_workload(s, kMlp, "MLP", false); }
void BM_ValueAndGrad_MLP(benchmark::State& s) { run_workload(s, kMlp, "MLP", true); }
void BM_Forward_LeNet(benchmark::State& s) { run_workload(s, kLeNet, "LeNet", false); }
void BM_ValueAndGrad_LeNet(benchmark::State& s) { run_workload(s, kLeNet, "LeNet", true); }
void BM_Forward_Transformer(benchmark::State& s) { run_workload(s, kTransformer, "Block", false); }
void BM_ValueAndGrad_Transformer(benchmark::State& s) { run_workload(s, kTransformer, "Block", true); }
BENCHMARK(BM_Forward_MLP)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ValueAndGrad_MLP)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Forward_LeNet)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ValueAndGrad_LeNet)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Forward_Transformer)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_ValueAndGrad_Transformer)->Unit(benchmark::kMillisecond)->Iterations(2);

// Peak memory of a program's run, in bytes of tensor storage.
double peak_of(const std::string& text) {
  spora::lang::SourceManager sources;
  auto m = compile(text, sources);
  if (!m) return -1;
  std::ostringstream sink;
  spora::ops::set_print_stream(&sink);
  spora::sem::reset_peak_memory();
  const int64_t before = spora::sem::memory_stats().live_bytes;
  spora::sem::Interpreter(*m).call(m->entry, {});
  spora::ops::set_print_stream(nullptr);
  return static_cast<double>(spora::sem::memory_stats().peak_bytes - before);
}

void BM_LoopBackwardMemory(benchmark::State& state) {
  const std::string text = fmt::format(R"(
def f(h0, w) {{
    var h = h0
    for i in range({}) {{
        h = tanh(h @ w)
    }}
    return sum(h)
}}
def main() {{
    let w = normal(shape=(256, 256), seed=1) * 0.05
    print(sum(grad(f, wrt=1)(normal(shape=(64, 256), seed=2), w)))
}}
)",
                                       state.range(0));
  double peak = 0;
  for (auto _ : state) peak = peak_of(text);
  state.counters["peak_MB"] = peak / 1e6;
  state.counters["peak_MB_per_iteration"] = peak / 1e6 / static_cast<double>(state.range(0));
}
BENCHMARK(BM_LoopBackwardMemory)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_SecondOrderLoop(benchmark::State& state) {
  static const char* kHow[] = {"sum(grad(f)(x) * c)",
                               "sum(grad(fn (u: f32[1024]) => sum(grad(f)(u) * c))(x))",
                               "sum(jvp(fn (u: f32[1024]) => grad(f)(u), (x,), (c,))[1])"};
  const std::string text = fmt::format(R"(
def f(x: f32[1024]) {{
    var y = x
    for i in range({}) {{
        y = sin(y) * 0.9 + x * 0.1
    }}
    return sum(y * y)
}}
def main() {{
    let x = normal(shape=(1024,), seed=1)
    let c = normal(shape=(1024,), seed=2)
    print({})
}}
)",
                                       state.range(1), kHow[state.range(0)]);
  spora::lang::SourceManager sources;
  auto m = compile(text, sources);
  if (!m) {
    state.SkipWithError("the program did not compile");
    return;
  }
  std::ostringstream sink;
  spora::ops::set_print_stream(&sink);
  for (auto _ : state) spora::sem::Interpreter(*m).call(m->entry, {});
  spora::ops::set_print_stream(nullptr);
  state.counters["peak_MB"] = peak_of(text) / 1e6;
}
BENCHMARK(BM_SecondOrderLoop)
    ->ArgsProduct({{0, 1, 2}, {16, 64, 256}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

void BM_CheckpointMemory(benchmark::State& state) {
  static const char* kHow[] = {"sum(grad(f)(x))",
                               "sum(grad(fn (u: f32[256, 1024]) => sum(grad(f)(u) * c))(x))"};
  const std::string text =
      fmt::format(R"(
{}
def block(x) = tanh(tanh(tanh(x * 1.1) * 0.9) * 1.2)
def f(x) {{
    var h = x
    for k in (0, 1, 2, 3, 4, 5, 6, 7) {{
        h = block(h)
    }}
    return sum(h)
}}
def main() {{
    let x = normal(shape=(256, 1024), seed=2)
    let c = normal(shape=(256, 1024), seed=3)
    print({})
}}
)",
                  state.range(0) ? "@checkpoint" : "", kHow[state.range(1) - 1]);
  double peak = 0;
  for (auto _ : state) peak = peak_of(text);
  state.counters["peak_MB"] = peak / 1e6;
}
BENCHMARK(BM_CheckpointMemory)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_CompileMlp100(benchmark::State& state) {
  std::string text = "def f(x, ws) {\n    var h = x\n    for w in ws {\n        h = relu(h @ w)\n    }\n    return sum(h)\n}\n";
  text += "def main() {\n    let ws = (";
  for (int k = 0; k < 100; ++k) text += fmt::format("{}normal(shape=(64, 64), seed={})", k ? ", " : "", k);
  text += ")\n    print(sum(grad(f)(ones(shape=(8, 64)), ws)))\n}\n";
  for (auto _ : state) {
    spora::lang::SourceManager sources;
    auto m = compile(text, sources);
    if (!m) state.SkipWithError("compile failed");
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_CompileMlp100)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
