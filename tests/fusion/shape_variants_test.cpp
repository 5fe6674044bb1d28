// Kernels for other argument shapes (fused_runtime.h): a group called with shapes other than
// its types runs node by node on the first call, then with a kernel compiled for those shapes,
// and computes what the nodes compute.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "semantics/passes/fusion.h"
#include "tests/fusion/fusion_testing.h"

namespace spora {
namespace {

namespace fs = std::filesystem;
using namespace fusion_testing;

// `program` (which defines f) and a main calling f on `main_arg`, written to a temporary file;
// f's module fused, with its runtime and its one fusion group.
struct FusedF {
  fs::path path;
  std::unique_ptr<ir::Module> module;
  std::unique_ptr<codegen::FusedRuntime> rt;
  const ir::Graph* group = nullptr;

  explicit FusedF(const std::string& program, const std::string& main_arg) {
    // One file per test and process: ctest runs the cases side by side.
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(test->test_suite_name()) + "." + test->name();
    std::replace(name.begin(), name.end(), '/', '_');
    path = fs::temp_directory_path() /
           ("spora_shape_variants_" + name + "_" + std::to_string(::getpid()) + ".sp");
    std::ofstream(path) << program << "def main() {\n    print(sum(f(" << main_arg << ")))\n}\n";
    std::string diags;
    module = compile(path.string(), &diags, "f");
    EXPECT_TRUE(module) << diags;
    if (!module) return;
    passes::fuse_operators(*module);
    rt = std::make_unique<codegen::FusedRuntime>(*module, test_fused_options());
    for (const auto& g : module->graphs())
      if (passes::is_fused_graph(*g)) {
        EXPECT_EQ(group, nullptr) << "more than one fused graph";
        group = g.get();
      }
  }
  ~FusedF() { fs::remove(path); }
};

struct Case {
  std::string name;     // the test's name
  std::string program;  // defines f(x: f32[64, 32]): one fusion group
  sem::Shape other;     // the shape it is then called with
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ShapeVariants : public ::testing::TestWithParam<Case> {};

TEST_P(ShapeVariants, RunNodeByNodeOnceThenCompiledForTheirShapes) {
  const Case& c = GetParam();
  FusedF f(c.program, "ones([64, 32])");
  ASSERT_NE(f.group, nullptr);
  codegen::FusedRuntime& rt = *f.rt;
  const ir::Graph* group = f.group;
  ASSERT_EQ(rt.kernels(), 1u) << rt.error();
  auto reference = compile(f.path.string(), nullptr, "f");
  ASSERT_TRUE(reference);

  const std::vector<sem::Value> args{random_value(sem::Type::tensor(DType::f32, c.other), 11)};
  const ProgramRun want = call(*reference, reference->entry, args);
  ASSERT_EQ(want.error, "");
  sem::Value got;
  EXPECT_FALSE(rt.run(*group, args, got)) << "the first call with new shapes runs node by node";
  EXPECT_EQ(rt.variants(), 0u);
  for (int call = 0; call < 2; ++call) {
    // A copy the test keeps: held twice, the argument is not overwritten in place.
    const std::vector<sem::Value> held = args;
    ASSERT_TRUE(rt.run(*group, held, got)) << "call " << call + 2;
    EXPECT_EQ(rt.variants(), 1u);
    EXPECT_EQ(compare(got, want.result), "");
    ASSERT_TRUE(got.is_tensor());
    EXPECT_EQ(got.tensor.shape(), want.result.tensor.shape());
  }
  // The group's own shapes still run the module's kernel.
  const std::vector<sem::Value> own{random_value(sem::Type::tensor(DType::f32, {64, 32}), 12)};
  const ProgramRun own_want = call(*reference, reference->entry, own);
  ASSERT_TRUE(rt.run(*group, own, got));
  EXPECT_EQ(compare(got, own_want.result), "");
  EXPECT_EQ(rt.variants(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Groups, ShapeVariants,
    ::testing::Values(
        // elementwise, another row count (a batch's shard)
        Case{"elementwise", "def f(x: f32[64, 32]) = exp(x * 0.5) + tanh(x)\n", {16, 32}},
        // a row reduction (softmax along the rows), fewer rows
        Case{"row_softmax", "def f(x: f32[64, 32]) = softmax(x * 2.0, axis=1) + 1.0\n", {40, 32}},
        // a broadcast of the row sums, another row count
        Case{"row_sums",
             "def f(x: f32[64, 32]) = x - sum(x, axis=1, keepdims=true) * 0.25\n",
             {8, 32}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ShapeVariantsRefused, ShapesTheRulesRejectRunNodeByNode) {
  // A reshape's target shape is an attribute: other input shapes do not retype it, so the
  // group keeps running node by node with them (and the interpreter raises what is wrong).
  FusedF f("def f(x: f32[64, 32]) = reshape(exp(x) * 2.0, [32, 64]) + 1.0\n", "ones([64, 32])");
  ASSERT_NE(f.group, nullptr);
  codegen::FusedRuntime& rt = *f.rt;
  const ir::Graph* group = f.group;
  const std::vector<sem::Value> args{random_value(sem::Type::tensor(DType::f32, {16, 32}), 3)};
  sem::Value got;
  for (int call = 0; call < 3; ++call) EXPECT_FALSE(rt.run(*group, args, got)) << call;
  EXPECT_EQ(rt.variants(), 0u);
}

}  // namespace
}  // namespace spora
