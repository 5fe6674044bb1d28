// Small hand-built modules shared by the IR tests (interpreter, printer, parser, verifier).
// Each builder adds its graphs to m and returns the graph to call; the comment gives the
// program in DSL-like pseudocode.
#pragma once

#include "semantics/ir/ir.h"

namespace spora::ir::testing {

// straight(x: f32, y: f32) = (x + y) * x
Graph* build_straight_line(Module& m);
// outer(x: f32) = if x < 10 { if x < 5 { x * k } else { x + k } } else { k }   with k = 100
// (the innermost branches read x and k two graphs up; @big returns a parent node directly)
Graph* build_nested_closures(Module& m);
// collatz(n: i64) -> steps: while n > 1 { n = n even ? n // 2 : 3n + 1; steps += 1 }
Graph* build_collatz(Module& m);
// range_sum(start, stop, step: i64) = sum of range(start, stop, step); the loop is at line 7
Graph* build_range_sum(Module& m);
// fact(n: i64) = n < 2 ? 1 : n * fact(n - 1); the recursive call is at line 3
Graph* build_factorial(Module& m);
// each_sum(it: iter<f32>, init: f32) = init + sum of it
Graph* build_for_each_sum(Module& m);

// consts() -> a tuple: one constant of each printable kind (f32 with 1/3, 1e-8, -0.0, inf, nan;
// f64 0.1; i32 with INT32_MIN; bool; an empty f32[2,0]; a string needing escapes; a tuple)
Graph* build_constants(Module& m);
// @"odd graph" (flags jit, checkpoint; the entry): parameters named x, x, 3, "a b" and ""
Graph* build_odd_names(Module& m);
// main(x) = test_attrs(x, ...) with every attribute kind, set out of signature order
Graph* build_attrs(Module& m);

}  // namespace spora::ir::testing
