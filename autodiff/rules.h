// Derivative rules: the facet types autodiff/ defines and ops/ fills, one pair per
// differentiable primitive, in that primitive's registry row (like JAX's
// ad.defjvp / tinygrad's gradient table).
//
// A rule does not compute numbers: it *emits IR* through an Emitter, so the derivative of a
// program is another program (reverse mode, forward mode, and the eager tape all use the same
// rules; the emitted nodes are themselves differentiable, which gives higher derivatives).
// In graph mode the Emitter appends nodes to the graph being built; in eager mode it runs
// each node as soon as it is emitted.
//
//   facet "vjp": VjpRule   reverse mode. Given the primal inputs, the primal output and the
//                          output's cotangent `dout`, return one cotangent per input
//                          (nullptr = zero, or no gradient: integer/bool inputs, attributes,
//                          inputs the Emitter says it does not want).
//                          Cotangents have exactly the input's type (use Emitter::unbroadcast
//                          after broadcasting ops).
//   facet "jvp": JvpRule   forward mode. Given the primal inputs, the primal output and one
//                          tangent per input (nullptr = zero), return the output's tangent
//                          (nullptr = zero). Tangents have exactly the primal's type.
//
// Primitives with differentiable=false need neither rule (their outputs get no gradient).
// A test checks that every differentiable primitive has both rules (tests/autodiff).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"
#include "semantics/registry.h"

namespace spora::autodiff {

using ir::Node;
using sem::Attrs;
using sem::Shape;
using sem::TypeP;

// Emits primitive applications with shape inference. Implementations: graph mode (append to
// a graph), eager mode (append and run at once).
class Emitter {
 public:
  virtual ~Emitter() = default;
  // prim(inputs..., attrs) -> its node (type from the primitive's shape rule).
  virtual Node* op(const std::string& prim, std::vector<Node*> inputs, Attrs attrs = {}) = 0;
  // A scalar constant of the given dtype (broadcasts against anything).
  virtual Node* scalar(double value, DType dtype) = 0;

  // While reverse mode runs a vjp rule: whether input i of the node wants a cotangent. Inputs
  // that do not depend on the leaves being differentiated want none (an input batch, a data
  // set), and a rule may then skip that cotangent's work and return nullptr for it; eager mode,
  // which runs what a rule emits at once and has no dead-code pass after it, needs that (W2's
  // step ran a [64, 512] x [512, 784] product for the images' unused cotangent). Returning it
  // anyway is correct, only wasted. Every input is wanted outside a rule.
  bool wants(size_t input) const { return input >= wanted_.size() || wanted_[input]; }
  void set_wanted(std::vector<bool> wanted) { wanted_ = std::move(wanted); }
  // Whether each emitted node runs as it is emitted (eager mode): no pass (dead code, fusion)
  // sees the nodes before they run, so a rule emits the form the kernels run best (matmul's
  // cotangents as flagged products, not products of transposed copies).
  virtual bool runs_at_once() const { return false; }

  // ---- helpers built on op() (defined in autodiff/emitter.cpp)
  Node* add(Node* a, Node* b) { return op("add", {a, b}); }
  Node* sub(Node* a, Node* b) { return op("sub", {a, b}); }
  Node* mul(Node* a, Node* b) { return op("mul", {a, b}); }
  Node* div(Node* a, Node* b) { return op("div", {a, b}); }
  Node* neg(Node* a) { return op("neg", {a}); }
  Node* scalar_like(double value, Node* like) { return scalar(value, like->type->dtype); }
  Node* zeros_like(Node* x);        // zeros of x's type (tensors, tuples, records)
  Node* ones_like(Node* x);
  // Sums x down to `shape` (the inverse of NumPy broadcasting), the usual last step of the
  // vjp of a broadcasting op. Returns x itself when the shape already matches.
  Node* unbroadcast(Node* x, const Shape& shape);
  // Broadcasts x (a reduction's result with the reduced `axes` removed unless keepdims) back
  // to `shape`: the vjp of sum/mean/max.
  Node* expand_reduced(Node* x, const Shape& shape, const std::vector<int64_t>& axes, bool keepdims);
  Node* sum(Node* x, std::vector<int64_t> axes, bool keepdims);
  Node* cast(Node* x, DType dtype);
  Node* reshape(Node* x, const Shape& shape);

 private:
  std::vector<bool> wanted_;
};

// out_value is the primal output node; node gives access to the attributes and types.
using VjpRule = std::function<std::vector<Node*>(Emitter& e, const Node& node,
                                                  const std::vector<Node*>& inputs,
                                                  Node* out_value, Node* dout)>;
using JvpRule = std::function<Node*(Emitter& e, const Node& node, const std::vector<Node*>& inputs,
                                    Node* out_value, const std::vector<Node*>& tangents)>;

inline constexpr const char* kVjpFacet = "vjp";
inline constexpr const char* kJvpFacet = "jvp";

}  // namespace spora::autodiff
