// Parallel annotations in the language (ops/annotation.cpp, semantics/lower/annotate.cpp):
// shard(x, (2, 1)), shard(x, "[dp, -]"), shard= on primitive calls and @stage(k) lower to
// shard_hint / stage_boundary where the source put them; each user error has file:line:col, the
// line with a caret and the values; eager and graph mode compute the same as without them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "annotation_common.h"
#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "semantics/passes/pipeline.h"

namespace spora::parallel::testing {
namespace {

struct Lowered {
  std::unique_ptr<ir::Module> module;
  std::string diagnostics;  // formatted: file:line:col, the line, the caret
  std::string printed;      // what the program printed (eager: while lowering)
};

// Lowers `source` (written to a file unique to this process and test) in graph or eager mode.
Lowered lower(const std::string& source, bool eager = false) {
  setup();
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests: Suite/Param
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("spora_annot_" + std::to_string(::getpid()) + "_" + name + (eager ? "_eager" : "") + ".sp");
  std::ofstream(path) << source;
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions o;
  o.eager = eager;
  std::ostringstream out;
  ops::set_print_stream(&out);
  Lowered l;
  l.module = sem::compile_file(sources, diags, path.string(), o).module;
  ops::set_print_stream(nullptr);
  for (const lang::Diagnostic& d : diags.diagnostics()) l.diagnostics += diags.format(d);
  l.printed = out.str();
  std::filesystem::remove(path);
  return l;
}

// Runs a graph-mode module's main; what it printed.
std::string run_graph(const ir::Module& m) {
  std::ostringstream out;
  ops::set_print_stream(&out);
  sem::Interpreter(m).run_entry();
  ops::set_print_stream(nullptr);
  return out.str();
}

std::string ir_text(const ir::Module& m) { return ir::print_module(m); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(AnnotationLang, ShardLowersToAHintWithTheLayoutAsWritten) {
  const Lowered l = lower(R"(
def main() {
    let x = ones(shape=(8, 4))
    let a = shard(x, (2, 1))
    let b = shard(x, "[dp, -]")
    let c = shard(sum(x, axis=1), 4)
    print(sum(a) + sum(b) + sum(c))
}
)");
  ASSERT_TRUE(l.module) << l.diagnostics;
  const std::string ir = ir_text(*l.module);
  EXPECT_EQ(count(ir, "shard_hint("), 3) << ir;
  EXPECT_NE(ir.find("shard_hint(%"), std::string::npos) << ir;
  EXPECT_NE(ir.find("layout=\"(2, 1)\") : f32[8,4]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("layout=\"[dp, -]\") : f32[8,4]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("layout=\"(4)\") : f32[8]"), std::string::npos) << ir;
  EXPECT_EQ(run_graph(*l.module), "96.0\n");  // 32 + 32 + 8 x 4
}

TEST(AnnotationLang, ShardKeywordPinsEachInputOfAPrimitiveCall) {
  const Lowered l = lower(R"(
def main() {
    let a = ones(shape=(8, 4))
    let b = ones(shape=(4, 6))
    let c = matmul(a, b, shard=((2, 1), (1, 4)))
    let d = add(c, c, shard=(none, "[-, tp]"))
    let e = relu(d, shard=(2, 1))
    print(sum(e))
}
)");
  ASSERT_TRUE(l.module) << l.diagnostics;
  const std::string ir = ir_text(*l.module);
  EXPECT_EQ(count(ir, "shard_hint("), 4) << ir;  // 2 for matmul, 1 for add (none: free), 1 relu
  const size_t m = ir.find("matmul(");
  ASSERT_NE(m, std::string::npos) << ir;
  // Both hints come before the matmul they feed.
  EXPECT_LT(ir.find("layout=\"(2, 1)\") : f32[8,4]"), m) << ir;
  EXPECT_LT(ir.find("layout=\"(1, 4)\") : f32[4,6]"), m) << ir;
  EXPECT_NE(ir.find("layout=\"[-, tp]\") : f32[8,6]"), std::string::npos) << ir;
  EXPECT_EQ(run_graph(*l.module), "384.0\n");  // 8 x 6 elements of 4 + 4
}

const char* kStaged = R"(
model Lin(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = normal(0.0, 0.5)
    param b: f32[n_out] = normal(0.0, 0.5)
    def forward(x) = x @ w + b
}

@stage(2)
def head(h, scale) = h * scale

model Net() {
    param l1 = Lin(4, 8)
    @stage(1) param l2 = Lin(8, 3)
    def forward(x) = head(l2(relu(l1(x))), 2.0)
}

def loss(net: Net, x) = sum(net(x) * net(x))

def main() {
    let net = Net(seed=3)
    let x = normal(shape=(5, 4), seed=7)
    let (l, g) = value_and_grad(loss)(net, x)
    print(l, sum(g.l1.w), sum(g.l2.b))
}
)";

TEST(AnnotationLang, StageWrapsTheTensorsFlowingIntoTheLayer) {
  const Lowered l = lower(kStaged);
  ASSERT_TRUE(l.module) << l.diagnostics;
  const std::string ir = ir_text(*l.module);
  // l2's input and head's input (the scale 2.0 is static: not data between stages).
  EXPECT_GE(count(ir, "stage_boundary("), 2) << ir;
  EXPECT_NE(ir.find("stage=1) : f32[5,8]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("stage=2) : f32[5,3]"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("[stage]"), std::string::npos) << "@stage is not a graph flag\n" << ir;
}

TEST(AnnotationLang, TheOptimisationPassesKeepTheAnnotations) {
  // Constant inputs (folding would turn an identity of a constant into a constant) and an
  // unused duplicate (CSE, DCE).
  Lowered l = lower(R"(
@stage(1)
def f(h) = h * 2.0
def main() {
    let c = shard(ones(shape=(4, 2)), (2, 1))
    let d = shard(ones(shape=(4, 2)), (2, 1))
    print(sum(f(c)))
}
)");
  ASSERT_TRUE(l.module) << l.diagnostics;
  passes::optimize(*l.module);
  const std::string ir = ir_text(*l.module);
  EXPECT_EQ(count(ir, "shard_hint("), 1) << ir;  // the used one, once
  EXPECT_EQ(count(ir, "stage_boundary("), 1) << ir;
  EXPECT_EQ(run_graph(*l.module), "16.0\n");
}

// The same program without annotations: what both modes must print with them.
std::string without_annotations(std::string s) {
  for (const char* a : {"@stage(2)\n", "@stage(1) "}) s.erase(s.find(a), std::string(a).size());
  return s;
}

TEST(AnnotationLang, EagerAndGraphModeComputeTheSameAsWithoutAnnotations) {
  const Lowered plain = lower(without_annotations(kStaged));
  ASSERT_TRUE(plain.module) << plain.diagnostics;
  const std::string want = run_graph(*plain.module);
  ASSERT_FALSE(want.empty());
  const Lowered graph = lower(kStaged);
  ASSERT_TRUE(graph.module) << graph.diagnostics;
  EXPECT_EQ(run_graph(*graph.module), want);
  const Lowered eager = lower(kStaged, /*eager=*/true);
  ASSERT_TRUE(eager.module) << eager.diagnostics;
  EXPECT_EQ(eager.printed, want);
  // shard and shard= too.
  const char* sharded = R"(
def f(a, b) = sum(relu(matmul(shard(a, (2, 1)), b, shard=((1, 1), "[-, m0]"))))
def main() {
    let a = normal(shape=(4, 3), seed=1)
    let b = normal(shape=(3, 2), seed=2)
    let (v, g) = value_and_grad(f)(a, b)
    print(v, sum(g))
}
)";
  const Lowered s_graph = lower(sharded);
  const Lowered s_eager = lower(sharded, true);
  ASSERT_TRUE(s_graph.module && s_eager.module) << s_graph.diagnostics << s_eager.diagnostics;
  const Lowered s_plain = lower(R"(
def f(a, b) = sum(relu(matmul(a, b)))
def main() {
    let a = normal(shape=(4, 3), seed=1)
    let b = normal(shape=(3, 2), seed=2)
    let (v, g) = value_and_grad(f)(a, b)
    print(v, sum(g))
}
)");
  ASSERT_TRUE(s_plain.module) << s_plain.diagnostics;
  const std::string s_want = run_graph(*s_plain.module);
  EXPECT_EQ(run_graph(*s_graph.module), s_want);
  EXPECT_EQ(s_eager.printed, s_want);
}

// Each user error: the message with the values, at file:line:col, with the line and a caret.
struct ErrorCase {
  const char* name;
  const char* body;     // the body of main, after `let x = ones(shape=(8, 4))`
  const char* message;  // contained in the diagnostic
  const char* where;    // ":line:col: error: " (the file name is per test)
  const char* caret;    // the caret line, e.g. "                 ^~~~~~"
};

class AnnotationErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(AnnotationErrors, SayWhereAndWhat) {
  const ErrorCase& c = GetParam();
  const Lowered l =
      lower(std::string("def main() {\n    let x = ones(shape=(8, 4))\n") + c.body + "\n}\n");
  EXPECT_FALSE(l.module);
  EXPECT_NE(l.diagnostics.find(c.message), std::string::npos) << l.diagnostics;
  EXPECT_NE(l.diagnostics.find(std::string(c.where) + "error: " + c.message), std::string::npos)
      << l.diagnostics;
  EXPECT_NE(l.diagnostics.find(std::string("\n") + c.caret + "\n"), std::string::npos)
      << l.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(
    Lowering, AnnotationErrors,
    ::testing::Values(
        ErrorCase{"RankOfPartitionNumbers", "    print(shard(x, (2, 1, 1)))",
                  "shard: layout (2, 1, 1) has 3 entries but the tensor f32[8,4] has rank 2",
                  ".sp:3:20: ", "                   ^~~~~~~~~"},
        ErrorCase{"RankOfTensorMap", "    print(shard(x, \"[dp]\"))",
                  "shard: layout [dp] has 1 entry but the tensor f32[8,4] has rank 2",
                  ".sp:3:20: ", "                   ^~~~~~"},
        ErrorCase{"NotALayout", "    print(shard(x, \"dp\"))",
                  "shard: layout \"dp\" is neither partition numbers like \"(2, 1)\" nor a tensor "
                  "map like \"[dp, -]\"",
                  ".sp:3:20: ", "                   ^~~~"},
        ErrorCase{"ZeroPieces", "    print(shard(x, (0, 1)))",
                  "shard: partition numbers must be positive, got (0, 1)",
                  ".sp:3:20: ", "                   ^~~~~~"},
        ErrorCase{"ShardOfAStatic", "    print(shard(3, (1)))",
                  "shard needs a run-time tensor, not the integer 3",
                  ".sp:3:17: ", "                ^"},
        ErrorCase{"KeywordCount", "    print(matmul(x, x, shard=((2, 1), (1, 2), (1, 1))))",
                  "shard= gives 3 layouts but matmul has 2 tensor inputs",
                  ".sp:3:30: ", "                             ^~~~~~~~~~~~~~~~~~~~~~~~"},
        ErrorCase{"KeywordRank", "    print(relu(x, shard=(2, 1, 1)))",
                  "shard= of relu (input 1): layout (2, 1, 1) has 3 entries but the tensor "
                  "f32[8,4] has rank 2",
                  ".sp:3:25: ", "                        ^~~~~~~~~"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(AnnotationLang, StageNeedsANumberAndALayer) {
  Lowered l = lower(R"(
@stage
def f(x) = x + 1.0
def main() { print(f(ones(shape=(2,)))) }
)");
  EXPECT_FALSE(l.module);
  EXPECT_NE(l.diagnostics.find(":2:1: error: @stage takes the stage number: @stage(1)"),
            std::string::npos)
      << l.diagnostics;
  l = lower(R"(
model M() {
    @stage(1) param w: f32[2] = zeros()
    def forward(x) = x + w
}
def main() { print(M()(ones(shape=(2,)))) }
)");
  EXPECT_FALSE(l.module);
  EXPECT_NE(l.diagnostics.find("error: @stage applies to a sub-model field (a layer) or a def; "
                               "'w' is f32[2]"),
            std::string::npos)
      << l.diagnostics;
  l = lower(R"(
@stage(-1)
def f(x) = x + 1.0
def main() { print(f(ones(shape=(2,)))) }
)");
  EXPECT_FALSE(l.module);
  EXPECT_NE(l.diagnostics.find("the stage of @stage must be a compile-time integer of 0 or more, "
                               "not the integer -1"),
            std::string::npos)
      << l.diagnostics;
}

}  // namespace
}  // namespace spora::parallel::testing
