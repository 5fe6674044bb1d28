// eliminate_common_subexpressions: equal constants and equal applies merge; effects, stateful
// values and different bits never do; nested graphs reuse what their parents computed before
// them, never what comes later or lives in a sibling.
#include "semantics/passes/cse.h"

#include <gtest/gtest.h>

#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

TEST(Cse, EqualConstantsAndAppliesMerge) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = constant 2.0 : f32
  %x = mul(%a, %a) : f32
  %y = mul(%b, %b) : f32
  %s = add(%x, %y) : f32
  %t = add(%x, %y) : f32
  %u = add(%y, %x) : f32
  %r = mul(%s, %t) : f32
  %q = mul(%r, %u) : f32
  return %q
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = mul(%0, %0) : f32
  %2 = add(%1, %1) : f32
  %3 = mul(%2, %2) : f32
  %4 = mul(%3, %2) : f32
  return %4
}
)");
}

TEST(Cse, DifferentBitsTypesOrAttributesStayApart) {
  const std::string text = R"(graph @main() -> f32 {
  %0 = constant 0.0 : f32
  %1 = constant -0.0 : f32
  %2 = constant 0.0 : f64
  %3 = constant [1.0, 2.0] : f32[2]
  %4 = constant [1.0, 2.5] : f32[2]
  %5 = sum(%3, axis=[0]) : f32
  %6 = sum(%3, axis=[0], keepdims=true) : f32[1]
  %7 = sum(%4, axis=[0]) : f32
  %8 = add(%0, %1) : f32
  %9 = add(%5, %7) : f32
  %10 = add(%8, %9) : f32
  %11 = print(%2, %6) : ()
  return %10
}
)";
  EXPECT_EQ(after_pass(text, eliminate_common_subexpressions), text);
}

TEST(Cse, NansWithTheSameBitsAreOneConstant) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32[2] {
  %a = constant [nan, 1.0] : f32[2]
  %b = constant [nan, 1.0] : f32[2]
  %c = add(%a, %b) : f32[2]
  return %c
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32[2] {
  %0 = constant [nan, 1.0] : f32[2]
  %1 = add(%0, %0) : f32[2]
  return %1
}
)");
}

TEST(Cse, EffectsNeverMerge) {
  const std::string text = R"(graph @main() -> () {
  %0 = constant 1.0 : f32
  %1 = print(%0) : ()
  %2 = print(%0) : ()
  %3 = constant true : bool
  %4 = assert(%3) : ()
  %5 = assert(%3) : ()
  return %5
}
)";
  EXPECT_EQ(after_pass(text, eliminate_common_subexpressions), text);
}

TEST(Cse, CallsOfPureGraphsMergeCallsOfPrintingGraphsDoNot) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 1.0 : f32
  %b = call @pure(%a) : f32
  %c = call @pure(%a) : f32
  %d = call @loud(%a) : f32
  %e = call @loud(%a) : f32
  %s = add(%b, %c) : f32
  %t = add(%d, %e) : f32
  %u = add(%s, %t) : f32
  return %u
}
graph @pure(%x: f32) -> f32 {
  %n = neg(%x) : f32
  return %n
}
graph @loud(%x: f32) -> f32 {
  %p = print(%x) : ()
  return %x
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32 {
  %0 = constant 1.0 : f32
  %1 = call @pure(%0) : f32
  %2 = call @loud(%0) : f32
  %3 = call @loud(%0) : f32
  %4 = add(%1, %1) : f32
  %5 = add(%2, %3) : f32
  %6 = add(%4, %5) : f32
  return %6
}

graph @pure(%x: f32) -> f32 {
  %7 = neg(%x) : f32
  return %7
}

graph @loud(%x: f32) -> f32 {
  %8 = print(%x) : ()
  return %x
}
)");
}

TEST(Cse, RandomDrawsWithTheSameSeedAreTheSameTensor) {
  // normal(seed=1) twice is one tensor (semantics/rng.h is counter-based); seed=2 is another.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32[3] {
  %a = normal(shape=[3], seed=1) : f32[3]
  %b = normal(shape=[3], seed=1) : f32[3]
  %c = normal(shape=[3], seed=2) : f32[3]
  %s = add(%a, %b) : f32[3]
  %t = add(%s, %c) : f32[3]
  return %t
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32[3] {
  %0 = normal(shape=[3], seed=1) : f32[3]
  %1 = normal(shape=[3], seed=2) : f32[3]
  %2 = add(%0, %0) : f32[3]
  %3 = add(%2, %1) : f32[3]
  return %3
}
)");
}

TEST(Cse, TapeListsAreNeverShared) {
  // Two list_empty() are two lists: merging them would make both loops push onto one.
  const std::string text = R"(graph @main() -> i64 {
  %0 = list_empty(elem="f32") : list<f32>
  %1 = list_empty(elem="f32") : list<f32>
  %2 = constant 1.0 : f32
  %3 = list_push(%0, %2) : list<f32>
  %4 = list_push(%1, %2) : list<f32>
  %5 = list_len(%3) : i64
  %6 = list_len(%4) : i64
  %7 = add(%5, %6) : i64
  return %7
}
)";
  EXPECT_EQ(after_pass(text, eliminate_common_subexpressions), text);
}

TEST(Cse, ANestedGraphReusesWhatItsParentComputedBeforeIt) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 3.0 : f32
  %c = constant true : bool
  %sq = mul(%x, %x) : f32
  graph @main.then() -> f32 {
    %three = constant 3.0 : f32
    %s = mul(%x, %x) : f32
    %t = add(%s, %three) : f32
    return %t
  }
  graph @main.else() -> f32 {
    %s = mul(%x, %x) : f32
    return %s
  }
  %r = if(%c, @main.then, @main.else) : f32
  return %r
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = constant true : bool
  %2 = mul(%0, %0) : f32
  graph @main.then() -> f32 {
    %3 = add(%2, %0) : f32
    return %3
  }
  graph @main.else() -> f32 {
    return %2
  }
  %4 = if(%1, @main.then, @main.else) : f32
  return %4
}
)");
}

TEST(Cse, NothingMovesOutOfScope) {
  // The branches compute exp(x) each (siblings: neither may read the other's), and @main
  // computes it again after the `if` (it may not read a branch's node, and the branches may
  // not read a node of @main that comes after them). A loop body's node that depends on its
  // parameter is not merged with the parent's equal-looking one either.
  const std::string text = R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = constant true : bool
  graph @main.then() -> f32 {
    %2 = exp(%0) : f32
    return %2
  }
  graph @main.else() -> f32 {
    %3 = exp(%0) : f32
    %4 = neg(%3) : f32
    return %4
  }
  %5 = if(%1, @main.then, @main.else) : f32
  %6 = exp(%0) : f32
  %7 = add(%5, %6) : f32
  %8 = constant 0 : i64
  %9 = constant 2 : i64
  %10 = constant 1 : i64
  graph @main.body(%i: i64, %acc: f32) -> (f32,) {
    %11 = add(%acc, %6) : f32
    %12 = make_tuple(%11) : (f32,)
    return %12
  }
  %13 = for_range(%8, %9, %10, @main.body, %7) : (f32,)
  %14 = tuple_get(%13, index=0) : f32
  %15 = add(%7, %6) : f32
  %16 = add(%14, %15) : f32
  return %16
}
)";
  EXPECT_EQ(after_pass(text, eliminate_common_subexpressions), text);
}

TEST(Cse, AGraphUsedFromADeeperGraphOnlySeesItsOwnAncestors) {
  // @main.inner is nested in @main but first named inside @main.mid: it may reuse %sq of
  // @main (computed before @main.mid runs), not %m of @main.mid (not an ancestor of it).
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 2.0 : f32
  %c = constant true : bool
  %sq = mul(%x, %x) : f32
  graph @main.inner() -> f32 {
    %a = mul(%x, %x) : f32
    %b = neg(%x) : f32
    %s = add(%a, %b) : f32
    return %s
  }
  graph @main.mid() -> f32 {
    %m = neg(%x) : f32
    %r = if(%c, @main.inner, @main.inner) : f32
    %s = add(%m, %r) : f32
    return %s
  }
  graph @main.other() -> f32 {
    return %x
  }
  %r = if(%c, @main.mid, @main.other) : f32
  return %r
}
)",
                       eliminate_common_subexpressions),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = constant true : bool
  %2 = mul(%0, %0) : f32
  graph @main.mid() -> f32 {
    %3 = neg(%0) : f32
    %4 = if(%1, @main.inner, @main.inner) : f32
    %5 = add(%3, %4) : f32
    return %5
  }
  graph @main.other() -> f32 {
    return %0
  }
  %6 = if(%1, @main.mid, @main.other) : f32
  graph @main.inner() -> f32 {
    %7 = neg(%0) : f32
    %8 = add(%2, %7) : f32
    return %8
  }
  return %6
}
)");
}

}  // namespace
}  // namespace spora::passes::testing
