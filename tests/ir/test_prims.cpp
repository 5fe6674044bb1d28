// Fake primitive rows for the IR tests (see test_prims.h).
#include "tests/ir/test_prims.h"

#include <functional>

#include "lang/diagnostics.h"

namespace spora::ir::testing {

namespace {

sem::ParamSpec input(std::string name) {
  return {std::move(name), sem::ParamSpec::Kind::Input, sem::ParamSpec::AttrKind::Int,
          std::nullopt};
}

void add_if_missing(sem::Primitive p) {
  auto& r = sem::Registry::instance();
  if (!r.find(p.name)) r.add(std::move(p));
}

void fake_binary(const std::string& name, std::function<double(double, double)> f, bool compare) {
  sem::Primitive p;
  p.name = name;
  p.family = "test";
  p.params = {input("x"), input("y")};
  p.infer = [compare](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    if (in.size() != 2 || !in[0]->is_tensor() || !same_type(in[0], in[1]))
      throw lang::UserError("operands differ: " + in[0]->str() + " and " + in[1]->str());
    return compare ? Type::tensor(DType::boolean, in[0]->shape) : in[0];
  };
  p.eval = [f, compare](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& x = in[0].tensor;
    const Tensor& y = in[1].tensor;
    Tensor out = Tensor::empty(compare ? DType::boolean : x.dtype(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out.set(i, f(x.get(i), y.get(i)));
    return out;
  };
  add_if_missing(std::move(p));
}

sem::Primitive control(const std::string& name, size_t state_from,
                       std::function<TypeP(const std::vector<TypeP>&)> result) {
  sem::Primitive p;
  p.name = name;
  p.family = "control";
  p.differentiable = true;
  p.infer = [state_from, result](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    if (result) return result(in);
    return Type::tuple(std::vector<TypeP>(in.begin() + static_cast<long>(state_from), in.end()));
  };
  return p;
}

}  // namespace

void ensure_prims() {
  static bool done = false;
  if (done) return;
  done = true;
  ops::register_all();
  fake_binary(
      "add", [](double a, double b) { return a + b; }, false);
  fake_binary(
      "sub", [](double a, double b) { return a - b; }, false);
  fake_binary(
      "mul", [](double a, double b) { return a * b; }, false);
  fake_binary(
      "floordiv", [](double a, double b) { return std::floor(a / b); }, false);
  fake_binary(
      "mod", [](double a, double b) { return a - b * std::floor(a / b); }, false);
  fake_binary(
      "lt", [](double a, double b) { return a < b; }, true);
  fake_binary(
      "eq", [](double a, double b) { return a == b; }, true);

  sem::Primitive mk;
  mk.name = "make_tuple";
  mk.family = "test";
  mk.infer = [](const std::vector<TypeP>& in, const Attrs&) { return Type::tuple(in); };
  mk.eval = [](const std::vector<Value>& in, const Attrs&) { return Value::tuple(in); };
  add_if_missing(std::move(mk));

  sem::Primitive get;
  get.name = "tuple_get";
  get.family = "test";
  get.params = {input("t"),
                {"index", sem::ParamSpec::Kind::Attr, sem::ParamSpec::AttrKind::Int, std::nullopt}};
  get.infer = [](const std::vector<TypeP>& in, const Attrs& a) -> TypeP {
    int64_t i = a.get_int("index");
    if (in.size() != 1 || in[0]->kind != Type::Kind::Tuple || i < 0 ||
        i >= static_cast<int64_t>(in[0]->elems.size()))
      throw lang::UserError("tuple_get index out of range");
    return in[0]->elems[static_cast<size_t>(i)];
  };
  get.eval = [](const std::vector<Value>& in, const Attrs& a) {
    return in[0].items().at(static_cast<size_t>(a.get_int("index")));
  };
  add_if_missing(std::move(get));

  add_if_missing(control("if", 0, [](const std::vector<TypeP>& in) { return in.at(1)->result; }));
  add_if_missing(control("while", 2, nullptr));
  add_if_missing(control("for_range", 4, nullptr));
  add_if_missing(control("for_each", 2, nullptr));

  // Like add, but the shape rule is the tests' own, so its message is stable.
  fake_binary(
      "test_same", [](double a, double b) { return a + b; }, false);

  sem::Primitive fail;
  fail.name = "test_fail";
  fail.family = "test";
  fail.params = {input("x")};
  fail.infer = [](const std::vector<TypeP>& in, const Attrs&) { return in.at(0); };
  fail.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    throw lang::UserError("value " + sem::format_value(in.at(0)) + " is not allowed");
  };
  add_if_missing(std::move(fail));

  sem::Primitive attrs;
  attrs.name = "test_attrs";
  attrs.family = "test";
  using K = sem::ParamSpec::Kind;
  using A = sem::ParamSpec::AttrKind;
  attrs.params = {
      {"x", K::Input, A::Int, std::nullopt},      {"axis", K::Attr, A::Int, std::nullopt},
      {"scale", K::Attr, A::Float, std::nullopt}, {"name", K::Attr, A::String, std::nullopt},
      {"dims", K::Attr, A::Ints, std::nullopt},   {"dt", K::Attr, A::DType, std::nullopt},
      {"keep", K::Attr, A::Bool, std::nullopt},   {"opt", K::Attr, A::IntOrNone, std::nullopt}};
  attrs.infer = [](const std::vector<TypeP>& in, const Attrs&) { return in.at(0); };
  attrs.eval = [](const std::vector<Value>& in, const Attrs&) { return in.at(0); };
  add_if_missing(std::move(attrs));

  sem::Primitive effect;
  effect.name = "test_effect";
  effect.family = "test";
  effect.effectful = true;
  effect.params = {input("x")};
  effect.infer = [](const std::vector<TypeP>& in, const Attrs&) { return in.at(0); };
  effect.eval = [](const std::vector<Value>& in, const Attrs&) { return in.at(0); };
  add_if_missing(std::move(effect));
}

const sem::Primitive* prim(const std::string& name) {
  ensure_prims();
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw lang::InternalError("test primitive missing: " + name);
  return p;
}

Value f32(double v) { return Tensor::scalar(DType::f32, v); }
Value i64(int64_t v) {
  Tensor t = Tensor::empty(DType::i64, {});
  t.data<int64_t>()[0] = v;
  return t;
}
TypeP f32_t(sem::Shape shape) { return Type::tensor(DType::f32, std::move(shape)); }
TypeP i64_t(sem::Shape shape) { return Type::tensor(DType::i64, std::move(shape)); }
TypeP bool_t() { return Type::scalar(DType::boolean); }
double scalar(const Value& v) { return v.tensor.item(); }

Node* Builder::apply(Graph* g, const std::string& p, std::vector<Node*> in, Attrs a) {
  return m.add_apply(g, prim(p), std::move(in), std::move(a), nullptr);
}

Node* Builder::get(Graph* g, Node* t, int64_t i) {
  Attrs a;
  a.set("index", i);
  return apply(g, "tuple_get", {t}, std::move(a));
}

}  // namespace spora::ir::testing
