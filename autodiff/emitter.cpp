#include "autodiff/emitter.h"

#include <algorithm>

#include "lang/diagnostics.h"

namespace spora::autodiff {

using sem::Type;

Node* GraphEmitter::op(const std::string& prim_name, std::vector<Node*> inputs, Attrs attrs) {
  const sem::Primitive* prim = sem::Registry::instance().find(prim_name);
  if (!prim) throw lang::InternalError("autodiff: unknown primitive '" + prim_name + "'");
  std::vector<sem::TypeP> types;
  for (Node* n : inputs) types.push_back(n->type);
  sem::TypeP out;
  try {
    out = prim->infer(types, attrs);
  } catch (const lang::UserError& e) {
    throw lang::InternalError("autodiff emitted an ill-typed " + prim_name + ": " + e.what());
  }
  return m_.add_apply(g_, prim, std::move(inputs), std::move(attrs), out, loc_);
}

Node* GraphEmitter::scalar(double value, DType dtype) {
  return m_.add_constant(g_, sem::Value(sem::Tensor::scalar(dtype, value)), loc_);
}

Node* Emitter::zeros_like(Node* x) { return zeros_of(*this, x->type); }

Node* Emitter::ones_like(Node* x) {
  Attrs a;
  a.set("shape", x->type->shape);
  a.set("dtype", x->type->dtype);
  return op("ones", {}, a);
}

Node* Emitter::sum(Node* x, std::vector<int64_t> axes, bool keepdims) {
  Attrs a;
  a.set("axis", std::move(axes));
  a.set("keepdims", keepdims);
  return op("sum", {x}, a);
}

Node* Emitter::cast(Node* x, DType dtype) {
  if (x->type->dtype == dtype) return x;
  Attrs a;
  a.set("dtype", dtype);
  return op("cast", {x}, a);
}

Node* Emitter::reshape(Node* x, const Shape& shape) {
  if (x->type->shape == shape) return x;
  Attrs a;
  a.set("shape", shape);
  return op("reshape", {x}, a);
}

Node* Emitter::unbroadcast(Node* x, const Shape& shape) {
  const Shape& s = x->type->shape;
  if (s == shape) return x;
  if (s.size() < shape.size())
    throw lang::InternalError("unbroadcast: " + x->type->str() + " has fewer dimensions than " + sem::shape_str(shape));
  // Sum the leading axes x has in excess, then the axes where `shape` has size 1.
  const size_t lead = s.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) axes.push_back(static_cast<int64_t>(i));
    else if (shape[i - lead] == 1 && s[i] != 1) axes.push_back(static_cast<int64_t>(i));
  }
  Node* r = axes.empty() ? x : sum(x, axes, true);
  return reshape(r, shape);
}

Node* Emitter::expand_reduced(Node* x, const Shape& shape, const std::vector<int64_t>& axes, bool keepdims) {
  Node* r = x;
  if (!keepdims) {
    Shape kept = shape;
    for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
    r = reshape(r, kept);
  }
  Attrs a;
  a.set("shape", shape);
  return r->type->shape == shape ? r : op("broadcast_to", {r}, a);
}

bool SVal::zero() const {
  if (node) return false;
  return std::all_of(parts.begin(), parts.end(), [](const SVal& p) { return p.zero(); });
}

Node* zeros_of(Emitter& e, const sem::TypeP& type) {
  switch (type->kind) {
    case Type::Kind::Tensor: {
      Attrs a;
      a.set("shape", type->shape);
      a.set("dtype", type->dtype);
      return e.op("zeros", {}, a);
    }
    case Type::Kind::Tuple: {
      std::vector<Node*> xs;
      for (const auto& t : type->elems) xs.push_back(zeros_of(e, t));
      return e.op("make_tuple", xs);
    }
    case Type::Kind::Record: {
      std::vector<Node*> xs;
      std::string names;
      for (size_t i = 0; i < type->elems.size(); ++i) {
        xs.push_back(zeros_of(e, type->elems[i]));
        names += (i ? "," : "") + type->names[i];
      }
      Attrs a;
      a.set("name", type->name);
      a.set("names", names);
      return e.op("make_record", xs, a);
    }
    case Type::Kind::List: {
      Attrs a;
      a.set("elem", type->elems.at(0)->str());
      return e.op("list_empty", {}, a);
    }
    default:
      throw lang::InternalError("autodiff: no zero of type " + type->str());
  }
}

Node* materialise(Emitter& e, const SVal& v, const sem::TypeP& type) {
  if (v.node) return v.node;
  if (v.parts.empty()) return zeros_of(e, type);
  std::vector<Node*> xs;
  for (size_t i = 0; i < type->elems.size(); ++i)
    xs.push_back(i < v.parts.size() ? materialise(e, v.parts[i], type->elems[i]) : zeros_of(e, type->elems[i]));
  if (type->kind == Type::Kind::Record) {
    std::string names;
    for (size_t i = 0; i < type->names.size(); ++i) names += (i ? "," : "") + type->names[i];
    Attrs a;
    a.set("name", type->name);
    a.set("names", names);
    return e.op("make_record", xs, a);
  }
  return e.op("make_tuple", xs);
}

namespace {
// Splits a structured node into parts (tuple_get / record_get).
SVal split(Emitter& e, Node* n, const sem::TypeP& type) {
  SVal s;
  for (size_t i = 0; i < type->elems.size(); ++i) {
    Attrs a;
    if (type->kind == Type::Kind::Record) {
      a.set("field", type->names[i]);
      s.parts.push_back(SVal{e.op("record_get", {n}, a), {}});
    } else {
      a.set("index", static_cast<int64_t>(i));
      s.parts.push_back(SVal{e.op("tuple_get", {n}, a), {}});
    }
  }
  return s;
}
}  // namespace

SVal add_svals(Emitter& e, const SVal& v, const SVal& w, const sem::TypeP& type) {
  if (v.zero()) return w;
  if (w.zero()) return v;
  if (type->kind == Type::Kind::Tensor) return SVal{e.add(v.node, w.node), {}};
  if (type->kind == Type::Kind::List) {
    // A single contribution (list_add_at on an empty list, a tape read's adjoint) is added
    // where it lands: O(1), not a pass over the whole list.
    auto single = [](const Node* n) {
      return n->is_prim("list_add_at") && n->inputs[0]->is_prim("list_empty");
    };
    if (single(w.node))
      return SVal{e.op("list_add_at", {v.node, w.node->inputs[1], w.node->inputs[2]}), {}};
    if (single(v.node))
      return SVal{e.op("list_add_at", {w.node, v.node->inputs[1], v.node->inputs[2]}), {}};
    return SVal{e.op("list_add", {v.node, w.node}), {}};
  }
  SVal a = v.node ? split(e, v.node, type) : v;
  SVal b = w.node ? split(e, w.node, type) : w;
  SVal out;
  out.parts.resize(type->elems.size());
  for (size_t i = 0; i < type->elems.size(); ++i) {
    SVal pa = i < a.parts.size() ? a.parts[i] : SVal{};
    SVal pb = i < b.parts.size() ? b.parts[i] : SVal{};
    out.parts[i] = add_svals(e, pa, pb, type->elems[i]);
  }
  return out;
}

bool differentiable_type(const sem::TypeP& type) {
  if (!type) return false;
  if (type->kind == Type::Kind::Tensor) return is_float(type->dtype);
  if (type->kind == Type::Kind::Tuple || type->kind == Type::Kind::Record)
    return std::any_of(type->elems.begin(), type->elems.end(), differentiable_type);
  return false;
}

bool adjoint_type(const sem::TypeP& type) {
  if (type && type->kind == Type::Kind::List) return adjoint_type(type->elems.at(0));
  return differentiable_type(type);
}

bool tangent_type(const sem::TypeP& type) {
  if (!type) return false;
  if (type->kind == Type::Kind::List) return tangent_type(type->elems.at(0));
  if (type->kind == Type::Kind::Tuple || type->kind == Type::Kind::Record)
    return std::any_of(type->elems.begin(), type->elems.end(), tangent_type);
  return differentiable_type(type);
}

}  // namespace spora::autodiff
