// optimize: the whole list to a fixed point on hand-written IR and on every program of the
// golden and conformance suites (same output before and after), --print-after dumps, the
// debug counts, and near-linear time on long chains.
#include "semantics/passes/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/pipeline.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

void optimize_all(ir::Module& m) { optimize(m); }

// For timing the passes themselves: the verifier after every pass costs more than they do on
// big modules (after_pass still verifies the result once).
void optimize_unverified(ir::Module& m) {
  PassOptions options;
  options.verify = false;
  optimize(m, options);
}

TEST(Pipeline, PassNamesReadAsTheList) {
  EXPECT_EQ(pass_names(), (std::vector<std::string>{"inline", "fold-tuples", "fold-constants",
                                                    "simplify", "hoist", "stack", "cse", "dce"}));
}

TEST(Pipeline, RunHelperShowsPrintsAndResult) {
  std::unique_ptr<ir::Module> m = parse(R"(
graph @main() -> f32 {
  %a = constant 1.5 : f32
  %p = print(%a) : ()
  return %a
}
)");
  EXPECT_EQ(run(*m), "1.5\n=> 1.5");
}

// What autodiff-like code looks like before simplification: a helper returning a (value,
// pullback state) tuple, symbolic zeros, duplicated constants, a loop carrying unused state.
const char* kProgram = R"(
graph @main() -> () {
  %x = constant [1.0, 2.0, 3.0] : f32[3]
  %w = constant [0.5, 0.5, 0.5] : f32[3]
  %fw = call @forward(%x, %w) : (f32, (f32[3], f32[3]))
  %loss = tuple_get(%fw, index=0) : f32
  %res = tuple_get(%fw, index=1) : (f32[3], f32[3])
  %one = constant 1.0 : f32
  %g = call @backward(%res, %one) : (f32[3], f32[3])
  %dw = tuple_get(%g, index=1) : f32[3]
  %p = print(%loss, %dw) : ()
  %u = make_tuple() : ()
  return %u
}
graph @forward(%x: f32[3], %w: f32[3]) -> (f32, (f32[3], f32[3])) {
  %y = mul(%x, %w) : f32[3]
  %l = sum(%y) : f32
  %res = make_tuple(%x, %w) : (f32[3], f32[3])
  %out = make_tuple(%l, %res) : (f32, (f32[3], f32[3]))
  return %out
}
graph @backward(%res: (f32[3], f32[3]), %d: f32) -> (f32[3], f32[3]) {
  %x = tuple_get(%res, index=0) : f32[3]
  %w = tuple_get(%res, index=1) : f32[3]
  %dy = broadcast_to(%d, shape=[3]) : f32[3]
  %dx = mul(%dy, %w) : f32[3]
  %dw = mul(%dy, %x) : f32[3]
  %zero = zeros(shape=[3]) : f32[3]
  %dw2 = add(%dw, %zero) : f32[3]
  %g = make_tuple(%dx, %dw2) : (f32[3], f32[3])
  return %g
}
)";

TEST(Pipeline, OptimizeLeavesStraightLineCode) {
  EXPECT_EQ(after_pass(kProgram, optimize_all), R"(graph @main() -> () {
  %0 = constant [1.0, 2.0, 3.0] : f32[3]
  %1 = constant 3.0 : f32
  %2 = print(%1, %0) : ()
  %3 = make_tuple() : ()
  return %3
}
)");
}

TEST(Pipeline, PrintAfterDumpsTheNamedPasses) {
  std::unique_ptr<ir::Module> m = parse(kProgram);
  std::ostringstream dump;
  PassOptions options;
  options.print_after = {"inline", "dce"};
  options.dump = &dump;
  optimize(*m, options);
  const std::string text = dump.str();
  EXPECT_EQ(text.rfind("# after inline (round 1)\ngraph @main() -> () {\n", 0), 0u) << text;
  EXPECT_NE(text.find("# after dce (round 1)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("# after cse"), std::string::npos) << text;
  // The last dump is the final module.
  EXPECT_EQ(text.substr(text.size() - ir::print_module(*m).size()), ir::print_module(*m));
}

TEST(Pipeline, AnUnknownPassNameIsAUserErrorListingTheNames) {
  std::unique_ptr<ir::Module> m = parse(kProgram);
  PassOptions options;
  options.print_after = {"cse", "constant-fold"};
  try {
    optimize(*m, options);
    FAIL() << "expected a UserError";
  } catch (const lang::UserError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown pass 'constant-fold' (available: inline, fold-tuples, fold-constants, "
                 "simplify, hoist, stack, cse, dce, all)");
  }
}

TEST(Pipeline, ABrokenInputIsReportedBeforeAnyPass) {
  std::unique_ptr<ir::Module> m = parse(kProgram);
  m->entry->output = nullptr;
  try {
    optimize(*m);
    FAIL() << "expected an InternalError";
  } catch (const lang::InternalError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("IR verification failed before optimize:", 0), 0u)
        << e.what();
  }
}

TEST(Pipeline, DebugCountsGoToStderr) {
  std::unique_ptr<ir::Module> m = parse(kProgram);
  setenv("SPORA_DEBUG_PASSES", "1", 1);
  ::testing::internal::CaptureStderr();
  optimize(*m);
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("SPORA_DEBUG_PASSES");
  EXPECT_NE(err.find("optimize: round 1 inline: 22 -> "), std::string::npos) << err;
  EXPECT_NE(err.find("optimize: round 1 dce: "), std::string::npos) << err;
}

TEST(Pipeline, ReachesAFixedPointAndStops) {
  std::unique_ptr<ir::Module> m = parse(kProgram);
  optimize(*m);
  const std::string once = ir::print_module(*m);
  optimize(*m);
  EXPECT_EQ(ir::print_module(*m), once);
}

// ---- scale ----------------------------------------------------------------------------------

// main(x) = a chain of n nodes: x1 = x0 * 1 + c, with a duplicate and a dead node per step.
std::string chain(int n) {
  std::string text = "graph @main(%x0: f32[4]) -> f32[4] {\n  %one = constant 1.0 : f32\n";
  for (int i = 0; i < n; ++i) {
    const std::string p = "%x" + std::to_string(i), q = "%x" + std::to_string(i + 1);
    const std::string c = "%c" + std::to_string(i), s = std::to_string(i);
    text += "  " + c + " = constant " + std::to_string(i % 7 + 1) + ".0 : f32\n";
    text += "  %m" + s + " = mul(" + p + ", %one) : f32[4]\n";
    text += "  %d" + s + " = mul(" + p + ", %one) : f32[4]\n";
    text += "  %dead" + s + " = exp(%d" + s + ") : f32[4]\n";
    text += "  " + q + " = add(%m" + s + ", " + c + ") : f32[4]\n";
  }
  return text + "  return %x" + std::to_string(n) + "\n}\n";
}

double seconds_to_optimize(int n) {
  std::unique_ptr<ir::Module> m = parse(chain(n));
  auto start = std::chrono::steady_clock::now();
  optimize_unverified(*m);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  // x_{i+1} = x_i + c_i: one add per step survives, plus the 7 distinct constants and `one`.
  EXPECT_EQ(m->entry->nodes.size(), static_cast<size_t>(n) + 7) << n;
  return took.count();
}

TEST(Pipeline, AThousandNodeChainIsFastAndScalesNearLinearly) {
  sem::Tensor x = sem::Tensor::full(DType::f32, {4}, 0.5);
  std::unique_ptr<ir::Module> m = parse(chain(250));
  after_pass(*m, optimize_all, {x});  // same value before and after
  // The fastest of three runs each, so that a busy machine's pauses do not count: 4x the
  // nodes take far less than 16x the time (quadratic would be 16x).
  double small = 1e9, big = 1e9;
  for (int round = 0; round < 3; ++round) {
    small = std::min(small, seconds_to_optimize(1000));
    big = std::min(big, seconds_to_optimize(4000));
  }
  EXPECT_LT(small, 2.0);
  EXPECT_LT(big, 10.0 * small + 0.05) << small << " s for 1000 steps, " << big << " for 4000";
}

TEST(Pipeline, AThousandInlinedCallsAndADeepCallChain) {
  // main calls @f 1000 times; @g0 -> @g1 -> ... -> @g200 is a chain of calls.
  std::string text = "graph @main(%x: f32) -> f32 {\n";
  std::string acc = "%x";
  for (int i = 0; i < 1000; ++i) {
    text += "  %c" + std::to_string(i) + " = call @f(" + acc + ") : f32\n";
    acc = "%c" + std::to_string(i);
  }
  text += "  %g = call @g0(" + acc + ") : f32\n  return %g\n}\n";
  text += "graph @f(%x: f32) -> f32 {\n  %n = neg(%x) : f32\n  return %n\n}\n";
  for (int i = 0; i < 200; ++i)
    text += "graph @g" + std::to_string(i) + "(%x: f32) -> f32 {\n  %y = call @g" +
            std::to_string(i + 1) + "(%x) : f32\n  return %y\n}\n";
  text += "graph @g200(%x: f32) -> f32 {\n  return %x\n}\n";
  std::unique_ptr<ir::Module> m = parse(text);
  auto start = std::chrono::steady_clock::now();
  after_pass(*m, optimize_unverified, {f32(2.0)});
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took.count(), 2.0);
  EXPECT_EQ(m->graphs().size(), 1u);
  // neg(neg(x)) cancels pairwise: 1000 negations are x.
  EXPECT_EQ(ir::print_module(*m), "graph @main(%x: f32) -> f32 {\n  return %x\n}\n");
}

// main calls @f n times in a chain; @f runs a loop, so every inlined call clones @f.body.
std::string loop_copies(int n) {
  std::string text = "graph @main(%x: f32) -> f32 {\n";
  std::string acc = "%x";
  for (int i = 0; i < n; ++i) {
    text += "  %c" + std::to_string(i) + " = call @f(" + acc + ") : f32\n";
    acc = "%c" + std::to_string(i);
  }
  text += "  return " + acc + "\n}\n";
  return text + R"(graph @f(%x: f32) -> f32 {
  %zero = constant 0 : i64
  %n = constant 2 : i64
  %one = constant 1 : i64
  graph @f.body(%i: i64, %acc: f32) -> (f32,) {
    %s = add(%acc, %x) : f32
    %t = make_tuple(%s) : (f32,)
    return %t
  }
  %r = for_range(%zero, %n, %one, @f.body, %x) : (f32,)
  %v = tuple_get(%r, index=0) : f32
  return %v
}
)";
}

TEST(Pipeline, AThousandCopiesOfALoopBodyGetTheirNamesInConstantTime) {
  // Each inlined call of @f clones @f.body: @f.body.1 ... @f.body.1000.
  auto optimize = [](int n) {
    std::unique_ptr<ir::Module> m = parse(loop_copies(n));
    auto start = std::chrono::steady_clock::now();
    after_pass(*m, optimize_unverified, {f32(0.001)});
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(m->graphs().size(), static_cast<size_t>(n) + 1);
    EXPECT_NE(ir::print_module(*m).find("graph @f.body." + std::to_string(n) + "("),
              std::string::npos);
    return took.count();
  };
  // A name found by trying suffixes from 1 each time would make this quadratic: 4x the copies
  // would take about 16x the time. Compared within the run, so a slow build (the sanitizers')
  // slows both sides alike.
  const double small = optimize(250), big = optimize(1000);
  EXPECT_LT(big, 10.0 * small + 0.05) << small << " s for 250 copies, " << big << " for 1000";
}

// ---- every program of the golden and conformance suites ---------------------------------------

TEST(Pipeline, EveryGoldenAndConformanceProgramPrintsTheSameAfterOptimize) {
  ops::register_all();
  int checked = 0;
  for (const char* dir : {"tests/golden", "tests/conformance"}) {
    const std::filesystem::path root = std::filesystem::path(SPORA_SOURCE_DIR) / dir;
    if (!std::filesystem::exists(root)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(root))
      if (e.path().extension() == ".sp" || e.path().extension() == ".ir") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      lang::SourceManager sources;
      lang::DiagnosticEngine diags(sources);
      sem::Compiled c;
      try {
        c = sem::compile_file(sources, diags, path.string());
      } catch (const std::exception&) {
        continue;  // not this suite's business (a front-end failure)
      }
      if (!c.module || !c.module->entry || !c.module->entry->params.empty()) continue;
      const std::string before = run(*c.module);
      if (before.find("error: ") != std::string::npos) continue;  // fails already
      SCOPED_TRACE(path.string());
      try {
        optimize(*c.module);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "optimize threw: " << e.what();
        continue;
      }
      EXPECT_EQ(run(*c.module), before);
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace spora::passes::testing
