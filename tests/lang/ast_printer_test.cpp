// print_ast: the stable tree text (golden), with and without ranges; to_source.
#include <gtest/gtest.h>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

TEST(AstPrinter, WholeModuleGolden) {
  Parsed p = parse_ok(R"(import std.nn as nn
let n = 3
@custom_grad(bwd, mode="x")
def f(x: f32[B, 784], k: int = 2) -> f32[B] {
    var (a, _) = g(x, axis=-1)
    a *= 2.0
    if a > 0 { return a[0, 1:, ::2] } else { assert false, "no" }
    for i in range(n) { while true { pass } }
    return fn (y) => y if c else none
}
model M(h: int) {
    @stage(1) param w: f32[h, 2 * h] = normal(0.0, 0.02)
    let s = [[1], []]
    def forward(x) = -x ** 2
}
)");
  EXPECT_EQ(print_ast(*p.module), R"(module
  import std.nn as nn
  let n
    int 3
  def f
    decorator custom_grad
      name bwd
      kwarg mode: string "x"
    param x: f32[B, 784]
    param k: int
      default: int 2
    returns: f32[B]
    body: block
      var (a, _)
        call
          name g
          name x
          kwarg axis: unary -
            int 1
      assign a *=
        float 2.0
      if
        cond: binary >
          name a
          int 0
        then: block
          return
            index
              name a
              int 0
              slice
                start: int 1
              slice
                step: int 2
        else: block
          assert
            cond: bool false
            message: string "no"
      for i
        in: call
          name range
          name n
        body: block
          while
            cond: bool true
            body: block
              pass
      return
        lambda
          param y
          body: cond
            then: name y
            if: name c
            else: none
  model M
    param h: int
    field param w: f32[h, 2 * h]
      decorator stage
        int 1
      init: call
        name normal
        float 0.0
        float 0.02
    field let s
      init: list
        list
          int 1
        list
    def forward
      param x
      body: unary -
        binary **
          name x
          int 2
)");
}

TEST(AstPrinter, WithRanges) {
  Parsed p = parse_ok("def f(x) = x + 1\n");
  EXPECT_EQ(print_ast(*p.module, {.ranges = true}),
            "module\n"
            "  def f @1:1-1:17\n"
            "    param x @1:7-1:8\n"
            "    body: binary + @1:12-1:17\n"
            "      name x @1:12-1:13\n"
            "      int 1 @1:16-1:17\n");
}

TEST(AstPrinter, StatementsAndExpressionsPrintAlone) {
  Parsed p = parse_ok("def f() {\n  x = \"a\\tb\\\"\"\n}\n");
  const Stmt& s = *body_of(p)[0];
  EXPECT_EQ(print_ast(s), "assign x\n  string \"a\\tb\\\"\"\n");
  EXPECT_EQ(print_ast(*s.value), "string \"a\\tb\\\"\"\n");
}

TEST(AstPrinter, ToSource) {
  Parsed p = parse_ok("def f(t: (f32[N, ?], i32)) {\n  let ((a, b), c,) = t\n}\n");
  EXPECT_EQ(to_source(*p.module->functions[0]->params[0].type), "(f32[N, ?], i32)");
  EXPECT_EQ(to_source(body_of(p)[0]->pattern), "((a, b), c)");
  EXPECT_EQ(expr_source("fn (x) { return x }"), "fn (x) { ... }");
  EXPECT_EQ(expr_source("\"q\\\"\""), "\"q\\\"\"");
  EXPECT_EQ(expr_source("(1,)"), "(1,)");
  EXPECT_EQ(expr_source("not a"), "not a");
}

}  // namespace
}  // namespace spora::lang::testing
