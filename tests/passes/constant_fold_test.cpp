// fold_constants: kernels run at compile time on constant inputs; constant conditions pick
// their branch; loops that run no iteration vanish; errors, effects and big results stay.
#include "semantics/passes/constant_fold.h"

#include <gtest/gtest.h>

#include "semantics/passes/dce.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

void fold_and_clean(ir::Module& m) {
  fold_constants(m);
  eliminate_dead_code(m);
}

TEST(ConstantFold, AChainOfArithmeticFoldsInOneWalk) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32[2] {
  %a = constant [1.0, 2.0] : f32[2]
  %b = constant 3.0 : f32
  %c = mul(%a, %b) : f32[2]
  %d = exp(%c) : f32[2]
  %e = log(%d) : f32[2]
  %f = sum(%e) : f32
  %g = add(%e, %f) : f32[2]
  return %g
}
)",
                       fold_constants),
            R"(graph @main() -> f32[2] {
  %0 = constant [1.0, 2.0] : f32[2]
  %1 = constant 3.0 : f32
  %2 = constant [3.0, 6.0] : f32[2]
  %3 = constant [20.085537, 403.4288] : f32[2]
  %4 = constant [3.0, 6.0] : f32[2]
  %5 = constant 9.0 : f32
  %6 = constant [12.0, 15.0] : f32[2]
  return %6
}
)");
}

TEST(ConstantFold, CreationInputsAreEvaluatedButStayCompact) {
  // zeros(...) + [1, 2] folds; a lone zeros(...) stays a zeros; x + zeros does not fold (x is
  // a parameter).
  EXPECT_EQ(after_pass(R"(
graph @main(%x: f32[2]) -> f32[2] {
  %z = zeros(shape=[2]) : f32[2]
  %c = constant [1.0, 2.0] : f32[2]
  %s = add(%z, %c) : f32[2]
  %t = add(%x, %z) : f32[2]
  %u = add(%s, %t) : f32[2]
  return %u
}
)",
                       fold_and_clean, {sem::Tensor::zeros(DType::f32, {2})}),
            R"(graph @main(%x: f32[2]) -> f32[2] {
  %0 = zeros(shape=[2]) : f32[2]
  %1 = constant [1.0, 2.0] : f32[2]
  %2 = add(%x, %0) : f32[2]
  %3 = add(%1, %2) : f32[2]
  return %3
}
)");
}

TEST(ConstantFold, LargeResultsStayComputed) {
  const std::string text = R"(graph @main() -> f32 {
  %0 = ones(shape=[64,65]) : f32[64,65]
  %1 = constant 2.0 : f32
  %2 = mul(%0, %1) : f32[64,65]
  %3 = sum(%2) : f32
  return %3
}
)";
  // 64 * 65 = 4160 elements > 4096: the mul stays, and so does the sum that reads it.
  EXPECT_EQ(after_pass(text, fold_constants), text);
}

TEST(ConstantFold, AKernelErrorIsLeftForRunTime) {
  // An integer division by zero raises at run time, where it has a location.
  const std::string text = R"(graph @main() -> i64 {
  %0 = constant 7 : i64
  %1 = constant 0 : i64
  %2 = floordiv(%0, %1) : i64
  return %2
}
)";
  std::unique_ptr<ir::Module> m = parse(text);
  EXPECT_EQ(run(*m), "error: integer division by zero");
  EXPECT_EQ(after_pass(*m, fold_constants), text);
}

TEST(ConstantFold, EffectsAndNonTensorResultsStay) {
  const std::string text = R"(graph @main() -> (f32, f32) {
  %0 = constant 1.0 : f32
  %1 = print(%0) : ()
  %2 = make_tuple(%0, %0) : (f32, f32)
  return %2
}
)";
  EXPECT_EQ(after_pass(text, fold_constants), text);
}

TEST(ConstantFold, AConstantConditionInlinesTheTakenBranch) {
  // The taken branch prints; the other branch, which would fail its assert, never runs.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 2.0 : f32
  %one = constant 1.0 : f32
  %c = gt(%x, %one) : bool
  graph @main.then() -> f32 {
    %s = constant "big" : str
    %p = print(%s, %x) : ()
    %y = mul(%x, %x) : f32
    return %y
  }
  graph @main.else() -> f32 {
    %f = constant false : bool
    %a = assert(%f) : ()
    return %x
  }
  %r = if(%c, @main.then, @main.else) : f32
  %z = add(%r, %one) : f32
  return %z
}
)",
                       fold_and_clean, {}, Effects::pruned),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = constant "big" : str
  %2 = print(%1, %0) : ()
  %3 = constant 5.0 : f32
  return %3
}
)");
}

TEST(ConstantFold, NestedIfsWithConstantConditionsAllGo) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> i64 {
  %t = constant true : bool
  %f = constant false : bool
  graph @main.a() -> i64 {
    graph @main.a.x() -> i64 {
      %one = constant 1 : i64
      return %one
    }
    graph @main.a.y() -> i64 {
      %two = constant 2 : i64
      return %two
    }
    %r = if(%f, @main.a.x, @main.a.y) : i64
    return %r
  }
  graph @main.b() -> i64 {
    %three = constant 3 : i64
    return %three
  }
  %r = if(%t, @main.a, @main.b) : i64
  return %r
}
)",
                       fold_and_clean),
            R"(graph @main() -> i64 {
  %0 = constant 2 : i64
  return %0
}
)");
}

TEST(ConstantFold, LoopsThatRunNoIterationBecomeTheirInitialState) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %five = constant 5 : i64
  %two = constant 2 : i64
  %one = constant 1 : i64
  %x0 = constant 1.5 : f32
  graph @main.body(%i: i64, %x: f32) -> (f32,) {
    %p = print(%x) : ()
    %y = add(%x, %x) : f32
    %t = make_tuple(%y) : (f32,)
    return %t
  }
  %r = for_range(%five, %two, %one, @main.body, %x0) : (f32,)
  %a = tuple_get(%r, index=0) : f32
  graph @main.cond(%x: f32) -> bool {
    %no = constant false : bool
    return %no
  }
  graph @main.step(%x: f32) -> (f32,) {
    %y = mul(%x, %x) : f32
    %t = make_tuple(%y) : (f32,)
    return %t
  }
  %w = while(@main.cond, @main.step, %a) : (f32,)
  %b = tuple_get(%w, index=0) : f32
  return %b
}
)",
                       fold_and_clean, {}, Effects::pruned),
            R"(graph @main() -> f32 {
  %0 = constant 1.5 : f32
  %1 = make_tuple(%0) : (f32,)
  %2 = tuple_get(%1, index=0) : f32
  %3 = make_tuple(%2) : (f32,)
  %4 = tuple_get(%3, index=0) : f32
  return %4
}
)");
}

TEST(ConstantFold, ABackwardRangeWithFewerBoundsStillRuns) {
  // range(5, 2, -1) runs: only a range that is empty for its step's sign is removed.
  const std::string text = R"(graph @main() -> i64 {
  %0 = constant 5 : i64
  %1 = constant 2 : i64
  %2 = constant -1 : i64
  %3 = constant 0 : i64
  graph @main.body(%i: i64, %s: i64) -> (i64,) {
    %4 = add(%s, %i) : i64
    %5 = make_tuple(%4) : (i64,)
    return %5
  }
  %6 = for_range(%0, %1, %2, @main.body, %3) : (i64,)
  %7 = tuple_get(%6, index=0) : i64
  return %7
}
)";
  EXPECT_EQ(after_pass(text, fold_constants), text);
}

}  // namespace
}  // namespace spora::passes::testing
