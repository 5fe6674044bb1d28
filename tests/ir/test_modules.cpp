// The shared test modules (see test_modules.h).
#include "tests/ir/test_modules.h"

#include <cmath>
#include <limits>

#include "tests/ir/test_prims.h"

namespace spora::ir::testing {

Graph* build_straight_line(Module& m) {
  Builder b{m};
  Graph* g = m.add_graph("straight");
  Node* x = m.add_param(g, "x", f32_t());
  Node* y = m.add_param(g, "y", f32_t());
  Node* s = b.apply(g, "add", {x, y});
  g->output = b.apply(g, "mul", {s, x});
  return g;
}

Graph* build_nested_closures(Module& m) {
  Builder b{m};
  Graph* outer = m.add_graph("outer");
  Node* x = m.add_param(outer, "x", f32_t());
  Node* k = b.constant(outer, f32(100.0));
  Node* lt10 = b.apply(outer, "lt", {x, b.constant(outer, f32(10.0))});

  Graph* small = m.add_graph("small", outer);
  Node* lt5 = b.apply(small, "lt", {x, b.constant(small, f32(5.0))});
  Graph* tiny = m.add_graph("tiny", small);
  tiny->output = b.apply(tiny, "mul", {x, k});
  Graph* mid = m.add_graph("mid", small);
  mid->output = b.apply(mid, "add", {x, k});
  small->output = b.apply(small, "if", {lt5, b.ref(small, tiny), b.ref(small, mid)});

  Graph* big = m.add_graph("big", outer);
  big->output = k;
  outer->output = b.apply(outer, "if", {lt10, b.ref(outer, small), b.ref(outer, big)});
  return outer;
}

Graph* build_collatz(Module& m) {
  Builder b{m};
  Graph* g = m.add_graph("collatz");
  Node* n = m.add_param(g, "n", i64_t());
  Node* zero = b.constant(g, i64(0));

  Graph* cond = m.add_graph("cond", g);
  Node* cn = m.add_param(cond, "n", i64_t());
  m.add_param(cond, "steps", i64_t());
  cond->output = b.apply(cond, "lt", {b.constant(cond, i64(1)), cn});

  Graph* step = m.add_graph("step", g);
  Node* sn = m.add_param(step, "n", i64_t());
  Node* ss = m.add_param(step, "steps", i64_t());
  Node* two = b.constant(step, i64(2));
  Node* even = b.apply(step, "eq", {b.apply(step, "mod", {sn, two}), zero});
  Graph* half = m.add_graph("half", step);
  half->output = b.apply(half, "floordiv", {sn, two});
  Graph* triple = m.add_graph("triple", step);
  Node* t3 = b.apply(triple, "mul", {b.constant(triple, i64(3)), sn});
  triple->output = b.apply(triple, "add", {t3, b.constant(triple, i64(1))});
  Node* next = b.apply(step, "if", {even, b.ref(step, half), b.ref(step, triple)});
  Node* more = b.apply(step, "add", {ss, b.constant(step, i64(1))});
  step->output = b.tuple(step, {next, more});

  Node* w = b.apply(g, "while", {b.ref(g, cond), b.ref(g, step), n, zero});
  g->output = b.get(g, w, 1);
  return g;
}

Graph* build_range_sum(Module& m) {
  Builder b{m};
  Graph* g = m.add_graph("range_sum");
  Node* start = m.add_param(g, "start", i64_t());
  Node* stop = m.add_param(g, "stop", i64_t());
  Node* step = m.add_param(g, "step", i64_t());
  Node* zero = b.constant(g, i64(0));
  Graph* body = m.add_graph("body", g);
  Node* i = m.add_param(body, "i", i64_t());
  Node* acc = m.add_param(body, "acc", i64_t());
  body->output = b.tuple(body, {b.apply(body, "add", {acc, i})});
  Node* loop = m.add_apply(g, prim("for_range"), {start, stop, step, b.ref(g, body), zero}, {},
                           nullptr, {0, 7, 3});
  g->output = b.get(g, loop, 0);
  return g;
}

Graph* build_factorial(Module& m) {
  Builder b{m};
  Graph* fact = m.add_graph("fact");
  Node* n = m.add_param(fact, "n", i64_t());
  Node* small = b.apply(fact, "lt", {n, b.constant(fact, i64(2))});
  Graph* base = m.add_graph("base", fact);
  base->output = b.constant(base, i64(1));
  Graph* rec = m.add_graph("rec", fact);
  Node* n1 = b.apply(rec, "sub", {n, b.constant(rec, i64(1))});
  Node* r = m.add_call(rec, fact, {n1}, i64_t(), {0, 3, 12});
  rec->output = b.apply(rec, "mul", {n, r});
  fact->output = b.apply(fact, "if", {small, b.ref(fact, base), b.ref(fact, rec)});
  return fact;
}

Graph* build_for_each_sum(Module& m) {
  Builder b{m};
  Graph* g = m.add_graph("each_sum");
  Node* it = m.add_param(g, "it", sem::Type::iterator("test", f32_t()));
  Node* init = m.add_param(g, "init", f32_t());
  Graph* body = m.add_graph("body", g);
  Node* e = m.add_param(body, "e", f32_t());
  Node* acc = m.add_param(body, "acc", f32_t());
  body->output = b.tuple(body, {b.apply(body, "add", {acc, e})});
  Node* loop = b.apply(g, "for_each", {it, b.ref(g, body), init});
  g->output = b.get(g, loop, 0);
  return g;
}

namespace {
sem::Tensor f32_tensor(sem::Shape shape, std::vector<float> data) {
  sem::Tensor t = sem::Tensor::empty(DType::f32, std::move(shape));
  for (size_t i = 0; i < data.size(); ++i) t.data<float>()[i] = data[i];
  return t;
}
}  // namespace

Graph* build_constants(Module& m) {
  Graph* g = m.add_graph("consts");
  const float third = 1.0f / 3.0f;
  const float inf = std::numeric_limits<float>::infinity();
  m.add_constant(g, f32_tensor({2, 3}, {1.0f, 2.5f, -3.0f, 1e-8f, third, -0.0f}));
  m.add_constant(g, f32_tensor({3}, {inf, -inf, std::nanf("")}));
  m.add_constant(g, sem::Tensor::scalar(DType::f64, 0.1));
  sem::Tensor ints = sem::Tensor::empty(DType::i32, {2});
  ints.data<int32_t>()[0] = 7;
  ints.data<int32_t>()[1] = -2147483647 - 1;
  m.add_constant(g, ints);
  sem::Tensor flags = sem::Tensor::zeros(DType::boolean, {2});
  flags.data<uint8_t>()[1] = 1;
  m.add_constant(g, flags);
  m.add_constant(g, sem::Tensor::zeros(DType::f32, {2, 0}));
  m.add_constant(g, Value::string("say \"hi\"\n\t\x01\\"));
  g->output = m.add_constant(g, Value::tuple({f32(1.5), i64(3), Value::tuple({})}));
  return g;
}

Graph* build_odd_names(Module& m) {
  Builder b{m};
  Graph* g = m.add_graph("odd graph");
  g->flags = {"jit", "checkpoint"};
  Node* x = m.add_param(g, "x", f32_t());
  Node* x2 = m.add_param(g, "x", f32_t());
  Node* digits = m.add_param(g, "3", f32_t());
  Node* spaced = m.add_param(g, "a b", f32_t());
  Node* unnamed = m.add_param(g, "", f32_t());
  Node* s = b.apply(g, "add", {x, x2});
  s = b.apply(g, "add", {s, digits});
  s = b.apply(g, "add", {s, spaced});
  g->output = b.apply(g, "add", {s, unnamed});
  m.entry = g;
  return g;
}

Graph* build_attrs(Module& m) {
  Graph* g = m.add_graph("main");
  Node* x = m.add_param(g, "x", f32_t());
  Attrs a;  // deliberately set out of signature order
  a.set("keep", true);
  a.set("dt", DType::bf16);
  a.set("opt", sem::Attr{});
  a.set("dims", std::vector<int64_t>{1, -2});
  a.set("name", std::string("q\""));
  a.set("scale", 2.0);
  a.set("axis", int64_t{-1});
  g->output = m.add_apply(g, prim("test_attrs"), {x}, a, nullptr);
  return g;
}

}  // namespace spora::ir::testing
