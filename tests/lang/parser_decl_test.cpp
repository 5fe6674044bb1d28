// Declarations: imports, functions, models, fields, decorators, parameters, types, globals.
#include <gtest/gtest.h>

#include "lang_test_util.h"

namespace spora::lang::testing {
namespace {

TEST(ParserDecl, Imports) {
  Parsed p = parse_ok("import std.nn\nimport std.optim as optim\nimport mylib\n");
  const auto& im = p.module->imports;
  ASSERT_EQ(im.size(), 3u);
  EXPECT_EQ(im[0].path, (std::vector<std::string>{"std", "nn"}));
  EXPECT_EQ(im[0].alias, "");
  EXPECT_EQ(im[1].path, (std::vector<std::string>{"std", "optim"}));
  EXPECT_EQ(im[1].alias, "optim");
  EXPECT_EQ(im[2].path, (std::vector<std::string>{"mylib"}));
}

TEST(ParserDecl, FunctionWithTypedParamsDefaultsAndReturnType) {
  Parsed p = parse_ok("def affine(x: f32[B, 784], y, z: int = 3) -> f32[B] {\n  return x\n}\n");
  const FuncDef& f = *p.module->functions.at(0);
  EXPECT_EQ(f.name, "affine");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[0].name, "x");
  EXPECT_EQ(to_source(*f.params[0].type), "f32[B, 784]");
  EXPECT_EQ(f.params[0].default_value, nullptr);
  EXPECT_EQ(f.params[1].type, nullptr);
  EXPECT_EQ(to_source(*f.params[2].type), "int");
  EXPECT_EQ(f.params[2].default_value->int_value, 3);
  ASSERT_NE(f.return_type, nullptr);
  EXPECT_EQ(to_source(*f.return_type), "f32[B]");
  ASSERT_NE(f.body, nullptr);
  EXPECT_EQ(f.body_expr, nullptr);
}

TEST(ParserDecl, ExpressionBodiedFunctions) {
  Parsed p = parse_ok(
      "def square(x) = x * x\ndef stats(x: f32[N]) -> (f32, f32) = (sum(x), max(x))\n"
      "def make_affine(a, b) = fn (x) => a * x + b\n");
  const auto& fs = p.module->functions;
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0]->body, nullptr);
  EXPECT_EQ(to_source(*fs[0]->body_expr), "x * x");
  EXPECT_EQ(to_source(*fs[1]->return_type), "(f32, f32)");
  EXPECT_EQ(fs[1]->body_expr->kind, ExprKind::Tuple);
  EXPECT_EQ(fs[2]->body_expr->kind, ExprKind::Lambda);
}

TEST(ParserDecl, Types) {
  Parsed p = parse_ok(
      "def f(a: f32[B, 784], b: f32, c: i32[N], d: int, e: MLP, f: (f32, i32[3]), g: (f32,),\n"
      "      h: f32[2 * hidden, ?], i: bf16[], j: ()) = a\n");
  const auto& ps = p.module->functions[0]->params;
  EXPECT_EQ(to_source(*ps[0].type), "f32[B, 784]");
  EXPECT_TRUE(ps[0].type->has_dims);
  EXPECT_EQ(ps[0].type->dims[0]->kind, ExprKind::Name);
  EXPECT_EQ(ps[0].type->dims[1]->kind, ExprKind::Int);
  EXPECT_FALSE(ps[1].type->has_dims);
  EXPECT_EQ(to_source(*ps[2].type), "i32[N]");
  EXPECT_EQ(ps[4].type->name, "MLP");
  EXPECT_EQ(ps[5].type->kind, TypeExpr::Kind::Tuple);
  EXPECT_EQ(to_source(*ps[5].type), "(f32, i32[3])");
  EXPECT_EQ(to_source(*ps[6].type), "(f32,)");
  EXPECT_EQ(to_source(*ps[7].type), "f32[2 * hidden, ?]");
  EXPECT_EQ(ps[7].type->dims[1]->name, "?");
  EXPECT_TRUE(ps[8].type->has_dims);
  EXPECT_TRUE(ps[8].type->dims.empty());
  EXPECT_EQ(ps[9].type->kind, TypeExpr::Kind::Tuple);
  EXPECT_TRUE(ps[9].type->elems.empty());
}

TEST(ParserDecl, Decorators) {
  Parsed p = parse_ok(
      "@jit\ndef a(x) = x\n@checkpoint\n@custom_grad(bwd)\ndef b(x) = x\n"
      "@stage(1) def c(x) = x\n@custom_grad(bwd, mode=\"fast\")\n\ndef d(x) = x\n");
  const auto& fs = p.module->functions;
  ASSERT_EQ(fs.size(), 4u);
  ASSERT_EQ(fs[0]->decorators.size(), 1u);
  EXPECT_EQ(fs[0]->decorators[0].name, "jit");
  EXPECT_TRUE(fs[0]->decorators[0].args.empty());
  ASSERT_EQ(fs[1]->decorators.size(), 2u);
  EXPECT_EQ(fs[1]->decorators[0].name, "checkpoint");
  EXPECT_EQ(fs[1]->decorators[1].name, "custom_grad");
  ASSERT_EQ(fs[1]->decorators[1].args.size(), 1u);
  EXPECT_EQ(fs[1]->decorators[1].args[0]->name, "bwd");
  EXPECT_EQ(fs[2]->decorators[0].name, "stage");
  EXPECT_EQ(fs[2]->decorators[0].args[0]->int_value, 1);
  ASSERT_EQ(fs[3]->decorators[0].kwargs.size(), 1u);
  EXPECT_EQ(fs[3]->decorators[0].kwargs[0].name, "mode");
}

TEST(ParserDecl, ModelWithParamsFieldsAndMethods) {
  Parsed p = parse_ok(R"(
model MLP(hidden: int = 512) {
    param w1: f32[784, hidden] = normal(0.0, 0.02)
    param b1: f32[hidden]
    param fc = Dense(3, 4)
    @stage(1)
    param head = Dense(4, 10)
    let k = 3
    def forward(x: f32[B, 784]) -> f32[B, 10] {
        let h = relu(x @ w1 + b1)
        return fc(h)
    }
    @jit
    def predict(x) = argmax(forward(x), axis=-1)
}
)");
  ASSERT_EQ(p.module->models.size(), 1u);
  const ModelDef& m = *p.module->models[0];
  EXPECT_EQ(m.name, "MLP");
  ASSERT_EQ(m.params.size(), 1u);
  EXPECT_EQ(m.params[0].name, "hidden");
  EXPECT_EQ(m.params[0].default_value->int_value, 512);
  ASSERT_EQ(m.fields.size(), 5u);
  EXPECT_TRUE(m.fields[0].is_param);
  EXPECT_EQ(to_source(*m.fields[0].type), "f32[784, hidden]");
  EXPECT_EQ(to_source(*m.fields[0].init), "normal(0.0, 0.02)");
  EXPECT_EQ(m.fields[1].init, nullptr);
  EXPECT_EQ(m.fields[2].type, nullptr);
  EXPECT_EQ(to_source(*m.fields[2].init), "Dense(3, 4)");
  ASSERT_EQ(m.fields[3].decorators.size(), 1u);
  EXPECT_EQ(m.fields[3].decorators[0].name, "stage");
  EXPECT_FALSE(m.fields[4].is_param);
  EXPECT_EQ(m.fields[4].name, "k");
  ASSERT_EQ(m.methods.size(), 2u);
  EXPECT_EQ(m.methods[0]->name, "forward");
  EXPECT_EQ(m.methods[0]->body->stmts.size(), 2u);
  EXPECT_EQ(m.methods[1]->decorators[0].name, "jit");
}

TEST(ParserDecl, ModelWithoutParameterList) {
  Parsed p = parse_ok("@stage(0)\nmodel Tiny {\n  param w: f32[2]\n}\nmodel Empty() {}\n");
  ASSERT_EQ(p.module->models.size(), 2u);
  EXPECT_TRUE(p.module->models[0]->params.empty());
  EXPECT_EQ(p.module->models[0]->decorators[0].name, "stage");
  EXPECT_TRUE(p.module->models[1]->fields.empty());
}

TEST(ParserDecl, GlobalsAndDeclarationOrder) {
  Parsed p = parse_ok("let n = 3\ndef f() = n\nmodel M { param w: f32 }\nlet m = 4\ndef g() = m\n");
  const Module& m = *p.module;
  EXPECT_EQ(m.globals.size(), 2u);
  EXPECT_EQ(m.functions.size(), 2u);
  EXPECT_EQ(m.models.size(), 1u);
  std::vector<std::pair<int, int>> order = {{2, 0}, {0, 0}, {1, 0}, {2, 1}, {0, 1}};
  EXPECT_EQ(m.order, order);
}

TEST(ParserDecl, ParameterNamedModel) {
  Parsed p = parse_ok("def loss(model: MLP, param, as) = model(param) + as\n");
  const auto& ps = p.module->functions[0]->params;
  EXPECT_EQ(ps[0].name, "model");
  EXPECT_EQ(ps[1].name, "param");
  EXPECT_EQ(ps[2].name, "as");
}

TEST(ParserDecl, DesignDocumentExample) {
  Parsed p = parse_ok(R"(# comment
import std.nn                                  # std library modules (lang/std/nn.sp)

def affine(x: f32[B, I], w: f32[I, O], b: f32[O]) -> f32[B, O] {
    return x @ w + b                           # NumPy broadcasting
}

def square(x) = x * x                          # expression body; types inferred per call

model MLP(hidden: int = 512) {                 # a cell: parameters + forward
    param w1: f32[784, hidden] = normal(0.0, 0.02)
    param b1: f32[hidden]      = zeros()
    param w2: f32[hidden, 10]  = normal(0.0, 0.02)
    param b2: f32[10]          = zeros()
    def forward(x: f32[B, 784]) -> f32[B, 10] {
        let h = relu(x @ w1 + b1)
        return h @ w2 + b2
    }
}

def loss(net: MLP, x: f32[B, 784], y: i32[B]) -> f32 {
    return cross_entropy(net(x), y)
}

def main() {
    var net = MLP(hidden=256)                   # builds and initialises parameters
    let opt = sgd(lr=0.1, momentum=0.9)
    var state = opt.init(net)
    for epoch in range(3) {
        for (x, y) in fashion_mnist("train", batch=64, shuffle=true) {
            let (l, g) = value_and_grad(loss)(net, x, y)   # g has net's structure
            (net, state) = opt.update(net, g, state)
        }
        print("epoch", epoch, "loss", l)
    }
    save(net, "mlp.ckpt")
}
)");
  const Module& m = *p.module;
  EXPECT_EQ(m.imports.size(), 1u);
  EXPECT_EQ(m.functions.size(), 4u);
  EXPECT_EQ(m.models.size(), 1u);
  EXPECT_EQ(m.models[0]->fields.size(), 4u);
  const FuncDef& main = *m.functions[3];
  ASSERT_EQ(main.body->stmts.size(), 5u);
  const Stmt& outer_for = *main.body->stmts[3];
  ASSERT_EQ(outer_for.kind, StmtKind::For);
  const Stmt& inner_for = *outer_for.body->stmts[0];
  EXPECT_TRUE(inner_for.pattern.is_tuple);
  EXPECT_EQ(inner_for.body->stmts[1]->kind, StmtKind::Assign);
}

}  // namespace
}  // namespace spora::lang::testing
