// inline_calls: calls replaced by copies of their callees, callees first; recursion, checkpoint
// and custom_grad graphs stay calls; closures and loop bodies are cloned under the caller.
#include "semantics/passes/inline.h"

#include <gtest/gtest.h>

#include "semantics/ir/printer.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

TEST(Inline, ReplacesACallByTheCalleesBodyAndRemovesTheCallee) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 3.0 : f32
  %b = call @square_plus(%a, %a) : f32
  %c = print(%b) : ()
  return %b
}
graph @square_plus(%x: f32, %y: f32) -> f32 {
  %s = mul(%x, %x) : f32
  %t = add(%s, %y) : f32
  return %t
}
)",
                       inline_calls),
            R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = mul(%0, %0) : f32
  %2 = add(%1, %0) : f32
  %3 = print(%2) : ()
  return %2
}
)");
}

TEST(Inline, CalleesAreInlinedBeforeTheirCallers) {
  // main -> f -> g, and f calls g twice: every call disappears, g's body appears twice.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = call @f(%a) : f32
  return %b
}
graph @f(%x: f32) -> f32 {
  %p = call @g(%x) : f32
  %q = call @g(%p) : f32
  return %q
}
graph @g(%x: f32) -> f32 {
  %y = add(%x, %x) : f32
  return %y
}
)",
                       inline_calls),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = add(%0, %0) : f32
  %2 = add(%1, %1) : f32
  return %2
}
)");
}

TEST(Inline, ACalleeReturningItsParameterOrAFreeValue) {
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = call @id(%a) : f32
  %c = add(%b, %b) : f32
  return %c
}
graph @id(%x: f32) -> f32 {
  return %x
}
)",
                       inline_calls),
            R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = add(%0, %0) : f32
  return %1
}
)");
}

TEST(Inline, RecursionStaysACall) {
  const std::string text = R"(graph @main() -> i64 {
  %0 = constant 10 : i64
  %1 = call @fact(%0) : i64
  return %1
}

graph @fact(%n: i64) -> i64 {
  %2 = constant 2 : i64
  %3 = lt(%n, %2) : bool
  graph @fact.then() -> i64 {
    %4 = constant 1 : i64
    return %4
  }
  graph @fact.else() -> i64 {
    %5 = constant 1 : i64
    %6 = sub(%n, %5) : i64
    %7 = call @fact(%6) : i64
    %8 = mul(%n, %7) : i64
    return %8
  }
  %9 = if(%3, @fact.then, @fact.else) : i64
  return %9
}
)";
  EXPECT_EQ(after_pass(text, inline_calls), text);
}

TEST(Inline, MutualRecursionStaysACallButItsNonRecursiveCalleesInline) {
  const std::string out = after_pass(R"(
graph @main() -> i64 {
  %a = constant 7 : i64
  %b = call @even(%a) : i64
  return %b
}
graph @even(%n: i64) -> i64 {
  %z = constant 0 : i64
  %c = le(%n, %z) : bool
  graph @even.stop() -> i64 {
    %one = constant 1 : i64
    return %one
  }
  graph @even.go() -> i64 {
    %m = call @dec(%n) : i64
    %r = call @odd(%m) : i64
    return %r
  }
  %v = if(%c, @even.stop, @even.go) : i64
  return %v
}
graph @odd(%n: i64) -> i64 {
  %z = constant 0 : i64
  %c = le(%n, %z) : bool
  graph @odd.stop() -> i64 {
    %zero = constant 0 : i64
    return %zero
  }
  graph @odd.go() -> i64 {
    %m = call @dec(%n) : i64
    %r = call @even(%m) : i64
    return %r
  }
  %v = if(%c, @odd.stop, @odd.go) : i64
  return %v
}
graph @dec(%n: i64) -> i64 {
  %one = constant 1 : i64
  %m = sub(%n, %one) : i64
  return %m
}
)",
                                     inline_calls);
  EXPECT_NE(out.find("call @even("), std::string::npos) << out;
  EXPECT_NE(out.find("call @odd("), std::string::npos) << out;
  EXPECT_EQ(out.find("call @dec("), std::string::npos) << out;
  EXPECT_EQ(out.find("graph @dec("), std::string::npos) << out;
}

TEST(Inline, RecursionThroughALoopBodyStaysACall) {
  // @f's loop body calls @f: inlining @f would copy the body, which calls @f, forever.
  const std::string text = R"(graph @main() -> i64 {
  %0 = constant 3 : i64
  %1 = call @f(%0) : i64
  return %1
}

graph @f(%n: i64) -> i64 {
  %2 = constant 0 : i64
  %3 = constant 1 : i64
  graph @f.body(%i: i64, %acc: i64) -> (i64,) {
    %4 = call @f(%i) : i64
    %5 = add(%acc, %4) : i64
    %6 = add(%5, %3) : i64
    %7 = make_tuple(%6) : (i64,)
    return %7
  }
  %8 = for_range(%2, %n, %3, @f.body, %2) : (i64,)
  %9 = tuple_get(%8, index=0) : i64
  return %9
}
)";
  EXPECT_EQ(after_pass(text, inline_calls), text);
}

TEST(Inline, CheckpointAndCustomGradGraphsStayCalls) {
  const std::string text = R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = call @heavy(%0) : f32
  %2 = call @own_grad(%1) : f32
  %3 = call @plain(%2) : f32
  return %3
}

@checkpoint graph @heavy(%x: f32) -> f32 {
  %4 = mul(%x, %x) : f32
  return %4
}

@"custom_grad=own_grad_bwd" graph @own_grad(%x: f32) -> f32 {
  %5 = exp(%x) : f32
  return %5
}

graph @own_grad_bwd(%x: f32, %d: f32) -> f32 {
  return %d
}

graph @plain(%x: f32) -> f32 {
  %6 = neg(%x) : f32
  return %6
}
)";
  EXPECT_EQ(after_pass(text, inline_calls), R"(graph @main() -> f32 {
  %0 = constant 2.0 : f32
  %1 = call @heavy(%0) : f32
  %2 = call @own_grad(%1) : f32
  %3 = neg(%2) : f32
  return %3
}

@checkpoint graph @heavy(%x: f32) -> f32 {
  %4 = mul(%x, %x) : f32
  return %4
}

@"custom_grad=own_grad_bwd" graph @own_grad(%x: f32) -> f32 {
  %5 = exp(%x) : f32
  return %5
}

graph @own_grad_bwd(%x: f32, %d: f32) -> f32 {
  return %d
}
)");
}

TEST(Inline, LoopBodiesAndClosuresOfTheCalleeAreClonedUnderTheCaller) {
  // @sum_to's loop body reads @sum_to's parameter %k (a closure); after inlining, the copy of
  // the body is nested in @main and reads the argument instead.
  EXPECT_EQ(after_pass(R"(
graph @main() -> i64 {
  %a = constant 4 : i64
  %b = call @sum_to(%a) : i64
  %c = call @sum_to(%b) : i64
  return %c
}
graph @sum_to(%k: i64) -> i64 {
  %zero = constant 0 : i64
  %one = constant 1 : i64
  graph @sum_to.body(%i: i64, %acc: i64) -> (i64,) {
    %s = add(%acc, %i) : i64
    %t = add(%s, %k) : i64
    %u = make_tuple(%t) : (i64,)
    return %u
  }
  %r = for_range(%zero, %k, %one, @sum_to.body, %zero) : (i64,)
  %v = tuple_get(%r, index=0) : i64
  return %v
}
)",
                       inline_calls),
            R"(graph @main() -> i64 {
  %0 = constant 4 : i64
  %1 = constant 0 : i64
  %2 = constant 1 : i64
  graph @sum_to.body.1(%i: i64, %acc: i64) -> (i64,) {
    %3 = add(%acc, %i) : i64
    %4 = add(%3, %0) : i64
    %5 = make_tuple(%4) : (i64,)
    return %5
  }
  %6 = for_range(%1, %0, %2, @sum_to.body.1, %1) : (i64,)
  %7 = tuple_get(%6, index=0) : i64
  %8 = constant 0 : i64
  %9 = constant 1 : i64
  graph @sum_to.body.2(%i.1: i64, %acc.1: i64) -> (i64,) {
    %10 = add(%acc.1, %i.1) : i64
    %11 = add(%10, %7) : i64
    %12 = make_tuple(%11) : (i64,)
    return %12
  }
  %13 = for_range(%8, %7, %9, @sum_to.body.2, %8) : (i64,)
  %14 = tuple_get(%13, index=0) : i64
  return %14
}
)");
}

TEST(Inline, ALocalFunctionReadingItsParentsNodes) {
  // @outer.scale is nested in @outer and reads %w of @outer; the call is inlined in place.
  EXPECT_EQ(after_pass(R"(
graph @main() -> f32 {
  %a = constant 3.0 : f32
  %b = call @outer(%a) : f32
  return %b
}
graph @outer(%x: f32) -> f32 {
  %w = constant 10.0 : f32
  graph @outer.scale(%v: f32) -> f32 {
    %m = mul(%v, %w) : f32
    return %m
  }
  %r = call @outer.scale(%x) : f32
  %s = call @outer.scale(%r) : f32
  return %s
}
)",
                       inline_calls),
            R"(graph @main() -> f32 {
  %0 = constant 3.0 : f32
  %1 = constant 10.0 : f32
  %2 = mul(%0, %1) : f32
  %3 = mul(%2, %1) : f32
  return %3
}
)");
}

TEST(Inline, EffectsKeepTheirOrder) {
  const std::string out = after_pass(R"(
graph @main() -> () {
  %a = constant 1.0 : f32
  %b = constant 2.0 : f32
  %p = print(%a) : ()
  %c = call @show(%b) : ()
  %d = call @show(%a) : ()
  %q = print(%b) : ()
  return %q
}
graph @show(%x: f32) -> () {
  %s = constant "show" : str
  %p = print(%s, %x) : ()
  return %p
}
)",
                                     inline_calls, {}, Effects::copied);
  EXPECT_EQ(out.find("call"), std::string::npos) << out;
}

TEST(Inline, NestedGraphsThatNameTheirSiblingsAreClonedTogether) {
  // @f.leaf and @f.other are nested in @f but only named from @f.outer, a sibling: the copies
  // must name each other's copies (the verifier in after_pass checks visibility).
  const std::string out = after_pass(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = call @f(%a) : f32
  return %b
}
graph @f(%x: f32) -> f32 {
  %c = constant true : bool
  graph @f.leaf() -> f32 {
    %n = neg(%x) : f32
    return %n
  }
  graph @f.other() -> f32 {
    return %x
  }
  graph @f.outer() -> f32 {
    %r = if(%c, @f.leaf, @f.other) : f32
    return %r
  }
  graph @f.no() -> f32 {
    return %x
  }
  %r = if(%c, @f.outer, @f.no) : f32
  return %r
}
)",
                                     inline_calls);
  EXPECT_EQ(out.find("graph @f("), std::string::npos) << out;
  EXPECT_NE(out.find("if(%1, @f.leaf.1, @f.other.1)"), std::string::npos) << out;
}

TEST(Inline, WithoutAnEntryTopLevelGraphsStay) {
  // A library module: @lib_a is inlined into @lib_b but stays, it is part of the interface.
  std::unique_ptr<ir::Module> m = parse(R"(
graph @lib_a(%x: f32) -> f32 {
  %n = neg(%x) : f32
  return %n
}
graph @lib_b(%x: f32) -> f32 {
  %c = call @lib_a(%x) : f32
  return %c
}
)");
  ASSERT_EQ(m->entry, nullptr);
  inline_calls(*m);
  EXPECT_EQ(ir::print_module(*m), R"(graph @lib_a(%x: f32) -> f32 {
  %0 = neg(%x) : f32
  return %0
}

graph @lib_b(%x: f32) -> f32 {
  %1 = neg(%x) : f32
  return %1
}
)");
}

}  // namespace
}  // namespace spora::passes::testing
