// A primitive added in one block (ops/unary_math.h), here by the test alone: softsign_t(x) =
// x / (1 + |x|). With no other edit the language calls it, reverse and forward AD differentiate
// it (against central finite differences), fusion puts it in a group whose generated CPU code
// defines it from its loop_expr facet (against the reference interpreter), and the cost model
// and the partitioner price and shard it. Its amp class (f32 under autocast) is on the row.
// A composite row (rms_scale_t, a row reduction) fuses through its decompose facet alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backends/codegen/codegen.h"
#include "ops/kernel_util.h"
#include "ops/unary_math.h"
#include "parallel/sharding/sharding.h"
#include "semantics/cost.h"
#include "semantics/passes/decompose.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/passes/fusion_plan.h"
#include "tests/fusion/fusion_testing.h"

namespace spora {
namespace {

namespace fs = std::filesystem;
using namespace fusion_testing;

sem::Tensor f64_vector(const std::vector<double>& v) {
  sem::Tensor t = sem::Tensor::empty(DType::f64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<double>());
  return t;
}

constexpr const char* kName = "softsign_t";

// The row, added once per process after the built-in ones.
const sem::Primitive& softsign() {
  static const sem::Primitive& p = []() -> const sem::Primitive& {
    setup();
    return ops::add_unary_math(sem::Registry::instance(),
                               {.name = kName,
                                .doc = "x / (1 + |x|) (a test's primitive)",
                                .f = [](double x) { return x / (1 + std::fabs(x)); },
                                // g / (1 + |x|)^2 = g * (1 - |y|)^2
                                .deriv =
                                    [](autodiff::Emitter& e, ir::Node*, ir::Node* y, ir::Node* g) {
                                      ir::Node* d = e.sub(e.scalar_like(1.0, y), e.op("abs", {y}));
                                      return e.mul(g, e.mul(d, d));
                                    },
                                .loop = {1, "a / (1.0f + fabsf(a))", "a / (1.0 + fabs(a))"},
                                .flops = 3,
                                .amp = sem::AmpClass::F32});
  }();
  return p;
}

// rms_scale_t(x) = x / sqrt(mean(x^2 over the last axis) + 1e-6): a composite row with a
// reference kernel (f32) and a decompose facet, and no loop form or kernel of its own.
const sem::Primitive& rms_scale() {
  static const sem::Primitive& p = []() -> const sem::Primitive& {
    setup();
    sem::Primitive row;
    row.name = "rms_scale_t";
    row.family = "nn";
    row.doc = "x / sqrt(mean(x^2, axis=-1) + 1e-6) (a test's primitive)";
    row.params = {ops::input("x")};
    row.differentiable = false;
    row.infer = [](const std::vector<sem::TypeP>& in, const sem::Attrs&) { return in.at(0); };
    row.eval = [](const std::vector<sem::Value>& in, const sem::Attrs&) {
      const sem::Tensor& x = in.at(0).tensor;
      sem::Tensor out = sem::Tensor::empty(x.dtype(), x.shape());
      const int64_t cols = x.shape().back(), rows = x.numel() / cols;
      for (int64_t r = 0; r < rows; ++r) {
        const float* a = x.data<float>() + r * cols;
        double ms = 0;
        for (int64_t c = 0; c < cols; ++c) ms += static_cast<double>(a[c]) * a[c];
        const double scale = 1 / std::sqrt(ms / static_cast<double>(cols) + 1e-6);
        for (int64_t c = 0; c < cols; ++c)
          out.data<float>()[r * cols + c] = static_cast<float>(a[c] * scale);
      }
      return sem::Value(out);
    };
    row.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
    row.facets[passes::kDecomposeFacet] = passes::DecomposeFn(
        [](passes::LoopBuilder& b, const ir::Node&, const passes::LoopValues& in) {
          passes::LoopValue* x = in.at(0);
          const int64_t last = static_cast<int64_t>(b.shape(x).size()) - 1;
          passes::LoopValue* ms = b.reduce(kir::ReduceOp::Sum, true, b.binary("mul", x, x), {last});
          passes::LoopValue* eps = b.literal(1e-6, b.dtype(x));
          return b.binary("mul", x, b.unary("rsqrt", b.binary("add", ms, eps)));
        });
    return sem::Registry::instance().add(std::move(row));
  }();
  return p;
}

// `program` written to a file of its own (ctest runs the cases side by side).
struct ProgramFile {
  fs::path path;
  ProgramFile(const std::string& program, const std::string& main) {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    path = fs::temp_directory_path() / (std::string("spora_new_primitive_") + t->name() + "_" +
                                        std::to_string(::getpid()) + ".sp");
    std::ofstream(path) << program << "def main() {\n" << main << "}\n";
  }
  ~ProgramFile() { fs::remove(path); }
};

TEST(NewPrimitive, TheBlockGivesEveryFacet) {
  const sem::Primitive& p = softsign();
  for (const char* facet : {"vjp", "jvp", "fusion", kir::kLoopFormFacet, codegen::kLoopExprFacet,
                            sem::kCostFacet, parallel::kShardingFacet, sem::kAmpFacet})
    EXPECT_TRUE(p.facets.count(facet)) << facet;
  EXPECT_NE(kir::unary_fn(kName), nullptr);
  EXPECT_EQ(kir::binary_fn(kName), nullptr);
}

// d/dx sum(softsign(x) * x) by grad (reverse) and jacfwd (forward), against central
// differences of the same function in f64.
TEST(NewPrimitive, DerivativesMatchFiniteDifferences) {
  softsign();
  ProgramFile file(std::string("def g(x: f64[6]) = sum(") + kName +
                       "(x) * x)\n"
                       "def dg(x: f64[6]) = grad(g)(x)\n"
                       "def fg(x: f64[6]) = jacfwd(g)(x)\n",
                   "    let x = cast(ones([6]), f64)\n    print(g(x), dg(x), fg(x))\n");
  std::string diags;
  auto g = compile(file.path.string(), &diags, "g");
  ASSERT_TRUE(g) << diags;
  const std::vector<double> x0{-2.5, -0.7, -0.1, 0.2, 1.3, 3.0};
  const sem::Tensor x = f64_vector(x0);
  std::vector<double> fd(6);
  const double h = 1e-6;
  for (size_t i = 0; i < 6; ++i) {
    std::vector<double> up = x0, down = x0;
    up[i] += h, down[i] -= h;
    const ProgramRun a = call(*g, g->entry, {sem::Value(f64_vector(up))});
    const ProgramRun b = call(*g, g->entry, {sem::Value(f64_vector(down))});
    ASSERT_EQ(a.error + b.error, "");
    fd[i] = (a.result.tensor.item() - b.result.tensor.item()) / (2 * h);
  }
  for (const char* entry : {"dg", "fg"}) {
    auto m = compile(file.path.string(), &diags, entry);
    ASSERT_TRUE(m) << diags;
    const ProgramRun run = call(*m, m->entry, {sem::Value(x)});
    ASSERT_EQ(run.error, "") << entry;
    ASSERT_TRUE(run.result.is_tensor()) << entry;
    ASSERT_EQ(run.result.tensor.numel(), 6) << entry;
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_NEAR(run.result.tensor.data<double>()[i], fd[static_cast<size_t>(i)], 1e-7)
          << entry << " element " << i;
  }
}

// f in `file` (x: f32[64, 32]) fused: one group, planned into one kernel that the generated
// C++ computes like the nodes (check_groups) and like the reference interpreter on random x.
// Returns the kernel's C++ text ("" after a failure).
std::string fuse_one_kernel_and_check(const ProgramFile& file, uint64_t seed) {
  std::string diags;
  auto m = compile(file.path.string(), &diags, "f");
  EXPECT_TRUE(m) << diags;
  if (!m) return "";
  passes::fuse_operators(*m);
  const ir::Graph* group = nullptr;
  size_t groups = 0;
  for (const auto& g : m->graphs())
    if (passes::is_fused_graph(*g)) group = g.get(), ++groups;
  EXPECT_EQ(groups, 1u);
  if (groups != 1) return "";
  std::string why;
  auto plan = passes::plan_group(passes::group_of(*group), &why);
  EXPECT_TRUE(plan) << why;
  if (!plan) return "";
  codegen::FusedRuntime rt(*m, test_fused_options());
  EXPECT_EQ(rt.kernels(), 1u) << rt.error();
  size_t checked = 0;
  EXPECT_EQ(check_groups(*m, rt, &checked), "");
  EXPECT_EQ(checked, 1u);
  auto reference = compile(file.path.string(), nullptr, "f");
  EXPECT_TRUE(reference);
  if (!reference) return "";
  const std::vector<sem::Value> args{random_value(sem::Type::tensor(DType::f32, {64, 32}), seed)};
  const ProgramRun want = call(*reference, reference->entry, args);
  EXPECT_EQ(want.error, "");
  sem::Value got;
  EXPECT_TRUE(rt.run(*group, args, got));
  EXPECT_EQ(compare(got, want.result), "");
  return codegen::emit_cpp(*plan).text;
}

// In a fusion group with built-in primitives: the group's generated C++ defines sp_softsign_t
// from the facet, compiles, and computes what the nodes compute.
TEST(NewPrimitive, FusesIntoGeneratedCpuCode) {
  softsign();
  ProgramFile file(std::string("def f(x: f32[64, 32]) = tanh(") + kName + "(x) * 2.0 + 1.0)\n",
                   "    print(sum(f(ones([64, 32]))))\n");
  const std::string text = fuse_one_kernel_and_check(file, 5);
  EXPECT_NE(text.find("sp_softsign_t(float a) { return a / (1.0f + fabsf(a)); }"),
            std::string::npos)
      << text;
}

// The cost model prices it (3 flops an element, its input and output bytes) and the
// partitioner keeps a split dimension split.
TEST(NewPrimitive, HasACostAndAShardingRule) {
  const sem::Primitive& p = softsign();
  const sem::TypeP t = sem::Type::tensor(DType::f32, {64, 32});
  const sem::OpCost c = (*p.facet<sem::CostRule>(sem::kCostFacet))({t}, t, {});
  EXPECT_EQ(c.flops, 3.0 * 64 * 32);
  EXPECT_EQ(c.bytes, 2.0 * 64 * 32 * 4);
  const parallel::ShardingRule* rule = parallel::sharding_rule(p);
  ASSERT_NE(rule, nullptr);
  parallel::Mesh mesh;
  mesh.shape = {2, 2};
  for (int dim = 0; dim < 2; ++dim) {
    const parallel::Layout split = parallel::Layout::split(2, dim, 1);
    const std::optional<parallel::Layout> out = rule->forward({split}, {t}, t, {}, mesh);
    ASSERT_TRUE(out) << "dim " << dim;
    EXPECT_EQ(*out, split) << "dim " << dim;
  }
  // Every strategy offered runs without communication: the output as the input.
  const std::vector<parallel::OpStrategy> all = rule->enumerate({t}, t, {}, mesh);
  EXPECT_GT(all.size(), 1u);
  for (const parallel::OpStrategy& s : all) EXPECT_EQ(s.inputs.at(0), s.output) << s.name;
}

// The composite row joins a group with built-in elementwise primitives before and after it; the
// planner writes it from its decompose facet (a keepdims mean, then a broadcast multiply) and
// the one generated kernel computes what the nodes compute.
TEST(NewPrimitive, CompositeRowFusesThroughItsDecomposition) {
  rms_scale();
  ProgramFile file("def f(x: f32[64, 32]) = rms_scale_t(tanh(x)) * 2.0 + 1.0\n",
                   "    print(sum(f(ones([64, 32]))))\n");
  EXPECT_NE(fuse_one_kernel_and_check(file, 7), "");
}

// Autocast reads the class from the row: f32 at O1 (even on bf16 inputs), the low dtype at O2;
// a row without the facet (tanh) promotes only mixed inputs.
TEST(NewPrimitive, AutocastReadsItsAmpClass) {
  const sem::Primitive& p = softsign();
  const sem::AmpPolicy o1{sem::AmpLevel::O1, DType::bf16};
  const sem::AmpPolicy o2{sem::AmpLevel::O2, DType::bf16};
  EXPECT_EQ(sem::amp_compute_dtype(o1, p, {DType::bf16}), DType::f32);
  EXPECT_EQ(sem::amp_compute_dtype(o2, p, {DType::f32}), DType::bf16);
  const sem::Primitive& tanh = *sem::Registry::instance().find("tanh");
  EXPECT_EQ(sem::amp_class(tanh), sem::AmpClass::Promote);
  EXPECT_EQ(sem::amp_compute_dtype(o1, tanh, {DType::bf16}), std::nullopt);
  EXPECT_EQ(sem::amp_compute_dtype(o1, tanh, {DType::bf16, DType::f32}), DType::f32);
  EXPECT_EQ(sem::amp_class(*sem::Registry::instance().find("matmul")), sem::AmpClass::Low);
  EXPECT_EQ(sem::amp_class(*sem::Registry::instance().find("cross_entropy")),
            sem::AmpClass::F32Loss);
}

}  // namespace
}  // namespace spora
