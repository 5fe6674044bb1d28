// Tape lists: the run-time lists reverse-mode AD uses to record the state of every iteration
// of a loop (autodiff/reverse.cpp), like TensorFlow's TensorArray.
//
//   list_empty(elem="T") : list<T>      a new, empty list (elem: the element type's text)
//   list_push(l, x)      : list<T>      l with x appended
//   list_get(l, i)       : T            element i (a run-time integer scalar)
//   list_len(l)          : i64          number of elements
//
// Lists are used linearly: each list value is pushed at most once (the AD guarantees it), so
// list_push appends in place to the shared buffer in O(1) and returns the same list.
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/ir/parser.h"

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

const Type& list_input(const std::vector<TypeP>& in, const char* prim) {
  if (in.empty() || !in[0] || in[0]->kind != Type::Kind::List)
    user_error(std::string(prim) + " expects a list, got " + (in.empty() || !in[0] ? "nothing" : in[0]->str()));
  return *in[0];
}

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
}

}  // namespace spora::ops
