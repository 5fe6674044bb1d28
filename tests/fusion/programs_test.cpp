// Fused programs compute what unfused ones compute: every conformance program and workload
// run whole (printed numbers and result, relative 1e-5), the workloads' step graphs called on
// their inputs (every gradient compared), and every fusion group of the examples (which train
// on the real dataset for minutes) run on random inputs against its nodes one by one.
#include <gtest/gtest.h>

#include <filesystem>

#include "semantics/interpreter.h"
#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::fusion_testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> programs(const std::string& dir) {
  std::vector<std::string> out;
  const fs::path root = fs::path(SPORA_SOURCE_DIR) / dir;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().extension() == ".sp") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs `path` unfused, then fused with compiled kernels; both must agree. Returns the module.
std::unique_ptr<ir::Module> check_program(const std::string& path, size_t* groups) {
  std::string diags;
  auto unfused = compile(path, &diags);
  EXPECT_TRUE(unfused) << path << ":\n" << diags;
  if (!unfused) return nullptr;
  const ProgramRun want = run_entry(*unfused);

  auto fused = compile(path);
  const passes::FusionStats stats = passes::fuse_operators(*fused);
  ir::verify_or_throw(*fused, "after fusion");
  // The fused module prints and parses back.
  const std::string text = ir::print_module(*fused);
  EXPECT_EQ(ir::print_module(*ir::parse_module(text)), text) << path;
  codegen::FusedRuntime rt(*fused, test_fused_options());
  EXPECT_EQ(rt.kernels(), rt.groups()) << path << ": " << rt.error();
  const ProgramRun got = run_entry(*fused);
  EXPECT_EQ(got.error, want.error) << path;
  EXPECT_EQ(compare_printed(got.printed, want.printed), "") << path;
  EXPECT_EQ(compare(got.result, want.result), "") << path;
  EXPECT_EQ(rt.fallbacks(), 0u) << path;
  if (groups) *groups = stats.groups;
  return fused;
}

TEST(FusedPrograms, ConformanceProgramsAgree) {
  size_t total = 0;
  const auto list = programs("tests/conformance");
  ASSERT_GE(list.size(), 10u);
  for (const std::string& p : list) {
    size_t groups = 0;
    check_program(p, &groups);
    total += groups;
  }
  EXPECT_GT(total, 0u) << "the conformance programs should have fusion groups";
}

// The step graph of each workload (forward and backward: what the benchmarks time), fused,
// on main's inputs: every output (loss, gradients, updated parameters) agrees.
// On the CPU backend both sides run f32 kernels that round differently from the reference
// (which computes nn ops in f64): gradients summing many products also get a floor of 1e-5 of
// their largest element.
void check_steps(sem::Backend backend, double scale_rel, const std::string& skip = "") {
  setup();
  sem::set_backend(backend);
  const auto list = programs("benchmarks/workloads");
  for (const std::string& p : list) {
    if (!skip.empty() && p.find(skip) != std::string::npos) continue;
    std::vector<sem::Value> args;
    auto inputs = [&](ir::Module& m) {
      const ProgramRun r = run_entry(m);
      ASSERT_EQ(r.result.kind, sem::Value::Kind::Tuple) << p << r.error;
      args = r.result.items();
    };
    std::string diags;
    auto unfused = compile(p, &diags, "step", inputs);
    ASSERT_TRUE(unfused) << p << diags;
    const ProgramRun want = call(*unfused, unfused->entry, args);
    auto fused = compile(p, &diags, "step");
    ASSERT_TRUE(fused) << p << diags;
    passes::fuse_operators(*fused);
    ir::verify_or_throw(*fused, "after fusion");
    codegen::FusedRuntime rt(*fused, test_fused_options());
    EXPECT_EQ(rt.kernels(), rt.groups()) << p << ": " << rt.error();
    const ProgramRun got = call(*fused, fused->entry, args);
    EXPECT_EQ(got.error, want.error) << p;
    EXPECT_EQ(compare(got.result, want.result, 1e-5, 1e-6, scale_rel), "") << p;
    EXPECT_GT(rt.launches(), 0u) << p << ": no fused kernel ran";
    EXPECT_EQ(rt.fallbacks(), 0u) << p;
  }
  sem::set_backend(sem::Backend::Reference);
}

TEST(FusedPrograms, WorkloadsAgreeWhole) {
  const auto list = programs("benchmarks/workloads");
  if (list.empty()) GTEST_SKIP() << "no workloads";
  for (const std::string& p : list) check_program(p, nullptr);
}

TEST(FusedPrograms, WorkloadStepGroupsAgreeOnRandomInputs) {
  for (const std::string& p : programs("benchmarks/workloads")) {
    std::string diags;
    auto m = compile(p, &diags, "step");
    ASSERT_TRUE(m) << p << diags;
    passes::fuse_operators(*m);
    codegen::FusedRuntime rt(*m, test_fused_options());
    size_t checked = 0;
    EXPECT_EQ(check_groups(*m, rt, &checked), "") << p;
    EXPECT_EQ(checked, rt.groups()) << p;
  }
}

// W4's step on the reference kernels takes most of this binary's time: its groups are checked
// against the reference kernels one by one above, and its whole step on the CPU backend below.
TEST(FusedPrograms, WorkloadStepsAgree) { check_steps(sem::Backend::Reference, 0, "w4_"); }

TEST(FusedPrograms, WorkloadStepsAgreeOnTheCpuBackend) { check_steps(sem::Backend::Cpu, 1e-5); }

TEST(FusedPrograms, ExampleGroupsAgreeOnRandomInputs) {
  const auto list = programs("examples");
  if (list.empty()) GTEST_SKIP() << "no examples";
  for (const std::string& p : list) {
    std::string diags;
    auto m = compile(p, &diags);
    ASSERT_TRUE(m) << p << ":\n" << diags;
    passes::fuse_operators(*m);
    ir::verify_or_throw(*m, "after fusion");
    codegen::FusedRuntime rt(*m, test_fused_options());
    EXPECT_GT(rt.groups(), 0u) << p;
    EXPECT_EQ(rt.kernels(), rt.groups()) << p << ": " << rt.error();
    size_t checked = 0;
    EXPECT_EQ(check_groups(*m, rt, &checked), "") << p;
    EXPECT_EQ(checked, rt.groups()) << p;
  }
}

}  // namespace
}  // namespace spora::fusion_testing

