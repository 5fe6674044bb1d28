// The CUDA backend's fused groups, CUDA graphs and f16/bf16 kernels (issue 8).
//
// Everywhere (no GPU needed): every fusion group of the workloads and examples compiles with
// NVRTC, the .entry parameters of its PTX are what the launcher packs, the CUBIN cache is hit
// on a second build, and the CUDA-graph eligibility of the workloads' functions. On a GPU:
// fused == unfused on W1-W5 (f32, 1e-5), replayed CUDA graphs == uncaptured calls over W2
// training steps with fewer kernel launches, and f16/bf16 kernels against the reference
// (relative 1e-3 / 1e-2).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "autodiff/install.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/fused_runtime.h"
#include "backends/cuda/cuda.h"
#include "backends/cuda/fused.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"
#include "semantics/registry.h"
#include "tests/cpu/cpu_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace spora::cuda::testing {
namespace {

namespace fs = std::filesystem;
using sem::Tensor;
using sem::Value;

void setup() {
  static bool done = [] {
    cpu::testing::prim("add");  // ops and CPU kernels registered
    autodiff::install();
    register_kernels();
    return true;
  }();
  (void)done;
}

// A directory of this process and test (removed at the end).
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> n{0};
    path = fs::temp_directory_path() /
           ("spora-gpu-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::unique_ptr<ir::Module> compile_path(const std::string& path, bool optimize = true) {
  setup();
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::Compiled c = sem::compile_file(sources, diags, path);
  if (!c.module) return nullptr;
  if (optimize) passes::optimize(*c.module);
  return std::move(c.module);
}

std::unique_ptr<ir::Module> compile_text(const TempDir& dir, const std::string& text) {
  const fs::path p = dir.path / "prog.sp";
  std::ofstream(p) << text;
  return compile_path(p.string(), /*optimize=*/false);
}

// W1-W5 (benchmarks/workloads/): the workloads the fused-kernel tests on a GPU run.
const char* const kWorkloads[] = {"w1_mlp_forward", "w2_mlp_train", "w3_lenet5_train",
                                  "w4_transformer_block", "w5_elementwise_chain"};
std::string workload_path(const char* w) {
  return std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/" + w + ".sp";
}
std::vector<std::string> workload_paths(bool with_examples) {
  std::vector<std::string> out;
  for (const char* w : kWorkloads) out.push_back(workload_path(w));
  out.push_back(workload_path("w6_rnn_unrolled"));
  if (with_examples)
    for (const auto& e : fs::directory_iterator(std::string(SPORA_SOURCE_DIR) + "/examples"))
      if (e.path().extension() == ".sp") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// ---- everywhere: NVRTC and the launcher's parameters ----------------------------------------

TEST(GpuFusedHost, EveryGroupCompilesAndThePtxEntryMatchesWhatTheLauncherPacks) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "built without the CUDA toolkit (no NVRTC)";
  std::vector<codegen::KernelSource> kernels;
  std::vector<passes::KernelPlan> plans;
  int programs = 0;
  for (const std::string& path : workload_paths(true)) {
    auto m = compile_path(path);
    if (!m) continue;  // an example that needs data files or MPI to lower: not a workload
    ++programs;
    passes::fuse_operators(*m);
    for (const auto& g : codegen::fused_groups(*m)) {
      kernels.push_back(codegen::emit_cuda(g.plan));
      plans.push_back(g.plan);
    }
  }
  ASSERT_GE(programs, 6);
  ASSERT_GT(kernels.size(), 10u);
  TempDir cache("nvrtc");
  const std::string unit = codegen::cuda_unit(kernels);
  codegen::NvrtcImage ptx;
  std::string log;
  ASSERT_TRUE(codegen::nvrtc_build(unit, "compute_90", cache.path.string(), &ptx, &log)) << log;
  int checked = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const std::vector<codegen::CudaParam> packed = codegen::cuda_params(plans[i]);
    auto entry = codegen::ptx_entry_params(ptx.image, kernels[i].name);
    ASSERT_TRUE(entry) << kernels[i].name << " is not an entry of the PTX";
    // Every parameter a device pointer: 8 bytes each, as many as the launcher packs.
    EXPECT_EQ(*entry, std::vector<int>(packed.size(), 8)) << kernels[i].name;
    EXPECT_EQ(packed.size(), plans[i].inputs.size() + plans[i].outputs.size() + 2);
    EXPECT_EQ(packed[packed.size() - 2].kind, codegen::CudaParam::Kind::Err);
    EXPECT_EQ(packed.back().kind, codegen::CudaParam::Kind::Totals);
    if (!plans[i].totals.empty() || !plans[i].epilogue.empty()) {
      EXPECT_EQ(codegen::ptx_entry_params(ptx.image, kernels[i].name + "_init"),
                std::vector<int>{8});
      EXPECT_EQ(codegen::ptx_entry_params(ptx.image, kernels[i].name + "_finish"), *entry);
    }
    const codegen::CudaGeometry geo = codegen::cuda_geometry(plans[i]);
    EXPECT_EQ(geo.threads % 32, 0);
    EXPECT_EQ(geo.rowwise, !plans[i].splittable);
    ++checked;
  }
  std::printf("nvrtc: %d kernels of %d programs checked against their PTX entries\n", checked,
              programs);
  // CUBIN for sm_90, cached: a second build reads the file and runs no NVRTC.
  const codegen::NvrtcStats before = codegen::nvrtc_stats();
  codegen::NvrtcImage cubin, again;
  ASSERT_TRUE(codegen::nvrtc_build(unit, "sm_90", cache.path.string(), &cubin, &log)) << log;
  EXPECT_FALSE(cubin.cached);
  ASSERT_TRUE(codegen::nvrtc_build(unit, "sm_90", cache.path.string(), &again, &log)) << log;
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.image, cubin.image);
  EXPECT_EQ(cubin.image.substr(0, 4), std::string("\x7f"
                                                  "ELF"));
  const codegen::NvrtcStats after = codegen::nvrtc_stats();
  EXPECT_EQ(after.compiles, before.compiles + 1);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  // A broken unit fails with NVRTC's message and leaves its source for a look.
  codegen::NvrtcImage bad;
  EXPECT_FALSE(codegen::nvrtc_build("__global__ void k() { undefined_name; }", "sm_90",
                                    cache.path.string(), &bad, &log));
  EXPECT_NE(log.find("undefined_name"), std::string::npos) << log;
}

TEST(GpuFusedHost, PtxEntryParsing) {
  const std::string ptx =
      ".visible .entry k1(\n\t.param .u64 .ptr .align 1 k1_param_0,\n\t.param .u32 "
      "k1_param_1,\n\t.param .align 8 .b8 k1_param_2[16]\n)\n{\n}\n.visible .entry k2()\n{\n}\n";
  EXPECT_EQ(codegen::ptx_entry_params(ptx, "k1"), (std::vector<int>{8, 4, 16}));
  EXPECT_EQ(codegen::ptx_entry_params(ptx, "k2"), std::vector<int>{});
  EXPECT_FALSE(codegen::ptx_entry_params(ptx, "k3"));
}

TEST(GpuFusedHost, WithoutADeviceTheTargetSaysWhy) {
  std::string why;
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(make_fused_gpu(&why), nullptr);
  EXPECT_EQ(why.rfind("no CUDA device", 0), 0u) << why;
}

// ---- everywhere: which functions CUDA graphs capture ----------------------------------------

TEST(GpuGraphsHost, EligibilityOnIrGraphs) {
  setup();
  if (!built_with_cuda()) GTEST_SKIP() << "no CUDA device: Spora was built without CUDA";
  TempDir dir("eligible");
  auto m = compile_text(dir, R"(
def pure(x, y) = relu(x @ y) * 2.0 + 1.0
def calls_pure(x, y) = sum(pure(x, y))
def branches(x) {
    var y = x
    if sum(x) > 0.0 {
        y = -x
    } else {
        y = x * 2.0
    }
    return y
}
def loops(x) {
    var s = x
    for i in range(3) {
        s = s * 2.0
    }
    return s
}
def host_row(x) = concat((x, x), axis=0)
def calls_host(x) = host_row(x) + 1.0
def main() {
    let x = ones(shape=(2, 2))
    print(calls_pure(x, x), branches(x), loops(x), calls_host(x))
}
)");
  ASSERT_TRUE(m);
  auto eligible = [&](const char* name, std::string* why = nullptr) {
    const ir::Graph* g = m->find_graph(name);
    EXPECT_NE(g, nullptr) << name;
    return g && capture_eligible(*g, runs_natively, why);
  };
  std::string why;
  EXPECT_TRUE(eligible("pure", &why)) << why;
  EXPECT_TRUE(eligible("calls_pure", &why)) << why;
  EXPECT_FALSE(eligible("branches", &why));
  EXPECT_NE(why.find("control flow ('if'"), std::string::npos) << why;
  EXPECT_FALSE(eligible("loops", &why));
  EXPECT_NE(why.find("for_range"), std::string::npos) << why;
  EXPECT_FALSE(eligible("host_row", &why));
  EXPECT_NE(why.find("'concat', which has no CUDA kernel"), std::string::npos) << why;
  EXPECT_FALSE(eligible("calls_host", &why));  // through the call
  EXPECT_NE(why.find("@host_row uses 'concat'"), std::string::npos) << why;
  EXPECT_FALSE(eligible("main", &why));
  // The predicate decides which rows count as native.
  const ir::Graph* pure = m->find_graph("pure");
  EXPECT_FALSE(capture_eligible(
      *pure, [](const sem::Primitive& p) { return p.name != "relu"; }, &why));
  EXPECT_NE(why.find("'relu'"), std::string::npos) << why;
  // Nested graphs (loop bodies) are never captured on their own.
  for (const auto& g : m->graphs()) {
    if (g->parent) {
      EXPECT_FALSE(capture_eligible(*g, runs_natively)) << g->name;
    }
  }
}

TEST(GpuGraphsHost, TheWorkloadStepsQualify) {
  setup();
  if (!built_with_cuda()) GTEST_SKIP() << "no CUDA device: Spora was built without CUDA";
  for (const char* w :
       {"w1_mlp_forward", "w2_mlp_train", "w4_transformer_block", "w5_elementwise_chain"}) {
    auto m = compile_path(workload_path(w),
                          /*optimize=*/false);
    ASSERT_TRUE(m) << w;
    const ir::Graph* step = m->find_graph("step");
    ASSERT_NE(step, nullptr) << w;
    std::string why;
    EXPECT_TRUE(capture_eligible(*step, runs_natively, &why)) << w << ": " << why;
    // inputs() draws random numbers on the host: not capturable.
    EXPECT_FALSE(capture_eligible(*m->find_graph("inputs"), runs_natively, &why)) << w;
  }
}

TEST(GpuLowPrecisionHost, CoverageListsTheF16Paths) {
  setup();
  if (!built_with_cuda()) GTEST_SKIP() << "no CUDA device: Spora was built without CUDA";
  std::map<std::string, std::string> notes;
  for (const Coverage& c : coverage()) notes[c.name] = c.note;
  for (const char* name : {"add", "exp", "sum", "softmax", "layer_norm", "cross_entropy"})
    EXPECT_NE(notes[name].find("f16/bf16 computed in f32"), std::string::npos) << name;
  for (const char* name : {"cast", "where", "transpose"})
    EXPECT_NE(notes[name].find("f16/bf16 native"), std::string::npos) << name;
  EXPECT_NE(notes["matmul"].find("cublasGemmStridedBatchedEx"), std::string::npos);
}

// ---- on a GPU: fused groups ----------------------------------------------------------------

struct Leaves {
  std::vector<Tensor> t;
};
void leaves(const Value& v, Leaves& out) {
  if (v.is_tensor()) out.t.push_back(to_host(v.tensor));
  if (v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record)
    for (const Value& e : v.items()) leaves(e, out);
}

// Largest |a - b| over every element of two results, relative to the largest magnitude of
// the leaf it is in (gradients near zero are judged against their tensor's scale, as
// bench_workloads does), but never to less than 1% of the largest leaf: a gradient that is
// zero by symmetry (W4's key bias: softmax does not see a shift shared by all keys) is
// rounding noise of size 1e-7, and two summation orders give two different noises;
// -1 when they differ in structure, dtype or shape.
double max_rel(const Value& a, const Value& b, size_t* worst_leaf = nullptr) {
  Leaves la, lb;
  leaves(a, la);
  leaves(b, lb);
  if (la.t.size() != lb.t.size()) return -1;
  std::vector<double> scale(la.t.size(), 0), diff(la.t.size(), 0);
  for (size_t i = 0; i < la.t.size(); ++i) {
    if (la.t[i].shape() != lb.t[i].shape() || la.t[i].dtype() != lb.t[i].dtype()) return -1;
    for (int64_t k = 0; k < la.t[i].numel(); ++k) {
      const double x = la.t[i].get(k), y = lb.t[i].get(k);
      if (std::isnan(x) || std::isnan(y)) {
        if (!(std::isnan(x) && std::isnan(y))) return 1e30;
        continue;
      }
      scale[i] = std::max(scale[i], std::abs(y));
      diff[i] = std::max(diff[i], std::abs(x - y));
    }
  }
  const double floor = scale.empty() ? 0 : 0.01 * *std::max_element(scale.begin(), scale.end());
  double worst = 0;
  for (size_t i = 0; i < scale.size(); ++i) {
    const double s = std::max(scale[i], floor);
    const double rel = s > 0 ? diff[i] / s : diff[i];
    if (rel > worst && worst_leaf) *worst_leaf = i;
    worst = std::max(worst, rel);
  }
  return worst;
}

// Every group compiled (no size threshold), on the GPU or as C++.
codegen::FusedOptions all_groups(bool gpu) {
  codegen::FusedOptions o = codegen::default_fused_options();
  o.min_elements = 0;
  if (gpu) {
    o.gpu = make_fused_gpu();
    EXPECT_NE(o.gpu, nullptr);
  }
  return o;
}

// W<n>'s step on its inputs, on the GPU, with or without fused kernels: inputs() of the
// module as lowered, then @step as the entry, optimised (and fused) as `spora run` does.
Value run_step(const std::string& path, bool fused, size_t* launches) {
  auto m = compile_path(path, /*optimize=*/false);
  EXPECT_TRUE(m) << path;
  if (!m) return Value();
  Value in = sem::Interpreter(*m).call(m->find_graph("inputs"), {});
  std::vector<Value> args(in.items().begin(), in.items().end());
  m->entry = m->find_graph("step");
  passes::optimize(*m);
  std::unique_ptr<codegen::FusedRuntime> rt;
  if (fused) {
    passes::fuse_operators(*m);
    rt = std::make_unique<codegen::FusedRuntime>(*m, all_groups(/*gpu=*/true));
    EXPECT_TRUE(rt->error().empty()) << rt->error();
  }
  sem::Interpreter interp(*m);
  Value out = interp.call(m->entry, args);
  synchronize();
  if (rt && launches) *launches = rt->launches();
  return out;
}

TEST(GpuFused, FusedEqualsUnfusedOnTheWorkloads) {
  REQUIRE_GPU();
  setup();
  const sem::Backend saved = sem::backend();
  sem::set_backend(sem::Backend::Cuda);
  for (const char* w : kWorkloads) {
    const std::string path = workload_path(w);
    size_t launches = 0;
    const Value plain = run_step(path, false, nullptr);
    const Value fused = run_step(path, true, &launches);
    size_t leaf = 0;
    const double rel = max_rel(fused, plain, &leaf);
    std::printf(
        "fused vs unfused on the GPU: %s: %zu fused launches, max relative difference %.3g "
        "(result leaf %zu)\n",
        w, launches, rel, leaf);
    EXPECT_GT(launches, 0u) << w;
    EXPECT_GE(rel, 0) << w << ": results differ in structure";
    EXPECT_LE(rel, 1e-5) << w;
  }
  sem::set_backend(saved);
}

// Every fusion group of W1-W5 alone: its kernel (FusedRuntime::run: CUDA when `gpu`, else the
// C++ kernel) against the group's nodes run one by one by the CPU backend, on the same inputs
// (floats in [-1, 1), centred so that a matmul anchor's result has no large common part that
// a layer norm after it would cancel; integers 1). Returns the groups checked; a wrong group is
// named with the workload, which the whole-step comparison cannot do.
int check_groups_alone(bool gpu, double tol) {
  const sem::Backend saved = sem::backend();
  int checked = 0;
  for (const char* w : kWorkloads) {
    const std::string path = workload_path(w);
    auto m = compile_path(path, /*optimize=*/false);
    EXPECT_TRUE(m) << path;
    if (!m) continue;
    m->entry = m->find_graph("step");
    passes::optimize(*m);
    passes::fuse_operators(*m);
    codegen::FusedRuntime rt(*m, all_groups(gpu));
    EXPECT_TRUE(rt.error().empty()) << rt.error();
    for (const auto& g : m->graphs()) {
      if (g->name.rfind("fused", 0) != 0) continue;
      std::vector<Value> host;
      bool tensors = true;
      for (const ir::Node* p : g->params) {
        if (!p->type || !p->type->is_tensor()) {
          tensors = false;
          break;
        }
        Tensor t = Tensor::empty(p->type->dtype, p->type->shape);
        const bool integral = p->type->dtype == DType::i32 || p->type->dtype == DType::i64 ||
                              p->type->dtype == DType::boolean;
        for (int64_t k = 0; k < t.numel(); ++k)
          t.set(k, integral ? 1.0 : static_cast<double>((k * 7919 + 13) % 2000) / 1000.0 - 1.0);
        host.emplace_back(t);
      }
      if (!tensors) continue;
      sem::set_backend(sem::Backend::Cpu);
      const Value want = sem::Interpreter(*m).call(g.get(), host);
      std::vector<Value> args = host;
      if (gpu) {
        sem::set_backend(sem::Backend::Cuda);
        for (Value& v : args) v = Value(to_device(v.tensor));
      }
      Value got;
      if (!rt.run(*g, args, got)) continue;  // no kernel for this group (run node by node)
      if (gpu) synchronize();
      size_t leaf = 0;
      const double rel = max_rel(got, want, &leaf);
      EXPECT_GE(rel, 0) << w << " @" << g->name << ": results differ in structure";
      EXPECT_LE(rel, tol) << w << " @" << g->name << " output " << leaf << " differs";
      std::printf("group %s of %s (%s): max relative difference %.3g in output %zu\n",
                  g->name.c_str(), w, gpu ? "cuda" : "c++", rel, leaf);
      ++checked;
    }
  }
  sem::set_backend(saved);
  return checked;
}

TEST(GpuFused, EveryGroupOfTheWorkloadsEqualsItsNodesOnTheCpu) {
  REQUIRE_GPU();
  setup();
  const int checked = check_groups_alone(/*gpu=*/true, 1e-5);
  std::printf("groups checked alone on the GPU: %d\n", checked);
  EXPECT_GT(checked, 20);
}

TEST(GpuFusedHost, EveryGroupOfTheWorkloadsEqualsItsNodesAsCpp) {
  setup();
  const int checked = check_groups_alone(/*gpu=*/false, 1e-5);
  EXPECT_GT(checked, 20);
}

// ---- on a GPU: CUDA graphs ------------------------------------------------------------------

struct Printed {
  std::string text;
  LaunchStats stats;
};
// W2's run_steps(k, true) on the GPU (printing each step's loss), with graphs on or off: the
// program as `spora run` compiles it (optimised), with @noinline on step so that the loop body
// calls it (inlining would leave no call to capture).
Printed w2_steps(int k, bool graphs) {
  std::ifstream f(std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/w2_mlp_train.sp");
  std::stringstream text;
  text << f.rdbuf();
  std::string src =
      std::regex_replace(text.str(), std::regex("\ndef main\\(\\)"), "\ndef main_one_step()");
  src = std::regex_replace(src, std::regex("\ndef step\\("), "\n@noinline\ndef step(");
  src += "\ndef main() {\n    run_steps(" + std::to_string(k) + ", true)\n}\n";
  TempDir dir("w2steps");
  auto m = compile_text(dir, src);
  EXPECT_TRUE(m) << src;
  if (!m) return {};
  passes::optimize(*m);
  std::ostringstream printed;
  ops::set_print_stream(&printed);
  if (graphs) enable_graphs(/*verbose=*/true);
  reset_launch_stats();
  {
    sem::Interpreter interp(*m);
    interp.run_entry();
    synchronize();
  }
  Printed p{printed.str(), launch_stats()};
  disable_graphs();
  ops::set_print_stream(nullptr);
  return p;
}

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  static const std::regex num(R"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), num); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

TEST(GpuGraphs, ReplayedW2StepsEqualUncapturedOnesWithFewerLaunches) {
  REQUIRE_GPU();
  setup();
  const sem::Backend saved = sem::backend();
  sem::set_backend(sem::Backend::Cuda);
  const int k = 5;
  const Printed plain = w2_steps(k, false);
  const Printed replayed = w2_steps(k, true);
  sem::set_backend(saved);
  std::printf(
      "W2, %d steps: uncaptured %lld kernel launches; with graphs %lld kernel launches, "
      "%lld graph launches, %lld captured kernels, %lld captures, %lld given up\n",
      k, static_cast<long long>(plain.stats.kernels),
      static_cast<long long>(replayed.stats.kernels),
      static_cast<long long>(replayed.stats.graph_launches),
      static_cast<long long>(replayed.stats.captured),
      static_cast<long long>(replayed.stats.captures),
      static_cast<long long>(replayed.stats.capture_failures));
  std::printf("losses uncaptured: %s", plain.text.c_str());
  std::printf("losses replayed:   %s", replayed.text.c_str());
  // The same kernels in the same order: the same bits, so the same printed losses.
  EXPECT_EQ(std::count(plain.text.begin(), plain.text.end(), '\n'), k);
  EXPECT_EQ(replayed.text, plain.text);
  // Training moves the loss: the replays used the new parameters, not the captured ones.
  const std::vector<double> losses = numbers(plain.text);
  ASSERT_FALSE(losses.empty());
  EXPECT_NE(losses.front(), losses.back());
  // The first call warms up, the second is captured and launched, the rest replay.
  EXPECT_EQ(replayed.stats.captures, 1);
  EXPECT_EQ(replayed.stats.capture_failures, 0);
  EXPECT_EQ(replayed.stats.graph_launches, k - 1);
  EXPECT_GT(replayed.stats.captured, 10);
  EXPECT_LT(replayed.stats.kernels * 2, plain.stats.kernels);
}

TEST(GpuGraphs, SwitchedOffByTheEnvironment) {
  REQUIRE_GPU();
  ::setenv("SPORA_CUDA_GRAPHS", "0", 1);
  EXPECT_FALSE(enable_graphs(false));
  ::unsetenv("SPORA_CUDA_GRAPHS");
  EXPECT_TRUE(enable_graphs(false));
  disable_graphs();
}

// ---- on a GPU: f16 / bf16 -------------------------------------------------------------------

using cpu::testing::A;
using cpu::testing::Gen;
using cpu::testing::with_defaults;

// The reference on host f16/bf16 inputs against the CUDA facet on device copies: relative
// 1e-3 (f16) / 1e-2 (bf16) with the same absolute floor; other result dtypes exactly.
::testing::AssertionResult agree_low(const std::string& name, const std::vector<Value>& in,
                                     const sem::Attrs& given = {}) {
  setup();
  const sem::Primitive& p = cpu::testing::prim(name);
  const sem::Attrs attrs = with_defaults(p, given);
  const sem::RefKernel* k = p.facet<sem::RefKernel>(sem::kCudaKernelFacet);
  std::vector<Value> dev;
  for (const Value& v : in) dev.push_back(to_device(v));
  const Value want = p.eval(in, attrs);
  const Value got = (*k)(dev, attrs);
  if (!got.is_tensor() || got.tensor.device().kind != sem::Device::Kind::cuda)
    return ::testing::AssertionFailure() << name << ": the result is not a GPU tensor";
  const Tensor g = to_host(got.tensor), &w = want.tensor;
  if (g.dtype() != w.dtype() || g.shape() != w.shape())
    return ::testing::AssertionFailure()
           << name << ": " << g.type()->str() << ", want " << w.type()->str();
  const double tol = w.dtype() == DType::f16 ? 1e-3 : (w.dtype() == DType::bf16 ? 1e-2 : 0);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double x = g.get(i), y = w.get(i);
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // NaNs; equal infinities
    if (!(std::abs(x - y) <= tol * (std::abs(y) + 1)))
      return ::testing::AssertionFailure() << name << " element " << i << ": got " << x << ", want "
                                           << y << " (" << w.type()->str() << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST(GpuLowPrecision, CastsRoundToNearestEvenLikeTheHost) {
  REQUIRE_GPU();
  Gen g(11);
  Tensor x = g.tensor(DType::f32, {4096}, -70000, 70000);
  g.specials(x, 9);
  // Halfway cases between neighbouring f16 values (1 + 2^-11: ties to even).
  for (int64_t i = 0; i < 16; ++i) x.set(i, 1.0 + (2 * i + 1) * std::ldexp(1.0, -11));
  for (DType low : {DType::f16, DType::bf16}) {
    EXPECT_TRUE(agree_low("cast", {Value(x)}, A({{"dtype", low}})));
    const Value down = cpu::testing::prim("cast").eval(
        {Value(x)}, with_defaults(cpu::testing::prim("cast"), A({{"dtype", low}})));
    for (DType to : {DType::f32, DType::f64, DType::i32, DType::boolean, DType::f16, DType::bf16})
      EXPECT_TRUE(agree_low("cast", {down}, A({{"dtype", to}})));
  }
}

TEST(GpuLowPrecision, ElementwiseReductionsMatmulSoftmaxLayerNorm) {
  REQUIRE_GPU();
  Gen g(12);
  for (DType dt : {DType::f16, DType::bf16}) {
    auto t = [&](sem::Shape s, double lo = -2, double hi = 2) {
      return Value(g.tensor(dt, std::move(s), lo, hi));
    };
    for (const char* name : {"neg", "relu", "exp", "tanh", "sigmoid", "gelu", "square"})
      EXPECT_TRUE(agree_low(name, {t({7, 33})}));
    for (const char* name : {"add", "sub", "mul", "maximum", "lt"})
      EXPECT_TRUE(agree_low(name, {t({4, 5}), t({5})}));
    EXPECT_TRUE(agree_low("div", {t({4, 5}), t({4, 5}, 0.5, 2)}));
    for (const char* name : {"sum", "mean", "max", "argmax"})
      EXPECT_TRUE(agree_low(name, {t({6, 300})}, A({{"axis", sem::Attr{int64_t{1}}}})));
    EXPECT_TRUE(agree_low("mean", {t({6, 30})}));
    EXPECT_TRUE(agree_low("matmul", {t({64, 96}, -1, 1), t({96, 48}, -1, 1)}));
    EXPECT_TRUE(agree_low("matmul", {t({3, 16, 32}, -1, 1), t({3, 32, 8}, -1, 1)}));
    EXPECT_TRUE(agree_low("matmul", {t({3, 32, 16}, -1, 1), t({3, 8, 32}, -1, 1)},
                          A({{"transpose_a", sem::Attr{true}}, {"transpose_b", sem::Attr{true}}})));
    EXPECT_TRUE(agree_low("softmax", {t({8, 100}, -5, 5)}));
    EXPECT_TRUE(agree_low("log_softmax", {t({8, 100}, -5, 5)}));
    EXPECT_TRUE(agree_low("layer_norm", {t({6, 64}), t({64}), t({64})}));
    EXPECT_TRUE(agree_low("cross_entropy",
                          {t({8, 10}, -3, 3), Value(g.tensor(DType::i32, {8}, 0, 0, 0, 9))}));
    EXPECT_TRUE(agree_low("where", {Value(g.tensor(DType::boolean, {4, 5})), t({4, 5}), t({5})}));
    EXPECT_TRUE(agree_low("transpose", {t({3, 4})}));
  }
}

}  // namespace
}  // namespace spora::cuda::testing
