// Neural-network primitives: softmax, log_softmax, logsumexp, cross_entropy, layer_norm,
// layer_norm_grad, batch_norm, dropout. Float tensors only; kernels compute in double and round
// once.
//
// All of softmax, log_softmax, logsumexp and cross_entropy subtract the maximum first, so huge
// logits (1000.0) stay finite.
//   softmax(x, axis=-1)   log_softmax(x, axis=-1)   logsumexp(x, axis=none, keepdims=false)
//   cross_entropy(logits, labels, reduction="mean"): PyTorch's. logits [N, C] (or [C], or
//     [N, C, d...]); class axis 1 (0 for 1-D logits). labels: integer class indices (i32/i64)
//     of the logits' shape without the class axis; or float class probabilities of the
//     logits' own shape (soft targets). reduction "mean" (over every label), "sum" or "none"
//     (the per-label losses). A label outside [0, C) is a run-time error.
//   layer_norm(x, gamma=none, beta=none, ndim=1, eps=1e-5): normalise over the last `ndim` axes
//     (biased variance); gamma and beta (optional) have the shape of those axes.
//   layer_norm_grad(x, g, ndim=1, eps=1e-5): layer_norm's input gradient for the output
//     gradient g (already times gamma), the statistics recomputed from x; what layer_norm's vjp
//     emits.
//   batch_norm(x, gamma, beta, running_mean, running_var, training=false, momentum=0.1,
//     eps=1e-5): x is [N, C] or [N, C, H, W] (channel axis 1, statistics over every other
//     axis); gamma, beta and the running statistics are all required, all [C]. training=false
//     normalises with the running statistics and returns y. training=true normalises with the batch
//     statistics (biased variance) and returns the tuple (y, new_running_mean, new_running_var),
//     where new = (1 - momentum) * running + momentum * batch, with the unbiased batch variance
//     (PyTorch).
//   dropout(x, p=0.5, seed=0, training=true): keeps element i when u(seed, i) >= p
//     (semantics/rng.h) and scales kept elements by 1 / (1 - p); identity when training is false or
//     p is 0.
//
// Derivative rules (y the output, sums and means along the op's axes, kept):
//   softmax       vjp y (dout - sum(dout y))           jvp y (t - sum(t y))
//   log_softmax   vjp dout - exp(y) sum(dout)          jvp t - sum(exp(y) t)
//   logsumexp     vjp dout exp(x - y)                  jvp sum(t exp(x - y))
//   cross_entropy d/dlogits = mass softmax(x) - target per label (target: the one-hot label or
//                 the soft label, mass: the sum of the soft label, 1 for class indices), scaled
//                 by the reduction; soft labels get -log_softmax(x); class indices nothing
//   layer_norm    the usual: rstd (g - mean(g) - xhat mean(g xhat)) with g = dout gamma, as
//                 layer_norm_grad(x, g); gamma gets sum(dout layer_norm(x)), beta sum(dout)
//   layer_norm_grad  self-adjoint in g; in x the second derivative (at its rules)
//   batch_norm    inference: affine in x and in every parameter; training: as layer_norm over
//                 the non-channel axes, plus the paths into new_running_mean / new_running_var
//   dropout       linear: dropout(dout) with the same seed (the same mask)
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/amp.h"
#include "semantics/cost.h"
#include "semantics/passes/decompose.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/rng.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;
using ad::Emitter;
using ad::Node;
using ad::Nodes;
using kir::ReduceOp;
using passes::LoopBuilder;
using passes::LoopValue;
using passes::LoopValues;

Attrs axes_attrs(const std::vector<int64_t>& axes, bool keepdims) {
  return ad::attrs_of({{"axis", axes}, {"keepdims", keepdims}});
}
Node* mean(Emitter& e, Node* x, const std::vector<int64_t>& axes, bool keepdims) {
  return e.op("mean", {x}, axes_attrs(axes, keepdims));
}
// The sum or mean of every element.
Node* total(Emitter& e, Node* x, bool average) {
  return e.op(average ? "mean" : "sum", {x}, ad::attrs_of({{"axis", none()}, {"keepdims", false}}));
}

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "nn";
  p.doc = std::move(doc);
  p.params = std::move(params);
  return p;
}

const Type& float_input(const std::vector<TypeP>& in, size_t i, const std::string& name) {
  const Type& t = tensor_input(in, i, name);
  if (!is_float(t.dtype)) user_error(name + " expects a float tensor, got " + t.str());
  return t;
}

// A tensor seen as [outer, len, inner] around one axis.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    len = s[axis];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  }
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * len + k) * inner + i; }
};

double shift_of(double m) { return std::isfinite(m) ? m : 0.0; }

// ---- decompositions for fusion (the decompose facet, semantics/passes/decompose.h) ----------
// The normalisations compute in f64 and round once, like their reference kernels: they divide
// by a standard deviation, which would amplify f32 rounding of their inputs' noise.

void need_real(LoopBuilder& b, const std::string& op, const LoopValue* x) {
  const DType d = b.dtype(x);
  if (d != DType::f32 && d != DType::f64) b.fail(op + " on a non-float tensor");
}

// (finite_or_zero(max(x)), sum(exp(x - that))) over axes, both keepdims.
std::pair<LoopValue*, LoopValue*> shifted_sum(LoopBuilder& b, LoopValue* x,
                                              const std::vector<int64_t>& axes) {
  LoopValue* sh = b.finite_or_zero(b.reduce(ReduceOp::Max, false, x, axes));
  LoopValue* e = b.unary("exp", b.binary("sub", x, sh));
  return {sh, b.reduce(ReduceOp::Sum, false, e, axes)};
}

LoopValue* softmax_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in, bool log) {
  LoopValue* x = in.at(0);
  need_real(b, n.prim->name, x);
  const int64_t axis = normalize_axis(n.attrs.get_int("axis"), *n.inputs[0]->type);
  LoopValue* m = b.reduce(ReduceOp::Max, false, x, {axis});
  LoopValue* z = b.binary("sub", x, b.finite_or_zero(m));
  LoopValue* e = b.unary("exp", z);
  LoopValue* s = b.reduce(ReduceOp::Sum, false, e, {axis});
  return log ? b.binary("sub", z, b.unary("log", s)) : b.binary("div", e, s);
}

LoopValue* logsumexp_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
  LoopValue* x = in.at(0);
  need_real(b, "logsumexp", x);
  auto [sh, s] = shifted_sum(b, x, reduction_axes(n.attrs, "axis", *n.inputs[0]->type));
  return b.reshape(b.binary("add", b.unary("log", s), sh), n.type->shape);
}

LoopValue* layer_norm_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
  LoopValue* x0 = in.at(0);
  need_real(b, "layer_norm", x0);
  LoopValue* x = b.cast(x0, DType::f64);
  const int64_t rank = static_cast<int64_t>(b.shape(x).size());
  std::vector<int64_t> axes;
  for (int64_t a = rank - n.attrs.get_int("ndim"); a < rank; ++a) axes.push_back(a);
  LoopValue* mu = b.reduce(ReduceOp::Sum, true, x, axes);
  LoopValue* xc = b.binary("sub", x, mu);
  LoopValue* var = b.reduce(ReduceOp::Sum, true, b.binary("mul", xc, xc), axes);
  LoopValue* rstd =
      b.unary("rsqrt", b.binary("add", var, b.literal(n.attrs.get_float("eps"), DType::f64)));
  LoopValue* y = b.binary("mul", xc, rstd);
  if (in.size() > 1) y = b.binary("mul", y, b.cast(in[1], DType::f64));
  if (in.size() > 2) y = b.binary("add", y, b.cast(in[2], DType::f64));
  return b.cast(y, b.dtype(x0));
}

// layer_norm_grad(x, g): rstd (g - mean(g) - xhat mean(g xhat)), the statistics from x.
LoopValue* layer_norm_grad_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
  LoopValue* x0 = in.at(0);
  need_real(b, "layer_norm_grad", x0);
  LoopValue* x = b.cast(x0, DType::f64);
  LoopValue* g = b.cast(in.at(1), DType::f64);
  const int64_t rank = static_cast<int64_t>(b.shape(x).size());
  std::vector<int64_t> axes;
  for (int64_t a = rank - n.attrs.get_int("ndim"); a < rank; ++a) axes.push_back(a);
  LoopValue* xc = b.binary("sub", x, b.reduce(ReduceOp::Sum, true, x, axes));
  LoopValue* var = b.reduce(ReduceOp::Sum, true, b.binary("mul", xc, xc), axes);
  LoopValue* rstd =
      b.unary("rsqrt", b.binary("add", var, b.literal(n.attrs.get_float("eps"), DType::f64)));
  LoopValue* xhat = b.binary("mul", xc, rstd);
  LoopValue* gc = b.binary("sub", g, b.reduce(ReduceOp::Sum, true, g, axes));
  LoopValue* gx = b.reduce(ReduceOp::Sum, true, b.binary("mul", g, xhat), axes);
  LoopValue* dx = b.binary("mul", rstd, b.binary("sub", gc, b.binary("mul", xhat, gx)));
  return b.cast(dx, b.dtype(x0));
}

LoopValue* cross_entropy_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
  LoopValue* x = in.at(0);
  LoopValue* labels = in.at(1);
  need_real(b, "cross_entropy", x);
  const Shape& xs = b.shape(x);
  const int64_t axis = xs.size() >= 2 ? 1 : 0;
  auto [sh, s] = shifted_sum(b, x, {axis});
  LoopValue* lse = b.binary("add", b.unary("log", s), sh);  // kept shape
  LoopValue* loss = nullptr;
  const DType ld = b.dtype(labels);
  if (ld == DType::f32 || ld == DType::f64) {
    LoopValue* t = b.binary("mul", labels, b.binary("sub", x, lse));
    loss = b.unary("neg", b.reduce(ReduceOp::Sum, false, t, {axis}));
  } else {
    LoopValue* oh = b.one_hot(labels, b.dtype(x), xs, axis);
    LoopValue* picked = b.reduce(ReduceOp::Sum, false, b.binary("mul", x, oh), {axis});
    loss = b.binary("sub", lse, picked);
  }
  const std::string red = n.attrs.has("reduction") ? n.attrs.get_string("reduction") : "mean";
  if (red == "none") return b.reshape(loss, n.type->shape);
  std::vector<int64_t> all;
  for (size_t a = 0; a < b.shape(loss).size(); ++a) all.push_back(static_cast<int64_t>(a));
  return b.reshape(b.reduce(ReduceOp::Sum, red == "mean", loss, all), n.type->shape);
}

// Inference only (training's batch statistics are not fused: its fusion kind is Opaque).
LoopValue* batch_norm_loops(LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
  if (n.attrs.get_bool("training")) b.fail("batch_norm in training");
  LoopValue* x0 = in.at(0);
  need_real(b, "batch_norm", x0);
  LoopValue* x = b.cast(x0, DType::f64);
  Shape chan(b.shape(x).size(), 1);
  chan[1] = b.shape(x)[1];
  auto c = [&](LoopValue* v) { return b.reshape(b.cast(v, DType::f64), chan); };
  LoopValue* rstd = b.unary("rsqrt", b.binary("add", b.cast(in.at(4), DType::f64),
                                              b.literal(n.attrs.get_float("eps"), DType::f64)));
  LoopValue* y = b.binary("mul", b.binary("sub", x, c(in.at(3))), c(rstd));
  return b.cast(b.binary("add", b.binary("mul", y, c(in.at(1))), c(in.at(2))), b.dtype(x0));
}

// ---- softmax / log_softmax ------------------------------------------------------------------

void add_softmax(sem::Registry& r, bool log) {
  std::string name = log ? "log_softmax" : "softmax";
  Primitive p = row(name,
                    log ? "log_softmax(x, axis=-1): x - logsumexp(x, axis), stable"
                        : "softmax(x, axis=-1): exp(x) / sum(exp(x)) along axis, stable",
                    {input("x"), attr("axis", AK::Int, int_attr(-1))});
  p.infer = [name](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& t = float_input(in, 0, name);
    if (t.rank() == 0) user_error(name + " expects a tensor of rank at least 1, got " + t.str());
    normalize_axis(attrs.get_int("axis"), t);
    return in[0];
  };
  p.eval = [log](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    AxisView v(x.shape(), normalize_axis(attrs.get_int("axis"), *x.type()));
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t i = 0; i < v.inner; ++i) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < v.len; ++k) m = std::max(m, x.get(v.at(o, k, i)));
        double shift = shift_of(m), sum = 0;
        for (int64_t k = 0; k < v.len; ++k) sum += std::exp(x.get(v.at(o, k, i)) - shift);
        double lse = std::log(sum);
        for (int64_t k = 0; k < v.len; ++k) {
          double z = x.get(v.at(o, k, i)) - shift;
          out.set(v.at(o, k, i), log ? z - lse : std::exp(z) / sum);
        }
      }
    }
    return out;
  };
  // Both modes apply the same (symmetric) Jacobian to g.
  auto apply = [log](Emitter& e, const Node& node, Node* x, Node* y, Node* g) {
    std::vector<int64_t> axis{normalize_axis(node.attrs.get_int("axis"), *x->type)};
    if (log) return e.sub(g, e.mul(ad::un(e, "exp", y), e.sum(g, axis, true)));
    return e.mul(y, e.sub(g, e.sum(e.mul(g, y), axis, true)));
  };
  auto apply_t = [log, apply](Emitter& e, const Node& node, Node* x, Node* y, Node* t) {
    if (!log) return apply(e, node, x, y, t);
    std::vector<int64_t> axis{normalize_axis(node.attrs.get_int("axis"), *x->type)};
    return e.sub(t, e.sum(e.mul(ad::un(e, "exp", y), t), axis, true));
  };
  ad::set_rules(
      p,
      [apply](Emitter& e, const Node& node, const Nodes& in, Node* out, Node* dout) -> Nodes {
        return {apply(e, node, in[0], out, dout)};
      },
      [apply_t](Emitter& e, const Node& node, const Nodes& in, Node* out, const Nodes& ts)
          -> Node* { return ts[0] ? apply_t(e, node, in[0], out, ts[0]) : nullptr; });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
  p.facets[passes::kDecomposeFacet] =
      passes::DecomposeFn([log](LoopBuilder& b, const ir::Node& n, const LoopValues& in) {
        return softmax_loops(b, n, in, log);
      });
  r.add(std::move(p));
}

// ---- logsumexp ------------------------------------------------------------------------------

Shape lse_shape(const Type& t, const Attrs& attrs, std::vector<int64_t>& axes, bool keep_all) {
  axes = reduction_axes(attrs, "axis", t);
  bool keep = keep_all || (attrs.has("keepdims") && attrs.get_bool("keepdims"));
  Shape out;
  for (int64_t d = 0; d < t.rank(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!red)
      out.push_back(t.shape[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

void add_logsumexp(sem::Registry& r) {
  Primitive p = row(
      "logsumexp", "logsumexp(x, axis=none, keepdims=false): log(sum(exp(x))), stable",
      {input("x"), attr("axis", AK::IntsOrNone, none()), attr("keepdims", AK::Bool, Attr{false})});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "logsumexp");
    const Type& t = float_input(in, 0, "logsumexp");
    std::vector<int64_t> axes;
    return Type::tensor(t.dtype, lse_shape(t, attrs, axes, false));
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    std::vector<int64_t> axes;
    Shape keep_shape = lse_shape(*x.type(), attrs, axes, true);
    Shape out_shape = lse_shape(*x.type(), attrs, axes, false);
    std::vector<int64_t> map = broadcast_index_map(keep_shape, x.shape());
    int64_t n = numel_of(keep_shape);
    std::vector<double> m(n, -std::numeric_limits<double>::infinity()), sum(n, 0.0);
    for (int64_t i = 0; i < x.numel(); ++i) m[map[i]] = std::max(m[map[i]], x.get(i));
    for (int64_t i = 0; i < x.numel(); ++i) sum[map[i]] += std::exp(x.get(i) - shift_of(m[map[i]]));
    Tensor out = Tensor::empty(x.dtype(), out_shape);
    for (int64_t j = 0; j < n; ++j) out.set(j, std::log(sum[j]) + shift_of(m[j]));
    return out;
  };
  // p = exp(x - out) = d out / d x (softmax over the reduced axes)
  struct Lse {
    std::vector<int64_t> axes;
    bool keepdims;
    Node* p;
  };
  auto partials = [](Emitter& e, const Node& node, Node* x, Node* out) {
    Lse l;
    l.axes = reduction_axes(node.attrs, "axis", *x->type);
    l.keepdims = node.attrs.get_bool("keepdims");
    l.p = ad::un(e, "exp", e.sub(x, e.expand_reduced(out, ad::shape_of(x), l.axes, l.keepdims)));
    return l;
  };
  ad::set_rules(
      p,
      [partials](Emitter& e, const Node& node, const Nodes& in, Node* out, Node* dout) -> Nodes {
        Lse l = partials(e, node, in[0], out);
        return {e.mul(e.expand_reduced(dout, ad::shape_of(in[0]), l.axes, l.keepdims), l.p)};
      },
      [partials](Emitter& e, const Node& node, const Nodes& in, Node* out,
                 const Nodes& ts) -> Node* {
        if (!ts[0]) return nullptr;
        Lse l = partials(e, node, in[0], out);
        return e.sum(e.mul(ts[0], l.p), l.axes, l.keepdims);
      });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
  p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(logsumexp_loops);
  r.add(std::move(p));
}

// ---- cross_entropy --------------------------------------------------------------------------

enum class Reduction { mean, sum, none };

Reduction reduction_of(const Attrs& attrs) {
  std::string s = attrs.has("reduction") ? attrs.get_string("reduction") : "mean";
  if (s == "mean") return Reduction::mean;
  if (s == "sum") return Reduction::sum;
  if (s == "none") return Reduction::none;
  user_error("cross_entropy reduction must be \"mean\", \"sum\" or \"none\", got \"" + s + "\"");
}

// The labels' expected shape (logits without the class axis) and the class axis.
std::pair<Shape, int64_t> ce_label_shape(const Type& logits) {
  int64_t axis = logits.rank() >= 2 ? 1 : 0;
  Shape s = logits.shape;
  s.erase(s.begin() + axis);
  return {s, axis};
}

TypeP ce_infer(const std::vector<TypeP>& in, const Attrs& attrs) {
  expect_inputs(in, 2, 2, "cross_entropy");
  const Type& logits = float_input(in, 0, "cross_entropy");
  const Type& labels = tensor_input(in, 1, "cross_entropy");
  if (logits.rank() == 0)
    user_error("cross_entropy expects logits of rank at least 1, got " + logits.str());
  auto [shape, axis] = ce_label_shape(logits);
  bool soft = is_float(labels.dtype);
  bool ok = soft ? labels == logits : is_integer(labels.dtype) && labels.shape == shape;
  if (!ok)
    user_error("cross_entropy labels do not match logits: " + logits.str() + " and " +
               labels.str());
  Reduction red = reduction_of(attrs);
  return Type::tensor(logits.dtype, red == Reduction::none ? shape : Shape{});
}

Value ce_eval(const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& labels = in.at(1).tensor;
  auto [shape, axis] = ce_label_shape(*x.type());
  AxisView v(x.shape(), axis);
  bool soft = is_float(labels.dtype());
  Reduction red = reduction_of(attrs);
  Tensor losses = Tensor::empty(x.dtype(), shape);
  double total = 0;
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < v.len; ++k) m = std::max(m, x.get(v.at(o, k, i)));
      double shift = shift_of(m), sum = 0;
      for (int64_t k = 0; k < v.len; ++k) sum += std::exp(x.get(v.at(o, k, i)) - shift);
      double lse = std::log(sum) + shift;
      double loss = 0;
      int64_t j = o * v.inner + i;  // flat index into the labels
      if (soft) {
        for (int64_t k = 0; k < v.len; ++k)
          loss -= labels.get(v.at(o, k, i)) * (x.get(v.at(o, k, i)) - lse);
      } else {
        int64_t c =
            labels.dtype() == DType::i64 ? labels.data<int64_t>()[j] : labels.data<int32_t>()[j];
        if (c < 0 || c >= v.len)
          user_error("cross_entropy label " + std::to_string(c) + " is out of range for " +
                     std::to_string(v.len) + " classes");
        loss = lse - x.get(v.at(o, c, i));
      }
      losses.set(j, loss);
      total += loss;
    }
  }
  if (red == Reduction::none) return losses;
  int64_t n = numel_of(shape);
  return Tensor::scalar(x.dtype(), red == Reduction::sum ? total : total / static_cast<double>(n));
}

// What both derivative rules of cross_entropy need: d loss_j / d logits = mass p - target
// (per label j, along the class axis), and -log_softmax(x) for soft labels.
struct CeParts {
  int64_t axis;
  Reduction red;
  bool soft;
  Shape kept;     // the label shape with the class axis kept as 1
  Node* dlogits;  // mass * softmax(x) - target
};

CeParts ce_parts(Emitter& e, const Node& node, Node* x, Node* labels) {
  CeParts c;
  c.axis = ce_label_shape(*x->type).second;
  c.red = reduction_of(node.attrs);
  c.soft = ad::diff(labels);
  c.kept = ad::shape_of(x);
  c.kept[static_cast<size_t>(c.axis)] = 1;
  Node* p = e.op("softmax", {x}, ad::attrs_of({{"axis", c.axis}}));
  if (c.soft) {
    c.dlogits = e.sub(e.mul(e.sum(labels, {c.axis}, true), p), labels);
    return c;
  }
  // one_hot appends the class axis; move it to position `axis`.
  const int64_t C = ad::shape_of(x)[static_cast<size_t>(c.axis)];
  Node* target =
      e.op("one_hot", {labels}, ad::attrs_of({{"num_classes", C}, {"dtype", x->type->dtype}}));
  const int64_t r = x->type->rank();
  if (r > 2) {
    std::vector<int64_t> perm{0, r - 1};
    for (int64_t i = 1; i < r - 1; ++i) perm.push_back(i);
    target = e.op("permute", {target}, ad::attrs_of({{"axes", perm}}));
  }
  c.dlogits = e.sub(p, target);
  return c;
}

Nodes ce_vjp(Emitter& e, const Node& node, const Nodes& in, Node*, Node* dout) {
  Node *x = in[0], *labels = in[1];
  CeParts c = ce_parts(e, node, x, labels);
  // The cotangent of each label's loss, broadcastable against the logits.
  Node* g = dout;
  if (c.red == Reduction::none) g = e.reshape(dout, c.kept);
  if (c.red == Reduction::mean)
    g = e.div(dout, ad::k(e, static_cast<double>(numel_of(ce_label_shape(*x->type).first)), dout));
  Node* dlabels = nullptr;
  if (c.soft) dlabels = e.neg(e.mul(g, e.op("log_softmax", {x}, ad::attrs_of({{"axis", c.axis}}))));
  return {e.mul(g, c.dlogits), dlabels};
}

Node* ce_jvp(Emitter& e, const Node& node, const Nodes& in, Node*, const Nodes& ts) {
  Node *x = in[0], *labels = in[1];
  Node* tlabels = ad::diff(labels) ? ts[1] : nullptr;
  if (!ts[0] && !tlabels) return nullptr;
  CeParts c = ce_parts(e, node, x, labels);
  Node* per_label = nullptr;
  if (ts[0]) per_label = e.sum(e.mul(ts[0], c.dlogits), {c.axis}, false);
  if (tlabels) {
    Node* lsm = e.op("log_softmax", {x}, ad::attrs_of({{"axis", c.axis}}));
    per_label = ad::add_opt(e, per_label, e.neg(e.sum(e.mul(tlabels, lsm), {c.axis}, false)));
  }
  if (c.red == Reduction::none) return per_label;
  return total(e, per_label, c.red == Reduction::mean);
}

void add_cross_entropy(sem::Registry& r) {
  Primitive p = row(
      "cross_entropy",
      "cross_entropy(logits, labels, reduction=\"mean\"): softmax cross-entropy (PyTorch)",
      {input("logits"), input("labels"), attr("reduction", AK::String, Attr{std::string("mean")})});
  p.infer = ce_infer;
  p.eval = ce_eval;
  ad::set_rules(p, ce_vjp, ce_jvp);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
  p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(cross_entropy_loops);
  r.add(std::move(p));
}

// ---- layer_norm -----------------------------------------------------------------------------

void check_param(const std::vector<TypeP>& in, size_t i, const Type& x, const Shape& want,
                 const std::string& prim, const std::string& what) {
  if (!has_input(in, i)) return;
  const Type& t = tensor_input(in, i, prim);
  if (t.dtype != x.dtype || t.shape != want)
    user_error(prim + " " + what + " " + t.str() + " does not match " +
               Type::tensor(x.dtype, want)->str() + " for input " + x.str());
}

// Normalisation over `axes` (kept): xc = x - mean(x), rstd = 1 / sqrt(var + eps), xhat = xc rstd.
struct Normalised {
  std::vector<int64_t> axes;
  Node *xc, *rstd, *xhat;
};

Normalised normalise(Emitter& e, Node* x, std::vector<int64_t> axes, double eps) {
  Normalised n;
  n.axes = std::move(axes);
  n.xc = e.sub(x, mean(e, x, n.axes, true));
  Node* var = mean(e, e.mul(n.xc, n.xc), n.axes, true);
  n.rstd = ad::un(e, "rsqrt", e.add(var, ad::k(e, eps, x)));
  n.xhat = e.mul(n.xc, n.rstd);
  return n;
}

// The derivative of xhat (statistics from x itself) applied to g; symmetric, so it serves
// both modes: rstd (g - mean(g) - xhat mean(g xhat)).
Node* normalise_apply(Emitter& e, const Normalised& n, Node* g) {
  Node* centred = e.sub(g, mean(e, g, n.axes, true));
  return e.mul(n.rstd, e.sub(centred, e.mul(n.xhat, mean(e, e.mul(g, n.xhat), n.axes, true))));
}

Normalised layer_norm_stats(Emitter& e, const Node& node, Node* x) {
  std::vector<int64_t> axes;
  for (int64_t d = x->type->rank() - node.attrs.get_int("ndim"); d < x->type->rank(); ++d)
    axes.push_back(d);
  return normalise(e, x, axes, node.attrs.get_float("eps"));
}

Attrs norm_attrs(const Node& node) {
  return ad::attrs_of({{"ndim", node.attrs.get_int("ndim")}, {"eps", node.attrs.get_float("eps")}});
}

// layer_norm's input gradient as one row-wise primitive: layer_norm_grad(x, dout gamma) =
// rstd (g - mean(g) - xhat mean(g xhat)), the statistics recomputed from x (what PyTorch's
// native_layer_norm_backward computes from its saved ones). gamma's cotangent reads xhat =
// layer_norm(x) without the affine part. A backward pass runs two row-wise kernels and two
// column sums where the decomposition ran a dozen elementwise ops and means.
Nodes layer_norm_vjp(Emitter& e, const Node& node, const Nodes& in, Node*, Node* dout) {
  Node* x = in[0];
  Node* gamma = in.size() > 1 ? in[1] : nullptr;
  Nodes out{e.wants(0)
                ? e.op("layer_norm_grad", {x, gamma ? e.mul(dout, gamma) : dout}, norm_attrs(node))
                : nullptr};
  if (gamma)
    out.push_back(e.wants(1) ? e.unbroadcast(e.mul(dout, e.op("layer_norm", {x}, norm_attrs(node))),
                                             ad::shape_of(gamma))
                             : nullptr);
  if (in.size() > 2) out.push_back(e.unbroadcast(dout, ad::shape_of(in[2])));
  return out;
}

// layer_norm_grad(x, g) = rstd P(g) with P(v) = v - mean(v) - xhat mean(v xhat), self-adjoint
// in v. With y the output, a = mean(g xhat), s = mean(xhat dx) and D = rstd P(dx) (the change
// of xhat), the change of y is layer_norm_grad(x, dg) - rstd (s y + a D + xhat mean(g D)); so
// the cotangent of g is layer_norm_grad(x, w) and that of x
// -rstd (mean(w y) xhat + a layer_norm_grad(x, w) + mean(w xhat) y).
Nodes layer_norm_grad_vjp(Emitter& e, const Node& node, const Nodes& in, Node* out, Node* dout) {
  Node *x = in[0], *g = in[1];
  Node* dg = e.op("layer_norm_grad", {x, dout}, norm_attrs(node));
  if (!e.wants(0)) return {nullptr, dg};
  Normalised n = layer_norm_stats(e, node, x);
  Node* a = mean(e, e.mul(g, n.xhat), n.axes, true);
  Node* sum = e.add(e.add(e.mul(mean(e, e.mul(dout, out), n.axes, true), n.xhat), e.mul(a, dg)),
                    e.mul(mean(e, e.mul(dout, n.xhat), n.axes, true), out));
  return {e.neg(e.mul(n.rstd, sum)), dg};
}

Node* layer_norm_grad_jvp(Emitter& e, const Node& node, const Nodes& in, Node* out,
                          const Nodes& ts) {
  Node *x = in[0], *g = in[1];
  Node* t = ts[1] ? e.op("layer_norm_grad", {x, ts[1]}, norm_attrs(node)) : nullptr;
  if (!ts[0]) return t;
  Normalised n = layer_norm_stats(e, node, x);
  Node* d = e.op("layer_norm_grad", {x, ts[0]}, norm_attrs(node));
  Node* s = mean(e, e.mul(n.xhat, ts[0]), n.axes, true);
  Node* a = mean(e, e.mul(g, n.xhat), n.axes, true);
  Node* sum =
      e.add(e.add(e.mul(s, out), e.mul(a, d)), e.mul(n.xhat, mean(e, e.mul(g, d), n.axes, true)));
  return ad::add_opt(e, t, e.neg(e.mul(n.rstd, sum)));
}

Node* layer_norm_jvp(Emitter& e, const Node& node, const Nodes& in, Node* out, const Nodes& ts) {
  Node* x = in[0];
  Node* gamma = in.size() > 1 ? in[1] : nullptr;
  Normalised n = layer_norm_stats(e, node, x);
  Node* t = nullptr;
  if (ts[0]) {
    t = normalise_apply(e, n, ts[0]);
    if (gamma) t = e.mul(t, gamma);
  }
  if (gamma && ts[1]) t = ad::add_opt(e, t, e.mul(n.xhat, ts[1]));
  if (in.size() > 2 && ts[2]) t = ad::add_opt(e, t, ad::broadcast(e, ts[2], ad::shape_of(out)));
  return t;
}

// The reference kernels' rows of the last ndim axes: row o's mean and 1 / sqrt(biased variance
// + eps), in double.
struct NormRows {
  int64_t inner = 1, outer = 0;
  double eps;
  NormRows(const Tensor& x, const Attrs& attrs) : eps(attrs.get_float("eps")) {
    for (int64_t d = x.rank() - attrs.get_int("ndim"); d < x.rank(); ++d) inner *= x.shape()[d];
    outer = inner ? x.numel() / inner : 0;
  }
  void stats(const Tensor& x, int64_t o, double* mean, double* rstd) const {
    double m = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) m += x.get(o * inner + i);
    m /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) {
      double d = x.get(o * inner + i) - m;
      var += d * d;
    }
    var /= static_cast<double>(inner);
    *mean = m;
    *rstd = 1.0 / std::sqrt(var + eps);
  }
};

void add_layer_norm(sem::Registry& r) {
  Primitive p =
      row("layer_norm",
          "layer_norm(x, gamma=none, beta=none, ndim=1, eps=1e-5): normalise the last ndim axes",
          {input("x"), optional_input("gamma"), optional_input("beta"),
           attr("ndim", AK::Int, int_attr(1)), attr("eps", AK::Float, float_attr(1e-5))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 3, "layer_norm");
    const Type& x = float_input(in, 0, "layer_norm");
    int64_t nd = attrs.get_int("ndim");
    if (nd < 1 || nd > x.rank())
      user_error("layer_norm ndim " + std::to_string(nd) + " is out of range for " + x.str());
    Shape norm(x.shape.end() - nd, x.shape.end());
    check_param(in, 1, x, norm, "layer_norm", "gamma");
    check_param(in, 2, x, norm, "layer_norm", "beta");
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const NormRows rows(x, attrs);
    const int64_t inner = rows.inner;
    bool has_g = has_input(in, 1), has_b = has_input(in, 2);
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    for (int64_t o = 0; o < rows.outer; ++o) {
      double mean, rstd;
      rows.stats(x, o, &mean, &rstd);
      for (int64_t i = 0; i < inner; ++i) {
        double y = (x.get(o * inner + i) - mean) * rstd;
        if (has_g) y *= in[1].tensor.get(i);
        if (has_b) y += in[2].tensor.get(i);
        out.set(o * inner + i, y);
      }
    }
    return out;
  };
  ad::set_rules(p, layer_norm_vjp, layer_norm_jvp);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
  p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(layer_norm_loops);
  r.add(std::move(p));
}

// The reference kernel of layer_norm_grad: per row of the last ndim axes, in double.
Value layer_norm_grad_eval(const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor &x = in.at(0).tensor, &g = in.at(1).tensor;
  const NormRows rows(x, attrs);
  const int64_t inner = rows.inner;
  const double count = static_cast<double>(inner);
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  std::vector<double> xhat(static_cast<size_t>(inner));
  for (int64_t o = 0; o < rows.outer; ++o) {
    double mean, rstd, mg = 0, mgx = 0;
    rows.stats(x, o, &mean, &rstd);
    for (int64_t i = 0; i < inner; ++i) {
      xhat[i] = (x.get(o * inner + i) - mean) * rstd;
      mg += g.get(o * inner + i);
      mgx += g.get(o * inner + i) * xhat[i];
    }
    mg /= count;
    mgx /= count;
    for (int64_t i = 0; i < inner; ++i)
      out.set(o * inner + i, rstd * (g.get(o * inner + i) - mg - xhat[i] * mgx));
  }
  return out;
}

void add_layer_norm_grad(sem::Registry& r) {
  Primitive p = row("layer_norm_grad",
                    "layer_norm_grad(x, g, ndim=1, eps=1e-5): layer_norm's input gradient for "
                    "the output gradient g (times gamma), statistics from x",
                    {input("x"), input("g"), attr("ndim", AK::Int, int_attr(1)),
                     attr("eps", AK::Float, float_attr(1e-5))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 2, 2, "layer_norm_grad");
    const Type& x = float_input(in, 0, "layer_norm_grad");
    const Type& g = float_input(in, 1, "layer_norm_grad");
    const int64_t nd = attrs.get_int("ndim");
    if (nd < 1 || nd > x.rank())
      user_error("layer_norm_grad ndim " + std::to_string(nd) + " is out of range for " + x.str());
    if (g.dtype != x.dtype || g.shape != x.shape)
      user_error("layer_norm_grad g " + g.str() + " does not match x " + x.str());
    return in[0];
  };
  p.eval = layer_norm_grad_eval;
  ad::set_rules(p, layer_norm_grad_vjp, layer_norm_grad_jvp);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Reduction;
  p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(layer_norm_grad_loops);
  r.add(std::move(p));
}

// ---- batch_norm -----------------------------------------------------------------------------

// batch_norm's derivatives. Per-channel vectors [C] broadcast as [1, C, 1, ...] (chan); the
// statistics reduce every axis but 1.
struct BatchNorm {
  std::vector<int64_t> axes;
  int64_t count;  // values per channel
  double momentum, eps;
  Node *gamma, *rstd_c, *xc, *xhat;  // gamma and rstd broadcastable, xc and xhat like x
};

Node* chan(Emitter& e, Node* v, const Node* x) {
  Shape s(static_cast<size_t>(x->type->rank()), 1);
  s[1] = ad::shape_of(x)[1];
  return e.reshape(v, s);
}

BatchNorm batch_norm_parts(Emitter& e, const Node& node, const Nodes& in) {
  Node* x = in[0];
  BatchNorm b;
  b.momentum = node.attrs.get_float("momentum");
  b.eps = node.attrs.get_float("eps");
  b.count = 1;
  for (int64_t d = 0; d < x->type->rank(); ++d) {
    if (d == 1) continue;
    b.axes.push_back(d);
    b.count *= ad::shape_of(x)[static_cast<size_t>(d)];
  }
  b.gamma = chan(e, in[1], x);
  if (node.attrs.get_bool("training")) {
    Normalised n = normalise(e, x, b.axes, b.eps);
    b.rstd_c = n.rstd;
    b.xc = n.xc;
    b.xhat = n.xhat;
  } else {
    b.rstd_c = chan(e, ad::un(e, "rsqrt", e.add(in[4], ad::k(e, b.eps, x))), x);
    b.xc = e.sub(x, chan(e, in[3], x));
    b.xhat = e.mul(b.xc, b.rstd_c);
  }
  return b;
}

Nodes batch_norm_vjp(Emitter& e, const Node& node, const Nodes& in, Node*, Node* dout) {
  Node* x = in[0];
  BatchNorm b = batch_norm_parts(e, node, in);
  const bool training = node.attrs.get_bool("training");
  Node* dy = training ? ad::tuple_part(e, dout, 0) : dout;
  Node* dx = nullptr;
  Nodes out(5, nullptr);
  if (dy) {
    Node* sum_dy = e.sum(dy, b.axes, false);
    out[1] = e.sum(e.mul(dy, b.xhat), b.axes, false);
    out[2] = sum_dy;
    if (training) {
      dx = e.mul(b.gamma, normalise_apply(e, Normalised{b.axes, b.xc, b.rstd_c, b.xhat}, dy));
    } else {
      // y = (x - rm) rstd gamma + beta with rstd = (rv + eps)^(-1/2)
      Node* rstd = ad::un(e, "rsqrt", e.add(in[4], ad::k(e, b.eps, x)));
      dx = e.mul(dy, e.mul(b.gamma, b.rstd_c));
      out[3] = e.neg(e.mul(sum_dy, e.mul(in[1], rstd)));
      Node* rstd3 = e.mul(rstd, e.mul(rstd, rstd));
      out[4] = e.mul(e.sum(e.mul(dy, b.xc), b.axes, false),
                     e.mul(in[1], e.mul(rstd3, ad::k(e, -0.5, x))));
    }
  }
  if (training) {
    // new_running_mean = (1 - m) rm + m mean(x); new_running_var = (1 - m) rv + m var_unbiased(x)
    const double m = b.momentum;
    if (Node* d = ad::tuple_part(e, dout, 1)) {
      out[3] = e.mul(d, ad::k(e, 1 - m, d));
      dx = ad::add_opt(
          e, dx,
          ad::broadcast(e, chan(e, e.mul(d, ad::k(e, m / static_cast<double>(b.count), d)), x),
                        ad::shape_of(x)));
    }
    if (Node* d = ad::tuple_part(e, dout, 2)) {
      out[4] = e.mul(d, ad::k(e, 1 - m, d));
      Node* scale = ad::k(e, 2 * m / static_cast<double>(b.count - 1), d);
      dx = ad::add_opt(e, dx, e.mul(b.xc, chan(e, e.mul(d, scale), x)));
    }
  }
  out[0] = dx;
  return out;
}

Node* batch_norm_jvp(Emitter& e, const Node& node, const Nodes& in, Node*, const Nodes& ts) {
  Node* x = in[0];
  BatchNorm b = batch_norm_parts(e, node, in);
  const bool training = node.attrs.get_bool("training");
  Node* ty = nullptr;
  if (ts[0]) {
    Node* t = training ? normalise_apply(e, Normalised{b.axes, b.xc, b.rstd_c, b.xhat}, ts[0])
                       : e.mul(ts[0], b.rstd_c);
    ty = e.mul(t, b.gamma);
  }
  if (ts[1]) ty = ad::add_opt(e, ty, e.mul(b.xhat, chan(e, ts[1], x)));
  if (ts[2]) ty = ad::add_opt(e, ty, ad::broadcast(e, chan(e, ts[2], x), ad::shape_of(x)));
  if (!training) {
    Node* rstd = ad::un(e, "rsqrt", e.add(in[4], ad::k(e, b.eps, x)));
    if (ts[3])
      ty = ad::add_opt(
          e, ty,
          ad::broadcast(e, chan(e, e.neg(e.mul(ts[3], e.mul(in[1], rstd))), x), ad::shape_of(x)));
    if (ts[4]) {
      Node* rstd3 = e.mul(rstd, e.mul(rstd, rstd));
      Node* f = e.mul(ts[4], e.mul(in[1], e.mul(rstd3, ad::k(e, -0.5, x))));
      ty = ad::add_opt(e, ty, e.mul(b.xc, chan(e, f, x)));
    }
    return ty;
  }
  const double m = b.momentum;
  Node* trm = ts[3] ? e.mul(ts[3], ad::k(e, 1 - m, x)) : nullptr;
  Node* trv = ts[4] ? e.mul(ts[4], ad::k(e, 1 - m, x)) : nullptr;
  if (ts[0]) {
    trm = ad::add_opt(e, trm, e.mul(mean(e, ts[0], b.axes, false), ad::k(e, m, x)));
    Node* dvar = e.sum(e.mul(b.xc, ts[0]), b.axes, false);
    trv = ad::add_opt(e, trv, e.mul(dvar, ad::k(e, 2 * m / static_cast<double>(b.count - 1), x)));
  }
  if (!ty && !trm && !trv) return nullptr;
  return e.op("make_tuple", {ty ? ty : e.zeros_like(x), trm ? trm : e.zeros_like(in[3]),
                             trv ? trv : e.zeros_like(in[4])});
}

void add_batch_norm(sem::Registry& r) {
  Primitive p =
      row("batch_norm",
          "batch_norm(x, gamma, beta, running_mean, running_var, training=false, momentum=0.1, "
          "eps=1e-5): per-channel normalisation (axis 1)",
          {input("x"), input("gamma"), input("beta"), input("running_mean"), input("running_var"),
           attr("training", AK::Bool, Attr{false}), attr("momentum", AK::Float, float_attr(0.1)),
           attr("eps", AK::Float, float_attr(1e-5))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 5, 5, "batch_norm");
    const Type& x = float_input(in, 0, "batch_norm");
    if (x.rank() < 2) user_error("batch_norm expects [N, C, ...] input, got " + x.str());
    Shape c{x.shape[1]};
    check_param(in, 1, x, c, "batch_norm", "gamma");
    check_param(in, 2, x, c, "batch_norm", "beta");
    check_param(in, 3, x, c, "batch_norm", "running_mean");
    check_param(in, 4, x, c, "batch_norm", "running_var");
    if (attrs.get_bool("training")) {
      TypeP stat = Type::tensor(x.dtype, c);
      return Type::tuple({in[0], stat, stat});
    }
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    bool training = attrs.get_bool("training");
    double momentum = attrs.get_float("momentum"), eps = attrs.get_float("eps");
    AxisView v(x.shape(), 1);
    int64_t C = v.len, count = v.outer * v.inner;
    const Tensor& rm = in.at(3).tensor;
    const Tensor& rv = in.at(4).tensor;
    std::vector<double> mean(C), var(C);
    Tensor new_rm = Tensor::empty(x.dtype(), {C}), new_rv = Tensor::empty(x.dtype(), {C});
    for (int64_t c = 0; c < C; ++c) {
      if (!training) {
        mean[c] = rm.get(c);
        var[c] = rv.get(c);
        continue;
      }
      if (count <= 1)
        user_error("batch_norm in training needs more than one value per channel, got " +
                   x.type()->str());
      double s = 0, ss = 0;
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t i = 0; i < v.inner; ++i) s += x.get(v.at(o, c, i));
      mean[c] = s / static_cast<double>(count);
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t i = 0; i < v.inner; ++i) {
          double d = x.get(v.at(o, c, i)) - mean[c];
          ss += d * d;
        }
      var[c] = ss / static_cast<double>(count);
      new_rm.set(c, (1 - momentum) * rm.get(c) + momentum * mean[c]);
      new_rv.set(c, (1 - momentum) * rv.get(c) + momentum * ss / static_cast<double>(count - 1));
    }
    Tensor y = Tensor::empty(x.dtype(), x.shape());
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t c = 0; c < C; ++c) {
        double rstd = 1.0 / std::sqrt(var[c] + eps);
        double g = in.at(1).tensor.get(c);
        double b = in.at(2).tensor.get(c);
        for (int64_t i = 0; i < v.inner; ++i)
          y.set(v.at(o, c, i), (x.get(v.at(o, c, i)) - mean[c]) * rstd * g + b);
      }
    if (!training) return y;
    return Value::tuple({y, new_rm, new_rv});
  };
  ad::set_rules(p, batch_norm_vjp, batch_norm_jvp);
  // Inference is a per-channel affine map of x; training computes batch statistics.
  p.facets[passes::kFusionFacet] = passes::FusionKindRule([](const Attrs& a) {
    return a.has("training") && a.get_bool("training") ? passes::FusionKind::Opaque
                                                       : passes::FusionKind::Broadcast;
  });
  p.facets[passes::kDecomposeFacet] = passes::DecomposeFn(batch_norm_loops);
  r.add(std::move(p));
}

// ---- dropout --------------------------------------------------------------------------------

void add_dropout(sem::Registry& r) {
  Primitive p = row("dropout",
                    "dropout(x, p=0.5, seed=0, training=true): zero elements with probability p, "
                    "scale by 1/(1-p)",
                    {input("x"), attr("p", AK::Float, float_attr(0.5)),
                     attr("seed", AK::Int, int_attr(0)), attr("training", AK::Bool, Attr{true})});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "dropout");
    float_input(in, 0, "dropout");
    double pr = attrs.get_float("p");
    if (!(pr >= 0 && pr <= 1))
      user_error("dropout probability must be in [0, 1], got " + sem::format_float(pr, false));
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    double pr = attrs.get_float("p");
    if (!attrs.get_bool("training") || pr == 0) return x;
    uint64_t seed = static_cast<uint64_t>(attrs.get_int("seed"));
    Tensor out = Tensor::zeros(x.dtype(), x.shape());
    if (pr >= 1) return out;
    double scale = 1.0 / (1.0 - pr);
    for (int64_t i = 0; i < x.numel(); ++i)
      if (sem::rng::uniform01(seed, static_cast<uint64_t>(i)) >= pr) out.set(i, x.get(i) * scale);
    return out;
  };
  // Linear in x for a fixed seed: the same op on dout regenerates the same mask.
  ad::set_linear_rules(p, [](Emitter& e, const Node& node, Node*, Node* dout) {
    return e.op("dropout", {dout}, node.attrs);
  });
  // a counter-based mask (semantics/rng.h): elementwise in the flat index
  p.facets[passes::kFusionFacet] = passes::FusionKind::Elementwise;
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

// Per element of the first input, for the normalisations whose output may be a tuple.
CostRule per_input_element(double flops, const std::string& op_class) {
  return [flops, op_class](const CostTypes& in, const TypeP& out, const Attrs&) {
    return OpCost{flops * (in.empty() ? 0 : elements(in[0])), input_bytes(in) + type_bytes(out),
                  op_class};
  };
}

void nn_costs(sem::Registry& r) {
  set_cost(r, "softmax", per_input_element(5, "norm"));
  set_cost(r, "log_softmax", per_input_element(5, "norm"));
  set_cost(r, "logsumexp", sem::reduction_cost(4));
  set_cost(r, "cross_entropy", per_input_element(5, "norm"));
  set_cost(r, "layer_norm", per_input_element(8, "norm"));
  set_cost(r, "layer_norm_grad", per_input_element(12, "norm"));
  set_cost(r, "batch_norm", per_input_element(8, "norm"));
  set_cost(r, "dropout", sem::elementwise_cost(3));
}

// Every dim but the normalised `axis`.
Spec softmax_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || rank(in[0]) == 0) return std::nullopt;
  const int64_t axis = normalize_axis(attrs.get_int("axis"), *in[0]);
  DimSpec s;
  s.output = s.add_dims(rank(in[0]));
  s.output[static_cast<size_t>(axis)] = -1;
  s.inputs = {s.output};
  return s;
}

Spec layer_norm_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0)) return std::nullopt;
  const int r = rank(in[0]);
  const int64_t nd = attrs.get_int("ndim");
  DimSpec s;
  s.output = s.add_dims(r);
  for (int d = r - static_cast<int>(nd); d < r; ++d)
    if (d >= 0) s.output[static_cast<size_t>(d)] = -1;
  s.inputs = {s.output};
  for (size_t i = 1; i < in.size(); ++i)
    s.inputs.push_back(is_tensor(in, i) ? std::vector<int>(static_cast<size_t>(rank(in[i])), -1)
                                        : std::vector<int>{});
  return s;
}

// layer_norm_grad(x, g): like layer_norm, both inputs split as the output.
Spec layer_norm_grad_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  Spec s = layer_norm_spec(in, out, attrs);
  if (s && s->inputs.size() == 2) s->inputs[1] = s->output;
  return s;
}

// cross_entropy(logits, labels): the class axis (1, or 0 for 1-D logits) never splits; the other
// dims are the batch, kept (reduction="none") or summed (partial; "mean" scales by 1/p).
Spec cross_entropy_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || rank(in[0]) == 0) return std::nullopt;
  const int r = rank(in[0]);
  const int cls = r >= 2 ? 1 : 0;
  const std::string red = attrs.has("reduction") ? attrs.get_string("reduction") : "mean";
  DimSpec s;
  std::vector<int> xm, kept;
  for (int d = 0; d < r; ++d) {
    if (d == cls) {
      xm.push_back(-1);
      continue;
    }
    const int l = s.add("d" + std::to_string(d), red != "none", red == "mean");
    xm.push_back(l);
    kept.push_back(l);
  }
  const bool soft = rank(in[1]) == r;
  s.inputs = {xm, soft ? xm : kept};
  if (red == "none") s.output = kept;
  return s;
}

// batch_norm: channels (dim 1 of x, dim 0 of the parameters) always; the batch in eval mode.
Spec batch_norm_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || rank(in[0]) < 2) return std::nullopt;
  const bool training = attrs.get_bool("training");
  DimSpec s;
  const int N = training ? -1 : s.add("batch");
  const int C = s.add("ch");
  std::vector<int> xm(static_cast<size_t>(rank(in[0])), -1);
  xm[0] = N;
  xm[1] = C;
  s.inputs = {xm};
  for (size_t i = 1; i < in.size(); ++i) s.inputs.push_back({C});
  if (training)
    s.tuple_outputs = std::vector<std::vector<int>>{xm, {C}, {C}};
  else
    s.output = xm;
  return s;
}

void nn_rules(sem::Registry& r) {
  set_sharding(r, "softmax", dim_rule(softmax_spec));
  set_sharding(r, "log_softmax", dim_rule(softmax_spec));
  set_sharding(r, "logsumexp", dim_rule(reduction_spec(false, false)));
  set_sharding(r, "cross_entropy", dim_rule(cross_entropy_spec));
  set_sharding(r, "layer_norm", dim_rule(layer_norm_spec));
  set_sharding(r, "layer_norm_grad", dim_rule(layer_norm_grad_spec));
  set_sharding(r, "batch_norm", dim_rule(batch_norm_spec));
  // Dropout in eval mode is the identity; in training its mask comes from the global index.
  ShardingRule random_dropout = replicated_only_rule(
      "dropout draws its mask from the global element index (counter-based RNG): a shard drawn "
      "locally would repeat the first shard's mask");
  ShardingRule eval_dropout = elementwise_rule();
  ShardingRule dropout;
  dropout.replicated_only_reason = random_dropout.replicated_only_reason + " (in training)";
  dropout.enumerate = [random_dropout, eval_dropout](const Types& in, const TypeP& out,
                                                     const Attrs& a, const Mesh& m) {
    return (a.get_bool("training") ? random_dropout : eval_dropout).enumerate(in, out, a, m);
  };
  dropout.forward = [random_dropout, eval_dropout](const std::vector<Layout>& l, const Types& in,
                                                   const TypeP& out, const Attrs& a,
                                                   const Mesh& m) {
    return (a.get_bool("training") ? random_dropout : eval_dropout).forward(l, in, out, a, m);
  };
  dropout.local_attrs = parallel::identity_local_attrs;
  set_sharding(r, "dropout", dropout);
}

}  // namespace facets

}  // namespace

void register_nn(sem::Registry& r) {
  add_softmax(r, false);
  add_softmax(r, true);
  add_logsumexp(r);
  add_cross_entropy(r);
  add_layer_norm(r);
  add_layer_norm_grad(r);
  add_batch_norm(r);
  add_dropout(r);
  // Autocast (semantics/amp.h): softmaxes in f32 at O1, norms also at O2, the loss always.
  for (const char* name : {"softmax", "log_softmax", "logsumexp"})
    sem::set_amp(r, name, sem::AmpClass::F32);
  for (const char* name : {"layer_norm", "layer_norm_grad", "batch_norm"})
    sem::set_amp(r, name, sem::AmpClass::F32Norm);
  sem::set_amp(r, "cross_entropy", sem::AmpClass::F32Loss);
  // Cost and sharding rules of the rows above.
  facets::nn_costs(r);
  facets::nn_rules(r);
}

}  // namespace spora::ops
