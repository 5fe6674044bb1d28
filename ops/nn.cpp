// Neural-network primitives: softmax, log_softmax, logsumexp, cross_entropy, layer_norm,
// batch_norm, dropout. Float tensors only; kernels compute in double and round once.
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
//   batch_norm(x, gamma, beta, running_mean, running_var, training=false, momentum=0.1,
//     eps=1e-5): x is [N, C] or [N, C, H, W] (channel axis 1, statistics over every other
//     axis); gamma, beta and the running statistics are all required, all [C]. training=false
//     normalises with the running statistics and returns y. training=true normalises with the batch
//     statistics (biased variance) and returns the tuple (y, new_running_mean, new_running_var),
//     where new = (1 - momentum) * running + momentum * batch, with the unbiased batch variance
//     (PyTorch).
//   dropout(x, p=0.5, seed=0, training=true): keeps element i when u(seed, i) >= p (ops/rng.h)
//     and scales kept elements by 1 / (1 - p); identity when training is false or p is 0.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/families.h"
#include "ops/kernel_util.h"
#include "ops/rng.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

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
  if (t.dtype != DType::f32 && t.dtype != DType::f64)
    user_error(name + " expects a f32 or f64 tensor, got " + t.str());
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

void add_cross_entropy(sem::Registry& r) {
  Primitive p = row(
      "cross_entropy",
      "cross_entropy(logits, labels, reduction=\"mean\"): softmax cross-entropy (PyTorch)",
      {input("logits"), input("labels"), attr("reduction", AK::String, Attr{std::string("mean")})});
  p.infer = ce_infer;
  p.eval = ce_eval;
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
    int64_t nd = attrs.get_int("ndim");
    double eps = attrs.get_float("eps");
    int64_t inner = 1;
    for (int64_t d = x.rank() - nd; d < x.rank(); ++d) inner *= x.shape()[d];
    int64_t outer = inner ? x.numel() / inner : 0;
    bool has_g = has_input(in, 1), has_b = has_input(in, 2);
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    for (int64_t o = 0; o < outer; ++o) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x.get(o * inner + i);
      mean /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) {
        double d = x.get(o * inner + i) - mean;
        var += d * d;
      }
      var /= static_cast<double>(inner);
      double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < inner; ++i) {
        double y = (x.get(o * inner + i) - mean) * rstd;
        if (has_g) y *= in[1].tensor.get(i);
        if (has_b) y += in[2].tensor.get(i);
        out.set(o * inner + i, y);
      }
    }
    return out;
  };
  r.add(std::move(p));
}

// ---- batch_norm -----------------------------------------------------------------------------

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
      if (rng::uniform01(seed, static_cast<uint64_t>(i)) >= pr) out.set(i, x.get(i) * scale);
    return out;
  };
  r.add(std::move(p));
}

}  // namespace

void register_nn(sem::Registry& r) {
  add_softmax(r, false);
  add_softmax(r, true);
  add_logsumexp(r);
  add_cross_entropy(r);
  add_layer_norm(r);
  add_batch_norm(r);
  add_dropout(r);
}

}  // namespace spora::ops
