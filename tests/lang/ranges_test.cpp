// Source ranges: every node has one, and specific nodes have the right one.
#include <gtest/gtest.h>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

// "line:col-line:col"
std::string where(const SourceRange& r) {
  return std::to_string(r.begin.line) + ":" + std::to_string(r.begin.col) + "-" +
         std::to_string(r.end.line) + ":" + std::to_string(r.end.col);
}

const char* kProgram = R"(import std.nn as nn
let k = 3
@jit
def f(x: f32[B, 784], y, z: int = 3) -> f32[B] {
    let (a, (b, _)) = g(x, k=v)
    a += x[0, :, 1:3, ::2]
    if a { pass } else if b { return -2 ** 2 } else { assert c, "m" }
    for i in range(5) { while c { x = fn (q) => q } }
    return a if c else [[1.0], [2.0]]
}
@stage(1)
model M(h: int = 2) {
    @stage(0) param w: f32[h, (h + 1)] = normal(0.0, 0.02)
    let s = fn (t) { return t }
    def forward(x) = x @ w
}
)";

TEST(Ranges, EveryNodeHasAValidRangeInsideTheFile) {
  Parsed p = parse_ok(kProgram);
  int count = 0;
  for_each_range(*p.module, [&](const std::string& what, const SourceRange& r) {
    ++count;
    EXPECT_TRUE(r.valid()) << what;
    EXPECT_EQ(r.begin.file, p.module->file) << what;
    EXPECT_EQ(r.end.file, p.module->file) << what;
    EXPECT_GE(r.begin.col, 1) << what;
    bool ordered =
        r.end.line > r.begin.line || (r.end.line == r.begin.line && r.end.col >= r.begin.col);
    EXPECT_TRUE(ordered) << what << " " << where(r);
  });
  EXPECT_GT(count, 100);
}

TEST(Ranges, SpecificNodes) {
  Parsed p = parse_ok(kProgram);
  const Module& m = *p.module;
  EXPECT_EQ(where(m.imports[0].range), "1:1-1:20");
  EXPECT_EQ(where(m.globals[0]->range), "2:1-2:10");
  EXPECT_EQ(where(m.globals[0]->pattern.range), "2:5-2:6");
  EXPECT_EQ(where(m.globals[0]->value->range), "2:9-2:10");

  const FuncDef& f = *m.functions[0];
  EXPECT_EQ(where(f.range), "3:1-10:2");  // decorators included
  EXPECT_EQ(where(f.name_range), "4:5-4:6");
  EXPECT_EQ(where(f.decorators[0].range), "3:1-3:5");
  EXPECT_EQ(where(f.params[0].range), "4:7-4:21");
  EXPECT_EQ(where(f.params[0].type->range), "4:10-4:21");
  EXPECT_EQ(where(f.params[0].type->dims[1]->range), "4:17-4:20");
  EXPECT_EQ(where(f.params[2].range), "4:26-4:36");
  EXPECT_EQ(where(f.params[2].default_value->range), "4:35-4:36");
  EXPECT_EQ(where(f.return_type->range), "4:41-4:47");
  EXPECT_EQ(where(f.body->range), "4:48-10:2");

  const auto& s = f.body->stmts;
  EXPECT_EQ(where(s[0]->range), "5:5-5:32");
  EXPECT_EQ(where(s[0]->pattern.range), "5:9-5:20");
  EXPECT_EQ(where(s[0]->pattern.elems[1].range), "5:13-5:19");
  EXPECT_EQ(where(s[0]->pattern.elems[1].elems[1].range), "5:17-5:18");
  EXPECT_EQ(where(s[0]->value->range), "5:23-5:32");
  EXPECT_EQ(where(s[0]->value->kwargs[0].name_range), "5:28-5:29");
  EXPECT_EQ(where(s[0]->value->kwargs[0].value->range), "5:30-5:31");

  const Expr& index = *s[1]->value;
  EXPECT_EQ(where(s[1]->range), "6:5-6:27");
  EXPECT_EQ(where(index.range), "6:10-6:27");
  EXPECT_EQ(where(index.indices[0].range), "6:12-6:13");
  EXPECT_EQ(where(index.indices[1].range), "6:15-6:16");
  EXPECT_EQ(where(index.indices[2].range), "6:18-6:21");
  EXPECT_EQ(where(index.indices[3].range), "6:23-6:26");

  const Stmt& if_stmt = *s[2];
  EXPECT_EQ(where(if_stmt.range), "7:5-7:70");
  EXPECT_EQ(where(if_stmt.then_block->range), "7:10-7:18");
  // The else block of an `else if` covers the nested if statement.
  EXPECT_EQ(where(if_stmt.else_block->range), "7:24-7:70");
  const Stmt& ret = *if_stmt.else_block->stmts[0]->then_block->stmts[0];
  EXPECT_EQ(where(ret.range), "7:31-7:45");
  EXPECT_EQ(where(ret.value->range), "7:38-7:45");           // -2 ** 2
  EXPECT_EQ(where(ret.value->operand->range), "7:39-7:45");  // 2 ** 2

  const Stmt& for_stmt = *s[3];
  EXPECT_EQ(where(for_stmt.pattern.range), "8:9-8:10");
  const Expr& lambda = *for_stmt.body->stmts[0]->body->stmts[0]->value;
  EXPECT_EQ(where(lambda.range), "8:39-8:50");
  EXPECT_EQ(where(lambda.params[0].range), "8:43-8:44");

  const ModelDef& model = *m.models[0];
  EXPECT_EQ(where(model.range), "11:1-16:2");
  EXPECT_EQ(where(model.name_range), "12:7-12:8");
  EXPECT_EQ(where(model.fields[0].range), "13:5-13:59");
  EXPECT_EQ(where(model.fields[0].decorators[0].range), "13:5-13:14");
  EXPECT_EQ(where(model.fields[0].type->range), "13:24-13:39");
  // A parenthesised expression keeps the range inside the parentheses.
  EXPECT_EQ(where(model.fields[0].type->dims[1]->range), "13:32-13:37");
  EXPECT_EQ(where(model.fields[1].init->range), "14:13-14:32");
  EXPECT_EQ(where(model.methods[0]->range), "15:5-15:27");
}

TEST(Ranges, TabsAndBytesCountOneColumnEach) {
  Parsed p = parse_ok("let s = \"\xC3\xA9\"\n\tlet t = s\n");
  EXPECT_EQ(where(p.module->globals[0]->value->range), "1:9-1:13");
  EXPECT_EQ(where(p.module->globals[1]->value->range), "2:10-2:11");
}

TEST(Ranges, MultiLineExpression) {
  Parsed p = parse_ok("let x = f(a,\n          b)\n");
  EXPECT_EQ(where(p.module->globals[0]->value->range), "1:9-2:13");
}

}  // namespace
}  // namespace spora::lang::testing
