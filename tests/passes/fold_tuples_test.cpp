// fold_tuples: projections of constructors, constructors of projections, values an `if` only
// passes through, loop-invariant state.
#include "semantics/passes/fold_tuples.h"

#include <gtest/gtest.h>

#include "semantics/passes/dce.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

// fold_tuples, then DCE so the golden shows only what is left in use.
void fold_and_clean(ir::Module& m) {
  fold_tuples(m);
  eliminate_dead_code(m);
}

TEST(FoldTuples, TupleGetOfMakeTuple) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 1.0 : f32
  %b = constant [2.0, 3.0] : f32[2]
  %t = make_tuple(%a, %b) : (f32, f32[2])
  %x = tuple_get(%t, index=0) : f32
  %y = tuple_get(%t, index=-1) : f32[2]
  %z = mul(%y, %x) : f32[2]
  %s = sum(%z) : f32
  return %s
}
)",
                       fold_tuples),
            R"(graph @main() -> f32 {
  %0 = constant 1.0 : f32
  %1 = constant [2.0, 3.0] : f32[2]
  %2 = make_tuple(%0, %1) : (f32, f32[2])
  %3 = mul(%1, %0) : f32[2]
  %4 = sum(%3) : f32
  return %4
}
)");
}

TEST(FoldTuples, NestedTuplesAndAProjectionInAClosure) {
  // The tuple is built in @main and taken apart in the branch: the branch reads %a directly.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 1.5 : f32
  %c = constant true : bool
  %in = make_tuple(%a, %a) : (f32, f32)
  %t = make_tuple(%in, %c) : ((f32, f32), bool)
  graph @main.then() -> f32 {
    %p = tuple_get(%t, index=0) : (f32, f32)
    %q = tuple_get(%p, index=1) : f32
    return %q
  }
  graph @main.else() -> f32 {
    return %a
  }
  %r = if(%c, @main.then, @main.else) : f32
  return %r
}
)",
                       fold_and_clean),
            R"(graph @main() -> f32 {
  %0 = constant 1.5 : f32
  %1 = constant true : bool
  graph @main.then() -> f32 {
    return %0
  }
  graph @main.else() -> f32 {
    return %0
  }
  %2 = if(%1, @main.then, @main.else) : f32
  return %2
}
)");
}

TEST(FoldTuples, RecordGetOfMakeRecord) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32[2] {
  %w = constant [1.0, 2.0] : f32[2]
  %b = constant 0.5 : f32
  %r = make_record(%w, %b, name="Lin", names="w,b") : Lin{w: f32[2], b: f32}
  %x = record_get(%r, field="w") : f32[2]
  %y = record_get(%r, field="b") : f32
  %z = add(%x, %y) : f32[2]
  return %z
}
)",
                       fold_and_clean),
            R"(graph @main() -> f32[2] {
  %0 = constant [1.0, 2.0] : f32[2]
  %1 = constant 0.5 : f32
  %2 = add(%0, %1) : f32[2]
  return %2
}
)");
}

TEST(FoldTuples, MakeTupleOfAllProjectionsIsTheTuple) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> (f32, i64) {
  %a = constant 1.0 : f32
  %b = constant 2 : i64
  %t = call @pair(%a, %b) : (f32, i64)
  %x = tuple_get(%t, index=0) : f32
  %y = tuple_get(%t, index=1) : i64
  %u = make_tuple(%x, %y) : (f32, i64)
  %v = make_tuple(%y, %x) : (i64, f32)
  %p = print(%v) : ()
  return %u
}
graph @pair(%a: f32, %b: i64) -> (f32, i64) {
  %t = make_tuple(%a, %b) : (f32, i64)
  return %t
}
)",
                       fold_and_clean),
            R"(graph @main() -> (f32, i64) {
  %0 = constant 1.0 : f32
  %1 = constant 2 : i64
  %2 = call @pair(%0, %1) : (f32, i64)
  %3 = tuple_get(%2, index=0) : f32
  %4 = tuple_get(%2, index=1) : i64
  %5 = make_tuple(%4, %3) : (i64, f32)
  %6 = print(%5) : ()
  return %2
}

graph @pair(%a: f32, %b: i64) -> (f32, i64) {
  %7 = make_tuple(%a, %b) : (f32, i64)
  return %7
}
)");
}

TEST(FoldTuples, AValueBothBranchesPassThroughSkipsTheIf) {
  // Element 0 of the `if` is %a in both branches: its user reads %a. Element 1 differs.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %c = constant false : bool
  graph @main.then() -> (f32, f32) {
    %n = neg(%a) : f32
    %t = make_tuple(%a, %n) : (f32, f32)
    return %t
  }
  graph @main.else() -> (f32, f32) {
    %e = exp(%a) : f32
    %t = make_tuple(%a, %e) : (f32, f32)
    return %t
  }
  %r = if(%c, @main.then, @main.else) : (f32, f32)
  %x = tuple_get(%r, index=0) : f32
  %y = tuple_get(%r, index=1) : f32
  %z = add(%x, %y) : f32
  return %z
}
)",
                       fold_tuples),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = constant false : bool
  graph @main.then() -> (f32, f32) {
    %2 = neg(%0) : f32
    %3 = make_tuple(%0, %2) : (f32, f32)
    return %3
  }
  graph @main.else() -> (f32, f32) {
    %4 = exp(%0) : f32
    %5 = make_tuple(%0, %4) : (f32, f32)
    return %5
  }
  %6 = if(%1, @main.then, @main.else) : (f32, f32)
  %7 = tuple_get(%6, index=1) : f32
  %8 = add(%0, %7) : f32
  return %8
}
)");
}

// A for_range carrying (acc, w) where the body never changes w: w is loop-invariant.
const char* kInvariantLoop = R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 4 : i64
  %one = constant 1 : i64
  %acc0 = constant 0.0 : f32
  %w0 = constant 0.5 : f32
  graph @main.body(%i: i64, %acc: f32, %w: f32) -> (f32, f32) {
    %s = add(%acc, %w) : f32
    %t = make_tuple(%s, %w) : (f32, f32)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %acc0, %w0) : (f32, f32)
  %a = tuple_get(%r, index=0) : f32
  %b = tuple_get(%r, index=1) : f32
  %c = mul(%a, %b) : f32
  return %c
}
)";

TEST(FoldTuples, LoopInvariantStateLeavesTheLoop) {
  EXPECT_EQ(after_pass(kInvariantLoop, fold_and_clean), R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 4 : i64
  %2 = constant 1 : i64
  %3 = constant 0.0 : f32
  %4 = constant 0.5 : f32
  graph @main.body(%i: i64, %acc: f32) -> (f32,) {
    %5 = add(%acc, %4) : f32
    %6 = make_tuple(%5) : (f32,)
    return %6
  }
  %7 = for_range(%0, %1, %2, @main.body, %3) : (f32,)
  %8 = tuple_get(%7, index=0) : f32
  %9 = mul(%8, %4) : f32
  return %9
}
)");
}

TEST(FoldTuples, WhileInvariantStateIsReadByTheCondition) {
  // while k < limit { k = k + 1 } with limit carried but never changed.
  EXPECT_EQ(after_pass(R"(
graph @main() -> i64 {
  %k0 = constant 0 : i64
  %lim = constant 5 : i64
  graph @main.cond(%k: i64, %l: i64) -> bool {
    %c = lt(%k, %l) : bool
    return %c
  }
  graph @main.body(%k: i64, %l: i64) -> (i64, i64) {
    %one = constant 1 : i64
    %k1 = add(%k, %one) : i64
    %t = make_tuple(%k1, %l) : (i64, i64)
    return %t
  }
  %r = while(@main.cond, @main.body, %k0, %lim) : (i64, i64)
  %k = tuple_get(%r, index=0) : i64
  %l = tuple_get(%r, index=1) : i64
  %s = add(%k, %l) : i64
  return %s
}
)",
                       fold_and_clean),
            R"(graph @main() -> i64 {
  %0 = constant 0 : i64
  %1 = constant 5 : i64
  graph @main.cond(%k: i64) -> bool {
    %2 = lt(%k, %1) : bool
    return %2
  }
  graph @main.body(%k.1: i64) -> (i64,) {
    %3 = constant 1 : i64
    %4 = add(%k.1, %3) : i64
    %5 = make_tuple(%4) : (i64,)
    return %5
  }
  %6 = while(@main.cond, @main.body, %0) : (i64,)
  %7 = tuple_get(%6, index=0) : i64
  %8 = add(%7, %1) : i64
  return %8
}
)");
}

TEST(FoldTuples, ALoopUsedWholeKeepsItsShapeButReadsTheInitialValue) {
  // The loop's tuple is returned as a whole: the state stays, the body reads %w0 instead of %w.
  EXPECT_EQ(after_pass(R"(
graph @main() -> (f32, f32) {
  %zero = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  %acc0 = constant 1.0 : f32
  %w0 = constant 2.0 : f32
  graph @main.body(%i: i64, %acc: f32, %w: f32) -> (f32, f32) {
    %s = mul(%acc, %w) : f32
    %t = make_tuple(%s, %w) : (f32, f32)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %acc0, %w0) : (f32, f32)
  return %r
}
)",
                       fold_tuples),
            R"(graph @main() -> (f32, f32) {
  %0 = constant 0 : i64
  %1 = constant 3 : i64
  %2 = constant 1 : i64
  %3 = constant 1.0 : f32
  %4 = constant 2.0 : f32
  graph @main.body(%i: i64, %acc: f32, %w: f32) -> (f32, f32) {
    %5 = mul(%acc, %4) : f32
    %6 = make_tuple(%5, %4) : (f32, f32)
    return %6
  }
  %7 = for_range(%0, %1, %2, @main.body, %3, %4) : (f32, f32)
  return %7
}
)");
}

TEST(FoldTuples, ABodySharedByTwoLoopsIsLeftAlone) {
  // Both loops run @body (a top-level graph): its parameter cannot read either initial value.
  const std::string text = R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 2 : i64
  %2 = constant 1 : i64
  %3 = constant 1.0 : f32
  %4 = constant 3.0 : f32
  %5 = for_range(%0, %1, %2, @body, %3, %4) : (f32, f32)
  %6 = for_range(%0, %1, %2, @body, %4, %3) : (f32, f32)
  %7 = tuple_get(%5, index=0) : f32
  %8 = tuple_get(%6, index=0) : f32
  %9 = add(%7, %8) : f32
  return %9
}

graph @body(%i: i64, %acc: f32, %w: f32) -> (f32, f32) {
  %10 = add(%acc, %w) : f32
  %11 = make_tuple(%10, %w) : (f32, f32)
  return %11
}
)";
  EXPECT_EQ(after_pass(text, fold_tuples), text);
}

TEST(FoldTuples, NestedLoopsWithInvariantStateAtBothLevels) {
  const std::string out = after_pass(R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  %acc0 = constant 0.0 : f32
  %w0 = constant 0.25 : f32
  graph @main.outer(%i: i64, %acc: f32, %w: f32) -> (f32, f32) {
    graph @main.inner(%j: i64, %a: f32, %v: f32) -> (f32, f32) {
      %s = add(%a, %v) : f32
      %t = make_tuple(%s, %v) : (f32, f32)
      return %t
    }
    %r = for_range(%zero, %n, %one, @main.inner, %acc, %w) : (f32, f32)
    %x = tuple_get(%r, index=0) : f32
    %u = make_tuple(%x, %w) : (f32, f32)
    return %u
  }
  %r = for_range(%zero, %n, %one, @main.outer, %acc0, %w0) : (f32, f32)
  %a = tuple_get(%r, index=0) : f32
  return %a
}
)",
                                     fold_and_clean);
  EXPECT_EQ(out.find("%w"), std::string::npos) << out;
  EXPECT_EQ(out.find("%v"), std::string::npos) << out;
  EXPECT_NE(out.find("-> (f32,)"), std::string::npos) << out;
}

}  // namespace
}  // namespace spora::passes::testing
