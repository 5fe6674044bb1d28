// The reference interpreter on hand-built modules: straight-line code, closures, if, while,
// for_range, for_each, recursion, errors with locations, the trace hook.
#include "semantics/interpreter.h"

#include <gtest/gtest.h>

#include <limits>

#include "semantics/ir/parser.h"
#include "semantics/iterable.h"
#include "tests/ir/test_modules.h"
#include "tests/ir/test_prims.h"

namespace spora::ir::testing {
namespace {

using sem::Interpreter;
using sem::RuntimeError;

TEST(Interpreter, StraightLine) {
  Module m;
  Graph* g = build_straight_line(m);
  Interpreter interp(m);
  Value r = interp.call(g, {f32(3.0), f32(4.0)});
  EXPECT_EQ(scalar(r), (3.0 + 4.0) * 3.0);
}

TEST(Interpreter, NestedClosuresReadParentValues) {
  Module m;
  Graph* g = build_nested_closures(m);
  Interpreter interp(m);
  // outer(x) = if(x < 10) { if(x < 5) { x * k } else { x + k } } else { k }, k = 100
  EXPECT_EQ(scalar(interp.call(g, {f32(2.0)})), 200.0);
  EXPECT_EQ(scalar(interp.call(g, {f32(7.0)})), 107.0);
  EXPECT_EQ(scalar(interp.call(g, {f32(12.0)})), 100.0);
}

TEST(Interpreter, WhileCollatzHasDataDependentTripCount) {
  Module m;
  Graph* g = build_collatz(m);
  Interpreter interp(m);
  EXPECT_EQ(scalar(interp.call(g, {i64(27)})), 111.0);
  EXPECT_EQ(scalar(interp.call(g, {i64(1)})), 0.0);
  EXPECT_EQ(scalar(interp.call(g, {i64(6)})), 8.0);
}

TEST(Interpreter, ForRangeSumsWithPositiveAndNegativeStep) {
  Module m;
  Graph* g = build_range_sum(m);
  Interpreter interp(m);
  EXPECT_EQ(scalar(interp.call(g, {i64(0), i64(10), i64(1)})), 45.0);
  EXPECT_EQ(scalar(interp.call(g, {i64(10), i64(0), i64(-3)})), 10.0 + 7 + 4 + 1);
  EXPECT_EQ(scalar(interp.call(g, {i64(5), i64(5), i64(1)})), 0.0);
  try {
    interp.call(g, {i64(0), i64(10), i64(0)});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "for_range step must not be zero");
    EXPECT_EQ(e.loc.line, 7);
  }
}

// The index after the last one may not fit in int64: the loop ends there instead of
// overflowing (undefined behaviour, caught by -DSPORA_SANITIZE=ON).
TEST(Interpreter, ForRangeEndsWhereTheNextIndexWouldOverflow) {
  ensure_prims();
  auto m = parse_module(R"(
graph @count(%start: i64, %stop: i64, %step: i64) -> i64 {
  %zero = constant 0 : i64
  graph @body(%i: i64, %n: i64) -> (i64,) {
    %one = constant 1 : i64
    %next = add(%n, %one) : i64
    %t = make_tuple(%next) : (i64,)
    return %t
  }
  %r = for_range(%start, %stop, %step, @body, %zero) : (i64,)
  %c = tuple_get(%r, index=0) : i64
  return %c
}
)");
  Graph* count = m->find_graph("count");
  ASSERT_NE(count, nullptr);
  Interpreter interp(*m);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // kMax - 10, kMax - 6, kMax - 2, then kMax + 2 does not fit.
  EXPECT_EQ(scalar(interp.call(count, {i64(kMax - 10), i64(kMax), i64(4)})), 3.0);
  EXPECT_EQ(scalar(interp.call(count, {i64(kMin + 10), i64(kMin), i64(-4)})), 3.0);
  EXPECT_EQ(scalar(interp.call(count, {i64(0), i64(kMax), i64(kMax)})), 1.0);
  EXPECT_EQ(scalar(interp.call(count, {i64(-1), i64(kMin), i64(kMin)})), 1.0);
}

TEST(Interpreter, RecursiveFactorial) {
  Module m;
  Graph* fact = build_factorial(m);
  Interpreter interp(m);
  EXPECT_EQ(scalar(interp.call(fact, {i64(0)})), 1.0);
  EXPECT_EQ(scalar(interp.call(fact, {i64(10)})), 3628800.0);
  // Deep recursion, past what the 8 MiB main stack holds in a debug build (the product wraps
  // around; only the depth matters).
  EXPECT_NO_THROW(interp.call(fact, {i64(9000)}));
}

TEST(Interpreter, RecursionLimitIsAUserError) {
  Module m;
  Graph* fact = build_factorial(m);
  Interpreter interp(m);
  interp.set_max_depth(50);
  try {
    interp.call(fact, {i64(100)});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "recursion too deep (limit 50)");
    EXPECT_EQ(e.loc.line, 3);  // the recursive call site
  }
  EXPECT_EQ(scalar(interp.call(fact, {i64(5)})), 120.0);  // usable afterwards
}

TEST(Interpreter, StackExhaustionIsAUserErrorNotACrash) {
  Module m;
  Graph* fact = build_factorial(m);
  Interpreter interp(m);
  interp.set_max_depth(1 << 30);
  interp.set_stack_budget(0);
  try {
    interp.call(fact, {i64(100000000)});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("recursion too deep"), std::string::npos) << e.what();
  }
}

// Yields the scalars 1, 2, 3.
struct CountTo3 : sem::Iterable {
  int i = 0;
  int resets = 0;
  void reset() override {
    i = 0;
    ++resets;
  }
  bool next(Value& out) override {
    if (i == 3) return false;
    out = f32(++i);
    return true;
  }
  std::string describe() const override { return "<count to 3>"; }
};

TEST(Interpreter, ForEachWalksAnIterableAndRewinds) {
  Module m;
  Graph* g = build_for_each_sum(m);
  auto it = std::make_shared<CountTo3>();
  Value iter;
  iter.kind = Value::Kind::Opaque;
  iter.opaque = it;
  Interpreter interp(m);
  EXPECT_EQ(scalar(interp.call(g, {iter, f32(0.5)})), 6.5);
  EXPECT_EQ(scalar(interp.call(g, {iter, f32(0.0)})), 6.0);
  EXPECT_EQ(it->resets, 2);
}

TEST(Interpreter, KernelErrorsCarryTheNodeLocationAndCallStack) {
  ensure_prims();
  Module m;
  Builder b{m};
  Graph* inner = m.add_graph("inner");
  Node* x = m.add_param(inner, "x", f32_t());
  inner->output = m.add_apply(inner, prim("test_fail"), {x}, {}, nullptr, {0, 2, 5});
  Graph* outer = m.add_graph("outer");
  Node* y = m.add_param(outer, "y", f32_t());
  outer->output = m.add_call(outer, inner, {y}, nullptr, {0, 7, 9});
  Interpreter interp(m);
  try {
    interp.call(outer, {f32(2.5)});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "value 2.5 is not allowed");
    EXPECT_EQ(e.loc.line, 2);
    EXPECT_EQ(e.loc.col, 5);
    ASSERT_EQ(e.call_stack.size(), 1u);
    EXPECT_EQ(e.call_stack[0].line, 7);
  }
  (void)b;
}

TEST(Interpreter, ErrorsInGeneratedCodeBlameTheNearestLocatedCaller) {
  ensure_prims();
  Module m;
  Graph* inner = m.add_graph("inner");
  Node* x = m.add_param(inner, "x", f32_t());
  inner->output = m.add_apply(inner, prim("test_fail"), {x}, {}, nullptr);  // no location
  Graph* outer = m.add_graph("outer");
  Node* y = m.add_param(outer, "y", f32_t());
  outer->output = m.add_call(outer, inner, {y}, nullptr, {0, 4, 1});
  Interpreter interp(m);
  try {
    interp.call(outer, {f32(1.0)});
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.loc.line, 4);
    EXPECT_TRUE(e.call_stack.empty());
  }
}

TEST(Interpreter, TraceHookSeesEveryNodeInOrder) {
  Module m;
  Graph* g = build_straight_line(m);
  Interpreter interp(m);
  std::vector<std::string> seen;
  interp.set_trace([&](const sem::TraceEvent& e) {
    seen.push_back(e.node->prim ? e.node->prim->name : "const");
    EXPECT_GE(e.seconds, 0.0);
    EXPECT_EQ(e.depth, 0);
  });
  interp.call(g, {f32(1.0), f32(2.0)});
  EXPECT_EQ(seen, (std::vector<std::string>{"add", "mul"}));
}

TEST(Interpreter, EntryRunsMain) {
  Module m;
  build_straight_line(m);
  Graph* main = m.add_graph("main");
  Builder b{m};
  Node* two = b.constant(main, f32(2.0));
  main->output = m.add_call(main, m.find_graph("straight"), {two, two}, nullptr);
  m.entry = main;
  EXPECT_EQ(scalar(Interpreter(m).run_entry()), 8.0);
}

TEST(Interpreter, SeesEditsMadeBetweenRuns) {
  Module m;
  Graph* g = build_straight_line(m);
  Interpreter interp(m);
  EXPECT_EQ(scalar(interp.call(g, {f32(3.0), f32(4.0)})), 21.0);
  // A pass replaces (x + y) * x by (x + y) + x: same node count, different nodes.
  Node* sum = g->nodes[0];
  g->nodes.pop_back();
  g->output = m.add_apply(g, prim("add"), {sum, g->params[0]}, {}, nullptr);
  EXPECT_EQ(scalar(interp.call(g, {f32(3.0), f32(4.0)})), 10.0);
}

TEST(Interpreter, WrongArgumentCountIsAnInternalError) {
  Module m;
  Graph* g = build_straight_line(m);
  EXPECT_THROW(Interpreter(m).call(g, {f32(1.0)}), lang::InternalError);
}

}  // namespace
}  // namespace spora::ir::testing
