// Lexical and syntax errors: wording, location, several in one run, no crash on any input.
#include <gtest/gtest.h>

#include <random>

#include "lang/token_source.h"
#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

// The one error `text` must produce, formatted.
std::string only_error(const std::string& text) {
  Parsed p = parse(text);
  EXPECT_EQ(p.module, nullptr) << text;
  EXPECT_EQ(p.diags->error_count(), 1) << p.printed_diagnostics();
  return p.printed_diagnostics();
}

std::string first_message(const std::string& text) {
  Parsed p = parse(text);
  EXPECT_EQ(p.module, nullptr) << text;
  if (p.diags->diagnostics().empty()) return "";
  return p.diags->diagnostics()[0].message;
}

TEST(SyntaxErrors, MissingClosingParenthesis) {
  EXPECT_EQ(only_error("def f(x) {\n    let y = g(a b)\n}\n"),
            "test.sp:2:17: error: expected ')' but found 'b'\n"
            "    let y = g(a b)\n"
            "                ^\n");
}

TEST(SyntaxErrors, UnclosedBracketReportedWhereTheNextLineStarts) {
  EXPECT_EQ(first_message("def f() {\n  let a = [1, 2\n  let b = 2\n}\n"),
            "expected ',' or ']' but found 'let'");
  EXPECT_EQ(first_message("def f() {\n  return (x\n}\n"), "expected ',' or ')' but found '}'");
}

TEST(SyntaxErrors, UnclosedBracketGetsANoteAtTheOpeningBracket) {
  Parsed p = parse("def f() {\n  let a = g([1, 2],\n    3\n  let b = 2\n}\n");
  EXPECT_EQ(p.printed_diagnostics(),
            "test.sp:4:3: error: expected ')' but found 'let'\n"
            "  let b = 2\n"
            "  ^~~\n"
            "test.sp:2:12: note: to match this '('\n"
            "  let a = g([1, 2],\n"
            "           ^\n");
  // No note when the bracket opened on the line of the error.
  Parsed same_line = parse("let a = g(1 2)\n");
  EXPECT_EQ(same_line.diags->diagnostics().size(), 1u);
}

TEST(SyntaxErrors, MissingExpression) {
  EXPECT_EQ(only_error("let x = )\n"),
            "test.sp:1:9: error: expected an expression but found ')'\nlet x = )\n        ^\n");
  EXPECT_EQ(first_message("def f() {\n  return 1 +\n}\n"), "expected an expression but found '}'");
  EXPECT_EQ(first_message("let x =\n"), "expected an expression but found end of file");
  EXPECT_EQ(first_message("def f() {\n  let x =\n  let y = 1\n}\n"),
            "expected an expression but found 'let'");
}

TEST(SyntaxErrors, MissingSeparatorBetweenStatements) {
  EXPECT_EQ(first_message("def f() {\n  x = 1 y = 2\n}\n"),
            "expected end of line or '}' but found 'y'");
  EXPECT_EQ(first_message("def f() {\n  if x { } else { } y = 2\n}\n"),
            "expected end of line or '}' but found 'y'");
  EXPECT_EQ(first_message("let a = 1 let b = 2\n"), "expected end of line but found 'let'");
}

TEST(SyntaxErrors, WrongThingAtTopLevelOrInAModel) {
  EXPECT_EQ(first_message("print(1)\n"),
            "expected a declaration ('def', 'model', 'let' or 'import') but found 'print'");
  EXPECT_EQ(first_message("model M {\n  x = 3\n}\n"),
            "expected a model member ('param', 'let' or 'def') or '}' but found 'x'");
  EXPECT_EQ(first_message("def f() {\n  @jit\n}\n"), "expected a statement or '}' but found '@'");
}

TEST(SyntaxErrors, BadPatternsAndParameters) {
  EXPECT_EQ(first_message("def f() {\n  let = 3\n}\n"), "expected a name or '(' but found '='");
  EXPECT_EQ(first_message("def f(1) = 1\n"), "expected a name or ')' but found '1'");
  EXPECT_EQ(first_message("def (x) = 1\n"), "expected a name but found '('");
  EXPECT_EQ(first_message("def f(x) {\n  for 1 in xs { }\n}\n"),
            "expected a name or '(' but found '1'");
  EXPECT_EQ(first_message("def f(x)\n"), "expected '{' but found end of file");
  EXPECT_EQ(first_message("def f(x) x\n"), "expected '{', '->' or '=' but found 'x'");
}

TEST(SyntaxErrors, LexicalErrors) {
  EXPECT_EQ(only_error("let x = 3 $ 4\n"),
            "test.sp:1:11: error: unexpected character '$'\nlet x = 3 $ 4\n          ^\n");
  EXPECT_EQ(only_error("let s = \"abc\n"),
            "test.sp:1:9: error: unterminated string\nlet s = \"abc\n        ^~~~\n");
  EXPECT_EQ(first_message("let x = \xC3\xA9\n"), "unexpected character '\xC3\xA9'");
  EXPECT_EQ(first_message(std::string("let x = 1\0\n", 11)), "unexpected byte 0x00");
  EXPECT_EQ(first_message("let x = 1 \xFF\n"), "unexpected byte 0xff");
}

TEST(SyntaxErrors, ErrorsFoundWhileBuildingTheTree) {
  EXPECT_EQ(only_error("let x = 99999999999999999999\n"),
            "test.sp:1:9: error: integer literal 99999999999999999999 does not fit in 64 bits "
            "(the range is -9223372036854775808 to 9223372036854775807)\n"
            "let x = 99999999999999999999\n"
            "        ^~~~~~~~~~~~~~~~~~~~\n");
  EXPECT_EQ(first_message("let x = 9223372036854775808\n"),
            "integer literal 9223372036854775808 does not fit in 64 bits (the range is "
            "-9223372036854775808 to 9223372036854775807)");
  EXPECT_EQ(first_message("let x = 1e999\n"),
            "float literal 1e999 is too large for a 64-bit float");
  EXPECT_EQ(only_error("let s = \"a\\qb\"\n"),
            "test.sp:1:11: error: unknown escape sequence '\\q' in string\n"
            "let s = \"a\\qb\"\n"
            "          ^~\n");
  EXPECT_EQ(first_message("def f() {\n  f(x) = 1\n}\n"),
            "cannot assign to a function call; the left side of '=' must be a name or a tuple "
            "of names");
  EXPECT_EQ(first_message("def f() {\n  x[0] = 1\n}\n"),
            "cannot assign to an indexed element; the left side of '=' must be a name or a "
            "tuple of names");
  EXPECT_EQ(first_message("def f() {\n  (a, b.c) = t\n}\n"),
            "cannot assign to an attribute; the left side of '=' must be a name or a tuple of "
            "names");
  EXPECT_EQ(first_message("def f() {\n  (a, b) += 1\n}\n"),
            "'+=' needs a variable name on its left");
  EXPECT_EQ(first_message("let y = f(k=1, 2)\n"), "positional argument follows keyword argument");
  EXPECT_EQ(first_message("let y = f(k=1, k=2)\n"), "keyword argument 'k' is given twice");
  EXPECT_EQ(first_message("def f(a = 1, b) = a\n"),
            "parameter 'b' has no default but follows parameter 'a' which has one");
  EXPECT_EQ(first_message("var x = 1\n"),
            "module-level 'var' is not allowed; use 'let' for a constant");
  EXPECT_EQ(first_message("model M {\n  let k\n}\n"),
            "model field 'let k' needs a value: 'let k = ...'");
  EXPECT_EQ(first_message("model M {\n  param w\n}\n"),
            "parameter 'w' needs a type or an initialiser: 'param w: f32[...]' or 'param w = ...'");
}

TEST(SyntaxErrors, SeveralIndependentErrorsInOneRun) {
  Parsed p = parse(
      "def f(x) {\n"
      "    let y = g(a b)\n"  // 2
      "    let = 3\n"         // 3
      "    let z = )\n"       // 4
      "    return y\n"
      "}\n"
      "def g(x) = x $ 2\n"  // 7
      "model M {\n"
      "    param w: f32[3] = \n"  // 9
      "}\n");
  EXPECT_EQ(p.module, nullptr);
  std::vector<std::string> expected = {
      "expected ')' but found 'b'",           "expected a name or '(' but found '='",
      "expected an expression but found ')'", "unexpected character '$'",
      "expected an expression but found '}'",
  };
  EXPECT_EQ(p.messages(), expected) << p.printed_diagnostics();
  std::vector<int> lines;
  for (const Diagnostic& d : p.diags->diagnostics()) lines.push_back(d.range.begin.line);
  EXPECT_EQ(lines, (std::vector<int>{2, 3, 4, 7, 10}));
}

TEST(SyntaxErrors, RecoveryInItemListsSkipsTheRestOfTheLine) {
  Parsed p = parse(
      "def main() {\n"
      "    let a = 1.0 let b = 2.0\n"  // 2
      "    print(a)\n"
      "    else { print(2.0) }\n"  // 4
      "    x = )\n"                // 5
      "    if a { y = ] }\n"       // 6
      "}\n"
      "model M {\n"
      "    w = 1\n"  // 9
      "    param v: f32\n"
      "}\n"
      "print(1)\n"  // 12
      "def g() = 1\n");
  std::vector<int> lines;
  for (const Diagnostic& d : p.diags->diagnostics()) lines.push_back(d.range.begin.line);
  EXPECT_EQ(lines, (std::vector<int>{2, 4, 5, 6, 9, 12})) << p.printed_diagnostics();
}

TEST(SyntaxErrors, AtMostOneErrorPerLine) {
  Parsed p = parse("let x = ) ) ) $ $\nlet y = ]\n");
  EXPECT_EQ(p.diags->error_count(), 2) << p.printed_diagnostics();
}

TEST(SyntaxErrors, DeepBracketNestingIsAnErrorNotACrash) {
  std::string deep = "let x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n";
  Parsed p = parse(deep);
  EXPECT_EQ(p.module, nullptr);
  ASSERT_EQ(p.diags->error_count(), 1) << p.printed_diagnostics();
  EXPECT_EQ(p.messages()[0], "brackets are nested too deeply (the limit is 200 levels)");
  EXPECT_EQ(p.diags->diagnostics()[0].range.begin.col, 9 + kMaxBracketDepth);

  std::string lists = "let x = " + std::string(300, '[') + std::string(300, ']') + "\n";
  EXPECT_EQ(first_message(lists), "brackets are nested too deeply (the limit is 200 levels)");
}

TEST(SyntaxErrors, BracketNestingUpToTheLimitIsFine) {
  int depth = kMaxBracketDepth;
  parse_ok("let x = " + std::string(static_cast<size_t>(depth), '(') + "1" +
           std::string(static_cast<size_t>(depth), ')') + "\n");
  parse_ok("def f() {\n  let x = " + std::string(static_cast<size_t>(depth - 1), '[') +
           std::string(static_cast<size_t>(depth - 1), ']') + "\n}\n");
  std::string blocks = "def f() {\n";
  for (int i = 0; i < 100; ++i) blocks += "if a {\n";
  for (int i = 0; i < 100; ++i) blocks += "}\n";
  parse_ok(blocks + "}\n");
}

TEST(SyntaxErrors, DeepOperatorNestingIsAnErrorNotACrash) {
  for (std::string op : {"-", "not ", "fn () => ", "+"}) {
    std::string text = "let x = ";
    for (int i = 0; i < 50000; ++i) text += op;
    Parsed p = parse(text + "1\n");
    EXPECT_EQ(p.module, nullptr) << op;
    ASSERT_EQ(p.diags->error_count(), 1) << op;
    EXPECT_NE(p.messages()[0].find("nested too deeply"), std::string::npos) << p.messages()[0];
  }
  std::string power = "let x = 2";
  for (int i = 0; i < 50000; ++i) power += " ** 2";
  EXPECT_NE(first_message(power + "\n").find("nested too deeply"), std::string::npos);
  std::string chain = "let x = 1";
  for (int i = 0; i < 50000; ++i) chain += " + 1";
  EXPECT_NE(first_message(chain + "\n").find("nested too deeply"), std::string::npos);
  std::string conditional = "let x = 1";
  for (int i = 0; i < 50000; ++i) conditional += " if c else 1";
  EXPECT_NE(first_message(conditional + "\n").find("nested too deeply"), std::string::npos);
  std::string else_ifs = "def f() {\n  if a { }";
  for (int i = 0; i < 50000; ++i) else_ifs += " else if a { }";
  EXPECT_NE(first_message(else_ifs + "\n}\n").find("nested too deeply"), std::string::npos);
}

TEST(SyntaxErrors, LongButFlatProgramsAreFine) {
  std::string text = "def f() {\n";
  for (int i = 0; i < 5000; ++i) text += "  x = f(x, [1, 2], k=3)\n";
  Parsed p = parse_ok(text + "}\n");
  EXPECT_EQ(body_of(p).size(), 5000u);
  std::string sum = "let x = 1";
  for (int i = 0; i < 200; ++i) sum += " + 1";
  parse_ok(sum + "\n");
}

TEST(SyntaxErrors, ArbitraryBytesNeverCrash) {
  std::mt19937 rng(1234);
  std::string alphabet =
      "()[]{},:;.=+-*/%@<>!#\"'\\ \t\n\r\xff\xc3\xa9"
      "abcdefxyz_019.e fn def model param let var if else for in "
      "while return assert pass import as true false none and or not ";
  alphabet += '\0';
  for (int round = 0; round < 300; ++round) {
    std::string text;
    size_t length = rng() % 200;
    for (size_t i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
    Parsed p = parse(text);
    if (p.module != nullptr) {
      EXPECT_FALSE(p.diags->has_errors());
      print_ast(*p.module);
    } else {
      EXPECT_TRUE(p.diags->has_errors()) << text;
    }
  }
}

TEST(SyntaxErrors, MutatedValidProgramsNeverCrash) {
  const std::string program =
      "model M(h: int = 2) {\n  param w: f32[h] = ones()\n  def forward(x) = x @ w\n}\n"
      "def main() {\n  let (a, b) = (1, [2.0, -3e1])\n  for i in range(3) { a += i }\n"
      "  print(a if b else fn (x) => x[1:, ::2], k=\"s\")\n}\n";
  std::mt19937 rng(99);
  for (int round = 0; round < 300; ++round) {
    std::string text = program;
    for (int edits = 0; edits < 3; ++edits) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.erase(at, 1);
          break;
        case 1:
          text.insert(at, 1, program[rng() % program.size()]);
          break;
        default:
          text[at] = static_cast<char>(rng() % 256);
      }
    }
    Parsed p = parse(text);
    EXPECT_EQ(p.module == nullptr, p.diags->has_errors());
  }
}

}  // namespace
}  // namespace spora::lang::testing
