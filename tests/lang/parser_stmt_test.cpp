// Statements, blocks, binding patterns and where newlines end a statement.
#include <gtest/gtest.h>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

std::string body_tree(const std::string& body) {
  Parsed p = parse("def f() {\n" + body + "\n}\n");
  if (!p.module) {
    ADD_FAILURE() << body << "\n" << p.printed_diagnostics();
    return "";
  }
  std::string out;
  for (const StmtPtr& s : body_of(p)) out += print_ast(*s);
  return out;
}

TEST(ParserStmt, LetAndVarWithOptionalTypes) {
  Parsed p = parse_ok("def f() {\n  let a = 1\n  var b: f32[3] = zeros()\n  let c: int = 2\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]->kind, StmtKind::Let);
  EXPECT_FALSE(s[0]->is_var);
  EXPECT_EQ(s[0]->pattern.name, "a");
  EXPECT_EQ(s[0]->type, nullptr);
  EXPECT_TRUE(s[1]->is_var);
  ASSERT_NE(s[1]->type, nullptr);
  EXPECT_EQ(to_source(*s[1]->type), "f32[3]");
  EXPECT_EQ(s[2]->type->name, "int");
  EXPECT_FALSE(s[2]->type->has_dims);
}

TEST(ParserStmt, DestructuringPatterns) {
  Parsed p = parse_ok("def f() {\n  let (a, (b, _)) = t\n  var (x,) = u\n  let (y) = v\n}\n");
  const auto& s = body_of(p);
  const Pattern& nested = s[0]->pattern;
  ASSERT_TRUE(nested.is_tuple);
  ASSERT_EQ(nested.elems.size(), 2u);
  EXPECT_EQ(nested.elems[0].name, "a");
  ASSERT_TRUE(nested.elems[1].is_tuple);
  EXPECT_EQ(nested.elems[1].elems[0].name, "b");
  EXPECT_EQ(nested.elems[1].elems[1].name, "_");
  EXPECT_TRUE(s[1]->pattern.is_tuple);
  EXPECT_EQ(s[1]->pattern.elems.size(), 1u);
  EXPECT_FALSE(s[2]->pattern.is_tuple);  // parentheses alone make no tuple
  EXPECT_EQ(s[2]->pattern.name, "y");
}

TEST(ParserStmt, AssignmentAndTupleAssignment) {
  EXPECT_EQ(body_tree("x = 1\n(net, state) = opt.update(net, g, state)\n((a, b), c) = t"),
            "assign x\n"
            "  int 1\n"
            "assign (net, state)\n"
            "  call\n"
            "    attr update\n"
            "      name opt\n"
            "    name net\n"
            "    name g\n"
            "    name state\n"
            "assign ((a, b), c)\n"
            "  name t\n");
}

TEST(ParserStmt, AugmentedAssignment) {
  Parsed p = parse_ok("def f() {\n  x += 1\n  x -= 2\n  x *= 3\n  x /= 4\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 4u);
  BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s[i]->kind, StmtKind::AugAssign);
    EXPECT_EQ(s[i]->aug_op, ops[i]);
    EXPECT_EQ(s[i]->pattern.name, "x");
  }
}

TEST(ParserStmt, IfElseIfElse) {
  Parsed p = parse_ok(
      "def f() {\n  if a {\n    pass\n  } else if b {\n    x = 1\n  } else {\n    x = 2\n  }\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 1u);
  const Stmt& outer = *s[0];
  EXPECT_EQ(outer.kind, StmtKind::If);
  EXPECT_EQ(outer.cond->name, "a");
  ASSERT_EQ(outer.then_block->stmts.size(), 1u);
  EXPECT_EQ(outer.then_block->stmts[0]->kind, StmtKind::Pass);
  // `else if` is an else block holding exactly one if statement.
  ASSERT_NE(outer.else_block, nullptr);
  ASSERT_EQ(outer.else_block->stmts.size(), 1u);
  const Stmt& inner = *outer.else_block->stmts[0];
  EXPECT_EQ(inner.kind, StmtKind::If);
  EXPECT_EQ(inner.cond->name, "b");
  ASSERT_NE(inner.else_block, nullptr);
  EXPECT_EQ(inner.else_block->stmts[0]->kind, StmtKind::Assign);
}

TEST(ParserStmt, IfWithoutElse) {
  Parsed p = parse_ok("def f() {\n  if a { x = 1 }\n  y = 2\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]->else_block, nullptr);
}

TEST(ParserStmt, BracesAndElseOnTheirOwnLines) {
  Parsed p = parse_ok("def f()\n{\n  if a\n  {\n    x = 1\n  }\n  else\n  {\n    x = 2\n  }\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NE(s[0]->else_block, nullptr);
}

TEST(ParserStmt, ForLoops) {
  EXPECT_EQ(body_tree("for i in range(5) { acc = acc + i }\nfor (x, y) in it { pass }"),
            "for i\n"
            "  in: call\n"
            "    name range\n"
            "    int 5\n"
            "  body: block\n"
            "    assign acc\n"
            "      binary +\n"
            "        name acc\n"
            "        name i\n"
            "for (x, y)\n"
            "  in: name it\n"
            "  body: block\n"
            "    pass\n");
}

TEST(ParserStmt, WhileReturnAssertPass) {
  EXPECT_EQ(body_tree("while k != 1 { k = k // 2 }\nassert k > 0\nassert ok, \"bad k\"\n"
                      "pass\nreturn\n"),
            "while\n"
            "  cond: binary !=\n"
            "    name k\n"
            "    int 1\n"
            "  body: block\n"
            "    assign k\n"
            "      binary //\n"
            "        name k\n"
            "        int 2\n"
            "assert\n"
            "  cond: binary >\n"
            "    name k\n"
            "    int 0\n"
            "assert\n"
            "  cond: name ok\n"
            "  message: string \"bad k\"\n"
            "pass\n"
            "return\n");
  Parsed p = parse_ok("def f() {\n  return (x, y)\n}\n");
  EXPECT_EQ(body_of(p)[0]->value->kind, ExprKind::Tuple);
}

TEST(ParserStmt, ReturnBeforeClosingBraceHasNoValue) {
  Parsed p = parse_ok("def f() { return }\ndef g() {\n  return\n}\n");
  EXPECT_EQ(p.module->functions[0]->body->stmts[0]->value, nullptr);
  EXPECT_EQ(p.module->functions[1]->body->stmts[0]->value, nullptr);
}

TEST(ParserStmt, ExpressionStatements) {
  EXPECT_EQ(body_tree("print(\"epoch\", epoch)"),
            "expr\n  call\n    name print\n    string \"epoch\"\n    name epoch\n");
}

TEST(ParserStmt, SemicolonsSeparateStatementsToo) {
  Parsed p = parse_ok("def f() { let a = 1; let b = 2; a = b; }\ndef g() {;;\n x = 1;;\n;\n}\n");
  EXPECT_EQ(p.module->functions[0]->body->stmts.size(), 3u);
  EXPECT_EQ(p.module->functions[1]->body->stmts.size(), 1u);
}

// A statement that is followed by a line starting with `(`, `[`, `-`, `+` or `@` stays a
// statement of its own: line breaks outside brackets end a statement after a token that
// can end one.
TEST(ParserStmt, NextLineDoesNotFuseWithPreviousStatement) {
  Parsed p = parse_ok("def f() {\n  f(x)\n  (a, b) = t\n  x\n  -y\n  z\n  [1]\n  w\n  +v\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s[0]->value->kind, ExprKind::Call);
  EXPECT_EQ(s[1]->kind, StmtKind::Assign);
  EXPECT_EQ(s[2]->value->name, "x");
  EXPECT_EQ(s[3]->value->kind, ExprKind::Unary);
  EXPECT_EQ(s[4]->value->name, "z");
  EXPECT_EQ(s[5]->value->kind, ExprKind::List);
  EXPECT_EQ(s[6]->value->name, "w");
  EXPECT_EQ(s[7]->value->unary_op, UnaryOp::Pos);
}

TEST(ParserStmt, ModelFieldFollowedByDecoratedField) {
  Parsed p = parse_ok("model M {\n  param w = a\n  @stage(1) param fc = Dense(3, 4)\n}\n");
  const ModelDef& m = *p.module->models[0];
  ASSERT_EQ(m.fields.size(), 2u);
  EXPECT_EQ(m.fields[0].init->name, "a");
  ASSERT_EQ(m.fields[1].decorators.size(), 1u);
  EXPECT_EQ(m.fields[1].decorators[0].name, "stage");
}

TEST(ParserStmt, StatementsContinueAfterOperatorsCommasAndEquals) {
  Parsed p = parse_ok("def f() {\n  let x =\n    1 +\n    2\n  let y = g(a,\n b)\n}\n");
  const auto& s = body_of(p);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(to_source(*s[0]->value), "1 + 2");
  EXPECT_EQ(to_source(*s[1]->value), "g(a, b)");
}

TEST(ParserStmt, CommentsAndBlankLines) {
  Parsed p = parse_ok("# header\n\ndef f() { # trailing\n\n  # alone\n  x = 1 # after\n\n}\n# end");
  EXPECT_EQ(body_of(p).size(), 1u);
}

TEST(ParserStmt, WindowsLineEndings) {
  Parsed p = parse_ok("def f() {\r\n  let a = 1\r\n  let b = 2\r\n}\r\n");
  EXPECT_EQ(body_of(p).size(), 2u);
}

TEST(ParserStmt, NoTrailingNewlineAtEndOfFile) {
  Parsed p = parse_ok("let a = 1\nlet b = 2");
  EXPECT_EQ(p.module->globals.size(), 2u);
}

}  // namespace
}  // namespace spora::lang::testing
