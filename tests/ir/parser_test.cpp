// The IR parser: round trips of every printed test module, hand-written IR that runs, the type
// syntax, and one test per kind of malformed input.
#include "semantics/ir/parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "tests/ir/test_modules.h"
#include "tests/ir/test_prims.h"

namespace spora::ir::testing {
namespace {

// print(parse(print(m))) == print(m); returns the parsed module.
std::unique_ptr<Module> round_trip(const Module& m) {
  std::string text = print_module(m);
  std::unique_ptr<Module> parsed = parse_module(text);
  EXPECT_EQ(print_module(*parsed), text);
  return parsed;
}

TEST(ParserRoundTrip, EveryTestModule) {
  const std::vector<std::function<Graph*(Module&)>> builders = {
      build_straight_line, build_nested_closures, build_collatz,   build_range_sum, build_factorial,
      build_for_each_sum,  build_constants,       build_odd_names, build_attrs};
  for (const auto& build : builders) {
    Module m;
    build(m);
    round_trip(m);
  }
  Module all;  // and all of them in one module (name clashes: @body, %x)
  for (const auto& build : builders) build(all);
  round_trip(all);
}

TEST(ParserRoundTrip, ParsedModulesRunLikeTheOriginals) {
  Module m;
  build_collatz(m);
  build_factorial(m);
  build_nested_closures(m);
  auto parsed = round_trip(m);
  sem::Interpreter interp(*parsed);
  EXPECT_EQ(scalar(interp.call(parsed->find_graph("collatz"), {i64(27)})), 111.0);
  EXPECT_EQ(scalar(interp.call(parsed->find_graph("fact"), {i64(10)})), 3628800.0);
  EXPECT_EQ(scalar(interp.call(parsed->find_graph("outer"), {f32(7.0)})), 107.0);
}

TEST(ParserRoundTrip, StructureIsRebuilt) {
  Module m;
  build_collatz(m);
  auto parsed = round_trip(m);
  Graph* step = parsed->find_graph("step");
  Graph* half = parsed->find_graph("half");
  ASSERT_TRUE(step && half);
  EXPECT_EQ(step->parent, parsed->find_graph("collatz"));
  EXPECT_EQ(half->parent, step);
  EXPECT_EQ(parsed->children(step), (std::vector<Graph*>{half, parsed->find_graph("triple")}));
  EXPECT_EQ(step->params[0]->name, "n.2");
  EXPECT_EQ(step->params[0]->loc.line, 8);
  // @half reads %n.2 and %3 of @step: closures over the parent's nodes.
  EXPECT_EQ(half->output->inputs[0], step->params[0]);
  EXPECT_EQ(half->output->inputs[1]->graph, step);
  EXPECT_EQ(parsed->entry, nullptr);
}

TEST(ParserRoundTrip, ConstantsAreBitExact) {
  Module m;
  build_constants(m);
  auto parsed = round_trip(m);
  const Graph* g = parsed->find_graph("consts");
  const sem::Tensor& a = g->nodes[0]->value.tensor;
  const sem::Tensor& b = m.find_graph("consts")->nodes[0]->value.tensor;
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);  // 1/3, 1e-8 and -0.0 exactly
  EXPECT_TRUE(std::isnan(g->nodes[1]->value.tensor.get(2)));
  EXPECT_EQ(g->nodes[2]->value.tensor.data<double>()[0], 0.1);
  EXPECT_EQ(g->nodes[6]->value.str, "say \"hi\"\n\t\x01\\");
  const Attrs& attrs =
      parsed->find_graph("main") ? parsed->find_graph("main")->output->attrs : Attrs();
  EXPECT_TRUE(attrs.empty());
}

TEST(ParserRoundTrip, AttributesKeepTheirKinds) {
  Module m;
  build_attrs(m);
  auto parsed = round_trip(m);
  const Attrs& before = m.find_graph("main")->output->attrs;
  const Attrs& after = parsed->find_graph("main")->output->attrs;
  ASSERT_EQ(after.items().size(), before.items().size());
  for (const auto& [name, value] : before.items()) {
    ASSERT_NE(after.find(name), nullptr) << name;
    EXPECT_EQ(*after.find(name), value) << name;  // same variant alternative: 2.0 stays a double
  }
  EXPECT_EQ(parsed->entry, parsed->find_graph("main"));
}

TEST(ParserRoundTrip, FlagsEntryAndQuotedNames) {
  Module m;
  build_odd_names(m);
  auto parsed = round_trip(m);
  Graph* g = parsed->find_graph("odd graph");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(parsed->entry, g);
  EXPECT_TRUE(g->has_flag("checkpoint"));
  EXPECT_EQ(g->params[3]->name, "a b");
}

TEST(Parser, HandWrittenIrWithCommentsRuns) {
  ensure_prims();
  auto m = parse_module(R"(# sum of squares below 5, by hand
graph @main() -> i64 {
  %zero = constant 0 : i64
  %five = constant 5 : i64
  %one = constant 1 : i64
  graph @body(%i: i64, %acc: i64) -> (i64,) {   # a loop body
    %sq = mul(%i, %i) : i64
    %next = add(%acc, %sq) : i64
    %t = make_tuple(%next) : (i64,)
    return %t
  }
  %r = for_range(%zero, %five, %one, @body, %zero) : (i64,)
  %s = tuple_get(%r, index=0) : i64
  return %s
}
)");
  ASSERT_NE(m->entry, nullptr);
  EXPECT_EQ(scalar(sem::Interpreter(*m).run_entry()), 0.0 + 1 + 4 + 9 + 16);
}

TEST(Parser, GraphsMayBeUsedBeforeTheirDefinition) {
  ensure_prims();
  auto m = parse_module(R"(
graph @main() -> f32 {
  %a = constant 2.0 : f32
  %r = call @twice(%a) : f32
  return %r
}

graph @twice(%x: f32) -> f32 {
  %y = add(%x, %x) : f32
  return %y
}
)");
  EXPECT_EQ(scalar(sem::Interpreter(*m).run_entry()), 4.0);
  EXPECT_EQ(m->graphs()[0]->name, "main");
}

TEST(Parser, ErrorLocationsPointIntoTheIrFile) {
  ensure_prims();
  auto m = parse_module(R"(graph @main() -> f32 {
  %a = constant 2.0 : f32
  %b = test_fail(%a) : f32
  return %b
})");
  try {
    sem::Interpreter(*m).run_entry();
    FAIL() << "expected a RuntimeError";
  } catch (const sem::RuntimeError& e) {
    EXPECT_EQ(e.loc.line, 3);
    EXPECT_EQ(e.loc.col, 3);
  }
}

TEST(ParseType, RoundTripsTheTypeSyntax) {
  for (const char* s :
       {"f32[64,784]", "f32", "i32[?]", "(f32, i32[3])", "()", "(f32,)", "{w: f32[2,1], b: f32[1]}",
        "MLP{w: f32[2], b: f32}", "str", "iter<(f32[64,784], i32[64])>", "fn(f32, i32) -> f32",
        "fn() -> ()", "bool[2]", "f64", "bf16[3]", "f16", "i64[0]", "((f32,), {a: str})"})
    EXPECT_EQ(parse_type(s)->str(), s);
  EXPECT_EQ(parse_type("(f32)")->str(), "(f32,)");
  EXPECT_EQ(parse_type(" f32 [ 2 , 3 ] ")->str(), "f32[2,3]");
}

TEST(ParseType, RejectsMalformedTypes) {
  EXPECT_THROW(parse_type("f33"), lang::UserError);
  EXPECT_THROW(parse_type("f32[2"), lang::UserError);
  EXPECT_THROW(parse_type("f32 f32"), lang::UserError);
  EXPECT_THROW(parse_type("{w f32}"), lang::UserError);
  EXPECT_THROW(parse_type(""), lang::UserError);
}

// The message of the UserError parse_module throws for `text` ("" if it parses).
std::string parse_error(const std::string& text) {
  ensure_prims();
  try {
    parse_module(text, "bad.ir");
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

struct BadIr {
  const char* name;
  const char* text;
  const char* expected;  // the first line of the diagnostic
};

class ParserErrors : public ::testing::TestWithParam<BadIr> {};

TEST_P(ParserErrors, ReportsLineColumnAndCause) {
  std::string message = parse_error(GetParam().text);
  EXPECT_EQ(message.substr(0, message.find('\n')), GetParam().expected) << message;
}

const char* const kHeader = "graph @main(%x: f32, %v: f32[3]) -> f32 {\n";

std::string with_body(const std::string& body) { return kHeader + body; }

const std::string kUnknownPrim = with_body("  %0 = ad(%x, %x) : f32\n  return %0\n}\n");
const std::string kUnknownValue = with_body("  %0 = add(%x, %y) : f32\n  return %0\n}\n");
const std::string kWrongType = with_body("  %0 = add(%x, %x) : f32[3]\n  return %0\n}\n");
const std::string kShapeRule = with_body("  %0 = test_same(%x, %v) : f32\n  return %0\n}\n");
// Found by tests/fuzz/fuzz_ir: the shape rule's own assertion escaped as an InternalError.
const std::string kShapeRuleArity = with_body("  %0 = reciprocal() : f32\n  return %0\n}\n");
// Found by tests/fuzz/fuzz_ir: std::stoll's out_of_range escaped.
const std::string kHugeDim =
    with_body("  %0 = constant 1.0 : f32[99999999999999999999]\n  return %x\n}\n");
// Found by tests/fuzz/fuzz_ir: a literal nested thousands of brackets deep overflowed the
// stack; brackets (and types nested without them) are limited to 200 levels.
const std::string kDeepLiteral = with_body("  %0 = constant " + std::string(5000, '[') + "1.0" +
                                           std::string(5000, ']') + " : f32\n  return %x\n}\n");
std::string repeated(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}
const std::string kDeepFunctionType =
    "graph @f(%a: " + repeated("fn() -> ", 5000) + "f32) -> f32 {\n  return %a\n}\n";
const std::string kDeepListType = "graph @f(%a: " + repeated("list<", 5000) + "f32" +
                                  std::string(5000, '>') + ") -> f32 {\n  return %a\n}\n";
const std::string kBadReturn = with_body("  return %v\n}\n");
const std::string kNoReturnValue = with_body("  return\n}\n");
const std::string kUnknownGraph = with_body("  %0 = call @nope(%x) : f32\n  return %0\n}\n");
const std::string kCallArity = "graph @f(%a: f32) -> f32 {\n  return %a\n}\n" +
                               with_body("  %0 = call @f(%x, %x) : f32\n  return %0\n}\n");
const std::string kCallArg = "graph @f(%a: f32) -> f32 {\n  return %a\n}\n" +
                             with_body("  %0 = call @f(%v) : f32\n  return %0\n}\n");
const std::string kCallResult = "graph @f(%a: f32) -> f32 {\n  return %a\n}\n" +
                                with_body("  %0 = call @f(%x) : f32[3]\n  return %0\n}\n");
const std::string kRedefinition = with_body("  %x = add(%x, %x) : f32\n  return %x\n}\n");
const std::string kGraphTwice =
    "graph @f() -> () {\n  return\n}\ngraph @f() -> () {\n  return\n}\n";
const std::string kBadConstant = with_body("  %0 = constant [1.0, 2.0] : f32[3]\n  return %x\n}\n");
const std::string kRagged = with_body("  %0 = constant [[1.0], 2.0] : f32[2,1]\n  return %x\n}\n");
const std::string kI32Range = with_body("  %0 = constant 3000000000 : i32\n  return %x\n}\n");
const std::string kNotAnInt = with_body("  %0 = constant 1.5 : i64\n  return %x\n}\n");
const std::string kNestedOutOfScope =
    "graph @a() -> f32 {\n  graph @inner() -> f32 {\n    %0 = constant 1.0 : f32\n    return %0\n"
    "  }\n  %1 = call @inner() : f32\n  return %1\n}\n"
    "graph @b() -> f32 {\n  %c = constant true : bool\n  %2 = if(%c, @inner, @inner) : f32\n"
    "  return %2\n}\n";
const std::string kSiblingValue =
    "graph @a() -> f32 {\n  graph @p() -> f32 {\n    %0 = constant 1.0 : f32\n    return %0\n"
    "  }\n  graph @q() -> f32 {\n    return %0\n  }\n  %c = constant true : bool\n"
    "  %1 = if(%c, @p, @q) : f32\n  return %1\n}\n";
const std::string kUnknownAttr =
    with_body("  %0 = test_attrs(%x, axis=1, bogus=2) : f32\n  return %0\n}\n");
const std::string kAttrKind = with_body("  %0 = test_attrs(%x, axis=1.5) : f32\n  return %0\n}\n");
const std::string kMissingColon = with_body("  %0 = add(%x, %x) f32\n  return %0\n}\n");
const std::string kUnterminated = with_body("  %0 = constant \"abc : str\n  return %x\n}\n");
const std::string kStrayChar = with_body("  %0 = add(%x, %x) : f32 ;\n  return %0\n}\n");
const std::string kAttrBeforeOperand =
    with_body("  %0 = test_attrs(axis=1, %x) : f32\n  return %0\n}\n");
const std::string kBadEntry = "entry @nowhere\n" + with_body("  return %x\n}\n");

INSTANTIATE_TEST_SUITE_P(
    Malformed, ParserErrors,
    ::testing::Values(
        BadIr{"UnknownPrimitive", kUnknownPrim.c_str(),
              "bad.ir:2:8: error: unknown primitive 'ad'"},
        BadIr{"UnknownValue", kUnknownValue.c_str(),
              "bad.ir:2:16: error: use of undefined value %y"},
        BadIr{"TypeDiffersFromShapeRule", kWrongType.c_str(),
              "bad.ir:2:22: error: type mismatch: add gives f32, the text says f32[3]"},
        BadIr{"ShapeRuleRejects", kShapeRule.c_str(),
              "bad.ir:2:8: error: operands differ: f32 and f32[3]"},
        BadIr{"ShapeRuleArity", kShapeRuleArity.c_str(),
              "bad.ir:2:8: error: reciprocal: expected 1..1 inputs, got 0"},
        BadIr{"DimensionPast64Bits", kHugeDim.c_str(),
              "bad.ir:2:27: error: dimension 99999999999999999999 does not fit in 64 bits"},
        BadIr{"LiteralNestedTooDeep", kDeepLiteral.c_str(),
              "bad.ir:2:216: error: brackets nested deeper than 200 levels"},
        BadIr{"FunctionTypeNestedTooDeep", kDeepFunctionType.c_str(),
              "bad.ir:1:1614: error: a type nested deeper than 200 levels"},
        BadIr{"ListTypeNestedTooDeep", kDeepListType.c_str(),
              "bad.ir:1:1014: error: a type nested deeper than 200 levels"},
        BadIr{"OutputTypeDiffersFromHeader", kBadReturn.c_str(),
              "bad.ir:2:10: error: @main returns a value of type f32[3] but its header says f32"},
        BadIr{"MissingOutput", kNoReturnValue.c_str(),
              "bad.ir:2:3: error: @main returns nothing but its header says f32"},
        BadIr{"UnknownGraph", kUnknownGraph.c_str(), "bad.ir:2:13: error: unknown graph @nope"},
        BadIr{"CallArity", kCallArity.c_str(), "bad.ir:5:13: error: @f takes 1 arguments, got 2"},
        BadIr{"CallArgumentType", kCallArg.c_str(),
              "bad.ir:5:16: error: argument 1 of @f has type f32[3], expected f32"},
        BadIr{"CallResultType", kCallResult.c_str(),
              "bad.ir:5:22: error: @f returns f32, not f32[3]"},
        BadIr{"Redefinition", kRedefinition.c_str(), "bad.ir:2:3: error: redefinition of %x"},
        BadIr{"GraphDefinedTwice", kGraphTwice.c_str(),
              "bad.ir:4:7: error: redefinition of graph @f"},
        BadIr{"ConstantShape", kBadConstant.c_str(),
              "bad.ir:2:17: error: the literal has shape [2] but the type is f32[3]"},
        BadIr{"RaggedConstant", kRagged.c_str(),
              "bad.ir:2:25: error: ragged tensor literal: expected a list here"},
        BadIr{"I32OutOfRange", kI32Range.c_str(),
              "bad.ir:2:17: error: 3000000000 does not fit in i32"},
        BadIr{"FloatForInt", kNotAnInt.c_str(),
              "bad.ir:2:17: error: expected an integer, found 1.5"},
        BadIr{"NestedGraphOutOfScope", kNestedOutOfScope.c_str(),
              "bad.ir:11:15: error: @inner is nested in @a and cannot be used from @b"},
        BadIr{"SiblingValue", kSiblingValue.c_str(),
              "bad.ir:7:12: error: use of undefined value %0"},
        BadIr{"UnknownAttribute", kUnknownAttr.c_str(),
              "bad.ir:2:31: error: test_attrs has no attribute 'bogus'"},
        BadIr{"AttributeKind", kAttrKind.c_str(),
              "bad.ir:2:28: error: attribute 'axis' of test_attrs expects an integer, found 1.5"},
        BadIr{"MissingColon", kMissingColon.c_str(),
              "bad.ir:2:20: error: expected ':', found 'f32'"},
        BadIr{"UnterminatedString", kUnterminated.c_str(),
              "bad.ir:2:17: error: unterminated string"},
        BadIr{"StrayCharacter", kStrayChar.c_str(), "bad.ir:2:26: error: unexpected character ';'"},
        BadIr{"AttributeBeforeOperand", kAttrBeforeOperand.c_str(),
              "bad.ir:2:27: error: operands must come before attributes"},
        BadIr{"UnknownEntry", kBadEntry.c_str(), "bad.ir:1:7: error: unknown graph @nowhere"}),
    [](const ::testing::TestParamInfo<BadIr>& info) { return std::string(info.param.name); });

TEST(Parser, NestedGraphUsedFromAnotherTopLevelGraph) {
  std::string message = parse_error(
      "graph @a() -> f32 {\n  graph @inner() -> f32 {\n    %0 = constant 1.0 : f32\n    return %0\n"
      "  }\n  %1 = call @inner() : f32\n  return %1\n}\n"
      "graph @b() -> f32 {\n  %2 = call @inner() : f32\n  return %2\n}\n");
  EXPECT_EQ(message.substr(0, message.find('\n')),
            "bad.ir:10:13: error: @inner is nested in @a and cannot be called from @b");
}

TEST(Parser, DiagnosticsQuoteTheLineWithACaret) {
  std::string message = parse_error(kUnknownPrim);
  EXPECT_EQ(message,
            "bad.ir:2:8: error: unknown primitive 'ad'\n"
            "  %0 = ad(%x, %x) : f32\n"
            "       ^~");
}

TEST(Parser, ReportsToADiagnosticEngine) {
  ensure_prims();
  lang::SourceManager sources;
  int file = sources.add("x.ir", kUnknownValue);
  lang::DiagnosticEngine diags(sources);
  EXPECT_THROW(parse_module(sources, file, diags), lang::CompileError);
  ASSERT_EQ(diags.diagnostics().size(), 1u);
  EXPECT_EQ(diags.diagnostics()[0].range.begin.line, 2);
  EXPECT_EQ(diags.diagnostics()[0].message, "use of undefined value %y");
}

}  // namespace
}  // namespace spora::ir::testing
