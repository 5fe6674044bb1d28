// Tape lists: the run-time lists reverse-mode AD uses to record the state of every iteration
// of a loop (autodiff/reverse.cpp), like TensorFlow's TensorArray.
//
//   list_empty(elem="T") : list<T>      a new, empty list (elem: the element type's text)
//   list_push(l, x)      : list<T>      l with x appended
//   list_get(l, i)       : T            element i (a run-time integer scalar)
//   list_len(l)          : i64          number of elements
//
// A second reverse derivative through a loop differentiates the first one's backward pass,
// which reads the tape; the adjoint of a tape is a list of the same element type, sparse:
// an element no contribution reached is absent and counts as zeros (list_empty is the zero).
//   list_add_at(l, i, x) : list<T>      l with x added to element i (absent ones below i stay
//                                       absent; an absent element i becomes x)
//   list_add(l, m)       : list<T>      element-wise sum (absent + x = x)
//   list_get_or_zeros(l, i, elem="T") : T   element i, or zeros of T where it is absent
//
// A loop's sum of products, made once after it (semantics/passes/stack_products.h):
//   list_tmatmul_sum(la, lb, c) : T[p, q]   c + the sum over i of transpose(la[i]) @ lb[i],
//                                        for lists of equal length of T[r, p] and T[r, q]: one
//                                        product of the stacked rows, [n r, p]^T x [n r, q]
//
// Lists are used linearly: each list value is pushed (or added to) at most once (the AD
// guarantees it), so list_push and list_add_at update the shared buffer in place in O(1) and
// return the same list.
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/cost.h"
#include "semantics/ir/parser.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

struct TapeList : sem::Opaque {
  std::vector<Value> items;
  std::string describe() const override { return "list of " + std::to_string(items.size()); }
};

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "tape";
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.differentiable = false;  // autodiff handles loops and their tapes structurally
  return p;
}

TapeList& as_list(const Value& v, const char* prim) {
  auto* l = dynamic_cast<TapeList*>(v.opaque.get());
  if (v.kind != Value::Kind::Opaque || !l) internal_error(std::string(prim) + " expects a list value");
  return *l;
}

// a + b for two values of one differentiable structure (tensors added by the backend's add
// kernel; tuples and records element-wise; anything else, such as a none, kept from a).
Value add_values(const Value& a, const Value& b) {
  if (a.is_tensor() && b.is_tensor()) {
    static const sem::Primitive* add = sem::Registry::instance().find("add");
    return sem::kernel_for(*add)({a, b}, {});
  }
  if ((a.kind == Value::Kind::Tuple || a.kind == Value::Kind::Record) && a.kind == b.kind &&
      a.items().size() == b.items().size()) {
    std::vector<Value> items;
    for (size_t i = 0; i < a.items().size(); ++i)
      items.push_back(add_values(a.items()[i], b.items()[i]));
    Value out = a;  // the kind, and a record's type
    out.elems = std::make_shared<std::vector<Value>>(std::move(items));
    return out;
  }
  return a;
}

// Zeros of a type (tensors, tuples, records of them).
Value zeros_of_type(const TypeP& t) {
  switch (t->kind) {
    case Type::Kind::Tensor:
      return Value(sem::Tensor::zeros(t->dtype, t->shape));
    case Type::Kind::Tuple:
    case Type::Kind::Record: {
      std::vector<Value> items;
      for (const TypeP& e : t->elems) items.push_back(zeros_of_type(e));
      if (t->kind == Type::Kind::Tuple) return Value::tuple(std::move(items));
      Value r = Value::tuple(std::move(items));
      r.kind = Value::Kind::Record;
      r.record_type = t;
      return r;
    }
    default:
      internal_error("list_get_or_zeros: no zeros of type " + t->str());
  }
}

const Type& list_input(const std::vector<TypeP>& in, const char* prim) {
  if (in.empty() || !in[0] || in[0]->kind != Type::Kind::List)
    user_error(std::string(prim) + " expects a list, got " + (in.empty() || !in[0] ? "nothing" : in[0]->str()));
  return *in[0];
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void tape_costs(sem::Registry& r) {
  for (const char* name : {"list_empty", "list_push", "list_get", "list_len", "list_add_at",
                           "list_add", "list_get_or_zeros", "list_tmatmul_sum"})
    set_cost(r, name, sem::host_cost());
}

void tape_rules(sem::Registry& r) {
  for (const char* name : {"list_empty", "list_push", "list_get", "list_len", "list_add_at",
                           "list_add", "list_get_or_zeros", "list_tmatmul_sum"})
    set_sharding(r, name, replicated_only_rule("run-time lists (the tape) live on the host"));
}

}  // namespace facets

}  // namespace

void register_tape(sem::Registry& r) {
  Primitive empty = row("list_empty", "list_empty(elem): a new empty list of elements of type elem",
                        {attr("elem", ParamSpec::AttrKind::String)});
  empty.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 0, 0, "list_empty");
    return Type::list(ir::parse_type(attrs.get_string("elem")));
  };
  empty.eval = [](const std::vector<Value>&, const Attrs&) -> Value {
    Value v;
    v.kind = Value::Kind::Opaque;
    v.opaque = std::make_shared<TapeList>();
    return v;
  };
  r.add(std::move(empty));

  Primitive push = row("list_push", "list_push(l, x): l with x appended", {input("l"), input("x")});
  push.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, "list_push");
    const Type& l = list_input(in, "list_push");
    if (!sem::same_type(l.elems[0], in[1]))
      user_error("list_push: element " + in[1]->str() + " does not match " + l.str());
    return in[0];
  };
  push.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    as_list(in[0], "list_push").items.push_back(in[1]);
    return in[0];
  };
  r.add(std::move(push));

  Primitive get = row("list_get", "list_get(l, i): element i of a list", {input("l"), input("i")});
  get.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, "list_get");
    const Type& l = list_input(in, "list_get");
    if (!in[1]->is_scalar() || !is_integer(in[1]->dtype))
      user_error("list_get index must be an integer scalar, got " + in[1]->str());
    return l.elems[0];
  };
  get.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    const TapeList& l = as_list(in[0], "list_get");
    const int64_t i = static_cast<int64_t>(in[1].tensor.item());
    if (i < 0 || i >= static_cast<int64_t>(l.items.size()))
      user_error("list index " + std::to_string(i) + " is out of range for a list of " +
                 std::to_string(l.items.size()));
    return l.items[static_cast<size_t>(i)];
  };
  r.add(std::move(get));

  Primitive len = row("list_len", "list_len(l): the number of elements (i64)", {input("l")});
  len.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, "list_len");
    list_input(in, "list_len");
    return Type::scalar(DType::i64);
  };
  len.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    return Value(sem::Tensor::scalar(DType::i64, static_cast<double>(as_list(in[0], "list_len").items.size())));
  };
  r.add(std::move(len));

  Primitive add_at =
      row("list_add_at", "list_add_at(l, i, x): l with x added to element i (a tape's adjoint)",
          {input("l"), input("i"), input("x")});
  add_at.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 3, 3, "list_add_at");
    const Type& l = list_input(in, "list_add_at");
    if (!in[1]->is_scalar() || !is_integer(in[1]->dtype))
      user_error("list_add_at index must be an integer scalar, got " + in[1]->str());
    if (!sem::same_type(l.elems[0], in[2]))
      user_error("list_add_at: element " + in[2]->str() + " does not match " + l.str());
    return in[0];
  };
  add_at.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    TapeList& l = as_list(in[0], "list_add_at");
    const int64_t i = static_cast<int64_t>(in[1].tensor.item());
    if (i < 0) user_error("list index " + std::to_string(i) + " is negative");
    if (static_cast<size_t>(i) >= l.items.size()) l.items.resize(static_cast<size_t>(i) + 1);
    Value& slot = l.items[static_cast<size_t>(i)];
    slot = slot.kind == Value::Kind::None ? in[2] : add_values(slot, in[2]);
    return in[0];
  };
  r.add(std::move(add_at));

  Primitive add =
      row("list_add", "list_add(l, m): the element-wise sum of two lists (a tape's adjoint)",
          {input("l"), input("m")});
  add.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, "list_add");
    const Type& l = list_input(in, "list_add");
    if (!sem::same_type(in[0], in[1]))
      user_error("list_add: " + l.str() + " and " + in[1]->str() + " differ");
    return in[0];
  };
  add.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    const TapeList& a = as_list(in[0], "list_add");
    const TapeList& b = as_list(in[1], "list_add");
    auto out = std::make_shared<TapeList>();
    out->items.resize(std::max(a.items.size(), b.items.size()));
    for (size_t i = 0; i < out->items.size(); ++i) {
      const bool in_a = i < a.items.size() && a.items[i].kind != Value::Kind::None;
      const bool in_b = i < b.items.size() && b.items[i].kind != Value::Kind::None;
      if (in_a && in_b)
        out->items[i] = add_values(a.items[i], b.items[i]);
      else if (in_a || in_b)
        out->items[i] = in_a ? a.items[i] : b.items[i];
    }
    Value v;
    v.kind = Value::Kind::Opaque;
    v.opaque = std::move(out);
    return v;
  };
  r.add(std::move(add));

  Primitive get_or_zeros =
      row("list_get_or_zeros",
          "list_get_or_zeros(l, i, elem): element i of a tape's adjoint, zeros where absent",
          {input("l"), input("i"), attr("elem", ParamSpec::AttrKind::String)});
  get_or_zeros.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, "list_get_or_zeros");
    const Type& l = list_input(in, "list_get_or_zeros");
    if (!in[1]->is_scalar() || !is_integer(in[1]->dtype))
      user_error("list_get_or_zeros index must be an integer scalar, got " + in[1]->str());
    return l.elems[0];
  };
  get_or_zeros.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const TapeList& l = as_list(in[0], "list_get_or_zeros");
    const int64_t i = static_cast<int64_t>(in[1].tensor.item());
    if (i >= 0 && static_cast<size_t>(i) < l.items.size() &&
        l.items[static_cast<size_t>(i)].kind != Value::Kind::None)
      return l.items[static_cast<size_t>(i)];
    return zeros_of_type(ir::parse_type(attrs.get_string("elem")));
  };
  r.add(std::move(get_or_zeros));
  Primitive tmatmul_sum =
      row("list_tmatmul_sum",
          "list_tmatmul_sum(la, lb, c): c + the sum over i of transpose(la[i]) @ lb[i], one "
          "product of the stacked rows",
          {input("la"), input("lb"), input("c")});
  tmatmul_sum.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 3, 3, "list_tmatmul_sum");
    const Type& la = list_input(in, "list_tmatmul_sum");
    if (!in[1] || in[1]->kind != Type::Kind::List)
      user_error("list_tmatmul_sum expects two lists, got " + (in[1] ? in[1]->str() : "nothing"));
    const TypeP& a = la.elems[0];
    const TypeP& b = in[1]->elems[0];
    if (!a->is_tensor() || !b->is_tensor() || a->rank() != 2 || b->rank() != 2 ||
        a->dtype != b->dtype || !is_float(a->dtype) || a->shape[0] != b->shape[0])
      user_error("list_tmatmul_sum: elements " + a->str() + " and " + b->str() +
                 " are not matrices of one floating dtype with the same rows");
    const TypeP out = Type::tensor(a->dtype, {a->shape[1], b->shape[1]});
    if (!sem::same_type(in[2], out))
      user_error("list_tmatmul_sum: the sum is " + out->str() + ", the initial value " +
                 in[2]->str());
    return out;
  };
  tmatmul_sum.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    const TapeList& la = as_list(in[0], "list_tmatmul_sum");
    const TapeList& lb = as_list(in[1], "list_tmatmul_sum");
    if (la.items.size() != lb.items.size())
      user_error("list_tmatmul_sum: lists of " + std::to_string(la.items.size()) + " and " +
                 std::to_string(lb.items.size()) + " elements");
    static const sem::Primitive* matmul = sem::Registry::instance().find("matmul");
    Attrs t;
    t.set("transpose_a", true);
    if (la.items.empty()) return in[2];
    bool host = true;
    for (size_t i = 0; i < la.items.size(); ++i)
      host = host && la.items[i].tensor.device().is_cpu() && lb.items[i].tensor.device().is_cpu();
    if (!host) {  // a device's tensors: one product per element, summed
      Value acc = in[2];
      for (size_t i = 0; i < la.items.size(); ++i)
        acc = add_values(acc, sem::kernel_for(*matmul)({la.items[i], lb.items[i]}, t));
      return acc;
    }
    // The stacked rows: concat's kernel (whose rule checks the elements agree).
    static const sem::Primitive* concat = sem::Registry::instance().find("concat");
    Attrs rows;
    rows.set("axis", int64_t{0});
    const Value sa = sem::kernel_for(*concat)(la.items, rows);
    const Value sb = sem::kernel_for(*concat)(lb.items, rows);
    return add_values(in[2], sem::kernel_for(*matmul)({sa, sb}, t));
  };
  r.add(std::move(tmatmul_sum));
  // Cost and sharding rules of the rows above.
  facets::tape_costs(r);
  facets::tape_rules(r);
}

}  // namespace spora::ops
