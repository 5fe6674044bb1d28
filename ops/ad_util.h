// Helpers of the derivative rules that ops/*.cpp put in their rows (autodiff/rules.h): short
// names for what rules emit most, so that each rule reads like its formula.
//
// Conventions every rule follows:
//   - a rule returns nullptr for "zero": an integer or bool input, an absent tangent, an
//     input the output does not depend on smoothly (a condition, indices, labels);
//   - cotangents have exactly the input's type (unbroadcast after a broadcasting op),
//     tangents exactly the output's type (broadcast() a tangent of a broadcast input);
//   - rules emit only differentiable primitives along the path of the derivative, so their
//     output can be differentiated again (masks come from comparisons, which are constants).
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "autodiff/rules.h"
#include "ops/kernel_util.h"

namespace spora::ops::ad {

using autodiff::Emitter;
using autodiff::JvpRule;
using autodiff::VjpRule;
using ir::Node;
using Nodes = std::vector<Node*>;

// Does x carry a derivative (a floating-point tensor)?
inline bool diff(const Node* x) { return x && x->type->is_tensor() && is_float(x->type->dtype); }
inline const Shape& shape_of(const Node* x) { return x->type->shape; }

inline Attrs attrs_of(std::initializer_list<std::pair<const char*, Attr>> items) {
  Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

// A scalar constant of like's dtype.
inline Node* k(Emitter& e, double v, const Node* like) { return e.scalar(v, like->type->dtype); }
inline Node* un(Emitter& e, const char* prim, Node* x, Attrs attrs = {}) {
  return e.op(prim, {x}, std::move(attrs));
}
inline Node* bin(Emitter& e, const char* prim, Node* x, Node* y) { return e.op(prim, {x, y}); }
inline Node* where(Emitter& e, Node* c, Node* a, Node* b) { return e.op("where", {c, a, b}); }

// t broadcast to `shape` (no node when it already has it).
inline Node* broadcast(Emitter& e, Node* t, const Shape& shape) {
  if (shape_of(t) == shape) return t;
  return e.op("broadcast_to", {t}, attrs_of({{"shape", shape}}));
}
// a + b where either may be null (zero).
inline Node* add_opt(Emitter& e, Node* a, Node* b) {
  if (!a) return b;
  if (!b) return a;
  return e.add(a, b);
}
// The tangent of input i, or zeros of its type when it has none.
inline Node* tangent_or_zero(Emitter& e, const Nodes& inputs, const Nodes& tangents, size_t i) {
  return i < tangents.size() && tangents[i] ? tangents[i] : e.zeros_like(inputs[i]);
}
inline bool any_tangent(const Nodes& tangents) {
  for (Node* t : tangents)
    if (t) return true;
  return false;
}

// Element i of a tuple-typed node (reading through make_tuple; null for a `zeros` part).
inline Node* tuple_part(Emitter& e, Node* t, size_t i) {
  Node* p = t->is_prim("make_tuple")
                ? t->inputs[i]
                : e.op("tuple_get", {t}, attrs_of({{"index", static_cast<int64_t>(i)}}));
  return p->is_prim("zeros") ? nullptr : p;
}

// permute(x, axes) that swaps the last two axes (the batched matrix transpose).
inline Node* swap_last2(Emitter& e, Node* x) {
  std::vector<int64_t> perm;
  const int64_t r = x->type->rank();
  for (int64_t i = 0; i < r; ++i) perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return e.op("permute", {x}, attrs_of({{"axes", perm}}));
}

inline void set_rules(Primitive& p, VjpRule vjp, JvpRule jvp) {
  p.facets[autodiff::kVjpFacet] = std::move(vjp);
  p.facets[autodiff::kJvpFacet] = std::move(jvp);
}

// A linear primitive f(x, attrs) (its own derivative up to a transpose): vjp emits
// transpose(dout), jvp emits f(t) with the same attributes; both only for float inputs.
using Transpose = std::function<Node*(Emitter& e, const Node& node, Node* x, Node* dout)>;
inline void set_linear_rules(Primitive& p, Transpose transpose) {
  set_rules(
      p,
      [transpose](Emitter& e, const Node& node, const Nodes& in, Node*, Node* dout) -> Nodes {
        return {diff(in[0]) ? transpose(e, node, in[0], dout) : nullptr};
      },
      [](Emitter& e, const Node& node, const Nodes& in, Node*, const Nodes& ts) -> Node* {
        if (!ts[0] || !diff(in[0])) return nullptr;
        return e.op(node.prim->name, {ts[0]}, node.attrs);
      });
}

}  // namespace spora::ops::ad
