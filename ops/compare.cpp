// Comparisons, where, cast and the logical ops.
//
// Comparisons (eq ne lt le gt ge) take two tensors of the same dtype (bool included), broadcast
// them and give bool; nan compares like IEEE (only ne is true). where(c, a, b) broadcasts all
// three, c must be bool and a, b of one dtype. cast(x, dtype) converts: float -> int truncates
// toward zero (NumPy astype; nan -> 0, out-of-range values clamp), anything -> bool is x != 0.
// logical_and/or/not take bool tensors only. None of these is differentiable except where
// (with respect to a and b) and cast (the derivative layer treats a cast to an integer or bool
// dtype as having a zero derivative). where's vjp masks dout into a and b (the condition gets
// none); cast's casts dout back to the input's float dtype.
#include <type_traits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

enum class Cmp { eq, ne, lt, le, gt, ge };

template <class T>
bool compare(Cmp op, T a, T b) {
  switch (op) {
    case Cmp::eq:
      return a == b;
    case Cmp::ne:
      return a != b;
    case Cmp::lt:
      return a < b;
    case Cmp::le:
      return a <= b;
    case Cmp::gt:
      return a > b;
    case Cmp::ge:
      return a >= b;
  }
  return false;
}

// Runs f(a_index, b_index, out_index) over the broadcast of two shapes.
struct Broadcast2 {
  Shape shape;
  bool same_a, same_b;
  std::vector<int64_t> ma, mb;
  Broadcast2(const Shape& a, const Shape& b, const Shape& out) : shape(out) {
    same_a = a == out;
    same_b = b == out;
    if (!same_a) ma = broadcast_index_map(a, out);
    if (!same_b) mb = broadcast_index_map(b, out);
  }
  int64_t ia(int64_t i) const { return same_a ? i : ma[i]; }
  int64_t ib(int64_t i) const { return same_b ? i : mb[i]; }
};

void add_compare(sem::Registry& r, const std::string& name, const std::string& doc, Cmp op) {
  Primitive p;
  p.facets[passes::kFusionFacet] = passes::FusionKind::Broadcast;
  p.name = name;
  p.family = "compare";
  p.doc = doc;
  p.params = {input("x"), input("y")};
  p.differentiable = false;
  p.infer = [name](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, name);
    return Type::tensor(DType::boolean, binary_broadcast(name, tensor_input(in, 0, name),
                                                         tensor_input(in, 1, name)));
  };
  p.eval = [name, op](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& y = in.at(1).tensor;
    Shape shape = binary_broadcast(name, *x.type(), *y.type());
    Broadcast2 bc(x.shape(), y.shape(), shape);
    Tensor out = Tensor::empty(DType::boolean, shape);
    uint8_t* o = out.data<uint8_t>();
    dispatch(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = x.data<T>();
      const T* b = y.data<T>();
      for (int64_t i = 0; i < out.numel(); ++i) o[i] = compare<T>(op, a[bc.ia(i)], b[bc.ib(i)]);
    });
    return out;
  };
  r.add(std::move(p));
}

const Type& bool_input(const std::vector<TypeP>& in, size_t i, const std::string& name) {
  const Type& t = tensor_input(in, i, name);
  if (t.dtype != DType::boolean) user_error(name + " expects bool operands, got " + t.str());
  return t;
}

void add_logical(sem::Registry& r, const std::string& name, const std::string& doc, bool is_and) {
  Primitive p;
  p.facets[passes::kFusionFacet] = passes::FusionKind::Broadcast;
  p.name = name;
  p.family = "compare";
  p.doc = doc;
  p.params = {input("x"), input("y")};
  p.differentiable = false;
  p.infer = [name](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, name);
    return Type::tensor(DType::boolean,
                        binary_broadcast(name, bool_input(in, 0, name), bool_input(in, 1, name)));
  };
  p.eval = [name, is_and](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& y = in.at(1).tensor;
    Shape shape = binary_broadcast(name, *x.type(), *y.type());
    Broadcast2 bc(x.shape(), y.shape(), shape);
    Tensor out = Tensor::empty(DType::boolean, shape);
    const uint8_t* a = x.data<uint8_t>();
    const uint8_t* b = y.data<uint8_t>();
    uint8_t* o = out.data<uint8_t>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      bool va = a[bc.ia(i)] != 0, vb = b[bc.ib(i)] != 0;
      o[i] = is_and ? (va && vb) : (va || vb);
    }
    return out;
  };
  r.add(std::move(p));
}

void add_logical_not(sem::Registry& r) {
  Primitive p;
  p.name = "logical_not";
  p.facets[passes::kFusionFacet] = passes::FusionKind::Elementwise;
  p.family = "compare";
  p.doc = "boolean negation (not x)";
  p.params = {input("x")};
  p.differentiable = false;
  p.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, "logical_not");
    return Type::tensor(DType::boolean, bool_input(in, 0, "logical_not").shape);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& x = in.at(0).tensor;
    Tensor out = Tensor::empty(DType::boolean, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) out.data<uint8_t>()[i] = x.data<uint8_t>()[i] == 0;
    return out;
  };
  r.add(std::move(p));
}

void add_where(sem::Registry& r) {
  Primitive p;
  p.name = "where";
  p.facets[passes::kFusionFacet] = passes::FusionKind::Broadcast;
  p.family = "compare";
  p.doc = "where(c, a, b): a where c is true, else b (broadcasting all three)";
  p.params = {input("c"), input("a"), input("b")};
  p.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 3, 3, "where");
    const Type& c = tensor_input(in, 0, "where");
    const Type& a = tensor_input(in, 1, "where");
    const Type& b = tensor_input(in, 2, "where");
    if (c.dtype != DType::boolean) user_error("where condition must be bool, got " + c.str());
    Shape ab = binary_broadcast("where", a, b);
    auto shape = broadcast_shapes(c.shape, ab);
    if (!shape)
      user_error("cannot broadcast " + c.str() + " and " + Type::tensor(a.dtype, ab)->str());
    return Type::tensor(a.dtype, *shape);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& c = in.at(0).tensor;
    const Tensor& a = in.at(1).tensor;
    const Tensor& b = in.at(2).tensor;
    Shape ab = *broadcast_shapes(a.shape(), b.shape());
    Shape shape = *broadcast_shapes(c.shape(), ab);
    std::vector<int64_t> mc = broadcast_index_map(c.shape(), shape);
    std::vector<int64_t> ma = broadcast_index_map(a.shape(), shape);
    std::vector<int64_t> mb = broadcast_index_map(b.shape(), shape);
    Tensor out = Tensor::empty(a.dtype(), shape);
    dispatch(a.dtype(), "where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < out.numel(); ++i)
        out.data<T>()[i] = c.data<uint8_t>()[mc[i]] ? a.data<T>()[ma[i]] : b.data<T>()[mb[i]];
    });
    return out;
  };
  // The condition gets no cotangent; a and b get dout where they were chosen.
  ad::set_rules(
      p,
      [](ad::Emitter& e, const ad::Node&, const ad::Nodes& in, ad::Node*,
         ad::Node* dout) -> ad::Nodes {
        if (!ad::diff(in[1])) return {nullptr, nullptr, nullptr};
        ad::Node* zero = ad::k(e, 0, dout);
        return {nullptr, e.unbroadcast(ad::where(e, in[0], dout, zero), ad::shape_of(in[1])),
                e.unbroadcast(ad::where(e, in[0], zero, dout), ad::shape_of(in[2]))};
      },
      [](ad::Emitter& e, const ad::Node&, const ad::Nodes& in, ad::Node* out,
         const ad::Nodes& ts) -> ad::Node* {
        if (!ad::diff(in[1]) || (!ts[1] && !ts[2])) return nullptr;
        ad::Node* ta = ts[1] ? ts[1] : ad::k(e, 0, out);
        ad::Node* tb = ts[2] ? ts[2] : ad::k(e, 0, out);
        return ad::broadcast(e, ad::where(e, in[0], ta, tb), ad::shape_of(out));
      });
  r.add(std::move(p));
}

void add_cast(sem::Registry& r) {
  Primitive p;
  p.name = "cast";
  p.facets[passes::kFusionFacet] = passes::FusionKind::Elementwise;
  p.family = "compare";
  p.doc = "cast(x, dtype): convert; float -> int truncates toward zero, -> bool is x != 0";
  p.params = {input("x"), attr("dtype", ParamSpec::AttrKind::DType)};
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "cast");
    return Type::tensor(attrs.get_dtype("dtype"), tensor_input(in, 0, "cast").shape);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    return in.at(0).tensor.cast(attrs.get_dtype("dtype"));
  };
  // Between float dtypes the derivative casts back; to or from an int or bool it is zero.
  ad::set_rules(
      p,
      [](ad::Emitter& e, const ad::Node&, const ad::Nodes& in, ad::Node* out,
         ad::Node* dout) -> ad::Nodes {
        if (!ad::diff(in[0]) || !ad::diff(out)) return {nullptr};
        return {e.cast(dout, in[0]->type->dtype)};
      },
      [](ad::Emitter& e, const ad::Node&, const ad::Nodes& in, ad::Node* out,
         const ad::Nodes& ts) -> ad::Node* {
        if (!ts[0] || !ad::diff(in[0]) || !ad::diff(out)) return nullptr;
        return e.cast(ts[0], out->type->dtype);
      });
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void compare_costs(sem::Registry& r) {
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                           "logical_not", "where", "cast"})
    set_cost(r, name, sem::elementwise_cost(1));
}

// cast is linear between floating-point dtypes only (a cast to an integer rounds each piece).
Spec cast_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  Spec s = elementwise_spec(in, out, attrs);
  if (s && is_tensor(in, 0) && is_float(in[0]->dtype) && is_float(out->dtype)) {
    s->linear = kJoint;
    s->linear_inputs = {0};
  }
  return s;
}

void compare_rules(sem::Registry& r) {
  for (const char* name :
       {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "where"})
    set_sharding(r, name, elementwise_rule());
  set_sharding(r, "cast", dim_rule(cast_spec));
}

}  // namespace facets

}  // namespace

void register_compare(sem::Registry& r) {
  add_compare(r, "eq", "x == y (bool, broadcasting)", Cmp::eq);
  add_compare(r, "ne", "x != y (bool, broadcasting)", Cmp::ne);
  add_compare(r, "lt", "x < y (bool, broadcasting)", Cmp::lt);
  add_compare(r, "le", "x <= y (bool, broadcasting)", Cmp::le);
  add_compare(r, "gt", "x > y (bool, broadcasting)", Cmp::gt);
  add_compare(r, "ge", "x >= y (bool, broadcasting)", Cmp::ge);
  add_logical(r, "logical_and", "x and y on bool tensors", true);
  add_logical(r, "logical_or", "x or y on bool tensors", false);
  add_logical_not(r);
  add_where(r);
  add_cast(r);
  // Cost and sharding rules of the rows above.
  facets::compare_costs(r);
  facets::compare_rules(r);
}

}  // namespace spora::ops
