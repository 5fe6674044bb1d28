// Mixed precision through the whole pipeline (semantics/amp.h, lang/std/amp.sp): set_amp's
// casts are exactly the casts a user would write by hand, in graph and in eager mode; the
// gradients of f32 parameters come back f32 through them; cast's derivative casts the
// cotangent back; the std.amp loss scaler skips non-finite steps, halves and doubles its scale
// like PyTorch's GradScaler, and leaves the parameters of the unscaled run unchanged.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "grad_check_util.h"
#include "semantics/ir/printer.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"

namespace spora::autodiff::testing {
namespace {

struct Output {
  std::vector<std::vector<double>> lines;  // the numbers of each printed line
  std::string text;                        // the printed text
  std::string ir;                          // the typed module
  std::string errors;
};

Output run_program(const std::string& text, bool eager, std::optional<sem::AmpPolicy> amp = {}) {
  setup();
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = ::testing::TempDir() + "spora_amp_" + std::to_string(::getpid()) + "_" +
                     (info ? info->name() : "none") + ".sp";
  std::ofstream(path) << text;
  std::ostringstream printed;
  ops::set_print_stream(&printed);
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions options;
  options.eager = eager;
  options.amp = amp;
  Output run;
  sem::Compiled c = sem::compile_file(sources, diags, path, options);
  for (const auto& d : diags.diagnostics()) run.errors += d.message + "\n";
  if (c.module) run.ir = ir::print_module(*c.module);  // the typed module, before the passes
  if (c.module && !eager) {
    passes::optimize(*c.module);  // as spora run does (the simplifier folds x * 0 to 0)
    sem::Interpreter(*c.module).run_entry();
  }
  ops::set_print_stream(nullptr);
  std::remove(path.c_str());
  run.text = printed.str();
  std::istringstream in(run.text);
  const std::regex number(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|nan|inf)");
  for (std::string line; std::getline(in, line);) {
    run.lines.emplace_back();
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it)
      run.lines.back().push_back(std::stod(it->str()));
  }
  return run;
}

// The network of the AMP tests; `forward` is given.
std::string program(const std::string& amp_line, const std::string& forward) {
  return R"(
model Net() {
    param w1: f32[6, 8] = normal(0.0, 0.5)
    param b1: f32[8] = normal(0.0, 0.1)
    param w2: f32[8, 3] = normal(0.0, 0.5)
    param b2: f32[3] = zeros()
    def forward(x) )" +
         forward + R"(
}
def loss(net: Net, x, y) = cross_entropy(net(x), y)
def main() {
    )" + amp_line +
         R"(
    let net = Net(seed=1)
    let x = normal(shape=(5, 6), seed=2)
    let (l, g) = value_and_grad(loss)(net, x, [0, 1, 2, 0, 1])
    print(l)
    print(net(x))
    print(g.w1)
    print(g.b1)
    print(g.w2)
    print(g.b2)
}
)";
}

void expect_same(const Output& a, const Output& b, const std::string& what) {
  ASSERT_TRUE(a.errors.empty()) << a.errors;
  ASSERT_TRUE(b.errors.empty()) << b.errors;
  ASSERT_EQ(a.lines.size(), 6u) << a.text;
  EXPECT_EQ(a.text, b.text) << what;
}

TEST(Amp, O1IsTheCastsWrittenByHand) {
  // Autocast: matmul's inputs cast down, its bf16 result promoted to f32 by the f32 bias.
  const std::string by_hand =
      program("",
              "= cast(cast(relu(cast(cast(x, bf16) @ cast(w1, bf16), f32) + b1), bf16) @ "
              "cast(w2, bf16), f32) + b2");
  const std::string amp = program("set_amp(\"O1\", bf16)", "= relu(x @ w1 + b1) @ w2 + b2");
  const std::string f32 = program("", "= relu(x @ w1 + b1) @ w2 + b2");
  Output graph = run_program(amp, false);
  for (bool eager : {false, true}) {
    Output a = eager ? run_program(amp, true) : graph;
    expect_same(a, run_program(by_hand, eager), eager ? "eager" : "graph");
    EXPECT_NE(a.text, run_program(f32, eager).text) << "O1 must round somewhere";
    // Graph and eager mode compute the same thing.
    if (eager) {
      EXPECT_EQ(a.text, graph.text);
    }
  }
  EXPECT_NE(graph.ir.find("cast(%x, dtype=bf16) : bf16[5,6]"), std::string::npos) << graph.ir;
}

TEST(Amp, O2RunsTheNetworkLowAndTheLossInF32) {
  const std::string hand = program(
      "",
      "= cast(relu(cast(x, f16) @ cast(w1, f16) + cast(b1, f16)) @ cast(w2, f16) + cast(b2, f16), "
      "f32)");
  for (bool eager : {false, true}) {
    Output amp =
        run_program(program("set_amp(\"O2\", f16)", "= relu(x @ w1 + b1) @ w2 + b2"), eager);
    expect_same(amp, run_program(hand, eager), eager ? "eager" : "graph");
  }
}

TEST(Amp, LevelsKeepNormalisationInF32UpToO2) {
  const std::string p = R"(
model Net() {
    param w: f32[4, 4] = normal(0.0, 0.5)
    param g: f32[4] = ones()
    param b: f32[4] = zeros()
    def forward(x) = layer_norm(exp(x @ w), g, b)
}
def main() {
    print(Net(seed=1)(normal(shape=(2, 4), seed=2)))
}
)";
  auto line_of = [](const std::string& ir, const std::string& op) {
    const size_t at = ir.find("= " + op + "(");
    return at == std::string::npos ? std::string() : ir.substr(at, ir.find('\n', at) - at);
  };
  using sem::AmpLevel;
  struct Want {
    AmpLevel level;
    const char *matmul, *exp, *layer_norm;
  };
  for (const Want& w : {Want{AmpLevel::O0, "f32[2,4]", "f32[2,4]", "f32[2,4]"},
                        Want{AmpLevel::O1, "bf16[2,4]", "f32[2,4]", "f32[2,4]"},
                        Want{AmpLevel::O2, "bf16[2,4]", "bf16[2,4]", "f32[2,4]"},
                        Want{AmpLevel::O3, "bf16[2,4]", "bf16[2,4]", "bf16[2,4]"}}) {
    Output r = run_program(p, false, sem::AmpPolicy{w.level, DType::bf16});
    ASSERT_TRUE(r.errors.empty()) << r.errors;
    const std::string level(sem::amp_level_name(w.level));
    EXPECT_NE(line_of(r.ir, "matmul").find(std::string(": ") + w.matmul), std::string::npos)
        << level << "\n"
        << r.ir;
    EXPECT_NE(line_of(r.ir, "exp").find(std::string(": ") + w.exp), std::string::npos)
        << level << "\n"
        << r.ir;
    EXPECT_NE(line_of(r.ir, "layer_norm").find(std::string(": ") + w.layer_norm), std::string::npos)
        << level << "\n"
        << r.ir;
    ASSERT_EQ(r.lines.size(), 1u) << r.text;
    EXPECT_EQ(r.lines[0].size(), 8u) << r.text;
  }
}

TEST(Amp, CommandLineOverridesTheProgram) {
  const std::string p = program("set_amp(\"O2\", f16)", "= relu(x @ w1 + b1) @ w2 + b2");
  Output off = run_program(p, false, sem::AmpPolicy{sem::AmpLevel::O0, DType::bf16});
  Output f32 = run_program(program("", "= relu(x @ w1 + b1) @ w2 + b2"), false);
  expect_same(off, f32, "--amp O0 over set_amp(\"O2\")");
  // --amp on a program without set_amp.
  Output o2 = run_program(program("", "= relu(x @ w1 + b1) @ w2 + b2"), false,
                          sem::AmpPolicy{sem::AmpLevel::O2, DType::f16});
  expect_same(o2, run_program(p, false), "--amp O2 --amp-dtype f16");
}

TEST(Amp, CastGradientIsTheCotangentCastBack) {
  // d/dx sum(cast(x, bf16) * w) = w rounded to bf16 (the product's cotangent is bf16), as f32.
  const std::string p = R"(
def f(x) = sum(cast(cast(x, bf16) * cast([0.1, 0.2, 0.3], bf16), f32))
def main() {
    let g = grad(f)([1.0, 2.0, 3.0])
    print(g)
    print(cast(cast([0.1, 0.2, 0.3], bf16), f32))
}
)";
  for (bool eager : {false, true}) {
    Output r = run_program(p, eager);
    ASSERT_TRUE(r.errors.empty()) << r.errors;
    ASSERT_EQ(r.lines.size(), 2u) << r.text;
    EXPECT_EQ(r.lines[0], r.lines[1]) << r.text;
    EXPECT_NE(r.lines[0][0], 0.1) << "0.1 is not a bf16";
  }
}

// ---- std.amp ----------------------------------------------------------------------------------

std::string scaler_program(const std::string& body) {
  return R"(
import std.optim
import std.amp
model Lin() {
    param w: f32[3] = normal(0.0, 1.0)
    def forward(x) = sum(w * x)
}
def loss(net: Lin, x, y) = net(x) * y
def main() {
    var net = Lin(seed=3)
    let opt = sgd(lr=0.125, momentum=0.5)
    var state = opt.init(net)
)" + body +
         "\n}\n";
}

TEST(Amp, OverflowSkipsTheStepAndHalvesTheScale) {
  // In a loop, so the data is run-time (straight-line code would be folded to constants before
  // the simplifier could break the finiteness test): an overflow at step 0, a finite step 1.
  const std::string p = scaler_program(R"(
    var scaler = loss_scaler()
    let x = [1.0, 2.0, 3.0]
    for i in range(2) {
        let y = 1.0 + cast(i == 0, f32) * 1e35
        let before = net.w
        let (l, g) = scaled_value_and_grad(loss, scaler)(net, x, y)
        (net, state, scaler) = scaler.step(opt, net, g, state)
        print(scaler.scale, scaler.good_steps, state[0])
        print(net.w - before)
    }
)");
  for (bool eager : {false, true}) {
    Output r = run_program(p, eager);
    ASSERT_TRUE(r.errors.empty()) << r.errors;
    ASSERT_EQ(r.lines.size(), 4u) << r.text;
    // 1e35 * 65536 overflows f32: skipped (parameters and the optimizer's step unchanged),
    // scale halved; then a finite step at the new scale.
    EXPECT_EQ(r.lines[0], (std::vector<double>{32768, 0, 0})) << r.text;
    EXPECT_EQ(r.lines[1], (std::vector<double>{0, 0, 0})) << r.text;
    EXPECT_EQ(r.lines[2], (std::vector<double>{32768, 1, 1})) << r.text;
    ASSERT_EQ(r.lines[3].size(), 3u) << r.text;
    EXPECT_NE(r.lines[3][0], 0) << r.text;
  }
}

TEST(Amp, FiniteStepsGrowTheScale) {
  const std::string p = scaler_program(R"(
    var scaler = loss_scaler(growth_interval=3)
    let x = [1.0, 2.0, 3.0]
    for i in range(5) {
        let (l, g) = scaled_value_and_grad(loss, scaler)(net, x, 0.5)
        (net, state, scaler) = scaler.step(opt, net, g, state)
        print(scaler.scale, scaler.good_steps)
    }
    print(state[0])
)");
  for (bool eager : {false, true}) {
    Output r = run_program(p, eager);
    ASSERT_TRUE(r.errors.empty()) << r.errors;
    ASSERT_EQ(r.lines.size(), 6u) << r.text;
    EXPECT_EQ(r.lines[0], (std::vector<double>{65536, 1}));
    EXPECT_EQ(r.lines[1], (std::vector<double>{65536, 2}));
    EXPECT_EQ(r.lines[2], (std::vector<double>{131072, 0}));  // 3 finite steps: doubled
    EXPECT_EQ(r.lines[4], (std::vector<double>{131072, 2}));
    EXPECT_EQ(r.lines[5], (std::vector<double>{5}));
  }
}

TEST(Amp, ScaledRunEqualsTheUnscaledRun) {
  // Scales are powers of two: scaling and unscaling are exact, so the parameters match bit for
  // bit (dynamic and static scalers).
  const std::string p = scaler_program(R"(
    var net2 = net
    var state2 = state
    var net3 = net
    var state3 = state
    var scaler = loss_scaler()
    var fixed = static_loss_scaler(1024.0)
    for i in range(4) {
        let x = normal(shape=(3,), seed=5) + cast(i, f32) * 0.25
        let (l, g) = value_and_grad(loss)(net, x, 0.7)
        (net, state) = opt.update(net, g, state)
        let (l2, g2) = scaled_value_and_grad(loss, scaler)(net2, x, 0.7)
        (net2, state2, scaler) = scaler.step(opt, net2, g2, state2)
        let (l3, g3) = scaled_value_and_grad(loss, fixed)(net3, x, 0.7)
        (net3, state3, fixed) = fixed.step(opt, net3, g3, state3)
        print(l, l2, l3)
    }
    print(net.w)
    print(net2.w)
    print(net3.w)
    print(fixed.scale)
)");
  for (bool eager : {false, true}) {
    Output r = run_program(p, eager);
    ASSERT_TRUE(r.errors.empty()) << r.errors;
    ASSERT_EQ(r.lines.size(), 8u) << r.text;
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(r.lines[i][0], r.lines[i][1]) << r.text;
      EXPECT_EQ(r.lines[i][0], r.lines[i][2]) << r.text;
    }
    EXPECT_EQ(r.lines[4], r.lines[5]) << r.text;
    EXPECT_EQ(r.lines[4], r.lines[6]) << r.text;
    EXPECT_EQ(r.lines[7], (std::vector<double>{1024})) << r.text;
  }
}

}  // namespace
}  // namespace spora::autodiff::testing
