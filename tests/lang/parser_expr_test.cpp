// Expressions: precedence and associativity, literals, calls, attributes, subscripts,
// lambdas, tuples and tensor literals.
#include <gtest/gtest.h>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

TEST(ParserExpr, PowerBindsTighterThanUnaryMinusOnItsLeft) {
  EXPECT_EQ(expr_source("-2 ** 2"), "-(2 ** 2)");
  EXPECT_EQ(expr_source("2 ** -1"), "2 ** (-1)");
  EXPECT_EQ(expr_source("2 ** -1 * 3"), "(2 ** (-1)) * 3");
  EXPECT_EQ(expr_source("-x * y"), "(-x) * y");
  EXPECT_EQ(expr_source("- - x"), "-(-x)");
}

TEST(ParserExpr, PowerIsRightAssociative) {
  EXPECT_EQ(expr_source("a ** b ** c"), "a ** (b ** c)");
}

TEST(ParserExpr, ArithmeticPrecedenceAndLeftAssociativity) {
  EXPECT_EQ(expr_source("a + b * c @ d"), "a + ((b * c) @ d)");
  EXPECT_EQ(expr_source("a - b - c"), "(a - b) - c");
  EXPECT_EQ(expr_source("a / b // c % d"), "((a / b) // c) % d");
  EXPECT_EQ(expr_source("x @ w + b"), "(x @ w) + b");
  EXPECT_EQ(expr_source("(a + b) * c"), "(a + b) * c");
}

TEST(ParserExpr, ComparisonsAreBelowArithmeticAndDoNotChain) {
  EXPECT_EQ(expr_source("a + 1 < b * 2"), "(a + 1) < (b * 2)");
  EXPECT_EQ(expr_source("a < b == c"), "(a < b) == c");
  EXPECT_EQ(expr_source("a != b"), "a != b");
  EXPECT_EQ(expr_source("a <= b"), "a <= b");
  EXPECT_EQ(expr_source("a >= b"), "a >= b");
  EXPECT_EQ(expr_source("a > b"), "a > b");
}

TEST(ParserExpr, BooleanOperators) {
  EXPECT_EQ(expr_source("not a and b"), "(not a) and b");
  EXPECT_EQ(expr_source("a or b and c"), "a or (b and c)");
  EXPECT_EQ(expr_source("not a == b"), "not (a == b)");
  EXPECT_EQ(expr_source("not not a"), "not (not a)");
}

TEST(ParserExpr, ConditionalIsRightAssociativeAndBelowOr) {
  EXPECT_EQ(expr_source("x if c else y if d else z"), "x if c else (y if d else z)");
  EXPECT_EQ(expr_source("a or b if c else d"), "(a or b) if c else d");
  EXPECT_EQ(expr_source("1.0 if i % 2 == 0 else -0.5"), "1.0 if ((i % 2) == 0) else (-0.5)");
}

TEST(ParserExpr, LambdasAreLowest) {
  EXPECT_EQ(expr_source("fn (x, y) => x + y"), "fn (x, y) => (x + y)");
  EXPECT_EQ(expr_source("fn (x) => a if c else b"), "fn (x) => (a if c else b)");
  EXPECT_EQ(expr_source("fn () => 1"), "fn () => 1");
  EXPECT_EQ(expr_source("fn (x: f32[N], k: int = 2) => x * k"),
            "fn (x: f32[N], k: int = 2) => (x * k)");
  EXPECT_EQ(expr_source("fn (x) => fn (y) => x + y"), "fn (x) => (fn (y) => (x + y))");
  EXPECT_EQ(expr_source("grad(fn (x) => sum(x * x))(w)"), "grad(fn (x) => sum(x * x))(w)");
}

TEST(ParserExpr, LambdaWithBlockBody) {
  Parsed p = parse_ok("let f = fn (x) {\n  let y = x * 2\n  return y\n}\n");
  const Expr& lambda = *p.module->globals.at(0)->value;
  ASSERT_EQ(lambda.kind, ExprKind::Lambda);
  ASSERT_EQ(lambda.params.size(), 1u);
  EXPECT_EQ(lambda.params[0].name, "x");
  EXPECT_EQ(lambda.body_expr, nullptr);
  ASSERT_NE(lambda.body_block, nullptr);
  ASSERT_EQ(lambda.body_block->stmts.size(), 2u);
  EXPECT_EQ(lambda.body_block->stmts[0]->kind, StmtKind::Let);
  EXPECT_EQ(lambda.body_block->stmts[1]->kind, StmtKind::Return);
}

TEST(ParserExpr, LambdaBlockInsideCallArguments) {
  // Newlines are significant again inside the braces of a lambda passed as an argument.
  Parsed p = parse_ok("let r = map(fn (x) {\n  let y = x\n  return y\n}, xs)\n");
  const Expr& call = *p.module->globals.at(0)->value;
  ASSERT_EQ(call.kind, ExprKind::Call);
  ASSERT_EQ(call.args.size(), 2u);
  EXPECT_EQ(call.args[0]->body_block->stmts.size(), 2u);
  EXPECT_EQ(call.args[1]->name, "xs");
}

TEST(ParserExpr, IntegerLiterals) {
  Parsed p = parse_ok(
      "let a = 42\nlet b = 0\nlet c = 9223372036854775807\n"
      "let d = -9223372036854775808\nlet e = 007\n");
  const auto& g = p.module->globals;
  EXPECT_EQ(g[0]->value->kind, ExprKind::Int);
  EXPECT_EQ(g[0]->value->int_value, 42);
  EXPECT_EQ(g[0]->value->text, "42");
  EXPECT_EQ(g[1]->value->int_value, 0);
  EXPECT_EQ(g[2]->value->int_value, INT64_MAX);
  // The one negative number that has no positive counterpart is folded into a literal.
  EXPECT_EQ(g[3]->value->kind, ExprKind::Int);
  EXPECT_EQ(g[3]->value->int_value, INT64_MIN);
  EXPECT_EQ(g[4]->value->int_value, 7);
}

TEST(ParserExpr, NegativeLiteralsStayUnary) {
  EXPECT_EQ(expr_tree("-1"), "unary -\n  int 1\n");
  EXPECT_EQ(expr_tree("-1.5"), "unary -\n  float 1.5\n");
}

TEST(ParserExpr, FloatLiterals) {
  Parsed p = parse_ok(
      "let a = 1.0\nlet b = 1.\nlet c = .5\nlet d = 1e-3\nlet e = 2.5e3\n"
      "let f = 3E+2\nlet g = 1e-400\n");
  const auto& g = p.module->globals;
  std::vector<std::pair<std::string, double>> expected = {
      {"1.0", 1.0},      {"1.", 1.0},     {".5", 0.5},    {"1e-3", 1e-3},
      {"2.5e3", 2500.0}, {"3E+2", 300.0}, {"1e-400", 0.0}};
  ASSERT_EQ(g.size(), expected.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i]->value->kind, ExprKind::Float) << expected[i].first;
    EXPECT_EQ(g[i]->value->text, expected[i].first);
    EXPECT_DOUBLE_EQ(g[i]->value->float_value, expected[i].second) << expected[i].first;
  }
}

TEST(ParserExpr, BoolNoneAndStrings) {
  Parsed p = parse_ok(R"(let a = true
let b = false
let c = none
let d = "train"
let e = "tab\there \"q\" back\\slash\nnl\0"
let f = 'single "quoted"'
let g = ""
)");
  const auto& g = p.module->globals;
  EXPECT_EQ(g[0]->value->kind, ExprKind::Bool);
  EXPECT_TRUE(g[0]->value->bool_value);
  EXPECT_FALSE(g[1]->value->bool_value);
  EXPECT_EQ(g[2]->value->kind, ExprKind::None);
  EXPECT_EQ(g[3]->value->kind, ExprKind::String);
  EXPECT_EQ(g[3]->value->string_value, "train");
  using namespace std::string_literals;
  EXPECT_EQ(g[4]->value->string_value, "tab\there \"q\" back\\slash\nnl\0"s);
  EXPECT_EQ(g[5]->value->string_value, "single \"quoted\"");
  EXPECT_EQ(g[6]->value->string_value, "");
}

TEST(ParserExpr, StringsKeepArbitraryBytes) {
  Parsed p = parse_ok("let s = \"h\xC3\xA9llo \xFF\"\n");
  EXPECT_EQ(p.module->globals[0]->value->string_value, "h\xC3\xA9llo \xFF");
}

TEST(ParserExpr, NestedTensorLiterals) {
  EXPECT_EQ(expr_source("[[1.0, 2.0], [3.0, 4.0]]"), "[[1.0, 2.0], [3.0, 4.0]]");
  EXPECT_EQ(expr_tree("[[1, 2], []]"), "list\n  list\n    int 1\n    int 2\n  list\n");
  EXPECT_EQ(expr_source("[1, 2,]"), "[1, 2]");
  EXPECT_EQ(expr_source("[[[[1.0]]]]"), "[[[[1.0]]]]");
}

TEST(ParserExpr, TuplesAndParentheses) {
  EXPECT_EQ(expr_tree("(a, b)"), "tuple\n  name a\n  name b\n");
  EXPECT_EQ(expr_tree("(a,)"), "tuple\n  name a\n");
  EXPECT_EQ(expr_tree("()"), "tuple\n");
  EXPECT_EQ(expr_tree("(a)"), "name a\n");
  EXPECT_EQ(expr_tree("((a))"), "name a\n");
  EXPECT_EQ(expr_source("(a, (b, c), ())"), "(a, (b, c), ())");
}

TEST(ParserExpr, CallsWithKeywordArguments) {
  Parsed p =
      parse_ok("let o = sgd(lr=0.1, momentum=0.9)\nlet m = mean(a, axis=1, keepdims=true)\n");
  const Expr& sgd = *p.module->globals[0]->value;
  ASSERT_EQ(sgd.kind, ExprKind::Call);
  EXPECT_EQ(sgd.callee->name, "sgd");
  EXPECT_TRUE(sgd.args.empty());
  ASSERT_EQ(sgd.kwargs.size(), 2u);
  EXPECT_EQ(sgd.kwargs[0].name, "lr");
  EXPECT_EQ(sgd.kwargs[0].value->text, "0.1");
  EXPECT_EQ(sgd.kwargs[1].name, "momentum");
  const Expr& mean = *p.module->globals[1]->value;
  ASSERT_EQ(mean.args.size(), 1u);
  ASSERT_EQ(mean.kwargs.size(), 2u);
  EXPECT_EQ(mean.kwargs[1].name, "keepdims");
  EXPECT_TRUE(mean.kwargs[1].value->bool_value);
  EXPECT_EQ(expr_source("f()"), "f()");
  EXPECT_EQ(expr_source("f(a, k=v,)"), "f(a, k=v)");
  EXPECT_EQ(expr_source("f(x == 1)"), "f(x == 1)");
}

TEST(ParserExpr, ShardAnnotationsAreKeywordArguments) {
  EXPECT_EQ(expr_source("matmul(x, w, shard=((2, 1), (1, 4)))"),
            "matmul(x, w, shard=((2, 1), (1, 4)))");
  EXPECT_EQ(expr_source("shard(x, (2, 1))"), "shard(x, (2, 1))");
}

TEST(ParserExpr, PostfixChains) {
  EXPECT_EQ(expr_source("value_and_grad(loss)(net, x, y)"), "value_and_grad(loss)(net, x, y)");
  EXPECT_EQ(expr_source("grad(grad(f))"), "grad(grad(f))");
  EXPECT_EQ(expr_source("opt.update(net, g, state)"), "opt.update(net, g, state)");
  EXPECT_EQ(expr_source("g.w[0].T"), "g.w[0].T");
  EXPECT_EQ(expr_tree("a.b.c"), "attr c\n  attr b\n    name a\n");
  EXPECT_EQ(expr_source("-x.y"), "-x.y");
  EXPECT_EQ(expr_source("-f(x) ** 2"), "-(f(x) ** 2)");
}

TEST(ParserExpr, IndexingAndSlicing) {
  EXPECT_EQ(expr_tree("x[0, :, 1:3, ::2, -1]"),
            "index\n"
            "  name x\n"
            "  int 0\n"
            "  slice\n"
            "  slice\n"
            "    start: int 1\n"
            "    stop: int 3\n"
            "  slice\n"
            "    step: int 2\n"
            "  unary -\n"
            "    int 1\n");
  EXPECT_EQ(expr_tree("x[1:, :-1, 1:2:3, ::]"),
            "index\n"
            "  name x\n"
            "  slice\n"
            "    start: int 1\n"
            "  slice\n"
            "    stop: unary -\n"
            "      int 1\n"
            "  slice\n"
            "    start: int 1\n"
            "    stop: int 2\n"
            "    step: int 3\n"
            "  slice\n");
  EXPECT_EQ(expr_source("x[i + 1 : n * 2]"), "x[(i + 1):(n * 2)]");
  EXPECT_EQ(expr_source("x[a, ]"), "x[a]");
}

TEST(ParserExpr, SoftKeywordsAreNames) {
  EXPECT_EQ(expr_source("model(x) + param.w + as"), "(model(x) + param.w) + as");
  EXPECT_EQ(expr_source("f(model=1)"), "f(model=1)");
}

TEST(ParserExpr, LineBreaksInsideBracketsAndAfterOperators) {
  EXPECT_EQ(expr_source("f(a,\n  b,\n  k=1\n)"), "f(a, b, k=1)");
  EXPECT_EQ(expr_source("[[1.0, 2.0],\n [3.0, 4.0]]"), "[[1.0, 2.0], [3.0, 4.0]]");
  EXPECT_EQ(expr_source("a +\n b *\n c"), "a + (b * c)");
  EXPECT_EQ(expr_source("(a\n + b\n if c\n else d)"), "(a + b) if c else d");
  EXPECT_EQ(expr_source("x[1:\n2]"), "x[1:2]");
}

}  // namespace
}  // namespace spora::lang::testing
