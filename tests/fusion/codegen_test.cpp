// Kernel generation: the source of a W5-like chain (one vectorisable loop, vectorised erf and
// tanh), the compile cache (a second build of the same source compiles nothing, in this
// process or from disk), the fallback when the compiler fails (a warning, results unchanged),
// and NVRTC compilation of the CUDA source of every group of the workloads for sm_90.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "backends/cpu/kernels.h"
#include "semantics/ir/parser.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::fusion_testing {
namespace {

namespace fs = std::filesystem;

const char* kChain = R"(
graph @main(%x: f32[100000]) -> f32[100000] {
  %a = constant 1.5 : f32
  %b = mul(%x, %a) : f32[100000]
  %c = constant 0.25 : f32
  %d = add(%b, %c) : f32[100000]
  %e = gelu(%d) : f32[100000]
  %f = constant 0.75 : f32
  %g = mul(%e, %f) : f32[100000]
  %h = tanh(%x) : f32[100000]
  %y = add(%g, %h) : f32[100000]
  return %y
}
)";

std::unique_ptr<ir::Module> fused_chain() {
  setup();
  auto m = ir::parse_module(kChain);
  passes::fuse_operators(*m);
  ir::verify_or_throw(*m, "after fusion");
  return m;
}

// The entry of `text` (one fusion group) on random arguments (seeded from `seed`, then
// `edit`ed), node by node and fused with `o`: the group's C++ source and both runs.
struct FusedRun {
  std::string cpp;
  std::vector<sem::Value> args;
  ProgramRun want, got;
  size_t kernels = 0, launches = 0;
  std::string error;  // why the fused runtime built no kernel
};
FusedRun run_fused(const char* text, uint64_t seed, const codegen::FusedOptions& o,
                   const std::function<void(std::vector<sem::Value>&)>& edit = {}) {
  setup();
  FusedRun r;
  auto plain = ir::parse_module(text);
  for (size_t i = 0; i < plain->entry->params.size(); ++i)
    r.args.push_back(random_value(plain->entry->params[i]->type, seed + i));
  if (edit) edit(r.args);
  r.want = call(*plain, plain->entry, r.args);
  auto m = ir::parse_module(text);
  passes::fuse_operators(*m);
  const auto groups = codegen::fused_groups(*m);
  if (groups.size() != 1) {
    r.error = std::to_string(groups.size()) + " groups";
    return r;
  }
  r.cpp = codegen::emit_cpp(groups[0].plan).text;
  codegen::FusedRuntime rt(*m, o);
  r.kernels = rt.kernels();
  r.error = rt.error();
  r.got = call(*m, m->entry, r.args);
  r.launches = rt.launches();
  return r;
}

TEST(Codegen, TheW5ChainIsOneFlatVectorisedLoop) {
  auto m = fused_chain();
  const auto groups = codegen::fused_groups(*m);
  ASSERT_EQ(groups.size(), 1u);
  const passes::KernelPlan& plan = groups[0].plan;
  EXPECT_EQ(plan.rows, 1);
  EXPECT_EQ(plan.inner, 100000);
  EXPECT_TRUE(plan.splittable);
  const std::string cpp = codegen::emit_cpp(plan).text;
  EXPECT_NE(cpp.find("#pragma omp parallel for"), std::string::npos) << cpp;
  // The parallel loop only for a team; one thread runs the same loop outside any region.
  const size_t team = cpp.find("if (sp_threads > 1) {"), other = cpp.find("} else {", team);
  EXPECT_LT(team, cpp.find("#pragma omp parallel for")) << cpp;
  ASSERT_NE(other, std::string::npos) << cpp;
  EXPECT_EQ(cpp.find("#pragma omp parallel for", other), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("#pragma omp simd"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("sp_gelu(") , std::string::npos) << cpp;
  // With AVX-512: explicit vector code, tanh and gelu as vmath's table forms.
  EXPECT_NE(cpp.find("#ifdef SP_AVX512"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("spora::cpu::vm::gelu16(v2_a)"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("spora::cpu::vm::tanh16(v0_b)"), std::string::npos) << cpp;
  // Without: GCC's vectorised loop, two halves interleaved.
  EXPECT_NE(cpp.find("out0[j_a] = "), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("out0[j_b] = "), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("schedule(dynamic, 1)"), std::string::npos) << cpp;  // 13 tasks
  // The prelude maps f32 gelu/tanh to the CPU backend's vectorised math when it is embedded.
  EXPECT_NE(codegen::cpp_prelude().find("sp_gelu(float x)"), std::string::npos);
  const std::string cuda = codegen::emit_cuda(plan).text;
  EXPECT_NE(cuda.find("__global__"), std::string::npos);
  EXPECT_NE(cuda.find("gridDim.x"), std::string::npos) << "a grid-stride loop";
}

// A body with transcendental functions runs two halves of each task interleaved (emit_cpp.cpp,
// interleaved_loop): the values and the decoded coordinates are renamed per half, broadcast
// inputs keep their index expressions, an odd task length leaves one element to a plain loop,
// and tasks are handed out dynamically. The results equal the reference node by node.
TEST(Codegen, InterleavedHalvesAgreeWithTheReference) {
  setup();
  const char* text = R"(
graph @main(%x: f32[7,17143], %b: f32[17143], %c: f32[7,1]) -> (f32[7,17143], f32[7,17143]) {
  %s = add(%x, %b) : f32[7,17143]
  %t = tanh(%s) : f32[7,17143]
  %e = exp(%c) : f32[7,1]
  %m = mul(%t, %e) : f32[7,17143]
  %g = gelu(%m) : f32[7,17143]
  %k = constant 2.0 : f32
  %d = mul(%s, %k) : f32[7,17143]
  %y = sigmoid(%d) : f32[7,17143]
  %r = make_tuple(%g, %y) : (f32[7,17143], f32[7,17143])
  return %r
}
)";
  const FusedRun f = run_fused(text, 77, test_fused_options());
  const std::string& cpp = f.cpp;
  EXPECT_NE(cpp.find("schedule(dynamic"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("j_a = j0 + sp_k, j_b = j0 + sp_h + sp_k"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("sp_tanh(v"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("the odd element"), std::string::npos) << cpp;
  ASSERT_EQ(f.kernels, 1u) << f.error;
  ASSERT_EQ(f.want.error, "");
  ASSERT_EQ(f.got.error, "");
  EXPECT_EQ(f.launches, 1u);
  const ProgramRun &got = f.got, &want = f.want;
  EXPECT_EQ(compare(got.result, want.result), "");
  // The last element (the odd one of the last task) and one of each half of a task.
  for (size_t o = 0; o < 2; ++o) {
    const float* g = got.result.items()[o].tensor.data<float>();
    const float* w = want.result.items()[o].tensor.data<float>();
    for (int64_t i : {int64_t{0}, int64_t{4095}, int64_t{4096}, int64_t{7 * 17143 - 1}})
      EXPECT_NEAR(g[i], w[i], 1e-5 * std::abs(w[i]) + 1e-6) << "output " << o << " at " << i;
  }
}

// A flat f32 body of loads, + - * /, tanh and gelu runs as explicit AVX-512 code (emit_cpp.cpp,
// avx512_loop): two vectors per iteration, then one, then a masked one for the last n % 16
// elements (a task of 50 takes all three). Built for the machine (the AVX-512 code where it has
// it) and for x86-64-v3 (the loop GCC vectorises), both agree with the reference node by node.
TEST(Codegen, ExplicitAvx512LoopsAgreeWithTheReference) {
  setup();
  const char* text = R"(
graph @main(%x: f32[16434], %y: f32[16434]) -> (f32[16434], f32[16434]) {
  %a = constant 1.5 : f32
  %b = mul(%x, %a) : f32[16434]
  %c = sub(%b, %y) : f32[16434]
  %e = gelu(%c) : f32[16434]
  %one = constant 1.0 : f32
  %z = mul(%y, %y) : f32[16434]
  %w = add(%z, %one) : f32[16434]
  %q = div(%e, %w) : f32[16434]
  %h = tanh(%x) : f32[16434]
  %s = add(%q, %h) : f32[16434]
  %t = tanh(%e) : f32[16434]
  %r = make_tuple(%s, %t) : (f32[16434], f32[16434])
  return %r
}
)";
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {std::nanf(""), inf, -inf, 0.0f, -0.0f, 1e-40f, 7.0f, -7.0f, 40.0f};
  // Specials and tiny values at both ends of x (the first task and the masked tail).
  auto edit = [&](std::vector<sem::Value>& args) {
    float* px = args[0].tensor.data<float>();
    for (size_t i = 0; i < std::size(special); ++i) px[i] = px[16434 - 1 - i] = special[i];
  };
  for (const std::string march : {"-march=native", "-march=x86-64-v3"}) {
    codegen::FusedOptions o = test_fused_options();
    const size_t at = o.compile.flags.find("-march=native");
    ASSERT_NE(at, std::string::npos);
    o.compile.flags.replace(at, std::string("-march=native").size(), march);
    const FusedRun f = run_fused(text, 31, o, edit);
    const std::string& cpp = f.cpp;
    EXPECT_NE(cpp.find("spora::cpu::vm::tanh16(v4_a)"), std::string::npos) << cpp;  // tanh(gelu)
    EXPECT_NE(cpp.find("_mm512_div_ps("), std::string::npos) << cpp;
    EXPECT_NE(cpp.find("_mm512_mask_storeu_ps(out1 + j, sp_m, "), std::string::npos) << cpp;
    ASSERT_EQ(f.kernels, 1u) << f.error;
    ASSERT_EQ(f.want.error, "");
    ASSERT_EQ(f.got.error, "");
    EXPECT_EQ(f.launches, 1u);
    const ProgramRun &got = f.got, &want = f.want;
    EXPECT_EQ(compare(got.result, want.result), "") << march;
    // nan, +-inf and -0 as the reference gives them, at both ends.
    for (size_t o2 = 0; o2 < 2; ++o2) {
      const float* g = got.result.items()[o2].tensor.data<float>();
      const float* w = want.result.items()[o2].tensor.data<float>();
      for (size_t i = 0; i < std::size(special); ++i)
        for (size_t k : {i, 16434 - 1 - i}) {
          if (std::isnan(w[k])) {
            EXPECT_TRUE(std::isnan(g[k])) << march << " output " << o2 << " at " << k;
          } else {
            EXPECT_EQ(std::signbit(g[k]), std::signbit(w[k])) << march << " at " << k;
            if (std::isinf(w[k]))
              EXPECT_EQ(g[k], w[k]) << march << " at " << k;
            else
              EXPECT_NEAR(g[k], w[k], 1e-5 * std::abs(w[k]) + 1e-6) << march << " at " << k;
          }
        }
    }
  }
}

// Every primitive with a 16-lane form joins an explicit AVX-512 loop (emit_cpp.cpp,
// avx512_form): neg, abs, relu, maximum, minimum, sqrt, rsqrt, reciprocal, square beside a
// table tanh. Their lane forms give the bits of the scalar code: the kernel built for the
// machine and for x86-64-v3 (the scalar loop GCC vectorises) agree bit for bit on every output
// but tanh's (a table form there, vmath's rational in the scalar loop), specials included; all
// agree with the reference node by node. (Each output is one primitive of an input: a product
// feeding a sum may be contracted to an FMA by one build and not the other.)
TEST(Codegen, ExplicitAvx512LaneFormsGiveTheScalarBits) {
  setup();
  const char* text = R"(
graph @main(%x: f32[16434], %y: f32[16434]) -> (f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434]) {
  %t = tanh(%x) : f32[16434]
  %n = neg(%x) : f32[16434]
  %a = abs(%y) : f32[16434]
  %re = relu(%x) : f32[16434]
  %mx = maximum(%x, %y) : f32[16434]
  %mn = minimum(%x, %y) : f32[16434]
  %q = sqrt(%a) : f32[16434]
  %rs = rsqrt(%a) : f32[16434]
  %rc = reciprocal(%y) : f32[16434]
  %s = square(%x) : f32[16434]
  %r = make_tuple(%t, %n, %a, %re, %mx, %mn, %q, %rs, %rc, %s) : (f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434], f32[16434])
  return %r
}
)";
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {std::nanf(""), inf, -inf, 0.0f, -0.0f, 1e-40f, 7.0f, -7.0f, 40.0f};
  // Specials at both ends of x and y, paired differently (nan against a number and a nan).
  auto edit = [&](std::vector<sem::Value>& args) {
    float* px = args[0].tensor.data<float>();
    float* py = args[1].tensor.data<float>();
    const size_t n = std::size(special);
    for (size_t i = 0; i < n; ++i) {
      px[i] = px[16434 - 1 - i] = special[i];
      py[i] = py[16434 - 1 - i] = special[(i + 4) % n];
    }
  };
  std::vector<FusedRun> runs;
  for (const std::string march : {"-march=native", "-march=x86-64-v3"}) {
    codegen::FusedOptions o = test_fused_options();
    const size_t at = o.compile.flags.find("-march=native");
    ASSERT_NE(at, std::string::npos);
    o.compile.flags.replace(at, std::string("-march=native").size(), march);
    runs.push_back(run_fused(text, 57, o, edit));
    const FusedRun& f = runs.back();
    for (const char* form : {"spora::cpu::vm::tanh16(", "sp_neg16(", "sp_abs16(", "sp_relu16(",
                             "sp_maximum16(", "sp_minimum16(", "sp_sqrt16(", "sp_square16(",
                             "sp_rsqrt16(", "sp_reciprocal16("})
      EXPECT_NE(f.cpp.find(form), std::string::npos) << form << "\n" << f.cpp;
    ASSERT_EQ(f.kernels, 1u) << f.error;
    ASSERT_EQ(f.want.error, "");
    ASSERT_EQ(f.got.error, "");
    EXPECT_EQ(f.launches, 1u);
    EXPECT_EQ(compare(f.got.result, f.want.result), "") << march;
  }
  for (size_t k = 1; k < 10; ++k) {
    const float* v = runs[0].got.result.items()[k].tensor.data<float>();
    const float* s = runs[1].got.result.items()[k].tensor.data<float>();
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < 16434; ++i)
      if (std::memcmp(v + i, s + i, sizeof(float)) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "output " << k << " first at " << first << ": " << v[first]
                          << " against " << s[first];
  }
}

// A bias + gelu epilogue (a row per task, the bias indexed by j) is an explicit AVX-512 loop
// too: rows read and written at r * N + j. 1010 = 31 * 32 + 16 + 2 elements per row.
TEST(Codegen, ExplicitAvx512LoopsReadRowsAtTheirOffset) {
  setup();
  const char* text = R"(
graph @main(%x: f32[5,1010], %b: f32[1010]) -> (f32[5,1010], f32[5,1010]) {
  %s = add(%x, %b) : f32[5,1010]
  %g = gelu(%s) : f32[5,1010]
  %t = tanh(%x) : f32[5,1010]
  %r = make_tuple(%g, %t) : (f32[5,1010], f32[5,1010])
  return %r
}
)";
  const FusedRun f = run_fused(text, 41, test_fused_options());
  const std::string& cpp = f.cpp;
  EXPECT_NE(cpp.find("_mm512_loadu_ps(in0 + r * 1010 + j + 16)"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("_mm512_loadu_ps(in1 + j)"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("_mm512_mask_storeu_ps(out1 + r * 1010 + j, sp_m, "), std::string::npos)
      << cpp;
  ASSERT_EQ(f.kernels, 1u) << f.error;
  ASSERT_EQ(f.want.error, "");
  ASSERT_EQ(f.got.error, "");
  EXPECT_EQ(f.launches, 1u);
  EXPECT_EQ(compare(f.got.result, f.want.result), "");
}

// A kernel's totals (whole-tensor sums fused with their operands) add fixed blocks of tasks in
// order, so their bits do not depend on the team that ran them: OMP_NUM_THREADS, or the one
// thread a busy machine gets (cpu::team_size). The team sizes all give the same bits; the sums
// are checked against the node-by-node reference too.
TEST(Codegen, TotalsDoNotDependOnTheThreadCount) {
  setup();
  const char* text = R"(
graph @main(%x: f64[3000,1000], %y: f32[3000,1000]) -> (f64, f64, f32, f32) {
  %a = mul(%x, %x) : f64[3000,1000]
  %h = constant 0.5 : f64
  %b = mul(%x, %h) : f64[3000,1000]
  %c = add(%a, %b) : f64[3000,1000]
  %s = sum(%c, axis=none, keepdims=false) : f64
  %t = sum(%x, axis=none, keepdims=false) : f64
  %k = constant 0.1 : f32
  %d = mul(%y, %k) : f32[3000,1000]
  %e = exp(%d) : f32[3000,1000]
  %f = mul(%e, %y) : f32[3000,1000]
  %u = sum(%f, axis=none, keepdims=false) : f32
  %v = max(%f, axis=none, keepdims=false) : f32
  %r = make_tuple(%s, %t, %u, %v) : (f64, f64, f32, f32)
  return %r
}
)";
  auto plain = ir::parse_module(text);
  std::vector<sem::Value> args;
  for (size_t i = 0; i < plain->entry->params.size(); ++i)
    args.push_back(random_value(plain->entry->params[i]->type, 5 + i));
  const ProgramRun want = call(*plain, plain->entry, args);
  auto m = ir::parse_module(text);
  passes::fuse_operators(*m);
  const size_t groups = codegen::fused_groups(*m).size();  // f64 and f32 apart
  ASSERT_GE(groups, 1u);
  codegen::FusedRuntime rt(*m, test_fused_options());
  ASSERT_EQ(rt.kernels(), groups) << rt.error();
  cpu::set_load_adaptive(false);
  const int before = omp_get_max_threads();
  std::vector<std::string> printed;
  for (int threads : {1, 2, 3, 4, 7}) {
    omp_set_num_threads(threads);
    const ProgramRun got = call(*m, m->entry, args);
    ASSERT_EQ(got.error, "");
    std::string bits;
    for (const sem::Value& v : got.result.items()) bits += sem::format_value(v) + " ";
    printed.push_back(bits);
    EXPECT_EQ(compare(got.result, want.result, 1e-6, 1e-9), "") << threads << " threads";
  }
  omp_set_num_threads(before);
  cpu::set_load_adaptive(true);
  EXPECT_EQ(rt.launches(), 5 * groups);
  for (size_t i = 1; i < printed.size(); ++i) EXPECT_EQ(printed[i], printed[0]) << "run " << i;
}

TEST(Codegen, ASecondBuildComesFromTheCache) {
  auto m = fused_chain();
  codegen::CompileOptions o = test_compile_options();
  o.cache_dir = (fs::temp_directory_path() / ("spora_cache_test_" + std::to_string(::getpid()))).string();
  fs::remove_all(o.cache_dir);
  std::vector<codegen::KernelSource> k;
  for (const auto& g : codegen::fused_groups(*m)) k.push_back(codegen::emit_cpp(g.plan));
  const std::string unit = codegen::cpp_unit(k);
  codegen::reset_compile_stats();
  std::string error;
  {
    auto lib = codegen::compile_cpp(unit, o, &error);
    ASSERT_TRUE(lib) << error;
    EXPECT_TRUE(lib->find(k[0].name));
    EXPECT_EQ(codegen::compile_stats().compiles, 1u);
    auto again = codegen::compile_cpp(unit, o, &error);  // loaded in this process already
    EXPECT_EQ(again.get(), lib.get());
  }
  // Released: the next build loads the object from the disk cache without compiling.
  auto lib = codegen::compile_cpp(unit, o, &error);
  ASSERT_TRUE(lib) << error;
  EXPECT_EQ(codegen::compile_stats().compiles, 1u);
  EXPECT_EQ(codegen::compile_stats().cache_hits, 2u);
  EXPECT_EQ(codegen::compile_stats().failures, 0u);
  // Other flags are another object.
  codegen::CompileOptions o2 = o;
  o2.flags += " -DSPORA_OTHER_FLAGS";
  ASSERT_TRUE(codegen::compile_cpp(unit, o2, &error)) << error;
  EXPECT_EQ(codegen::compile_stats().compiles, 2u);
  fs::remove_all(o.cache_dir);
}

TEST(Codegen, ACompilerFailureFallsBackToNodeByNode) {
  auto m = fused_chain();
  std::vector<sem::Value> args{random_value(m->entry->params[0]->type, 3)};
  auto reference = ir::parse_module(kChain);
  const ProgramRun want = call(*reference, reference->entry, args);

  codegen::FusedOptions o = test_fused_options();
  o.compile.compiler = "/nonexistent/spora-cxx";
  o.compile.cache_dir = (fs::temp_directory_path() / "spora_cache_fail_test").string();
  o.warn = true;
  codegen::reset_compile_stats();
  testing::internal::CaptureStderr();
  codegen::FusedRuntime rt(*m, o);
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rt.kernels(), 0u);
  EXPECT_EQ(rt.groups(), 1u);
  EXPECT_NE(rt.error().find("/nonexistent/spora-cxx"), std::string::npos) << rt.error();
  EXPECT_NE(warning.find("spora: warning: fused kernels could not be compiled"),
            std::string::npos)
      << warning;
  EXPECT_EQ(codegen::compile_stats().failures, 1u);
  const ProgramRun got = call(*m, m->entry, args);
  EXPECT_EQ(got.error, "");
  EXPECT_EQ(compare(got.result, want.result, 0, 0), "") << "node by node: exactly the reference";
  EXPECT_EQ(rt.launches(), 0u);
  // A source the compiler rejects also falls back.
  std::string error;
  EXPECT_FALSE(codegen::compile_cpp("this is not C++", test_compile_options(), &error));
  EXPECT_NE(error.find("failed"), std::string::npos) << error;
}

TEST(Codegen, SmallGroupsAreCompiledWhereALoopRunsThem) {
  // The same 16-element group, once outside a loop and once in a for body: with the default
  // thresholds (4096 elements, 0 in loops) only the loop's group gets a kernel.
  const fs::path path = fs::temp_directory_path() / "spora_small_groups_in_loops.sp";
  {
    std::ofstream f(path);
    f << "def once(x: f32[16]) = exp(x * 0.5) + 1.0\n"
         "def looped(x: f32[16]) {\n    var y = x\n    for i in range(3) {\n"
         "        y = exp(y * 0.5) + 1.0\n    }\n    return y\n}\n"
         "def main() {\n    print(once(ones([16])))\n    print(looped(ones([16])))\n}\n";
  }
  const std::vector<sem::Value> args{random_value(sem::Type::tensor(DType::f32, {16}), 5)};
  for (const std::string entry : {"once", "looped"}) {
    std::string diags;
    auto reference = compile(path.string(), &diags, entry);
    ASSERT_TRUE(reference) << diags;
    auto m = compile(path.string(), &diags, entry);
    passes::fuse_operators(*m);
    codegen::FusedOptions o = codegen::default_fused_options();
    o.compile = test_compile_options();
    ASSERT_EQ(o.min_elements, 4096);
    ASSERT_EQ(o.min_elements_in_loops, 0);
    const size_t in_loops = codegen::graphs_run_by_loops(*m).size();
    codegen::FusedRuntime rt(*m, o);
    ASSERT_EQ(rt.groups(), 1u) << entry;
    const bool looped = entry == "looped";
    EXPECT_EQ(rt.kernels(), looped ? 1u : 0u) << entry << ": " << rt.error();
    EXPECT_EQ(in_loops > 0, looped) << entry;
    const ProgramRun want = call(*reference, reference->entry, args);
    const ProgramRun got = call(*m, m->entry, args);
    EXPECT_EQ(got.error, "");
    EXPECT_EQ(compare(got.result, want.result), "") << entry;
    EXPECT_EQ(rt.launches(), looped ? 3u : 0u) << entry;
  }
  fs::remove(path);
}

TEST(Codegen, AKernelsFailedCheckRunsTheGroupNodeByNode) {
  // A label out of range: the kernel reports it, the node-by-node run raises the error. Built
  // by the system compiler and by clang++ where there is one, at -O3 (emit_cpp.cpp: clang 14
  // lost a failed check of a one-thread dynamic schedule), on one thread and on two.
  setup();
  auto m = ir::parse_module(R"(
graph @main(%x: f32[4,3], %y: i32[4]) -> f32 {
  %a = constant 2.0 : f32
  %b = mul(%x, %a) : f32[4,3]
  %l = cross_entropy(%b, %y, reduction="mean") : f32
  return %l
}
)");
  passes::fuse_operators(*m);
  std::vector<std::string> compilers = {test_compile_options().compiler};
  if (std::system("command -v clang++ >/dev/null 2>&1") == 0) compilers.push_back("clang++");
  for (const std::string& compiler : compilers) {
    SCOPED_TRACE(compiler);
    codegen::FusedOptions o = test_fused_options();
    o.compile.compiler = compiler;
    const size_t at = o.compile.flags.find("-O2");
    ASSERT_NE(at, std::string::npos);
    o.compile.flags.replace(at, 3, "-O3");
    codegen::FusedRuntime rt(*m, o);
    ASSERT_EQ(rt.kernels(), 1u) << rt.error();
    sem::Tensor labels = sem::Tensor::zeros(DType::i32, {4});
    labels.data<int32_t>()[2] = 7;
    const ProgramRun bad =
        call(*m, m->entry, {random_value(sem::Type::tensor(DType::f32, {4, 3}), 1), labels});
    EXPECT_NE(bad.error.find("out of range"), std::string::npos) << bad.error;
    EXPECT_EQ(rt.fallbacks(), 1u);
    labels.data<int32_t>()[2] = 2;
    const ProgramRun good =
        call(*m, m->entry, {random_value(sem::Type::tensor(DType::f32, {4, 3}), 1), labels});
    EXPECT_EQ(good.error, "");
    EXPECT_EQ(rt.launches(), 1u);
  }
  // The kernel itself, called with a team of one and of two: a failure in either is reported.
  for (const std::string& compiler : compilers) {
    SCOPED_TRACE(compiler);
    codegen::CompileOptions c = test_compile_options();
    c.compiler = compiler;
    c.flags.replace(c.flags.find("-O2"), 3, "-O3");
    const auto groups = codegen::fused_groups(*m);
    ASSERT_EQ(groups.size(), 1u);
    const codegen::KernelSource src = codegen::emit_cpp(groups[0].plan);
    std::string error;
    auto lib = codegen::compile_cpp(codegen::cpp_unit({src}), c, &error);
    ASSERT_TRUE(lib) << error;
    const auto fn = lib->find(src.name);
    ASSERT_TRUE(fn);
    std::vector<float> x(12, 0.5f), loss(1);
    std::vector<int32_t> y = {0, 1, 7, 2};
    const void* in[] = {x.data(), y.data()};
    void* out[] = {loss.data()};
    for (int threads : {1, 2}) EXPECT_NE(fn(in, out, threads), 0) << threads << " threads";
    y[2] = 2;
    for (int threads : {1, 2}) EXPECT_EQ(fn(in, out, threads), 0) << threads << " threads";
  }
}

// An argument the caller passes as its last use (nobody else holds it) and the kernel reads at
// each element's own index is overwritten by the output in place, as the CPU backend's
// elementwise kernels do; one the caller still holds is left alone; a kernel with checks that
// can fail halfway (a label out of range) never writes over its arguments.
TEST(Codegen, AnArgumentPassedAsItsLastUseBecomesTheOutput) {
  setup();
  const char* relu_grad = R"(
graph @main(%x: f32[64,6,28,28], %g: f32[64,6,28,28]) -> f32[64,6,28,28] {
  %z = constant 0.0 : f32
  %p = gt(%x, %z) : bool[64,6,28,28]
  %y = where(%p, %g, %z) : f32[64,6,28,28]
  return %y
}
)";
  auto m = ir::parse_module(relu_grad);
  auto plain = ir::parse_module(relu_grad);
  passes::fuse_operators(*m);
  const auto groups = codegen::fused_groups(*m);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].plan.in_place_ok, (std::vector<bool>{true, true}));
  codegen::FusedRuntime rt(*m, test_fused_options());
  ASSERT_EQ(rt.kernels(), 1u) << rt.error();
  const auto type = sem::Type::tensor(DType::f32, {64, 6, 28, 28});
  const sem::Value x = random_value(type, 1), g = random_value(type, 2);
  const ProgramRun want = call(*plain, plain->entry, {x, g});
  ASSERT_EQ(want.error, "");
  // Held by the test as well: neither is written.
  {
    std::vector<sem::Value> args = {x, g};
    sem::Value got;
    ASSERT_TRUE(rt.run(*groups[0].graph, args, got));
    EXPECT_EQ(compare(got, want.result, 0, 0), "");
    EXPECT_NE(got.tensor.raw(), x.tensor.raw());
    EXPECT_NE(got.tensor.raw(), g.tensor.raw());
  }
  EXPECT_EQ(compare(x, random_value(type, 1), 0, 0), "");
  EXPECT_EQ(compare(g, random_value(type, 2), 0, 0), "");
  // Passed as last uses (copies nobody else holds): the first one becomes the output.
  {
    std::vector<sem::Value> args = {sem::Value(x.tensor.clone()), sem::Value(g.tensor.clone())};
    const void* first = args[0].tensor.raw();
    sem::Value got;
    ASSERT_TRUE(rt.run(*groups[0].graph, args, got));
    EXPECT_EQ(compare(got, want.result, 0, 0), "");
    EXPECT_EQ(got.tensor.raw(), first);
  }
  // A kernel with a check: a label out of range fails it, and the node-by-node run that
  // follows reads the arguments as they were.
  auto checked = ir::parse_module(R"(
graph @main(%x: f32[4,3], %y: i32[4]) -> (f32[4,3], f32) {
  %a = constant 2.0 : f32
  %b = mul(%x, %a) : f32[4,3]
  %l = cross_entropy(%b, %y, reduction="mean") : f32
  %r = make_tuple(%b, %l) : (f32[4,3], f32)
  return %r
}
)");
  passes::fuse_operators(*checked);
  const auto cgroups = codegen::fused_groups(*checked);
  ASSERT_EQ(cgroups.size(), 1u);
  ASSERT_TRUE(cgroups[0].plan.checks);
  codegen::FusedRuntime crt(*checked, test_fused_options());
  ASSERT_EQ(crt.kernels(), 1u) << crt.error();
  sem::Tensor labels = sem::Tensor::zeros(DType::i32, {4});
  labels.data<int32_t>()[2] = 7;
  const sem::Value cx = random_value(sem::Type::tensor(DType::f32, {4, 3}), 3);
  std::vector<sem::Value> args = {sem::Value(cx.tensor.clone()), sem::Value(labels)};
  sem::Value got;
  EXPECT_FALSE(crt.run(*cgroups[0].graph, args, got));
  EXPECT_EQ(compare(args[0], cx, 0, 0), "");
}

// The fused kernels embed backends/cpu/vmath.h and compile it with the production flags
// (-O3 -march=native: vectorised, FMA-contracted): gelu and tanh keep their special values
// there too (nan, +-inf, +-0, subnormals, the clamps of tanh's e^2|x| and gelu's erf) and agree
// with the Cpu backend's node-by-node kernels on a dense ramp.
TEST(Codegen, FusedGeluAndTanhKeepSpecialValues) {
  setup();
  const char* text = R"(
graph @main(%x: f32[8192]) -> (f32[8192], f32[8192]) {
  %g = gelu(%x) : f32[8192]
  %t = tanh(%x) : f32[8192]
  %r = make_tuple(%g, %t) : (f32[8192], f32[8192])
  return %r
}
)";
  const int64_t n = 8192;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<float> special = {
      nan,   inf,    -inf,  0.0f,  -0.0f,  1e-40f, -1e-40f, 1e-45f, 0.625f,  9.5f, -9.5f,
      20.0f, -20.0f, 5.65f, -5.7f, -10.0f, 1e30f,  -1e30f,  5.625f, -6.375f, 6.0f, -7.0f};
  sem::Tensor x = sem::Tensor::empty(DType::f32, {n});
  float* px = x.data<float>();
  for (int64_t i = 0; i < n; ++i)
    px[i] = i < static_cast<int64_t>(special.size()) ? special[static_cast<size_t>(i)]
                                                     : -12.0f + 24.0f * static_cast<float>(i) / n;
  auto plain = ir::parse_module(text);
  const ProgramRun want = call(*plain, plain->entry, {sem::Value(x)});
  ASSERT_EQ(want.error, "");
  auto m = ir::parse_module(text);
  passes::fuse_operators(*m);
  codegen::FusedOptions o = test_fused_options();
  o.compile.flags = codegen::default_compile_options().flags;
  codegen::FusedRuntime rt(*m, o);
  ASSERT_EQ(rt.kernels(), 1u) << rt.error();
  const ProgramRun got = call(*m, m->entry, {sem::Value(x)});
  ASSERT_EQ(got.error, "");
  EXPECT_EQ(rt.launches(), 1u);
  EXPECT_EQ(compare(got.result, want.result), "");
  const float* g = got.result.items()[0].tensor.data<float>();
  const float* t = got.result.items()[1].tensor.data<float>();
  EXPECT_TRUE(std::isnan(g[0]));
  EXPECT_EQ(g[1], inf);
  EXPECT_TRUE(std::isnan(g[2]));  // -inf * 0 in the formula, as the reference's
  EXPECT_EQ(g[3], 0.0f);
  EXPECT_TRUE(std::signbit(g[4]));
  EXPECT_EQ(g[5], 1e-40f * 0.5f);
  EXPECT_EQ(g[11], 20.0f);
  EXPECT_EQ(g[15], 0.0f);  // gelu(-10): below its clamp (gelu: N raised to 0; table: Phi = 0)
  EXPECT_EQ(g[16], 1e30f);
  // x itself from 5.625 on, 0 from -6.375 down (both forms; FMA-contracted here).
  EXPECT_EQ(g[18], 5.625f);
  EXPECT_EQ(g[19], 0.0f);
  EXPECT_EQ(g[20], 6.0f);
  EXPECT_EQ(g[21], 0.0f);
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_EQ(t[3], 0.0f);
  EXPECT_TRUE(std::signbit(t[4]));
  EXPECT_EQ(t[5], 1e-40f);
  EXPECT_EQ(t[6], -1e-40f);
  EXPECT_EQ(t[7], 1e-45f);
  EXPECT_EQ(t[9], 1.0f);
  EXPECT_EQ(t[10], -1.0f);
  EXPECT_EQ(t[16], 1.0f);
  EXPECT_EQ(t[17], -1.0f);
  // Within 1.5 ulp of tanh on the ramp (vmath_test.cpp's bound, here under FMA contraction).
  for (size_t i = special.size(); i < static_cast<size_t>(n); ++i) {
    const double w = std::tanh(static_cast<double>(px[i]));
    int e = 0;
    std::frexp(std::max(std::abs(w), 1.17549435e-38), &e);
    ASSERT_LE(std::abs(t[i] - w), 1.5 * std::ldexp(1.0, e - 24)) << "tanh(" << px[i] << ")";
  }
}

TEST(Codegen, NvrtcCompilesEveryWorkloadKernelForSm90) {
  if (!codegen::nvrtc_available()) GTEST_SKIP() << "built without the CUDA toolkit (no NVRTC)";
  std::vector<codegen::KernelSource> kernels;
  for (const char* w : {"w2_mlp_train", "w3_lenet5_train", "w4_transformer_block",
                        "w5_elementwise_chain", "w6_rnn_unrolled"}) {
    const std::string path = std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/" + w + ".sp";
    if (!fs::exists(path)) continue;
    auto m = compile(path);
    ASSERT_TRUE(m) << path;
    passes::fuse_operators(*m);
    for (const auto& g : codegen::fused_groups(*m)) kernels.push_back(codegen::emit_cuda(g.plan));
  }
  auto chain = fused_chain();
  for (const auto& g : codegen::fused_groups(*chain)) kernels.push_back(codegen::emit_cuda(g.plan));
  ASSERT_GT(kernels.size(), 5u);
  std::string log;
  EXPECT_TRUE(codegen::nvrtc_compile(codegen::cuda_unit(kernels), "sm_90", &log)) << log;
  // And a broken source is reported, not accepted.
  EXPECT_FALSE(codegen::nvrtc_compile("__global__ void k() { undefined_name; }", "sm_90", &log));
  EXPECT_NE(log.find("undefined_name"), std::string::npos) << log;
}

}  // namespace
}  // namespace spora::fusion_testing
