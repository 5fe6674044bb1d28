// Operator fusion and generated kernels (issue 7), measured side by side in one process:
//
//   Fusion/W5/fused      y = gelu(x*1.5 + 0.25)*0.75 + tanh(x) on 4M f32: one generated loop
//   Fusion/W5/unfused    the same graph node by node (5 CPU-backend kernels, 4 temporaries)
//   Fusion/W5/bound      the machine's bound: 32 MB moved at the STREAM-triad bandwidth measured
//                        here (a triad loop over 3 x 64 MB; GB/s counted as 3 arrays)
//   Fusion/W2|W3|W4/fused|unfused   one graph-mode step (@step of benchmarks/workloads/)
//
// Each step graph is compiled as `spora run` compiles it (optimize, then fuse_operators and the
// compiled kernels, or not), on the Cpu backend; main() runs once for the step's inputs. Every
// case is verified before it is timed: fused and unfused outputs agree (relative 1e-4 of the
// largest magnitude). Counters: median_ms per step, kernels (kernel launches per step: every
// apply that computes, a fused group counting 1, plus 1 for its GEMM/conv anchor; views, tuples
// and records count 0) and traffic_MB (bytes read and written by those kernels, from the IR
// types: a fused group reads its inputs and writes its outputs once, its anchor writes its
// result and the group reads it back). The summary table at the end gives the ratios;
// PyTorch's W5 (eager, best configuration: 14.7-15.0 ms, benchmarks/workloads/README.md) is the
// quoted peer, since the peer script cannot run inside this process.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "autodiff/install.h"
#include "backends/codegen/fused_runtime.h"
#include "backends/cpu/cpu.h"
#include "backends/runtime/runtime.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/fusion_plan.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"

namespace {

using spora::sem::Value;
using Clock = std::chrono::steady_clock;
namespace ir = spora::ir;

constexpr double kTorchW5BestMs = 14.85;  // PyTorch 1.13 eager, best env (workloads/README.md)

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void init() {
  static bool done = [] {
    spora::ops::register_all();
    spora::autodiff::install();
    spora::runtime::install();
    spora::cpu::register_kernels();
    spora::sem::set_backend(spora::sem::Backend::Cpu);
    return true;
  }();
  (void)done;
}

// ---- kernels and traffic of a step graph ---------------------------------------------------

int64_t bytes_of(const spora::sem::TypeP& t) {
  if (!t) return 0;
  if (t->kind == spora::sem::Type::Kind::Tensor)
    return std::max<int64_t>(t->numel(), 0) * static_cast<int64_t>(spora::dtype_size(t->dtype));
  int64_t b = 0;
  for (const auto& e : t->elems) b += bytes_of(e);
  return b;
}

bool computes(const ir::Node& n) {
  static const std::set<std::string> free = {
      "reshape",    "flatten",    "squeeze",  "unsqueeze",  "expand_dims",
      "identity",   "stop_gradient", "make_tuple", "tuple_get", "make_record", "record_get"};
  return n.is_apply() && (n.callee || !free.count(n.prim->name));
}

struct Traffic {
  int64_t kernels = 0;
  int64_t bytes = 0;
};

Traffic traffic(const ir::Graph& g) {
  Traffic t;
  for (const ir::Node* n : g.nodes) {
    if (!computes(*n)) continue;
    if (n->callee && spora::passes::is_fused_graph(*n->callee)) {
      const ir::Graph& f = *n->callee;
      const auto plan = spora::passes::plan_group(spora::passes::group_of(f));
      const ir::Node* anchor = nullptr;
      if (plan && plan->anchor >= 0)
        anchor = spora::passes::group_of(f).nodes[static_cast<size_t>(plan->anchor)];
      t.kernels += anchor ? 2 : 1;
      for (const ir::Node* p : f.params) {
        bool read_by_loop = false;
        for (const ir::Node* m : f.nodes)
          if (m != anchor && std::find(m->inputs.begin(), m->inputs.end(), p) != m->inputs.end())
            read_by_loop = true;
        if (read_by_loop) t.bytes += bytes_of(p->type);
      }
      if (anchor) {
        for (const ir::Node* x : anchor->inputs) t.bytes += bytes_of(x->type);
        t.bytes += 2 * bytes_of(anchor->type);  // written by the GEMM, read by the loop nest
      }
      t.bytes += bytes_of(n->type);
      continue;
    }
    t.kernels += 1;
    for (const ir::Node* x : n->inputs) t.bytes += bytes_of(x->type);
    t.bytes += bytes_of(n->type);
  }
  return t;
}

// ---- the workloads -------------------------------------------------------------------------

struct Step {
  std::unique_ptr<ir::Module> module;
  const ir::Graph* step = nullptr;
  std::unique_ptr<spora::codegen::FusedRuntime> runtime;
  Traffic traffic;
  void activate() const {
    spora::codegen::FusedRuntime* rt = runtime.get();
    if (!rt) {
      spora::sem::set_fused_kernel_hook(nullptr);
      return;
    }
    spora::sem::set_fused_kernel_hook(
        [rt](const ir::Graph& g, const std::vector<Value>& a, Value& r) { return rt->run(g, a, r); });
  }
};

struct Case {
  Step fused, unfused;
  std::vector<Value> args;
  std::string error;
  double fused_ms = 0, unfused_ms = 0;
};

std::unique_ptr<ir::Module> compile(const std::string& file) {
  spora::lang::SourceManager sources;
  spora::lang::DiagnosticEngine diags(sources);
  const std::string path = std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/" + file;
  spora::sem::Compiled c = spora::sem::compile_file(sources, diags, path);
  if (!c.module) {
    diags.print(std::cerr);
    throw std::runtime_error("cannot compile " + path);
  }
  return std::move(c.module);
}

Step make_step(const std::string& file, bool fuse, std::vector<Value>* inputs) {
  Step s;
  s.module = compile(file);
  if (inputs) {
    std::ostringstream sink;
    spora::ops::set_print_stream(&sink);
    *inputs = spora::sem::Interpreter(*s.module).call(s.module->entry, {}).items();
    spora::ops::set_print_stream(nullptr);
  }
  s.module->entry = s.module->find_graph("step");
  spora::passes::optimize(*s.module);
  if (fuse) {
    spora::passes::fuse_operators(*s.module);
    s.runtime = std::make_unique<spora::codegen::FusedRuntime>(*s.module);
  }
  s.step = s.module->entry;
  s.traffic = traffic(*s.step);
  return s;
}

void leaves(const Value& v, std::vector<spora::sem::Tensor>& out) {
  if (v.is_tensor()) out.push_back(v.tensor);
  if (v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record)
    for (const auto& e : v.items()) leaves(e, out);
}

Value run(const Step& s, const std::vector<Value>& args) {
  s.activate();
  return spora::sem::Interpreter(*s.module).call(s.step, args);
}

std::string verify(const Value& a, const Value& b) {
  std::vector<spora::sem::Tensor> x, y;
  leaves(a, x);
  leaves(b, y);
  if (x.size() != y.size()) return "outputs differ in structure";
  for (size_t k = 0; k < x.size(); ++k) {
    double scale = 0.1, err = 0;  // gradients that vanish analytically (a key bias) are noise
    for (int64_t i = 0; i < x[k].numel(); ++i) {
      scale = std::max(scale, std::fabs(y[k].get(i)));
      err = std::max(err, std::fabs(x[k].get(i) - y[k].get(i)));
    }
    if (!(err <= 1e-4 * scale)) return fmt::format("output {} differs by {:.3g}", k, err);
  }
  return "";
}

const std::map<std::string, std::string>& files() {
  static const std::map<std::string, std::string> f = {{"W2", "w2_mlp_train.sp"},
                                                       {"W3", "w3_lenet5_train.sp"},
                                                       {"W4", "w4_transformer_block.sp"},
                                                       {"W5", "w5_elementwise_chain.sp"}};
  return f;
}

Case& the_case(const std::string& id) {
  static std::map<std::string, Case> cases;
  auto it = cases.find(id);
  if (it != cases.end()) return it->second;
  init();
  Case& c = cases[id];
  try {
    c.unfused = make_step(files().at(id), false, &c.args);
    c.fused = make_step(files().at(id), true, nullptr);
    if (c.fused.runtime->kernels() == 0) c.error = "no kernel compiled: " + c.fused.runtime->error();
    if (c.error.empty()) c.error = verify(run(c.fused, c.args), run(c.unfused, c.args));
  } catch (const std::exception& e) {
    c.error = e.what();
  }
  return c;
}

void BM_Step(benchmark::State& state, const std::string& id, bool fused) {
  Case& c = the_case(id);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const Step& s = fused ? c.fused : c.unfused;
  s.activate();
  spora::sem::Interpreter interp(*s.module);
  std::vector<double> times;
  for (int i = 0; i < 2; ++i) interp.call(s.step, c.args);  // warm-up
  for (auto _ : state) {
    const auto t0 = Clock::now();
    Value out = interp.call(s.step, c.args);
    times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    benchmark::DoNotOptimize(out);
  }
  const double med = median(times);
  (fused ? c.fused_ms : c.unfused_ms) = med;
  state.counters["median_ms"] = med;
  state.counters["kernels"] = static_cast<double>(s.traffic.kernels);
  state.counters["traffic_MB"] = static_cast<double>(s.traffic.bytes) / 1e6;
  spora::sem::set_fused_kernel_hook(nullptr);
}

double g_triad_gbs = 0;

// STREAM triad a = b + s c over 3 x 64 MB, 2 threads: the bandwidth bound of W5.
void BM_Bound(benchmark::State& state) {
  const int64_t n = 16 << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  std::vector<double> gbs;
  for (auto _ : state) {
    const auto t0 = Clock::now();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + 3.0f * c[i];
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    gbs.push_back(3.0 * 4.0 * static_cast<double>(n) / s / 1e9);
    benchmark::DoNotOptimize(a.data());
  }
  g_triad_gbs = median(gbs);
  state.counters["triad_GBs"] = g_triad_gbs;
  state.counters["w5_bound_ms"] = 32.0 * 1024 * 1024 / (g_triad_gbs * 1e9) * 1e3;
}

void summary() {
  std::cout << "\n# Fusion summary (medians of this run; " << omp_get_max_threads() << " threads)\n";
  std::cout << fmt::format("{:<4} {:>10} {:>10} {:>9} {:>8} {:>8} {:>12} {:>12}\n", "", "unfused",
                           "fused", "speedup", "kernels", "(fused)", "traffic MB", "(fused)");
  for (const auto& [id, file] : files()) {
    Case& c = the_case(id);
    if (!c.error.empty() || c.fused_ms == 0) continue;
    std::cout << fmt::format("{:<4} {:>8.2f}ms {:>8.2f}ms {:>8.2f}x {:>8} {:>8} {:>12.1f} {:>12.1f}\n", id,
                             c.unfused_ms, c.fused_ms, c.unfused_ms / c.fused_ms, c.unfused.traffic.kernels,
                             c.fused.traffic.kernels, c.unfused.traffic.bytes / 1e6, c.fused.traffic.bytes / 1e6);
  }
  Case& w5 = the_case("W5");
  if (w5.error.empty() && w5.fused_ms > 0 && g_triad_gbs > 0) {
    const double bound = 32.0 * 1024 * 1024 / (g_triad_gbs * 1e9) * 1e3;
    std::cout << fmt::format(
        "W5: fused {:.2f} ms = {:.2f}x the bandwidth bound ({:.2f} ms: 32 MB at {:.1f} GB/s triad); "
        "{:.2f}x faster than unfused graph mode; {:.1f}x faster than PyTorch eager's best {:.1f} ms "
        "(quoted)\n",
        w5.fused_ms, w5.fused_ms / bound, bound, g_triad_gbs, w5.unfused_ms / w5.fused_ms,
        kTorchW5BestMs / w5.fused_ms, kTorchW5BestMs);
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Step, W5_fused, std::string("W5"), true)->Name("Fusion/W5/fused")->Iterations(40)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W5_unfused, std::string("W5"), false)->Name("Fusion/W5/unfused")->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Bound)->Name("Fusion/W5/bound")->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W2_fused, std::string("W2"), true)->Name("Fusion/W2/fused")->Iterations(30)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W2_unfused, std::string("W2"), false)->Name("Fusion/W2/unfused")->Iterations(30)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W3_fused, std::string("W3"), true)->Name("Fusion/W3/fused")->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W3_unfused, std::string("W3"), false)->Name("Fusion/W3/unfused")->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W4_fused, std::string("W4"), true)->Name("Fusion/W4/fused")->Iterations(8)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Step, W4_unfused, std::string("W4"), false)->Name("Fusion/W4/unfused")->Iterations(8)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  summary();
  benchmark::Shutdown();
  return 0;
}
