// The printer: exact golden text for the shared modules, constants, names, flags, attributes.
#include "semantics/ir/printer.h"

#include <gtest/gtest.h>

#include "tests/ir/test_modules.h"
#include "tests/ir/test_prims.h"

namespace spora::ir::testing {
namespace {

TEST(Printer, FactorialGolden) {
  Module m;
  build_factorial(m);
  EXPECT_EQ(print_module(m), R"(graph @fact(%n: i64) -> i64 {
  %0 = constant 2 : i64
  %1 = lt(%n, %0) : bool
  graph @base() -> i64 {
    %2 = constant 1 : i64
    return %2
  }
  graph @rec() -> i64 {
    %3 = constant 1 : i64
    %4 = sub(%n, %3) : i64
    %5 = call @fact(%4) : i64
    %6 = mul(%n, %5) : i64
    return %6
  }
  %7 = if(%1, @base, @rec) : i64
  return %7
}
)");
}

TEST(Printer, CollatzGoldenWithNestedClosuresAndAttributes) {
  Module m;
  build_collatz(m);
  EXPECT_EQ(print_module(m), R"(graph @collatz(%n: i64) -> i64 {
  %0 = constant 0 : i64
  graph @cond(%n.1: i64, %steps: i64) -> bool {
    %1 = constant 1 : i64
    %2 = lt(%1, %n.1) : bool
    return %2
  }
  graph @step(%n.2: i64, %steps.1: i64) -> (i64, i64) {
    %3 = constant 2 : i64
    %4 = mod(%n.2, %3) : i64
    %5 = eq(%4, %0) : bool
    graph @half() -> i64 {
      %6 = floordiv(%n.2, %3) : i64
      return %6
    }
    graph @triple() -> i64 {
      %7 = constant 3 : i64
      %8 = mul(%7, %n.2) : i64
      %9 = constant 1 : i64
      %10 = add(%8, %9) : i64
      return %10
    }
    %11 = if(%5, @half, @triple) : i64
    %12 = constant 1 : i64
    %13 = add(%steps.1, %12) : i64
    %14 = make_tuple(%11, %13) : (i64, i64)
    return %14
  }
  %15 = while(@cond, @step, %n, %0) : (i64, i64)
  %16 = tuple_get(%15, index=1) : i64
  return %16
}
)");
}

TEST(Printer, NumbersRunAcrossTheModuleAndParameterNamesRestartPerGraph) {
  Module m;
  build_straight_line(m);
  build_range_sum(m);
  build_for_each_sum(m);
  EXPECT_EQ(print_module(m), R"(graph @straight(%x: f32, %y: f32) -> f32 {
  %0 = add(%x, %y) : f32
  %1 = mul(%0, %x) : f32
  return %1
}

graph @range_sum(%start: i64, %stop: i64, %step: i64) -> i64 {
  %2 = constant 0 : i64
  graph @body(%i: i64, %acc: i64) -> (i64,) {
    %3 = add(%acc, %i) : i64
    %4 = make_tuple(%3) : (i64,)
    return %4
  }
  %5 = for_range(%start, %stop, %step, @body, %2) : (i64,)
  %6 = tuple_get(%5, index=0) : i64
  return %6
}

graph @each_sum(%it: iter<f32>, %init: f32) -> f32 {
  graph @body.1(%e: f32, %acc: f32) -> (f32,) {
    %7 = add(%acc, %e) : f32
    %8 = make_tuple(%7) : (f32,)
    return %8
  }
  %9 = for_each(%it, @body.1, %init) : (f32,)
  %10 = tuple_get(%9, index=0) : f32
  return %10
}
)");
}

TEST(Printer, NestedGraphsPrintBeforeFirstUseAndAParentValueCanBeTheOutput) {
  Module m;
  build_nested_closures(m);
  EXPECT_EQ(print_module(m), R"(graph @outer(%x: f32) -> f32 {
  %0 = constant 100.0 : f32
  %1 = constant 10.0 : f32
  %2 = lt(%x, %1) : bool
  graph @small() -> f32 {
    %3 = constant 5.0 : f32
    %4 = lt(%x, %3) : bool
    graph @tiny() -> f32 {
      %5 = mul(%x, %0) : f32
      return %5
    }
    graph @mid() -> f32 {
      %6 = add(%x, %0) : f32
      return %6
    }
    %7 = if(%4, @tiny, @mid) : f32
    return %7
  }
  graph @big() -> f32 {
    return %0
  }
  %8 = if(%2, @small, @big) : f32
  return %8
}
)");
}

TEST(Printer, ConstantsPrintTheirWholeValueExactly) {
  Module m;
  build_constants(m);
  EXPECT_EQ(print_module(m), R"(graph @consts() -> (f32, i64, ()) {
  %0 = constant [[1.0, 2.5, -3.0], [1e-08, 0.33333334, -0.0]] : f32[2,3]
  %1 = constant [inf, -inf, nan] : f32[3]
  %2 = constant 0.1 : f64
  %3 = constant [7, -2147483648] : i32[2]
  %4 = constant [false, true] : bool[2]
  %5 = constant [[], []] : f32[2,0]
  %6 = constant "say \"hi\"\n\t\x01\\" : str
  %7 = constant (1.5, 3, ()) : (f32, i64, ())
  return %7
}
)");
}

TEST(Printer, NamesFlagsEntryAndQuoting) {
  Module m;
  build_odd_names(m);
  EXPECT_EQ(print_module(m), R"(entry @"odd graph"

@jit @checkpoint graph @"odd graph"(%x: f32, %x.1: f32, %3.1: f32, %"a b": f32, %0: f32) -> f32 {
  %1 = add(%x, %x.1) : f32
  %2 = add(%1, %3.1) : f32
  %3 = add(%2, %"a b") : f32
  %4 = add(%3, %0) : f32
  return %4
}
)");
}

TEST(Printer, AttributesFollowTheSignatureOrder) {
  Module m;
  build_attrs(m);
  EXPECT_EQ(print_module(m), R"(graph @main(%x: f32) -> f32 {
  %0 = test_attrs(%x, axis=-1, scale=2.0, name="q\"", dims=[1,-2], dt=bf16, keep=true, opt=none) : f32
  return %0
}
)");
}

TEST(Printer, PrintGraphNumbersFreeVariablesFirst) {
  Module m;
  Graph* outer = build_nested_closures(m);
  Graph* small = m.children(outer).at(0);
  EXPECT_EQ(print_graph(*small), R"(graph @small() -> f32 {
  %1 = constant 5.0 : f32
  %2 = lt(%x, %1) : bool
  graph @tiny() -> f32 {
    %3 = mul(%x, %0) : f32
    return %3
  }
  graph @mid() -> f32 {
    %4 = add(%x, %0) : f32
    return %4
  }
  %5 = if(%2, @tiny, @mid) : f32
  return %5
}
)");
}

TEST(Printer, IsDeterministicAndNodeNamesAgreeWithIt) {
  Module m;
  Graph* g = build_collatz(m);
  EXPECT_EQ(print_module(m), print_module(m));
  NodeNames names(m);
  EXPECT_EQ(names(g->params[0]), "%n");
  EXPECT_EQ(names(g->output), "%16");
  EXPECT_EQ(names(g->nodes[0]), "%0");
  Node* cond_ref = g->nodes[g->nodes.size() - 4];
  ASSERT_NE(cond_ref->graph_value, nullptr);
  EXPECT_EQ(names(cond_ref), "@cond");
}

}  // namespace
}  // namespace spora::ir::testing
