// The reference workloads W1-W6 of benchmarks/workloads/README.md (programs in
// benchmarks/workloads/), in graph mode and in eager mode, plus the machine limits they are
// compared with, all measured in one process. benchmarks/compare.py runs this binary and the
// PyTorch peer script together and prints the ratios; benchmarks/README.md says what is timed.
//
//   W<n>/graph   the program is compiled once, as `spora run` compiles it (lowering + AD, the
//                simplification passes, operator fusion with generated C++ kernels); main()
//                runs once to build step's inputs (parameters, data); then each timed
//                iteration is one sem::Interpreter call of the graph @step on the Cpu backend.
//                Training steps (W2, W3) feed the updated parameters into the next call.
//   W<n>/graph-nofuse  the same without operator fusion (for information).
//   W<n>/eager   what a user of eager mode pays per step: lowering `run_steps(n)` in eager mode
//                parses the program, builds the inputs, then runs n steps op by op (each
//                operation is type-checked and executed as the lowering reaches it, the
//                derivative on the recorded tape). run_steps prints the step index after each
//                step; a step's time is the time between two consecutive prints (n = 1 + k gives
//                k steps per run), the median over every step of every timed run is quoted.
//   W<n>/fuse-ratio  fused over unfused graph mode, the two modules taking turns step by step
//                (which goes first alternates): counters fused_ms, unfused_ms (medians) and
//                ratio (their quotient).
//   W<n>/ad-ratio  (W2-W4) value_and_grad of the workload's loss over the loss alone, each
//                compiled as @step is (fused, Cpu backend) and called on step's inputs in turn
//                (which goes first alternates):
//                counters fwd_ms, vag_ms (medians) and ratio (their quotient).
//   Limit/...    OpenBLAS SGEMM 1024^3, the 9 GEMMs of W2 back to back, STREAM triad, and
//                W5Stream (x * 1.5 + 0.25 over W5's 4M floats: W5's memory traffic alone).
//
// Every workload is verified once before it is timed (a failure skips the benchmark with the
// reason): the step's outputs, fused and unfused, are finite and agree with the reference
// kernels within 1e-4 (relative to the largest magnitude), eager mode prints the same loss as
// graph mode, and W5 matches its closed form (computed in double) on a few elements.
//
// Counters: median_ms / min_ms per step (the compare script quotes the median), cpu_ms (CPU
// time of the process per step, all threads), bg_load (CPU cores used by other processes
// while timing; above ~0.1 the number is contaminated).
// Extra flag (before the Google Benchmark flags): --profile=W2,W4 prints, for each workload,
// where a graph-mode step spends its time per primitive (Interpreter::set_trace), unfused and
// fused; --profile=W4/ad does the same for the two modules of W4/ad-ratio (the loss,
// value_and_grad). Eager mode's ops: `spora run --mode eager --profile FILE`;
// --dump-ir=W2 prints the optimised, fused module whose entry is @step (what graph mode runs).
// SPORA_BENCH_PARALLEL_WORK_B=N registers W<n>/graph@work=N and W<n>/eager@work=N beside
// W<n>/graph and W<n>/eager: the same steps with the CPU kernels' parallel threshold at N
// (cpu::set_parallel_work) while they run, so that `--benchmark_repetitions=R
// --benchmark_enable_random_interleaving=true` compares the two thresholds inside one process.
#include <benchmark/benchmark.h>
#include <cblas.h>
#ifdef SPORA_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#include <fmt/format.h>
#include <omp.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>

#include "autodiff/install.h"
#include "backends/codegen/fused_runtime.h"
#include "backends/cpu/cpu.h"
#include "backends/cpu/gemm_choice.h"
#include "backends/cpu/kernels.h"
#include "backends/runtime/runtime.h"
#include "lang/parser.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "semantics/lower.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/kernel_stats.h"
#include "semantics/passes/pipeline.h"
#include "semantics/registry.h"

namespace {

using spora::sem::Value;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU time of this process (all its threads).
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// ------------------------------------------------------------------ load accounting
// CPU seconds used by other processes during a timed loop, counted as the peer script counts them
// (benchmarks/peer/torch_workloads.py).
struct BgMeter {
  static double busy_seconds() {
    std::ifstream f("/proc/stat");
    std::string cpu;
    double v[8] = {};
    f >> cpu;
    for (double& x : v) f >> x;
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  static double own_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  double busy0 = busy_seconds(), own0 = own_seconds();
  Clock::time_point t0 = Clock::now();
  double cores() const {
    const double dt = seconds_since(t0);
    return std::max(0.0, ((busy_seconds() - busy0) - (own_seconds() - own0)) / std::max(dt, 1e-9));
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void report_times(benchmark::State& state, const std::vector<double>& seconds, const BgMeter& bg) {
  state.counters["median_ms"] = median(seconds) * 1e3;
  state.counters["min_ms"] = seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end()) * 1e3;
  state.counters["bg_load"] = bg.cores();
}

// ------------------------------------------------------------------ the workloads
struct Workload {
  std::string id;      // "W2"
  std::string file;    // benchmarks/workloads/<file>
  int eager_steps;     // k: steps timed per eager run
  int eager_runs;      // timed eager runs (each lowers the program with 1 + k steps)
  bool feeds_back;     // step returns (loss, new parameters): the next call trains them
};

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> w = {
      {"W1", "w1_mlp_forward.sp", 100, 5, false},      {"W2", "w2_mlp_train.sp", 50, 5, true},
      {"W3", "w3_lenet5_train.sp", 20, 5, true},        {"W4", "w4_transformer_block.sp", 6, 5, false},
      {"W5", "w5_elementwise_chain.sp", 20, 5, false},  {"W6", "w6_rnn_unrolled.sp", 10, 5, false},
  };
  return w;
}

const Workload& workload(const std::string& id) {
  for (const auto& w : workloads())
    if (w.id == id) return w;
  throw std::runtime_error("unknown workload " + id);
}

std::string read_source(const Workload& w) {
  const std::string path = std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/" + w.file;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void init_spora() {
  static bool done = false;
  if (done) return;
  done = true;
  spora::ops::register_all();
  spora::autodiff::install();
  spora::runtime::install();
  spora::cpu::register_kernels();
  spora::sem::set_backend(spora::sem::Backend::Cpu);
  // As bench_cpu_kernels: SPORA_BENCH_ALL_THREADS=1 keeps the parallel paths on a busy machine
  // (the Cpu backend and fused kernels otherwise drop to one thread while it is oversubscribed).
  if (const char* all = std::getenv("SPORA_BENCH_ALL_THREADS"); all && all[0] == '1')
    spora::cpu::set_load_adaptive(false);
}

// Parses and lowers `text` with `entry` as the entry point; in eager mode this runs it.
std::unique_ptr<spora::ir::Module> lower(const std::string& text, const std::string& entry, bool eager) {
  spora::lang::SourceManager sources;
  spora::lang::DiagnosticEngine diags(sources);
  auto ast = spora::lang::parse_string(sources, "workload.sp", text, diags);
  if (!ast || diags.has_errors()) {
    diags.print(std::cerr);
    throw std::runtime_error("parse failed");
  }
  spora::sem::Program program;
  program.modules.push_back(std::move(ast));
  program.module_names.push_back("");
  spora::sem::LowerOptions options;
  options.entry = entry;
  options.eager = eager;
  auto m = spora::sem::lower_program(program, diags, options);
  if (!m) {
    diags.print(std::cerr);
    throw std::runtime_error("lowering failed");
  }
  return m;
}

// The program text with an extra entry point running `run_steps(k, check)`.
std::string eager_program(const std::string& text, int k, bool check) {
  return text + fmt::format("\ndef bench_eager() {{\n    run_steps({}, {})\n}}\n", k, check ? "true" : "false");
}

// Runs `fn` with print() output captured; returns the text.
template <class F> std::string capture_prints(F&& fn) {
  std::ostringstream sink;
  spora::ops::set_print_stream(&sink);
  try {
    fn();
  } catch (...) {
    spora::ops::set_print_stream(nullptr);
    throw;
  }
  spora::ops::set_print_stream(nullptr);
  return sink.str();
}

// Every number in a printed text ("[0.5, 1e-08] -2.0" -> 0.5, 1e-08, -2.0).
std::vector<double> numbers_in(const std::string& s) {
  std::vector<double> out;
  const char* p = s.c_str();
  while (*p) {
    char* end = nullptr;
    if (std::isdigit(static_cast<unsigned char>(*p)) || *p == '-' || *p == '.') {
      const double v = std::strtod(p, &end);
      if (end != p) {
        out.push_back(v);
        p = end;
        continue;
      }
    }
    ++p;
  }
  return out;
}

void flatten_leaves(const Value& v, std::vector<spora::sem::Tensor>& out) {
  if (v.is_tensor()) out.push_back(v.tensor);
  if (v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record)
    for (const auto& e : v.items()) flatten_leaves(e, out);
}

// Exact-erf GELU chain of W5, in double.
double w5_closed_form(double x) {
  const double z = x * 1.5 + 0.25;
  return 0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))) * 0.75 + std::tanh(x);
}

// What `run_steps(1, true)` prints, computed from graph mode's step output and inputs.
std::vector<double> expected_eager_print(const std::string& id, const Value& out, const std::vector<Value>& args) {
  if (id == "W1") {
    double s = 0;
    for (int64_t i = 0; i < out.tensor.numel(); ++i) s += out.tensor.get(i);
    return {s};
  }
  if (id == "W5") {
    std::vector<double> v;
    for (int i = 0; i < 4; ++i) v.push_back(args[0].tensor.get(i));
    for (int i = 0; i < 4; ++i) v.push_back(w5_closed_form(args[0].tensor.get(i)));
    return v;
  }
  return {out.items()[0].tensor.item()};  // the loss
}

// ------------------------------------------------------------------ graph-mode set-up
// The step graph compiled as `spora run` compiles a program: optimize, then (fused) operator
// fusion with the generated kernels of backends/codegen.
struct StepModule {
  std::unique_ptr<spora::ir::Module> module;
  const spora::ir::Graph* step = nullptr;
  std::unique_ptr<spora::codegen::FusedRuntime> fused;  // null: unfused
  // The fused-kernel hook is process-wide: point it at this module's kernels (or none).
  void activate() const {
    if (!fused) {
      spora::sem::set_fused_kernel_hook(nullptr);
      return;
    }
    spora::codegen::FusedRuntime* rt = fused.get();
    spora::sem::set_fused_kernel_hook([rt](const spora::ir::Graph& g, const std::vector<Value>& a, Value& r) {
      return rt->run(g, a, r);
    });
  }
  Value call(const std::vector<Value>& args) const {
    activate();
    return spora::sem::Interpreter(*module).call(step, args);
  }
};

struct GraphCase {
  StepModule plain, fused;
  std::vector<Value> args;  // step's inputs, as main() built them
  std::string error;        // non-empty: verification failed
};

// Lowers the workload, runs main() for step's inputs when `inputs` is given, and makes @step
// the entry of the module (the passes then optimise it and drop main).
StepModule compile_step(const std::string& text, bool fuse, std::vector<Value>* inputs,
                        const std::string& entry = "step", const std::string& main = "main") {
  StepModule s;
  s.module = lower(text, main, false);
  if (inputs) {
    Value v;
    capture_prints([&] { v = spora::sem::Interpreter(*s.module).call(s.module->entry, {}); });
    *inputs = v.items();
  }
  s.module->entry = s.module->find_graph(entry);
  if (!s.module->entry) throw std::runtime_error("no graph @" + entry);
  spora::passes::optimize(*s.module);
  if (fuse) {
    spora::passes::fuse_operators(*s.module);
    s.fused = std::make_unique<spora::codegen::FusedRuntime>(*s.module);
    spora::sem::set_fused_kernel_hook(nullptr);
  }
  s.step = s.module->entry;
  return s;
}

// Returns "" or what is wrong: every float leaf finite and within 1e-4 of the reference,
// relative to the leaf's largest magnitude, or to 1e-4 of the largest magnitude of all leaves
// for leaves that are zero but for rounding (W4's key bias: softmax ignores it).
std::string compare_outputs(const Value& got, const Value& want) {
  std::vector<spora::sem::Tensor> a, b;
  flatten_leaves(got, a);
  flatten_leaves(want, b);
  if (a.size() != b.size()) return "output structure differs from the reference backend";
  std::vector<double> scale(b.size(), 0.0);
  double scale_all = 0;
  for (size_t k = 0; k < b.size(); ++k) {
    for (int64_t i = 0; i < b[k].numel(); ++i) scale[k] = std::max(scale[k], std::fabs(b[k].get(i)));
    scale_all = std::max(scale_all, scale[k]);
  }
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].numel() != b[k].numel()) return fmt::format("output {} has a different size", k);
    double err = 0;
    for (int64_t i = 0; i < a[k].numel(); ++i) {
      const double x = a[k].get(i), y = b[k].get(i);
      if (!std::isfinite(x)) return fmt::format("output {} element {} is {}", k, i, x);
      err = std::max(err, std::fabs(x - y));
    }
    if (err > 1e-4 * std::max({scale[k], 1e-4 * scale_all, 1e-6}))
      return fmt::format("output {} differs from the reference backend by {:.3g} (its largest magnitude {:.3g})", k,
                         err, scale[k]);
  }
  return "";
}

void set_up(const std::string& id, GraphCase& c);

GraphCase& graph_case(const std::string& id) {
  static std::map<std::string, GraphCase> cache;
  auto it = cache.find(id);
  if (it != cache.end()) return it->second;
  init_spora();
  GraphCase& c = cache[id];
  try {
    set_up(id, c);
  } catch (const std::exception& e) {
    c.error = fmt::format("{}: {}", id, e.what());
  }
  if (c.error.empty())
    std::cerr << fmt::format("# {}: verified (graph fused and unfused vs reference kernels{}, eager vs graph); "
                             "{} fusion groups, {} compiled kernels\n",
                             id, id == "W5" ? ", closed form" : "", c.fused.fused->groups(), c.fused.fused->kernels());
  return c;
}

void set_up(const std::string& id, GraphCase& c) {
  const std::string text = read_source(workload(id));
  c.plain = compile_step(text, false, &c.args);
  c.fused = compile_step(text, true, nullptr);
  // Verification: the Cpu backend (unfused, fused) vs the reference kernels, W5's closed form,
  // eager vs graph.
  spora::sem::set_backend(spora::sem::Backend::Reference);
  const Value want = c.plain.call(c.args);
  spora::sem::set_backend(spora::sem::Backend::Cpu);
  const Value got_plain = c.plain.call(c.args);
  const Value got = c.fused.call(c.args);
  c.error = compare_outputs(got_plain, want);
  if (!c.error.empty()) c.error = "unfused: " + c.error;
  if (c.error.empty()) {
    c.error = compare_outputs(got, want);
    if (!c.error.empty()) c.error = "fused: " + c.error;
  }
  if (c.error.empty() && id == "W5") {
    const spora::sem::Tensor& x = c.args[0].tensor;
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{12345}, x.numel() - 1}) {
      const double f = w5_closed_form(x.get(i));
      for (const Value* y : {&got, &got_plain})
        if (std::fabs(y->tensor.get(i) - f) > 1e-5 * (1 + std::fabs(f)))
          c.error = fmt::format("W5 y[{}] = {} but the closed form gives {}", i, y->tensor.get(i), f);
    }
  }
  if (c.error.empty()) {
    const std::string printed =
        capture_prints([&] { lower(eager_program(text, 1, true), "bench_eager", true); });
    const std::vector<double> e = numbers_in(printed), g = expected_eager_print(id, got, c.args);
    double scale = 1e-3;
    for (double v : g) scale = std::max(scale, std::fabs(v));
    bool same = e.size() == g.size();
    for (size_t k = 0; same && k < e.size(); ++k) same = std::fabs(e[k] - g[k]) <= 1e-4 * scale;
    if (!same) c.error = fmt::format("eager mode printed '{}' but graph mode gives {}", printed, fmt::join(g, " "));
  }
}

// ------------------------------------------------------------------ graph and eager benchmarks
void BM_Graph(benchmark::State& state, const std::string& id, bool fused) {
  GraphCase& c = graph_case(id);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const StepModule& s = fused ? c.fused : c.plain;
  s.activate();
  spora::sem::Interpreter interp(*s.module);
  std::vector<Value> args = c.args;
  const bool feed = workload(id).feeds_back;
  auto once = [&] {
    Value out = interp.call(s.step, args);
    if (feed) args[0] = out.items()[1];
    benchmark::DoNotOptimize(out);
  };
  for (int k = 0; k < 3; ++k) once();  // warm-up: allocator caches, OpenBLAS threads
  std::vector<double> times;
  BgMeter bg;
  const size_t launches0 = s.fused ? s.fused->launches() : 0, fallbacks0 = s.fused ? s.fused->fallbacks() : 0;
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    once();
    const double dt = seconds_since(t0);
    state.SetIterationTime(dt);
    times.push_back(dt);
  }
  report_times(state, times, bg);
  state.counters["cpu_ms"] = (process_cpu_seconds() - cpu0) / static_cast<double>(std::max<size_t>(times.size(), 1)) * 1e3;
  // Kernels per step and the bytes they read and write at least (semantics/passes/kernel_stats.h).
  const spora::passes::KernelStats ks = spora::passes::kernel_stats(*s.step);
  state.counters["kernels"] = static_cast<double>(ks.kernels);
  state.counters["traffic_MB"] = ks.bytes() / 1e6;
  if (s.fused) {
    const double n = static_cast<double>(std::max<size_t>(times.size(), 1));
    state.counters["fused_launches"] = static_cast<double>(s.fused->launches() - launches0) / n;
    state.counters["fused_fallbacks"] = static_cast<double>(s.fused->fallbacks() - fallbacks0) / n;
  }
  spora::sem::set_fused_kernel_hook(nullptr);
}

// value_and_grad over forward (issue 21's autodiff target): @bench_fwd is the loss, @bench_vag
// value_and_grad of it as the workload's step takes it (W4: with respect to the block and the
// input), without the optimizer update; both fused as @step is, on step's inputs.
// @bench_main builds the inputs as main does and calls both (so lowering keeps them).
std::string ad_entries(const std::string& id) {
  if (id == "W4")
    return "\ndef bench_fwd(blk, x) = loss(blk, x)\n"
           "def bench_vag(blk, x) = value_and_grad(loss, wrt=(0, 1))(blk, x)\n"
           "def bench_main() {\n    let (blk, x) = inputs()\n    print(bench_fwd(blk, x))\n"
           "    print(bench_vag(blk, x))\n    return (blk, x)\n}\n";
  return "\ndef bench_fwd(net, x, y) = loss(net, x, y)\n"
         "def bench_vag(net, x, y) = value_and_grad(loss)(net, x, y)\n"
         "def bench_main() {\n    let (net, x, y) = inputs()\n    print(bench_fwd(net, x, y))\n"
         "    print(bench_vag(net, x, y))\n    return (net, x, y)\n}\n";
}

// Runs steps a and b once per iteration, which goes first alternating (the order within a pair
// moved W1's and W3's fuse-ratio: results/fuse_ad_ratios_intel_xeon.txt), and records each
// one's seconds; the iteration's time is their sum.
void in_turns(benchmark::State& state, const std::function<double()>& a,
              const std::function<double()>& b, std::vector<double>& ta, std::vector<double>& tb) {
  bool a_first = true;
  for (auto _ : state) {
    if (a_first) {
      ta.push_back(a());
      tb.push_back(b());
    } else {
      tb.push_back(b());
      ta.push_back(a());
    }
    a_first = !a_first;
    state.SetIterationTime(ta.back() + tb.back());
  }
}

void BM_AdRatio(benchmark::State& state, const std::string& id) {
  init_spora();
  const std::string text = read_source(workload(id)) + ad_entries(id);
  std::vector<Value> args;
  const StepModule fwd = compile_step(text, true, &args, "bench_fwd", "bench_main");
  const StepModule vag = compile_step(text, true, nullptr, "bench_vag", "bench_main");
  // The two share the loss: value_and_grad's value must be the forward's.
  const double l0 = fwd.call(args).tensor.get(0), l1 = vag.call(args).items()[0].tensor.get(0);
  if (std::fabs(l0 - l1) > 1e-4 * std::max(1.0, std::fabs(l0))) {
    state.SkipWithError(
        fmt::format("value_and_grad's loss {} differs from the loss {}", l1, l0).c_str());
    return;
  }
  std::vector<double> tf, tv;
  for (int k = 0; k < 3; ++k) fwd.call(args), vag.call(args);  // warm-up
  auto timed = [&](const StepModule& s) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(s.call(args));
    return seconds_since(t0);
  };
  in_turns(
      state, [&] { return timed(fwd); }, [&] { return timed(vag); }, tf, tv);
  state.counters["fwd_ms"] = median(tf) * 1e3;
  state.counters["vag_ms"] = median(tv) * 1e3;
  state.counters["ratio"] = median(tv) / median(tf);
  spora::sem::set_fused_kernel_hook(nullptr);
}

// Fused over unfused graph mode with the two modules taking turns step by step (in_turns, each
// on its own copy of step's inputs), so a change of the machine's speed reaches both alike:
// counters fused_ms, unfused_ms (medians) and ratio (their quotient).
void BM_FuseRatio(benchmark::State& state, const std::string& id) {
  GraphCase& c = graph_case(id);
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  struct Side {
    const StepModule* s;
    spora::sem::Interpreter interp;
    std::vector<Value> args;
    std::vector<double> times;
  };
  Side sides[2] = {{&c.plain, spora::sem::Interpreter(*c.plain.module), c.args, {}},
                   {&c.fused, spora::sem::Interpreter(*c.fused.module), c.args, {}}};
  const bool feed = workload(id).feeds_back;
  auto once = [&](Side& side) {
    side.s->activate();
    const auto t0 = Clock::now();
    Value out = side.interp.call(side.s->step, side.args);
    const double dt = seconds_since(t0);
    if (feed) side.args[0] = out.items()[1];
    benchmark::DoNotOptimize(out);
    return dt;
  };
  for (int k = 0; k < 3; ++k) once(sides[0]), once(sides[1]);  // warm-up
  in_turns(
      state, [&] { return once(sides[0]); }, [&] { return once(sides[1]); }, sides[0].times,
      sides[1].times);
  state.counters["unfused_ms"] = median(sides[0].times) * 1e3;
  state.counters["fused_ms"] = median(sides[1].times) * 1e3;
  state.counters["ratio"] = median(sides[1].times) / median(sides[0].times);
  spora::sem::set_fused_kernel_hook(nullptr);
}

// A stream buffer that records the wall and CPU time of every line written to it: eager
// mode's `run_steps` prints the step index after each step, so consecutive lines delimit steps.
class StepMarks : public std::streambuf {
 public:
  struct Mark {
    Clock::time_point wall;
    double cpu;
  };
  std::vector<Mark> marks;

 protected:
  int_type overflow(int_type c) override {
    if (c == '\n') marks.push_back({Clock::now(), process_cpu_seconds()});
    return c;
  }
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(p[i]);
    return n;
  }
};

void BM_Eager(benchmark::State& state, const std::string& id) {
  GraphCase& c = graph_case(id);  // verification (eager included) happens there
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  spora::sem::set_fused_kernel_hook(nullptr);
  const Workload& w = workload(id);
  // One run lowers run_steps(1 + k): the k intervals between the k + 1 marks are k steps, and
  // nothing that happens once per run (parsing, building the inputs, the first step's
  // allocations, verifying the module at the end) is in them.
  const std::string program = eager_program(read_source(w), 1 + w.eager_steps, false);
  std::vector<double> steps, cpu_steps;
  auto run = [&] {
    StepMarks buf;
    std::ostream os(&buf);
    spora::ops::set_print_stream(&os);
    try {
      benchmark::DoNotOptimize(lower(program, "bench_eager", true));
    } catch (...) {
      spora::ops::set_print_stream(nullptr);
      throw;
    }
    spora::ops::set_print_stream(nullptr);
    std::vector<double> wall;
    for (size_t k = 1; k < buf.marks.size(); ++k) {
      wall.push_back(std::chrono::duration<double>(buf.marks[k].wall - buf.marks[k - 1].wall).count());
      cpu_steps.push_back(buf.marks[k].cpu - buf.marks[k - 1].cpu);
    }
    steps.insert(steps.end(), wall.begin(), wall.end());
    return median(wall);
  };
  run();  // warm-up
  steps.clear(), cpu_steps.clear();
  BgMeter bg;
  for (auto _ : state) state.SetIterationTime(run());
  report_times(state, steps, bg);
  state.counters["cpu_ms"] = median(cpu_steps) * 1e3;
  state.counters["steps_per_run"] = w.eager_steps;
}

// ------------------------------------------------------------------ machine limits
std::vector<float> filled(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 7) * scale;
  return v;
}

// OpenBLAS's own threads for the limits: as many as OpenMP's (OMP_NUM_THREADS), then back to
// the one thread the Cpu backend gives it (it splits GEMMs over its own OpenMP team).
struct BlasThreads {
  BlasThreads() { openblas_set_num_threads(omp_get_max_threads()); }
  ~BlasThreads() { openblas_set_num_threads(1); }
};

// One whole row-major SGEMM on the bench's threads: OpenBLAS (its own threads), or oneDNN
// (the OpenMP team), the two libraries the CPU backend chooses between (gemm_choice.h).
void limit_sgemm(bool onednn, bool ta, bool tb, int m, int n, int k, const float* a, int lda,
                 const float* b, int ldb, float* c, int ldc) {
#ifdef SPORA_HAVE_ONEDNN
  if (onednn) {
    dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.f, a, lda, b, ldb, 0.f, c, ldc);
}

// SGEMM, row-major NN, 1024^3, in OpenBLAS or oneDNN.
void BM_Limit_Sgemm1024(benchmark::State& state, bool onednn) {
  BlasThreads threads;
  const int n = 1024;
  auto a = filled(size_t{n} * n, 0.01f), b = filled(size_t{n} * n, 0.02f), c = filled(size_t{n} * n, 0);
  auto gemm = [&] {
    limit_sgemm(onednn, false, false, n, n, n, a.data(), n, b.data(), n, c.data(), n);
  };
  for (int k = 0; k < 3; ++k) gemm();
  std::vector<double> times;
  BgMeter bg;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    gemm();
    times.push_back(seconds_since(t0));
    state.SetIterationTime(times.back());
  }
  report_times(state, times, bg);
  const double flop = 2.0 * n * n * n;
  state.counters["gflops_best"] = flop / *std::min_element(times.begin(), times.end()) / 1e9;
  state.counters["gflops_median"] = flop / median(times) / 1e9;
  state.counters["threads"] = onednn ? omp_get_max_threads() : openblas_get_num_threads();
}

// The 9 GEMMs of a W2 step (3 forward, 3 dW, 3 dX; 257 MFLOP) back to back in one library: the
// GEMM-only time a W2 step cannot beat with it (benchmarks/workloads/README.md, "Machine limits").
void BM_Limit_W2Gemms(benchmark::State& state, bool onednn) {
  BlasThreads threads;
  const int B = 64, d[4] = {784, 512, 512, 10};
  std::vector<float> W[3], dW[3], A[4], dA[4];
  for (int l = 0; l < 3; ++l) W[l] = filled(size_t(d[l + 1]) * d[l], 0.01f), dW[l] = W[l];
  for (int l = 0; l < 4; ++l) A[l] = filled(size_t(B) * d[l], 0.01f), dA[l] = A[l];
  auto step = [&] {
    for (int l = 0; l < 3; ++l)
      limit_sgemm(onednn, false, true, B, d[l + 1], d[l], A[l].data(), d[l], W[l].data(), d[l],
                  A[l + 1].data(), d[l + 1]);
    for (int l = 2; l >= 0; --l) {
      limit_sgemm(onednn, true, false, d[l + 1], d[l], B, dA[l + 1].data(), d[l + 1], A[l].data(),
                  d[l], dW[l].data(), d[l]);
      limit_sgemm(onednn, false, false, B, d[l], d[l + 1], dA[l + 1].data(), d[l + 1], W[l].data(),
                  d[l], dA[l].data(), d[l]);
    }
  };
  for (int k = 0; k < 20; ++k) step();
  std::vector<double> times;
  BgMeter bg;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    step();
    times.push_back(seconds_since(t0));
    state.SetIterationTime(times.back());
  }
  report_times(state, times, bg);
}

// STREAM triad a = b + s*c over 3 x 320 MB of doubles (beyond the caches), OpenMP threads.
void BM_Limit_Triad(benchmark::State& state) {
  const int64_t n = 40'000'000;
  std::vector<double> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0), c(static_cast<size_t>(n), 2.0);
  auto triad = [&] {
    double* pa = a.data();
    const double *pb = b.data(), *pc = c.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0 * pc[i];
  };
  triad();
  std::vector<double> times;
  BgMeter bg;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    triad();
    times.push_back(seconds_since(t0));
    state.SetIterationTime(times.back());
  }
  report_times(state, times, bg);
  const double bytes = 3.0 * 8.0 * static_cast<double>(n);
  state.counters["gbs_best"] = bytes / *std::min_element(times.begin(), times.end()) / 1e9;
  state.counters["gbs_median"] = bytes / median(times) / 1e9;
  state.counters["threads"] = omp_get_max_threads();
}

// W5's own memory bound: y = x * 1.5 + 0.25 over W5's 4M floats (16 MB in, 16 MB out, the
// output buffer reused from call to call as the runtime's caching allocator reuses it), split
// over the OpenMP team as the fused kernel splits it. Unlike the triad, it pays the same
// read-for-ownership of the output lines and the same cache residency as the kernel.
void BM_Limit_W5Stream(benchmark::State& state) {
  const int64_t n = 4 * 1024 * 1024;
  std::vector<float> x = filled(static_cast<size_t>(n), 0.1f), y(static_cast<size_t>(n));
  auto stream = [&] {
    const float* px = x.data();
    float* py = y.data();
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < n / 8192; ++t) {
#pragma omp simd
      for (int64_t j = t * 8192; j < (t + 1) * 8192; ++j) py[j] = px[j] * 1.5f + 0.25f;
    }
  };
  for (int k = 0; k < 3; ++k) stream();
  std::vector<double> times;
  BgMeter bg;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    stream();
    times.push_back(seconds_since(t0));
    state.SetIterationTime(times.back());
  }
  report_times(state, times, bg);
  state.counters["gbs_best"] = 8.0 * static_cast<double>(n) / *std::min_element(times.begin(), times.end()) / 1e9;
  state.counters["threads"] = omp_get_max_threads();
}

// ------------------------------------------------------------------ per-primitive profile
// Where one graph-mode step spends its time: per primitive (and the kernel it ran: the Cpu
// backend's, or "(ref)" for the reference fallback) or fusion group ("fused[add+relu]"), then
// the costliest (primitive, result type) pairs. From Interpreter::set_trace: a node's event
// comes after the node ran, nested nodes (loop bodies, calls, groups run node by node) before
// their parent's event one level deeper, so a fused call counts only when it ran its kernel.
std::string fused_label(const spora::ir::Graph& g) {
  std::vector<std::string> prims;
  for (const auto* n : g.nodes)
    if (n->prim && n->prim->eval && prims.size() < 6) prims.push_back(n->prim->name);
  return fmt::format("fused[{}{}]", fmt::join(prims, "+"), prims.size() == 6 ? "+..." : "");
}

// Two columns per row: wall time (the trace's) and CPU time of the process (all threads, spin
// waits included) between the previous trace event and this one, which preemption by other
// processes on a shared machine does not inflate; rows are sorted by CPU time.
struct ModuleProfile {
  struct Acc {
    double wall = 0, cpu = 0;
    int n = 0;
  };
  std::string label;
  const StepModule* s = nullptr;
  std::map<std::string, Acc> by_prim, by_shape;
  std::map<int, double> nested;  // leaf time seen at each depth since the last event above it
  double leaf_wall = 0, leaf_cpu = 0, cpu_last = 0, wall = 0, cpu_total = 0;

  void on_event(const spora::sem::TraceEvent& e) {
    const double cpu_now = process_cpu_seconds(), cpu = cpu_now - cpu_last;
    cpu_last = cpu_now;
    const spora::ir::Node* n = e.node;
    const spora::sem::Primitive* p = n->prim;
    std::string name;
    if (p && p->eval) {
      const bool has_cpu = p->facet<spora::sem::RefKernel>(spora::sem::kCpuKernelFacet) != nullptr;
      name = p->name + (has_cpu ? "" : " (ref)");
    } else if (n->callee && spora::passes::is_fused_graph(*n->callee) && nested[e.depth + 1] == 0) {
      name = fused_label(*n->callee);
    }
    nested[e.depth + 1] = 0;
    if (name.empty()) return;  // calls and control flow: their nodes were counted
    nested[e.depth] += e.seconds;
    for (auto* acc : {&by_prim[name], &by_shape[fmt::format("{:<28} -> {}", name, n->type->str())]}) {
      acc->wall += e.seconds;
      acc->cpu += cpu;
      acc->n++;
    }
    leaf_wall += e.seconds;
    leaf_cpu += cpu;
  }

  void print(int steps) const {
    auto rows = [&](const std::map<std::string, Acc>& m, size_t top) {
      std::vector<std::pair<std::string, Acc>> v(m.begin(), m.end());
      std::sort(v.begin(), v.end(), [](auto& x, auto& y) { return x.second.cpu > y.second.cpu; });
      for (size_t k = 0; k < v.size() && k < top; ++k)
        std::cout << fmt::format("  {:>9.3f} {:>9.3f} {:>5.1f}% {:>6}  {}\n",
                                 v[k].second.cpu / steps * 1e3, v[k].second.wall / steps * 1e3,
                                 100 * v[k].second.cpu / cpu_total, v[k].second.n / steps,
                                 v[k].first);
    };
    std::cout << fmt::format(
        "== {} graph-mode step, {} ({} steps traced): wall {:.3f} ms, CPU {:.3f} ms; "
        "in kernels: wall {:.3f} ms, CPU {:.3f} ms ==\n",
        label, s->fused ? "fused" : "unfused", steps, wall / steps * 1e3, cpu_total / steps * 1e3,
        leaf_wall / steps * 1e3, leaf_cpu / steps * 1e3);
    std::cout << "     CPU ms   wall ms  %CPU  calls  primitive or fusion group ((ref): the "
                 "reference kernel ran)\n";
    rows(by_prim, 30);
    std::cout << "  by primitive and result type (top 15):\n";
    rows(by_shape, 15);
  }
};

// Traces `steps` steps of each module, the modules taking turns step by step, so that a change
// of the machine's speed during the run reaches every module alike.
void profile_modules(std::vector<ModuleProfile>& ps, const std::vector<Value>& args, int steps) {
  std::vector<std::unique_ptr<spora::sem::Interpreter>> interps;
  for (ModuleProfile& p : ps) {
    p.s->activate();
    interps.push_back(std::make_unique<spora::sem::Interpreter>(*p.s->module));
    interps.back()->call(p.s->step, args);  // warm-up
    interps.back()->set_trace([&p](const spora::sem::TraceEvent& e) { p.on_event(e); });
  }
  for (int k = 0; k < steps; ++k)
    for (size_t i = 0; i < ps.size(); ++i) {
      ModuleProfile& p = ps[i];
      p.s->activate();
      const auto t0 = Clock::now();
      const double c0 = process_cpu_seconds();
      p.cpu_last = c0;
      interps[i]->call(p.s->step, args);
      p.wall += seconds_since(t0);
      p.cpu_total += process_cpu_seconds() - c0;
    }
  spora::sem::set_fused_kernel_hook(nullptr);
  for (const ModuleProfile& p : ps) p.print(steps);
}

void profile(const std::string& id, int steps) {
  if (id.size() > 3 && id.compare(id.size() - 3, 3, "/ad") == 0) {
    // W<n>/ad: the two modules W<n>/ad-ratio times, the loss alone and value_and_grad of it.
    const std::string w = id.substr(0, id.size() - 3),
                      text = read_source(workload(w)) + ad_entries(w);
    std::vector<Value> args;
    const StepModule fwd = compile_step(text, true, &args, "bench_fwd", "bench_main");
    const StepModule vag = compile_step(text, true, nullptr, "bench_vag", "bench_main");
    std::vector<ModuleProfile> ps(2);
    ps[0].label = w + " loss", ps[0].s = &fwd;
    ps[1].label = w + " value_and_grad(loss)", ps[1].s = &vag;
    profile_modules(ps, args, steps);
    return;
  }
  GraphCase& c = graph_case(id);
  if (!c.error.empty()) {
    std::cout << fmt::format("{}: not profiled: {}\n", id, c.error);
    return;
  }
  std::vector<ModuleProfile> ps(2);
  ps[0].label = id, ps[0].s = &c.plain;
  ps[1].label = id, ps[1].s = &c.fused;
  profile_modules(ps, c.args, steps);
}

}  // namespace

int main(int argc, char** argv) {
  std::string profile_ids, dump_id;
  std::vector<char*> rest;
  for (int k = 0; k < argc; ++k) {
    const std::string a = argv[k];
    if (a.rfind("--profile=", 0) == 0)
      profile_ids = a.substr(10);
    else if (a.rfind("--dump-ir=", 0) == 0)
      dump_id = a.substr(10);
    else
      rest.push_back(argv[k]);
  }
  if (!dump_id.empty()) {
    GraphCase& c = graph_case(dump_id);
    if (!c.fused.module) return 1;
    std::cout << spora::ir::print_module(*c.fused.module);
    return c.error.empty() ? 0 : 1;
  }
  if (!profile_ids.empty()) {
    init_spora();
    std::stringstream ss(profile_ids);
    for (std::string id; std::getline(ss, id, ',');)
      profile(id, id.rfind("W4", 0) == 0 || id.rfind("W6", 0) == 0 ? 5 : 30);
    return 0;
  }
  for (const auto& w : workloads()) {
    benchmark::RegisterBenchmark((w.id + "/graph").c_str(), BM_Graph, w.id, true)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
    benchmark::RegisterBenchmark((w.id + "/graph-nofuse").c_str(), BM_Graph, w.id, false)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(1.0);
    benchmark::RegisterBenchmark((w.id + "/eager").c_str(), BM_Eager, w.id)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(w.eager_runs);
    benchmark::RegisterBenchmark((w.id + "/fuse-ratio").c_str(), BM_FuseRatio, w.id)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(2.0);
    if (w.id == "W2" || w.id == "W3" || w.id == "W4")
      benchmark::RegisterBenchmark((w.id + "/ad-ratio").c_str(), BM_AdRatio, w.id)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(w.id == "W4" ? 3.0 : 1.0);
  }
  if (const char* b = std::getenv("SPORA_BENCH_PARALLEL_WORK_B")) {
    const int64_t work = std::atoll(b);
    if (work <= 0) {
      std::cerr << "SPORA_BENCH_PARALLEL_WORK_B must be a positive number of work units, not '" << b
                << "'\n";
      return 1;
    }
    // The threshold at `work` for one benchmark run, then back.
    struct AtWork {
      int64_t old;
      explicit AtWork(int64_t w) : old(spora::cpu::set_parallel_work(w)) {}
      ~AtWork() { spora::cpu::set_parallel_work(old); }
    };
    const std::string tag = "@work=" + std::to_string(work);
    for (const auto& w : workloads()) {
      benchmark::RegisterBenchmark((w.id + "/graph" + tag).c_str(),
                                   [work, id = w.id](benchmark::State& st) {
                                     const AtWork at(work);
                                     BM_Graph(st, id, true);
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(2.0);
      benchmark::RegisterBenchmark((w.id + "/eager" + tag).c_str(),
                                   [work, id = w.id](benchmark::State& st) {
                                     const AtWork at(work);
                                     BM_Eager(st, id);
                                   })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(w.eager_runs);
    }
  }
  for (bool onednn : {false, true}) {
    if (onednn && !spora::cpu::have_onednn()) continue;
    const std::string lib = onednn ? "OneDNN" : "";
    benchmark::RegisterBenchmark(("Limit/Sgemm1024" + lib).c_str(), BM_Limit_Sgemm1024, onednn)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(40);
    benchmark::RegisterBenchmark(("Limit/W2Gemms" + lib).c_str(), BM_Limit_W2Gemms, onednn)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(1.0);
  }
  benchmark::RegisterBenchmark("Limit/Triad", BM_Limit_Triad)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(10);
  benchmark::RegisterBenchmark("Limit/W5Stream", BM_Limit_W5Stream)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->MinTime(1.0);
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& e) {
    std::cerr << "bench_workloads: error: " << e.what() << "\n";
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
