// eliminate_dead_code: unused nodes and graphs go; effects, nodes closures read, and the graphs
// the entry reaches stay; unread results of if/loops are dropped.
#include "semantics/passes/dce.h"

#include <gtest/gtest.h>

#include "semantics/ir/printer.h"
#include "semantics/iterable.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

TEST(Dce, RemovesUnusedNodesAndKeepsEffects) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 1.0 : f32
  %b = constant 2.0 : f32
  %unused = add(%a, %b) : f32
  %also = exp(%unused) : f32
  %m = mul(%a, %b) : f32
  %p = print(%b) : ()
  %t = constant true : bool
  %q = assert(%t) : ()
  return %m
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 1.0 : f32
  %1 = constant 2.0 : f32
  %2 = mul(%0, %1) : f32
  %3 = print(%1) : ()
  %4 = constant true : bool
  %5 = assert(%4) : ()
  return %2
}
)");
}

TEST(Dce, KeepsParentNodesThatNestedGraphsRead) {
  // %k is only read inside the branches (a closure); %dead is read by nobody.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 3.0 : f32
  %k = constant 100.0 : f32
  %dead = constant 7.0 : f32
  %c = constant true : bool
  graph @main.then() -> f32 {
    %m = mul(%x, %k) : f32
    %unused = neg(%m) : f32
    return %m
  }
  graph @main.else() -> f32 {
    return %k
  }
  graph @main.never() -> f32 {
    %z = add(%dead, %dead) : f32
    return %z
  }
  %r = if(%c, @main.then, @main.else) : f32
  return %r
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = constant 100.0 : f32
  %2 = constant true : bool
  graph @main.then() -> f32 {
    %3 = mul(%0, %1) : f32
    return %3
  }
  graph @main.else() -> f32 {
    return %1
  }
  %4 = if(%2, @main.then, @main.else) : f32
  return %4
}
)");
}

TEST(Dce, KeepsLoopsAndIfsWhoseBodiesPrintEvenWhenTheirResultIsUnused) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> () {
  %zero = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  %c = constant false : bool
  graph @main.loud(%i: i64, %acc: i64) -> (i64,) {
    %p = print(%i) : ()
    %s = add(%acc, %i) : i64
    %t = make_tuple(%s) : (i64,)
    return %t
  }
  graph @main.quiet(%i: i64, %acc: i64) -> (i64,) {
    %s = add(%acc, %i) : i64
    %t = make_tuple(%s) : (i64,)
    return %t
  }
  graph @main.yes() -> () {
    %p = print(%c) : ()
    return %p
  }
  graph @main.no() -> () {
    %u = make_tuple() : ()
    return %u
  }
  %r1 = for_range(%zero, %n, %one, @main.loud, %zero) : (i64,)
  %r2 = for_range(%zero, %n, %one, @main.quiet, %zero) : (i64,)
  %r3 = if(%c, @main.yes, @main.no) : ()
  %u = make_tuple() : ()
  return %u
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> () {
  %0 = constant 0 : i64
  %1 = constant 3 : i64
  %2 = constant 1 : i64
  %3 = constant false : bool
  graph @main.loud(%i: i64) -> () {
    %4 = print(%i) : ()
    %5 = make_tuple() : ()
    return %5
  }
  %6 = for_range(%0, %1, %2, @main.loud) : ()
  graph @main.yes() -> () {
    %7 = print(%3) : ()
    return %7
  }
  graph @main.no() -> () {
    %8 = make_tuple() : ()
    return %8
  }
  %9 = if(%3, @main.yes, @main.no) : ()
  %10 = make_tuple() : ()
  return %10
}
)");
}

TEST(Dce, CallsOfGraphsThatPrintStay) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> () {
  %a = constant 1.0 : f32
  %b = call @loud(%a) : f32
  %c = call @quiet(%a) : f32
  %u = make_tuple() : ()
  return %u
}
graph @loud(%x: f32) -> f32 {
  %p = print(%x) : ()
  return %x
}
graph @quiet(%x: f32) -> f32 {
  %n = neg(%x) : f32
  return %n
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> () {
  %0 = constant 1.0 : f32
  %1 = call @loud(%0) : f32
  %2 = make_tuple() : ()
  return %2
}

graph @loud(%x: f32) -> f32 {
  %3 = print(%x) : ()
  return %x
}
)");
}

TEST(Dce, GraphsTheEntryDoesNotReachGoButFlagTargetsStay) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 1.0 : f32
  %b = call @f(%a) : f32
  return %b
}
@"custom_grad=f_bwd" graph @f(%x: f32) -> f32 {
  %n = neg(%x) : f32
  return %n
}
graph @f_bwd(%x: f32, %d: f32) -> f32 {
  %n = neg(%d) : f32
  return %n
}
graph @helper(%x: f32) -> f32 {
  return %x
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 1.0 : f32
  %1 = call @f(%0) : f32
  return %1
}

@"custom_grad=f_bwd" graph @f(%x: f32) -> f32 {
  %2 = neg(%x) : f32
  return %2
}

graph @f_bwd(%x: f32, %d: f32) -> f32 {
  %3 = neg(%d) : f32
  return %3
}
)");
}

TEST(Dce, WithoutAnEntryEveryTopLevelGraphStays) {
  std::unique_ptr<ir::Module> m = parse(R"(
graph @a(%x: f32) -> f32 {
  %n = neg(%x) : f32
  %dead = exp(%x) : f32
  return %n
}
graph @b(%x: f32) -> f32 {
  return %x
}
)");
  eliminate_dead_code(*m);
  EXPECT_EQ(ir::print_module(*m), R"(graph @a(%x: f32) -> f32 {
  %0 = neg(%x) : f32
  return %0
}

graph @b(%x: f32) -> f32 {
  return %x
}
)");
}

TEST(Dce, UnreadLoopStateIsDroppedWithWhatComputesIt) {
  // (acc, sq): only acc is read after the loop and sq feeds nothing else: sq goes.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 4 : i64
  %one = constant 1 : i64
  %f0 = constant 0.0 : f32
  graph @main.body(%i: i64, %acc: f32, %sq: f32) -> (f32, f32) {
    %x = cast(%i, dtype=f32) : f32
    %a = add(%acc, %x) : f32
    %xx = mul(%x, %x) : f32
    %s = add(%sq, %xx) : f32
    %t = make_tuple(%a, %s) : (f32, f32)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %f0, %f0) : (f32, f32)
  %acc = tuple_get(%r, index=0) : f32
  return %acc
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 4 : i64
  %2 = constant 1 : i64
  %3 = constant 0.0 : f32
  graph @main.body(%i: i64, %acc: f32) -> (f32,) {
    %4 = cast(%i, dtype=f32) : f32
    %5 = add(%acc, %4) : f32
    %6 = make_tuple(%5) : (f32,)
    return %6
  }
  %7 = for_range(%0, %1, %2, @main.body, %3) : (f32,)
  %8 = tuple_get(%7, index=0) : f32
  return %8
}
)");
}

TEST(Dce, UnreadStateThatFeedsReadStateOrEffectsStays) {
  // b is never read after the loop, but a's next value and a print read it; c only feeds d,
  // which is unread too: c and d go together.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  %f1 = constant 1.0 : f32
  graph @main.body(%i: i64, %a: f32, %b: f32, %c: f32, %d: f32) -> (f32, f32, f32, f32) {
    %a1 = add(%a, %b) : f32
    %p = print(%b) : ()
    %c1 = mul(%c, %d) : f32
    %d1 = add(%d, %c) : f32
    %t = make_tuple(%a1, %b, %c1, %d1) : (f32, f32, f32, f32)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %f1, %f1, %f1, %f1) : (f32, f32, f32, f32)
  %a = tuple_get(%r, index=0) : f32
  return %a
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 3 : i64
  %2 = constant 1 : i64
  %3 = constant 1.0 : f32
  graph @main.body(%i: i64, %a: f32, %b: f32) -> (f32, f32) {
    %4 = add(%a, %b) : f32
    %5 = print(%b) : ()
    %6 = make_tuple(%4, %b) : (f32, f32)
    return %6
  }
  %7 = for_range(%0, %1, %2, @main.body, %3, %3) : (f32, f32)
  %8 = tuple_get(%7, index=0) : f32
  return %8
}
)");
}

TEST(Dce, WhileStateTheConditionReadsStays) {
  // n is unread after the loop but decides when it stops.
  const std::string text = R"(graph @main() -> i64 {
  %0 = constant 0 : i64
  %1 = constant 5 : i64
  graph @main.cond(%k: i64, %n: i64) -> bool {
    %2 = lt(%k, %n) : bool
    return %2
  }
  graph @main.body(%k.1: i64, %n.1: i64) -> (i64, i64) {
    %3 = constant 1 : i64
    %4 = add(%k.1, %3) : i64
    %5 = sub(%n.1, %3) : i64
    %6 = make_tuple(%4, %5) : (i64, i64)
    return %6
  }
  %7 = while(@main.cond, @main.body, %0, %1) : (i64, i64)
  %8 = tuple_get(%7, index=0) : i64
  return %8
}
)";
  EXPECT_EQ(after_pass(text, eliminate_dead_code), text);
}

TEST(Dce, UnreadStateOfALoopWithNestedControlFlowIsDropped) {
  // The body holds an `if` (a nested graph) reading acc; the unread `count` still goes.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 4 : i64
  %one = constant 1 : i64
  %f0 = constant 0.0 : f32
  graph @main.body(%i: i64, %acc: f32, %count: i64) -> (f32, i64) {
    %two = constant 2 : i64
    %c = lt(%i, %two) : bool
    graph @main.small() -> f32 {
      %x = cast(%i, dtype=f32) : f32
      %s = add(%acc, %x) : f32
      return %s
    }
    graph @main.big() -> f32 {
      return %acc
    }
    %a = if(%c, @main.small, @main.big) : f32
    %k = add(%count, %one) : i64
    %t = make_tuple(%a, %k) : (f32, i64)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %f0, %zero) : (f32, i64)
  %acc = tuple_get(%r, index=0) : f32
  return %acc
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 4 : i64
  %2 = constant 1 : i64
  %3 = constant 0.0 : f32
  graph @main.body(%i: i64, %acc: f32) -> (f32,) {
    %4 = constant 2 : i64
    %5 = lt(%i, %4) : bool
    graph @main.small() -> f32 {
      %6 = cast(%i, dtype=f32) : f32
      %7 = add(%acc, %6) : f32
      return %7
    }
    graph @main.big() -> f32 {
      return %acc
    }
    %8 = if(%5, @main.small, @main.big) : f32
    %9 = make_tuple(%8) : (f32,)
    return %9
  }
  %10 = for_range(%0, %1, %2, @main.body, %3) : (f32,)
  %11 = tuple_get(%10, index=0) : f32
  return %11
}
)");
}

TEST(Dce, UnreadIfElementsAreDropped) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %x = constant 2.0 : f32
  %c = constant true : bool
  graph @main.then() -> (f32, f32) {
    %a = exp(%x) : f32
    %b = log(%x) : f32
    %t = make_tuple(%a, %b) : (f32, f32)
    return %t
  }
  graph @main.else() -> (f32, f32) {
    %a = neg(%x) : f32
    %t = make_tuple(%a, %x) : (f32, f32)
    return %t
  }
  %r = if(%c, @main.then, @main.else) : (f32, f32)
  %y = tuple_get(%r, index=1) : f32
  return %y
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = constant true : bool
  graph @main.then() -> (f32,) {
    %2 = log(%0) : f32
    %3 = make_tuple(%2) : (f32,)
    return %3
  }
  graph @main.else() -> (f32,) {
    %4 = make_tuple(%0) : (f32,)
    return %4
  }
  %5 = if(%1, @main.then, @main.else) : (f32,)
  %6 = tuple_get(%5, index=0) : f32
  return %6
}
)");
}

TEST(Dce, TapeListsOfADroppedResultGo) {
  // A loop that records a tape (list_push) nobody reads: the tape state is dropped.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %zero = constant 0 : i64
  %n = constant 3 : i64
  %one = constant 1 : i64
  %f0 = constant 1.0 : f32
  %l0 = list_empty(elem="f32") : list<f32>
  graph @main.body(%i: i64, %x: f32, %tape: list<f32>) -> (f32, list<f32>) {
    %t1 = list_push(%tape, %x) : list<f32>
    %x1 = add(%x, %x) : f32
    %t = make_tuple(%x1, %t1) : (f32, list<f32>)
    return %t
  }
  %r = for_range(%zero, %n, %one, @main.body, %f0, %l0) : (f32, list<f32>)
  %x = tuple_get(%r, index=0) : f32
  return %x
}
)",
                       eliminate_dead_code),
            R"(graph @main() -> f32 {
  %0 = constant 0 : i64
  %1 = constant 3 : i64
  %2 = constant 1 : i64
  %3 = constant 1.0 : f32
  graph @main.body(%i: i64, %x: f32) -> (f32,) {
    %4 = add(%x, %x) : f32
    %5 = make_tuple(%4) : (f32,)
    return %5
  }
  %6 = for_range(%0, %1, %2, @main.body, %3) : (f32,)
  %7 = tuple_get(%6, index=0) : f32
  return %7
}
)");
}

// Yields 1.0, 2.0, 3.0.
struct Three : sem::Iterable {
  int i = 0;
  void reset() override { i = 0; }
  bool next(sem::Value& out) override {
    if (i == 3) return false;
    out = f32(++i);
    return true;
  }
  std::string describe() const override { return "three"; }
};

TEST(Dce, ForEachStateIsDroppedLikeOtherLoops) {
  sem::Value it;
  it.kind = sem::Value::Kind::Opaque;
  it.opaque = std::make_shared<Three>();
  EXPECT_EQ(after_pass(R"(
graph @main(%it: iter<f32>) -> f32 {
  %zero = constant 0.0 : f32
  graph @main.body(%x: f32, %sum: f32, %max: f32) -> (f32, f32) {
    %s = add(%sum, %x) : f32
    %m = maximum(%max, %x) : f32
    %t = make_tuple(%s, %m) : (f32, f32)
    return %t
  }
  %r = for_each(%it, @main.body, %zero, %zero) : (f32, f32)
  %s = tuple_get(%r, index=0) : f32
  return %s
}
)",
                       eliminate_dead_code, {it}),
            R"(graph @main(%it: iter<f32>) -> f32 {
  %0 = constant 0.0 : f32
  graph @main.body(%x: f32, %sum: f32) -> (f32,) {
    %1 = add(%sum, %x) : f32
    %2 = make_tuple(%1) : (f32,)
    return %2
  }
  %3 = for_each(%it, @main.body, %0) : (f32,)
  %4 = tuple_get(%3, index=0) : f32
  return %4
}
)");
}

}  // namespace
}  // namespace spora::passes::testing
