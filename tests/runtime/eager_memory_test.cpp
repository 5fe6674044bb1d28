// Eager mode memory (semantics/eager.h, semantics/lower/eager_memory.cpp): values are
// released as soon as no variable, temporary or tape needs them and their nodes leave the
// entry graph, so a training loop runs in memory and IR that do not grow with its length;
// collection never changes what a program computes (eager vs graph mode).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "semantics/eager.h"
#include "tests/runtime/runtime_test_util.h"

namespace spora::runtime {
namespace {

std::string training_program(int steps) {
  return R"(
model MLP(n_in: int, hidden: int, n_out: int) {
    param w1: f32[n_in, hidden] = normal(0.0, 0.5)
    param b1: f32[hidden] = zeros()
    param w2: f32[hidden, n_out] = normal(0.0, 0.5)
    param b2: f32[n_out] = zeros()
    def forward(x) = relu(x @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def step(net: MLP, vel, x, y) {
    let (l, g) = value_and_grad(loss)(net, x, y)
    let v2 = tree_map(fn (v, d) => 0.9 * v + d, vel, g)
    return (tree_map(fn (p, v) => p - 0.05 * v, net, v2), v2, l)
}

def main() {
    var net = MLP(8, 64, 4, seed=0)
    var vel = tree_map(fn (p) => p * 0.0, net)
    let x = normal(shape=(128, 8), seed=1)
    let y = argmax(x[:, 0:4], axis=1)
    for i in range()" + std::to_string(steps) + R"() {
        let (n2, v2, l) = step(net, vel, x, y)
        net = n2
        vel = v2
        if i % 25 == 0 {
            print(i, l)
        }
    }
    print("final", loss(net, x, y))
}
)";
}

struct EagerRun {
  std::string output;
  int64_t peak_bytes = 0;
  sem::EagerStats stats;
};

EagerRun run_eager(const std::string& source) {
  testing::setup();
  EagerRun r;
  const int64_t base = sem::memory_stats().live_bytes;
  sem::reset_peak_memory();
  ::testing::internal::CaptureStdout();
  auto lowered = testing::lower(source, true);
  r.output = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(lowered.module) << lowered.diagnostics;
  r.peak_bytes = sem::memory_stats().peak_bytes - base;
  r.stats = sem::last_eager_stats();
  return r;
}

std::string run_graph(const std::string& source) {
  auto lowered = testing::lower(source, false);
  EXPECT_TRUE(lowered.module) << lowered.diagnostics;
  return lowered.module ? testing::run_graph_mode(*lowered.module) : "";
}

// Whether two printed outputs have the same words, and numbers equal within `rel`.
::testing::AssertionResult same_numbers(const std::string& a, const std::string& b, double rel) {
  std::istringstream sa(a), sb(b);
  std::string wa, wb;
  while (true) {
    const bool ra = static_cast<bool>(sa >> wa), rb = static_cast<bool>(sb >> wb);
    if (!ra || !rb) {
      if (ra == rb) return ::testing::AssertionSuccess();
      return ::testing::AssertionFailure() << "one output is longer:\n" << a << "---\n" << b;
    }
    char* ea = nullptr;
    char* eb = nullptr;
    const double x = std::strtod(wa.c_str(), &ea), y = std::strtod(wb.c_str(), &eb);
    const bool numbers = *ea == 0 && *eb == 0 && !wa.empty() && !wb.empty();
    if (numbers ? std::abs(x - y) > rel * std::max(std::abs(x), std::abs(y)) : wa != wb)
      return ::testing::AssertionFailure() << "'" << wa << "' vs '" << wb << "':\n"
                                           << a << "---\n"
                                           << b;
  }
}

TEST(EagerMemory, TrainingLoopRunsInBoundedMemoryAndIR) {
  const EagerRun short_run = run_eager(training_program(50));
  const EagerRun long_run = run_eager(training_program(200));
  // Four times the steps: the same peak tensor memory and the same largest entry graph.
  EXPECT_GT(short_run.peak_bytes, 0);
  EXPECT_EQ(long_run.peak_bytes, short_run.peak_bytes);
  EXPECT_EQ(long_run.stats.peak_graph_nodes, short_run.stats.peak_graph_nodes);
  EXPECT_EQ(long_run.stats.peak_values_held, short_run.stats.peak_values_held);
  EXPECT_GT(long_run.stats.ops_run, 3 * short_run.stats.ops_run);
  EXPECT_GT(long_run.stats.nodes_removed, 3 * short_run.stats.nodes_removed / 2);
  // A step's parameters, velocities, activations and gradients: well under 1 MB (the whole
  // history of 200 steps would be tens of MB), and a graph of at most a few steps' nodes.
  EXPECT_LT(long_run.peak_bytes, 1 << 20);
  EXPECT_LT(long_run.stats.peak_graph_nodes, 2 * long_run.stats.ops_run / 200 + 100);
  // The same numbers as graph mode, to f32 rounding: the two modes may run a product in
  // different transposed forms (eager mode emits flagged products, graph mode folds transposes
  // later), and oneDNN's bits depend on the form (backends/cpu/README.md, "GEMM").
  EXPECT_TRUE(same_numbers(long_run.output, run_graph(training_program(200)), 1e-5));
  EXPECT_NE(long_run.output.find("final"), std::string::npos);
}

TEST(EagerMemory, CollectionKeepsWhatLaterStatementsNeed) {
  // A pullback called statements after its vjp (its tape must survive), a closure that
  // captured a variable reassigned since, a loop over a temporary's rows, a while loop, a
  // value computed inside an inlined function that returns several, and a @jit function.
  const std::string program = R"(
def twice(x) {
    let a = x * 2.0
    let b = a + 1.0
    return (a, b)
}

@jit
def jitted(x) = sum(x * x)

def f(x) = sum(sin(x) * x)

def main() {
    var w = [1.0, 2.0, 3.0]
    let (y, pb) = vjp(f, w)
    let scale = w * 10.0
    let add_old_w = fn (v) => v + w
    w = w * 0.0
    let dead = exp(w) * 3.0
    var acc = 0.0
    for e in scale * 2.0 {
        acc = acc + e
    }
    var n = 0
    var z = w + 1.0
    while n < 5 {
        z = z * 2.0
        n = n + 1
    }
    let (a, b) = twice(z)
    print(y, acc, sum(a), sum(b))
    print(pb(1.0))
    print(add_old_w(scale), jitted(b))
}
)";
  const EagerRun eager = run_eager(program);
  EXPECT_EQ(eager.output, run_graph(program));
  EXPECT_GT(eager.stats.nodes_removed, 0);
  EXPECT_GT(eager.stats.collections, 5);
}

}  // namespace
}  // namespace spora::runtime
