// Graph mode memory: the interpreter releases each value after its last use and moves it
// into its last user (semantics/liveness.h), loop state dies as the next is made, values a
// nested body reads stay until the body's node has finished; and the static memory plan
// (backends/runtime/memory_plan.h) is a valid layout whose peak the measured peak does not
// exceed on straight-line programs.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/runtime/allocator.h"
#include "backends/runtime/memory_plan.h"
#include "semantics/interpreter.h"
#include "semantics/liveness.h"
#include "semantics/passes/pipeline.h"
#include "semantics/registry.h"
#include "tests/runtime/runtime_test_util.h"

namespace spora::runtime {
namespace {

using ir::Graph;
using ir::Node;
using sem::Tensor;
using sem::Type;
using sem::Value;
using testing::apply;

constexpr int64_t kMiB = int64_t{1} << 20;

// `scale_chain`: x -> (x + 0.5) * 0.5 -> ... 100 elementwise ops on f32[1024,1024] (4 MiB).
Graph* build_chain(ir::Module& m, int ops) {
  Graph* g = m.add_graph("chain");
  Node* x = m.add_param(g, "x", Type::tensor(DType::f32, {1024, 1024}));
  Node* c = m.add_constant(g, Value(Tensor::scalar(DType::f32, 0.5)));
  Node* y = x;
  for (int k = 0; k < ops; ++k) y = apply(m, g, k % 2 ? "mul" : "add", {y, c});
  g->output = y;
  return g;
}

double chain_value(int ops) {
  double v = 1.0;
  for (int k = 0; k < ops; ++k) v = k % 2 ? v * 0.5 : v + 0.5;
  return v;
}

TEST(Liveness, ChainOfHundredOpsHoldsAtMostTwoTensors) {
  testing::setup();
  ir::Module m;
  Graph* g = build_chain(m, 100);
  const int64_t base = sem::memory_stats().live_bytes;
  Tensor x = Tensor::full(DType::f32, {1024, 1024}, 1.0);
  sem::reset_peak_memory();
  sem::Interpreter interp(m);
  std::vector<Value> args;
  args.emplace_back(std::move(x));  // the interpreter may free the input after its last use
  Value r = interp.call(g, std::move(args));
  const int64_t peak = sem::memory_stats().peak_bytes - base;
  // Keeping every value would need 101 tensors; after a node its input dies.
  EXPECT_LT(peak, 3 * 4 * kMiB);
  EXPECT_FLOAT_EQ(static_cast<float>(r.tensor.get(12345)), static_cast<float>(chain_value(100)));
  // The plan: two tensors (the input of each op and its output), and the run stays below it.
  const GraphPlan plan = plan_graph(*g, [](const Graph*) { return int64_t{0}; });
  EXPECT_EQ(plan.peak_bytes, 2 * 4 * kMiB);
  EXPECT_EQ(plan.lower_bound_bytes, 2 * 4 * kMiB);
  EXPECT_LE(peak, plan.peak_bytes);
}

// A primitive that records whether its kernel got the only reference to its input.
std::vector<bool>& probe_log() {
  static std::vector<bool> log;
  return log;
}
void add_probe() {
  static bool added = false;
  if (added) return;
  added = true;
  sem::Primitive p;
  p.name = "test_probe_unique";
  p.family = "test";
  p.doc = "test_probe_unique(x): x; records whether x's buffer was held by the kernel alone";
  p.infer = [](const std::vector<sem::TypeP>& in, const sem::Attrs&) { return in.at(0); };
  p.eval = [](const std::vector<Value>& in, const sem::Attrs&) -> Value {
    probe_log().push_back(in.at(0).tensor.unique());
    return in.at(0).tensor.clone();
  };
  sem::Registry::instance().add(std::move(p));
}

TEST(Liveness, LastUseMovesTheValueIntoTheKernel) {
  testing::setup();
  add_probe();
  probe_log().clear();
  ir::Module m;
  Graph* g = m.add_graph("probe");
  Node* x = m.add_param(g, "x", Type::tensor(DType::f32, {4}));
  Node* a = apply(m, g, "exp", {x});
  Node* p1 = apply(m, g, "test_probe_unique", {a});  // a is used again below: shared
  Node* p2 = apply(m, g, "test_probe_unique", {a});  // a's last use: moved in
  Node* p3 = apply(m, g, "test_probe_unique", {p1});  // p1's only use: moved in
  g->output = apply(m, g, "add", {p3, p2});
  sem::Interpreter interp(m);
  std::vector<Value> args;
  args.emplace_back(Tensor::full(DType::f32, {4}, 0.0));
  Value r = interp.call(g, std::move(args));
  EXPECT_EQ(probe_log(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(r.tensor.get(3), 2.0);

  const sem::Liveness live = sem::analyze_liveness(*g);
  const size_t sa = live.slot.at(a);
  EXPECT_EQ(live.last_use[sa], 2);  // p2
  EXPECT_EQ(live.last_use[live.slot.at(g->output)], live.forever);
  EXPECT_EQ(live.move_input[1], std::vector<bool>{false});
  EXPECT_EQ(live.move_input[2], std::vector<bool>{true});
}

TEST(Liveness, ValuesReadByNestedBodiesStayUntilTheirNodeEnds) {
  // `a` is the loop's initial state and also read inside the body: it must not be moved into
  // the loop (the body looks it up in main's frame on every iteration); `k` is only read by
  // the if branches.
  auto lowered = testing::lower(R"(
def main() {
    let a = normal(shape=(4,), seed=3)
    let k = a * 2.0
    var s = a
    for i in range(3) {
        s = s + a
        if sum(s) > 1000.0 {
            s = s - k
        } else {
            s = s + k - k
        }
    }
    print(sum(abs(s - 4.0 * a)) < 0.0001)
}
)",
                                false);
  ASSERT_TRUE(lowered.module) << lowered.diagnostics;
  EXPECT_EQ(testing::run_graph_mode(*lowered.module), "true\n");
  passes::optimize(*lowered.module);
  EXPECT_EQ(testing::run_graph_mode(*lowered.module), "true\n");
  const sem::Liveness live = sem::analyze_liveness(*lowered.module->entry);
  bool any_nested = false;
  for (size_t i = 0; i < live.num_nodes; ++i) any_nested = any_nested || live.runs_graph[i];
  EXPECT_TRUE(any_nested);
}

TEST(Liveness, LoopStateDiesWhenTheNextIsMade) {
  auto lowered = testing::lower(R"(
def main() {
    var s = zeros(shape=(1024, 1024))
    for i in range(50) {
        s = s * 0.5 + 1.0
    }
    print(s[0, 0])
}
)",
                                false);
  ASSERT_TRUE(lowered.module) << lowered.diagnostics;
  const int64_t base = sem::memory_stats().live_bytes;
  sem::reset_peak_memory();
  caching_allocator().reset_stats();
  EXPECT_EQ(testing::run_graph_mode(*lowered.module), "2.0\n");
  // The state, the product and the sum at most (keeping the old state while the body runs
  // would need four); the plan (main's buffers and the body's workspace) predicts no less.
  const int64_t measured = sem::memory_stats().peak_bytes - base;
  EXPECT_LT(measured, 3 * 4 * kMiB + kMiB);
  const ModulePlan plan = plan_module(*lowered.module);
  EXPECT_LE(measured, plan.graphs.front().peak_bytes);
  EXPECT_LE(plan.graphs.front().peak_bytes, 5 * 4 * kMiB);
  // The initial state outlives main's node that runs the loop: the long-lived pool.
  EXPECT_GE(caching_allocator().stats().long_lived.peak_bytes, 4 * kMiB);
}

// Step 3 of the plan: buffers whose lifetimes overlap never overlap in the arena.
void expect_valid_layout(const GraphPlan& p) {
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlannedBuffer& a = p.buffers[i];
    EXPECT_LE(a.offset + a.bytes, p.peak_bytes);
    for (size_t j = i + 1; j < p.buffers.size(); ++j) {
      const PlannedBuffer& b = p.buffers[j];
      const bool in_time = a.begin <= b.end && b.begin <= a.end;
      const bool in_space = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(in_time && in_space && a.bytes && b.bytes) << "buffers " << i << " and " << j;
    }
  }
  EXPECT_LE(p.lower_bound_bytes, p.peak_bytes);
}

TEST(MemoryPlan, DiamondsAndReuse) {
  testing::setup();
  ir::Module m;
  Graph* g = m.add_graph("dag");
  Node* x = m.add_param(g, "x", Type::tensor(DType::f32, {512, 512}));  // 1 MiB
  Node* a = apply(m, g, "exp", {x});
  Node* b = apply(m, g, "mul", {a, x});
  Node* c = apply(m, g, "add", {a, b});
  Node* t = apply(m, g, "make_tuple", {c, b});
  Node* d = apply(m, g, "tanh", {c});
  Node* e = apply(m, g, "sub", {d, m.add_constant(g, Value(Tensor::scalar(DType::f32, 1.0)))});
  sem::Attrs get1;
  get1.set("index", int64_t{1});
  Node* b2 = apply(m, g, "tuple_get", {t}, get1);  // keeps b alive through the tuple
  Node* s = apply(m, g, "reshape", {apply(m, g, "add", {e, b2})}, [] {
    sem::Attrs a;
    a.set("shape", std::vector<int64_t>{512 * 512});
    return a;
  }());
  g->output = s;
  const GraphPlan plan = plan_graph(*g, [](const Graph*) { return int64_t{0}; });
  expect_valid_layout(plan);
  EXPECT_EQ(plan.param_bytes, kMiB);
  // x, a, b live together at `b`; later b (held by the tuple), c, d, e: 4 MiB at most.
  EXPECT_EQ(plan.lower_bound_bytes, 4 * kMiB);
  EXPECT_LE(plan.peak_bytes, 5 * kMiB);

  const int64_t base = sem::memory_stats().live_bytes;
  Tensor xt = Tensor::full(DType::f32, {512, 512}, 0.25);
  sem::reset_peak_memory();
  sem::Interpreter interp(m);
  std::vector<Value> args;
  args.emplace_back(std::move(xt));
  Value r = interp.call(g, std::move(args));
  EXPECT_LE(sem::memory_stats().peak_bytes - base, plan.peak_bytes);
  const double xv = 0.25, av = std::exp(xv), bv = av * xv, cv = av + bv;
  EXPECT_NEAR(r.tensor.get(7), std::tanh(cv) - 1.0 + bv, 1e-6);
}

TEST(MemoryPlan, MeasuredPeakOfATrainingStepStaysBelowThePlan) {
  // Forward and backward of an MLP (straight-line after the simplification passes).
  auto lowered = testing::lower(R"(
model MLP() {
    param w1: f32[256, 512] = normal(0.0, 0.05)
    param b1: f32[512] = zeros()
    param w2: f32[512, 10] = normal(0.0, 0.05)
    param b2: f32[10] = zeros()
    def forward(x) = relu(x @ w1 + b1) @ w2 + b2
}
def loss(net: MLP, x, y) = cross_entropy(net(x), y)
def main() {
    let net = MLP(seed=0)
    let x = normal(shape=(128, 256), seed=1)
    let y = argmax(x[:, 0:10], axis=1)
    let (l, g) = value_and_grad(loss)(net, x, y)
    let net2 = tree_map(fn (p, d) => p - 0.1 * d, net, g)
    print(l < loss(net2, x, y) + 1.0)
}
)",
                                false);
  ASSERT_TRUE(lowered.module) << lowered.diagnostics;
  passes::optimize(*lowered.module);
  const ModulePlan plan = plan_module(*lowered.module);
  ASSERT_FALSE(plan.graphs.empty());
  const GraphPlan& main_plan = plan.graphs.front();
  EXPECT_EQ(main_plan.graph, lowered.module->entry);
  expect_valid_layout(main_plan);
  const int64_t base = sem::memory_stats().live_bytes;
  sem::reset_peak_memory();
  EXPECT_EQ(testing::run_graph_mode(*lowered.module), "true\n");
  const int64_t measured = sem::memory_stats().peak_bytes - base;
  // Parameters (0.5 MB), activations and gradients: the plan holds several MB.
  EXPECT_GT(main_plan.peak_bytes, kMiB);
  EXPECT_LE(measured, main_plan.peak_bytes);
  EXPECT_NE(describe(plan).find("planned peak"), std::string::npos);
}

}  // namespace
}  // namespace spora::runtime
