// Conventions of the derivative rules that finite differences cannot see: ties, zeros, kinks,
// integer and bool operands, the dropout mask. Values are exact (small integers).
#include "grad_check_util.h"

namespace spora::autodiff::testing {
namespace {

using Ints = std::vector<int64_t>;

Tensor T(Shape shape, std::vector<double> v, DType dt = DType::f64) {
  Tensor t = Tensor::empty(dt, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
  return t;
}

std::vector<double> values(const Value& v) { return flat(v); }

// The cotangents of a case's differentiable inputs for cotangent c.
std::vector<std::vector<double>> grads(const GradCase& gc, const Value& c) {
  GradHarness h(gc);
  std::vector<std::vector<double>> out;
  for (const Value& g : h.vjp(h.xs, c)) out.push_back(values(g));
  return out;
}

GradCase make(std::string prim, std::vector<InputSpec> inputs, Attrs a = {}) {
  GradCase c;
  c.name = prim;
  c.prim = std::move(prim);
  c.inputs = std::move(inputs);
  c.attrs = std::move(a);
  return c;
}

TEST(Rules, ProdWithZerosIsExact) {
  // Row 0 has one zero: its slot gets the product of the others. Row 1 has two: all zero.
  GradCase c =
      make("prod", {fixed({3, 3}, {2, 0, 3, 0, 0, 5, 1, 2, 4})}, attrs({{"axis", Ints{1}}}));
  auto g = grads(c, T({3}, {1, 1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{0, 6, 0, 0, 0, 0, 8, 4, 2}));
  GradHarness h(c);
  EXPECT_EQ(values(h.jvp(h.xs, {T({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1})})),
            (std::vector<double>{6, 0, 14}));
}

TEST(Rules, MaxAndMinShareTiesEqually) {
  EXPECT_EQ(grads(make("max", {fixed({4}, {1, 3, 3, 2})}), T({}, {1}))[0],
            (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(grads(make("min", {fixed({2, 2}, {1, 1, 0, 2})}, attrs({{"axis", Ints{1}}})),
                  T({2}, {2, 4}))[0],
            (std::vector<double>{1, 1, 4, 0}));
}

TEST(Rules, MaximumAndMinimumSplitTies) {
  auto g =
      grads(make("maximum", {fixed({3}, {1, 2, 5}), fixed({3}, {1, 3, 4})}), T({3}, {1, 1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{0.5, 0, 1}));
  EXPECT_EQ(g[1], (std::vector<double>{0.5, 1, 0}));
  g = grads(make("minimum", {fixed({3}, {1, 2, 5}), fixed({}, {2})}), T({3}, {1, 1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{1, 0.5, 0}));
  EXPECT_EQ(g[1], (std::vector<double>{1.5}));
}

TEST(Rules, KinksAtZeroGiveZero) {
  EXPECT_EQ(grads(make("relu", {fixed({3}, {-1, 0, 2})}), T({3}, {1, 1, 1}))[0],
            (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grads(make("abs", {fixed({3}, {-1, 0, 2})}), T({3}, {1, 1, 1}))[0],
            (std::vector<double>{-1, 0, 1}));
}

TEST(Rules, PowIsFiniteAtZeroAndNegativeBases) {
  // d/dx x^2 = 2x; d/dy is 0 where x <= 0 (no nan from log).
  auto g = grads(make("pow", {fixed({3}, {0, -2, 3}), fixed({}, {2})}), T({3}, {1, 1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{0, -4, 6}));
  EXPECT_DOUBLE_EQ(g[1][0], 9 * std::log(3.0));
}

TEST(Rules, ModDerivativeWithRespectToDivisor) {
  // 7 % 3 = 1 = 7 - 2 * 3: d/dx = 1, d/dy = -2; -7 % 3 = 2 = -7 - (-3) * 3: d/dy = 3.
  auto g = grads(make("mod", {fixed({2}, {7, -7}), fixed({}, {3})}), T({2}, {1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{1, 1}));
  EXPECT_EQ(g[1], (std::vector<double>{1}));
}

TEST(Rules, MaxPoolRoutesToTheFirstMaximum) {
  GradCase c = make("max_pool2d", {fixed({1, 1, 2, 4}, {1, 1, 0, 2, 1, 1, 2, 2})},
                    attrs({{"kernel", Ints{2}}}));
  EXPECT_EQ(grads(c, T({1, 1, 1, 2}, {5, 7}))[0], (std::vector<double>{5, 0, 0, 7, 0, 0, 0, 0}));
  // Overlapping windows accumulate.
  GradCase o = make("max_pool2d", {fixed({1, 1, 1, 3}, {0, 9, 1})},
                    attrs({{"kernel", Ints{1, 2}}, {"stride", Ints{1}}}));
  EXPECT_EQ(grads(o, T({1, 1, 1, 2}, {1, 2}))[0], (std::vector<double>{0, 3, 0}));
}

TEST(Rules, AvgPoolCountsPaddingInTheWindow) {
  GradCase c = make("avg_pool2d", {fixed({1, 1, 2, 2}, {1, 2, 3, 4})},
                    attrs({{"kernel", Ints{2}}, {"stride", Ints{1}}, {"padding", Ints{1}}}));
  // 3x3 outputs, each window of 4 slots; the corner input sits in 4 windows.
  auto g = grads(c, T({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(g[0], (std::vector<double>{1, 1, 1, 1}));
}

TEST(Rules, DropoutBackwardUsesTheForwardMask) {
  GradCase c = make("dropout", {fixed({2, 8}, std::vector<double>(16, 1.0))},
                    attrs({{"p", 0.5}, {"seed", int64_t{3}}}));
  GradHarness h(c);
  std::vector<double> forward = values(h.f(h.xs));
  std::vector<double> backward = values(h.vjp(h.xs, T({2, 8}, std::vector<double>(16, 1.0)))[0]);
  EXPECT_EQ(forward, backward);
  EXPECT_NE(std::count(forward.begin(), forward.end(), 0.0), 0);
  EXPECT_NE(std::count(forward.begin(), forward.end(), 2.0), 0);
}

TEST(Rules, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  GradCase c = make("cross_entropy", {fixed({2, 2}, {0, 0, 1, 1}), fixed({2}, {1, 0}, DType::i32)});
  auto g = grads(c, T({}, {1}));
  EXPECT_EQ(g.size(), 1u);  // labels are integers: no cotangent
  EXPECT_EQ(g[0], (std::vector<double>{0.25, -0.25, -0.25, 0.25}));
}

// Calls a row's rules directly on an application built in a scratch module.
struct Direct {
  ir::Module m;
  ir::Graph* g = m.add_graph("g");
  GraphEmitter e{m, g};
  Node* param(TypeP t) { return m.add_param(g, "p" + std::to_string(g->params.size()), t); }
  std::vector<Node*> vjp(const std::string& prim, std::vector<Node*> in, Attrs a = {}) {
    setup();
    const sem::Primitive* p = sem::Registry::instance().find(prim);
    Node* out = e.op(prim, in, with_defaults(*p, a));
    return (*p->facet<VjpRule>(kVjpFacet))(e, *out, out->inputs, out, param(out->type));
  }
  Node* jvp(const std::string& prim, std::vector<Node*> in, std::vector<Node*> ts, Attrs a = {}) {
    setup();
    const sem::Primitive* p = sem::Registry::instance().find(prim);
    Node* out = e.op(prim, in, with_defaults(*p, a));
    return (*p->facet<JvpRule>(kJvpFacet))(e, *out, out->inputs, out, ts);
  }
};

TEST(Rules, IntegerAndBoolOperandsGetNoDerivative) {
  Direct d;
  Node* i = d.param(Type::tensor(DType::i32, {3}));
  for (const char* p : {"add", "mul", "maximum", "pow", "mod"})
    EXPECT_EQ(d.vjp(p, {i, i}), (std::vector<Node*>{nullptr, nullptr})) << p;
  EXPECT_EQ(d.vjp("div", {i, i}), (std::vector<Node*>{nullptr, nullptr}));  // i32 / i32 gives f32
  EXPECT_EQ(d.vjp("sum", {i}), (std::vector<Node*>{nullptr}));
  EXPECT_EQ(d.vjp("mean", {i}), (std::vector<Node*>{nullptr}));
  EXPECT_EQ(d.jvp("neg", {i}, {i}), nullptr);
  Node* b = d.param(Type::tensor(DType::boolean, {3}));
  Node* x = d.param(Type::tensor(DType::f64, {3}));
  EXPECT_EQ(d.vjp("where", {b, x, x})[0], nullptr);
  // Casts to and from integers and bools have a zero derivative; float to float casts back.
  EXPECT_EQ(d.vjp("cast", {x}, attrs({{"dtype", DType::i32}}))[0], nullptr);
  EXPECT_EQ(d.vjp("cast", {b}, attrs({{"dtype", DType::f32}}))[0], nullptr);
  Node* back = d.vjp("cast", {x}, attrs({{"dtype", DType::f32}}))[0];
  ASSERT_TRUE(back);
  EXPECT_EQ(back->type->str(), "f64[3]");
  // gather's indices, cross_entropy's class labels.
  Node* idx = d.param(Type::tensor(DType::i64, {2}));
  EXPECT_EQ(d.vjp("gather", {x, idx})[1], nullptr);
  EXPECT_EQ(d.jvp("gather", {x, idx}, {nullptr, nullptr}), nullptr);
}

TEST(Rules, CotangentsHaveTheInputTypes) {
  Direct d;
  Node* a = d.param(Type::tensor(DType::f32, {2, 1, 4}));
  Node* b = d.param(Type::tensor(DType::f32, {3, 1}));
  for (const char* p : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod"}) {
    std::vector<Node*> g = d.vjp(p, {a, b});
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0]->type->str(), "f32[2,1,4]") << p;
    EXPECT_EQ(g[1]->type->str(), "f32[3,1]") << p;
    Node* t = d.jvp(p, {a, b}, {nullptr, b});
    EXPECT_EQ(t->type->str(), "f32[2,3,4]") << p;  // a broadcast tangent fills the output
  }
}

}  // namespace
}  // namespace spora::autodiff::testing
