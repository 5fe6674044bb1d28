// A numeric gradient checker for one primitive application (the derivative rules of ops/).
//
// For a GradCase (a primitive, its attributes, and how to draw each input) GradHarness builds a
// small ir::Module by hand, with one top-level graph per quantity, and runs it with the
// reference interpreter on f64 data:
//
//   @f(x...)                    -> out                       the primal
//   @vjp(x..., c)               -> (x_bar...)                reverse_region, cotangent c
//   @jvp(x..., t...)            -> out_dot                   forward_region, tangents t
//   @rev_rev(x..., c, r...)     -> (s, ds/dx...)             s = sum_i <x_bar_i, r_i>
//   @fwd_rev(x..., c, r..., t...) -> (s, ds . t)             forward over reverse
//   @rev_fwd(x..., t..., c)     -> (s2, ds2/dx...)           s2 = <out_dot, c>
//
// Checks (check_first_order, check_second_order): each x_bar element against the central
// difference of <c, f(x)>; out_dot against the directional difference of f; the identity
// <t, vjp(c)> = <jvp(t), c>; the second derivatives above against differences of s and s2.
// Differences use the 4-point stencil (error O(h^4)), so a relative tolerance of 1e-6 holds
// with h = 1e-4 as long as the data stays 4h away from kinks (the draws below ensure it).
// "Differentiable inputs" are the float inputs; integer and bool inputs (indices, labels,
// conditions) are held fixed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "autodiff/emitter.h"
#include "autodiff/forward.h"
#include "autodiff/install.h"
#include "autodiff/reverse.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"
#include "semantics/ir/verifier.h"
#include "semantics/registry.h"

namespace spora::autodiff::testing {

using ir::Node;
using sem::Attr;
using sem::Attrs;
using sem::Shape;
using sem::Tensor;
using sem::Type;
using sem::TypeP;
using sem::Value;

inline void setup() {
  ops::register_all();
  static bool installed = (install(), true);
  (void)installed;
}

// ---- inputs -----------------------------------------------------------------------------------

// How an input's values are drawn (seeded, so every run sees the same data).
enum class Draw {
  normal,          // N(0, 1)
  positive,        // U(0.5, 2)
  away_from_zero,  // +-U(0.3, 1.5): clear of kinks at 0
  distinct,        // a shuffled grid of spacing >= 0.02 in [-1.5, 1.5]: no ties for max/argmax
  bools,           // true/false with probability 1/2
  indices,         // integers in [lo, hi)
  fixed,           // `values`
};

struct InputSpec {
  DType dtype = DType::f64;
  Shape shape;
  Draw draw = Draw::normal;
  int64_t lo = 0, hi = 0;
  std::vector<double> values;
  bool check = true;  // compare this input's derivative (false where differences are meaningless)
};

inline InputSpec f64(Shape s, Draw d = Draw::normal) {
  return {DType::f64, std::move(s), d, 0, 0, {}, true};
}
inline InputSpec fixed(Shape s, std::vector<double> v, DType dt = DType::f64) {
  return {dt, std::move(s), Draw::fixed, 0, 0, std::move(v), true};
}
inline InputSpec indices(Shape s, int64_t lo, int64_t hi, DType dt = DType::i64) {
  return {dt, std::move(s), Draw::indices, lo, hi, {}, true};
}
inline InputSpec bools(Shape s) {
  return {DType::boolean, std::move(s), Draw::bools, 0, 0, {}, true};
}
inline InputSpec unchecked(InputSpec s) {
  s.check = false;
  return s;
}

// One primitive application to check.
struct GradCase {
  std::string name;  // unique, a valid test name: "add_broadcast_row"
  std::string prim;
  std::vector<InputSpec> inputs;
  Attrs attrs;  // the primitive's defaults fill the rest
  double tol = 1e-6;
  double h = 1e-4;
  bool second_order = true;
};

// gtest prints a parameter with this (instead of its bytes).
inline void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name << " (" << c.prim << ")"; }

inline Attrs attrs(std::vector<std::pair<std::string, Attr>> items) {
  Attrs a;
  for (auto& [n, v] : items) a.set(n, v);
  return a;
}

// Attributes in parameter order, defaults filled in (like the front end binds a call).
inline Attrs with_defaults(const sem::Primitive& p, const Attrs& given) {
  Attrs out;
  for (const auto& ps : p.params) {
    if (ps.kind != sem::ParamSpec::Kind::Attr) continue;
    if (const Attr* a = given.find(ps.name))
      out.set(ps.name, *a);
    else if (ps.default_value)
      out.set(ps.name, *ps.default_value);
  }
  return out;
}

// ---- values -----------------------------------------------------------------------------------

inline Tensor draw(const InputSpec& s, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(s.dtype, s.shape);
  const int64_t n = t.numel();
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> grid;
  if (s.draw == Draw::distinct) {
    for (int64_t i = 0; i < n; ++i)
      grid.push_back(n == 1 ? 0.3
                            : -1.5 + 3.0 * static_cast<double>(i) / static_cast<double>(n - 1));
    std::shuffle(grid.begin(), grid.end(), rng);
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (s.draw) {
      case Draw::normal:
        v = normal(rng);
        break;
      case Draw::positive:
        v = 0.5 + 1.5 * unit(rng);
        break;
      case Draw::away_from_zero:
        v = (unit(rng) < 0.5 ? -1 : 1) * (0.3 + 1.2 * unit(rng));
        break;
      case Draw::distinct:
        v = grid[static_cast<size_t>(i)];
        break;
      case Draw::bools:
        v = unit(rng) < 0.5 ? 1 : 0;
        break;
      case Draw::indices:
        v = static_cast<double>(s.lo +
                                static_cast<int64_t>(unit(rng) * static_cast<double>(s.hi - s.lo)));
        break;
      case Draw::fixed:
        v = s.values.at(static_cast<size_t>(i));
        break;
    }
    t.set(i, v);
  }
  return t;
}

// A random value of a (float tensor or tuple) type: cotangents, tangents, weights.
inline Value random_like(const TypeP& type, std::mt19937_64& rng) {
  if (type->kind == Type::Kind::Tuple) {
    std::vector<Value> parts;
    for (const auto& t : type->elems) parts.push_back(random_like(t, rng));
    return Value::tuple(parts);
  }
  InputSpec s{type->dtype, type->shape, Draw::normal, 0, 0, {}, true};
  return draw(s, rng);
}

// Every number of a value (tensors, tuples), in order.
inline void flatten(const Value& v, std::vector<double>& out) {
  if (v.kind == Value::Kind::Tensor) {
    for (int64_t i = 0; i < v.tensor.numel(); ++i) out.push_back(v.tensor.get(i));
  } else {
    for (const Value& p : v.items()) flatten(p, out);
  }
}
inline std::vector<double> flat(const Value& v) {
  std::vector<double> out;
  flatten(v, out);
  return out;
}
inline double dot(const Value& a, const Value& b) {
  std::vector<double> x = flat(a), y = flat(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) s += x[i] * y[i];
  return s;
}
// x + eps * d (tensors of one shape); a copy.
inline Tensor axpy(const Tensor& x, double eps, const Tensor& d) {
  Tensor out = x.clone();
  for (int64_t i = 0; i < x.numel(); ++i) out.set(i, x.get(i) + eps * d.get(i));
  return out;
}
inline Tensor unit_vector(const Tensor& like, int64_t j) {
  Tensor t = Tensor::zeros(like.dtype(), like.shape());
  t.set(j, 1.0);
  return t;
}

// The derivative at 0 of phi by the 4-point central stencil.
inline double derivative(const std::function<double(double)>& phi, double h) {
  return (-phi(2 * h) + 8 * phi(h) - 8 * phi(-h) + phi(-2 * h)) / (12 * h);
}
inline std::vector<double> derivative_vec(const std::function<std::vector<double>(double)>& phi,
                                          double h) {
  std::vector<double> a = phi(2 * h), b = phi(h), c = phi(-h), d = phi(-2 * h), out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = (-a[i] + 8 * b[i] - 8 * c[i] + d[i]) / (12 * h);
  return out;
}

// |a - n| <= tol * max(1, |a|, |n|)
inline ::testing::AssertionResult close(double analytic, double numeric, double tol) {
  double scale = std::max({1.0, std::fabs(analytic), std::fabs(numeric)});
  if (std::fabs(analytic - numeric) <= tol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "analytic " << analytic << " vs numeric " << numeric << " (error "
         << std::fabs(analytic - numeric) / scale << ", tol " << tol << ")";
}

// ---- the harness --------------------------------------------------------------------------------

// <a, b> summed over every element (a and b of one tensor or tuple type).
inline Node* dot_node(GraphEmitter& e, Node* a, Node* b) {
  if (a->type->kind == Type::Kind::Tuple) {
    Node* s = nullptr;
    for (size_t i = 0; i < a->type->elems.size(); ++i) {
      Attrs at;
      at.set("index", static_cast<int64_t>(i));
      Node* p = dot_node(e, e.op("tuple_get", {a}, at), e.op("tuple_get", {b}, at));
      s = s ? e.add(s, p) : p;
    }
    return s;
  }
  Attrs all;
  all.set("axis", Attr{std::monostate{}});
  all.set("keepdims", false);
  return e.op("sum", {e.mul(a, b)}, all);
}

class GradHarness {
 public:
  explicit GradHarness(const GradCase& c, uint64_t seed = 20240611) : case_(c), rng_(seed) {
    setup();
    prim_ = sem::Registry::instance().find(c.prim);
    if (!prim_) throw std::runtime_error("no primitive " + c.prim);
    attrs_ = with_defaults(*prim_, c.attrs);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      xs.push_back(draw(c.inputs[i], rng_));
      if (is_float(c.inputs[i].dtype)) diff_.push_back(i);
    }
    build();
    interp_ = std::make_unique<sem::Interpreter>(m_);
    // Fixed random directions for every check.
    cot = random_like(out_type_, rng_);
    for (size_t i : diff_) {
      tangents.push_back(random_like(xs[i].type(), rng_));
      weights.push_back(random_like(xs[i].type(), rng_));
    }
  }

  const ir::Module& module() const { return m_; }
  const std::vector<size_t>& differentiable_inputs() const { return diff_; }
  const GradCase& test_case() const { return case_; }

  Value f(const std::vector<Value>& x) { return run(f_, x); }
  // One cotangent per differentiable input.
  std::vector<Value> vjp(const std::vector<Value>& x, const Value& c) {
    std::vector<Value> args = x;
    args.push_back(c);
    return run(vjp_, args).items();
  }
  Value jvp(const std::vector<Value>& x, const std::vector<Value>& t) {
    std::vector<Value> args = x;
    args.insert(args.end(), t.begin(), t.end());
    return run(jvp_, args);
  }
  // (s, ds/dx...) with s = sum_i <vjp_i(x, c), r_i>.
  std::vector<Value> rev_rev(const std::vector<Value>& x) {
    std::vector<Value> args = x;
    args.push_back(cot);
    args.insert(args.end(), weights.begin(), weights.end());
    return run(rev_rev_, args).items();
  }
  // (s, ds . t).
  std::vector<Value> fwd_rev(const std::vector<Value>& x) {
    std::vector<Value> args = x;
    args.push_back(cot);
    args.insert(args.end(), weights.begin(), weights.end());
    args.insert(args.end(), tangents.begin(), tangents.end());
    return run(fwd_rev_, args).items();
  }
  // (s2, ds2/dx...) with s2 = <jvp(x, t), c>.
  std::vector<Value> rev_fwd(const std::vector<Value>& x) {
    std::vector<Value> args = x;
    args.insert(args.end(), tangents.begin(), tangents.end());
    args.push_back(cot);
    return run(rev_fwd_, args).items();
  }

  // x with element j of input i moved by eps.
  std::vector<Value> nudge(size_t i, int64_t j, double eps) const {
    std::vector<Value> x = xs;
    x[i] = axpy(xs[i].tensor, eps, unit_vector(xs[i].tensor, j));
    return x;
  }
  // x moved by eps along the tangents.
  std::vector<Value> along(double eps) const {
    std::vector<Value> x = xs;
    for (size_t k = 0; k < diff_.size(); ++k)
      x[diff_[k]] = axpy(xs[diff_[k]].tensor, eps, tangents[k].tensor);
    return x;
  }

  void check_first_order();
  void check_second_order();

  std::vector<Value> xs;        // the primal inputs
  Value cot;                    // the output cotangent c
  std::vector<Value> tangents;  // t, one per differentiable input
  std::vector<Value> weights;   // r, one per differentiable input

 private:
  Value run(const ir::Graph* g, const std::vector<Value>& args) { return interp_->call(g, args); }

  // A graph with the inputs as parameters and the primitive applied to them.
  ir::Graph* start(const std::string& name, std::vector<Node*>& params, Node*& out) {
    ir::Graph* g = m_.add_graph(name);
    for (size_t i = 0; i < xs.size(); ++i)
      params.push_back(m_.add_param(g, "x" + std::to_string(i), xs[i].type()));
    GraphEmitter e(m_, g);
    out = e.op(case_.prim, params, attrs_);
    return g;
  }
  std::vector<Node*> diff_params(const std::vector<Node*>& params) const {
    std::vector<Node*> out;
    for (size_t i : diff_) out.push_back(params[i]);
    return out;
  }
  std::vector<Node*> add_params(ir::Graph* g, const std::string& prefix,
                                const std::vector<Node*>& like) {
    std::vector<Node*> out;
    for (size_t k = 0; k < like.size(); ++k)
      out.push_back(m_.add_param(g, prefix + std::to_string(k), like[k]->type));
    return out;
  }
  // s = sum_k <a_k, b_k>
  Node* dots(GraphEmitter& e, const std::vector<Node*>& a, const std::vector<Node*>& b) {
    Node* s = nullptr;
    for (size_t k = 0; k < a.size(); ++k) {
      Node* d = dot_node(e, a[k], b[k]);
      s = s ? e.add(s, d) : d;
    }
    return s;
  }
  static std::vector<Node*> snapshot(const ir::Graph* g) {
    return {g->nodes.begin(), g->nodes.end()};
  }

  void build() {
    std::vector<Node*> p;
    Node* out = nullptr;
    f_ = start("f", p, out);
    f_->output = out;
    out_type_ = out->type;

    {  // vjp
      std::vector<Node*> ps;
      vjp_ = start("vjp", ps, out);
      Node* c = m_.add_param(vjp_, "c", out_type_);
      auto grads = reverse_region(m_, snapshot(vjp_), vjp_, diff_params(ps), out, c);
      vjp_->output = GraphEmitter(m_, vjp_).op("make_tuple", grads);
    }
    {  // jvp
      std::vector<Node*> ps;
      jvp_ = start("jvp", ps, out);
      std::vector<Node*> ts = add_params(jvp_, "t", diff_params(ps));
      jvp_->output = forward_region(m_, snapshot(jvp_), jvp_, diff_params(ps), ts, out);
    }
    {  // reverse over reverse, and forward over reverse
      for (int fwd = 0; fwd < 2; ++fwd) {
        std::vector<Node*> ps;
        ir::Graph* g = start(fwd ? "fwd_rev" : "rev_rev", ps, out);
        Node* c = m_.add_param(g, "c", out_type_);
        std::vector<Node*> rs = add_params(g, "r", diff_params(ps));
        std::vector<Node*> ts = fwd ? add_params(g, "t", diff_params(ps)) : std::vector<Node*>{};
        auto grads = reverse_region(m_, snapshot(g), g, diff_params(ps), out, c);
        GraphEmitter e(m_, g);
        Node* s = dots(e, grads, rs);
        if (fwd) {
          Node* ds = forward_region(m_, snapshot(g), g, diff_params(ps), ts, s);
          g->output = e.op("make_tuple", {s, ds});
          fwd_rev_ = g;
        } else {
          auto gg =
              reverse_region(m_, snapshot(g), g, diff_params(ps), s, e.scalar(1, s->type->dtype));
          gg.insert(gg.begin(), s);
          g->output = e.op("make_tuple", gg);
          rev_rev_ = g;
        }
      }
    }
    {  // reverse over forward
      std::vector<Node*> ps;
      rev_fwd_ = start("rev_fwd", ps, out);
      std::vector<Node*> ts = add_params(rev_fwd_, "t", diff_params(ps));
      Node* c = m_.add_param(rev_fwd_, "c", out_type_);
      Node* tout = forward_region(m_, snapshot(rev_fwd_), rev_fwd_, diff_params(ps), ts, out);
      GraphEmitter e(m_, rev_fwd_);
      Node* s2 = dot_node(e, tout, c);
      auto gg = reverse_region(m_, snapshot(rev_fwd_), rev_fwd_, diff_params(ps), s2,
                               e.scalar(1, s2->type->dtype));
      gg.insert(gg.begin(), s2);
      rev_fwd_->output = e.op("make_tuple", gg);
    }
    std::vector<std::string> problems = ir::verify(m_);
    for (const auto& p2 : problems) ADD_FAILURE() << case_.name << ": " << p2;
  }

  GradCase case_;
  std::mt19937_64 rng_;
  const sem::Primitive* prim_ = nullptr;
  Attrs attrs_;
  std::vector<size_t> diff_;
  ir::Module m_;
  TypeP out_type_;
  ir::Graph *f_ = nullptr, *vjp_ = nullptr, *jvp_ = nullptr, *rev_rev_ = nullptr,
            *fwd_rev_ = nullptr, *rev_fwd_ = nullptr;
  std::unique_ptr<sem::Interpreter> interp_;
};

inline void GradHarness::check_first_order() {
  const double h = case_.h, tol = case_.tol;
  std::vector<Value> x_bar = vjp(xs, cot);
  ASSERT_EQ(x_bar.size(), diff_.size());
  // vjp against differences of <c, f(x)>, element by element.
  for (size_t k = 0; k < diff_.size(); ++k) {
    const size_t i = diff_[k];
    ASSERT_TRUE(sem::same_type(x_bar[k].type(), xs[i].type()))
        << "cotangent of input " << i << " has type " << x_bar[k].type()->str() << ", input "
        << xs[i].type()->str();
    if (!case_.inputs[i].check) continue;
    for (int64_t j = 0; j < xs[i].tensor.numel(); ++j) {
      double numeric = derivative([&](double eps) { return dot(cot, f(nudge(i, j, eps))); }, h);
      EXPECT_TRUE(close(x_bar[k].tensor.get(j), numeric, tol))
          << "vjp of input " << i << " at element " << j;
    }
  }
  // jvp against the directional difference of f (checked inputs only move).
  std::vector<Value> ts = tangents;
  for (size_t k = 0; k < diff_.size(); ++k)
    if (!case_.inputs[diff_[k]].check)
      ts[k] = Tensor::zeros(ts[k].tensor.dtype(), ts[k].tensor.shape());
  Value out_dot = jvp(xs, ts);
  ASSERT_TRUE(sem::same_type(out_dot.type(), out_type_))
      << "tangent type " << out_dot.type()->str();
  std::vector<double> numeric = derivative_vec(
      [&](double eps) {
        std::vector<Value> x = xs;
        for (size_t k = 0; k < diff_.size(); ++k)
          x[diff_[k]] = axpy(xs[diff_[k]].tensor, eps, ts[k].tensor);
        return flat(f(x));
      },
      h);
  std::vector<double> analytic = flat(out_dot);
  ASSERT_EQ(analytic.size(), numeric.size());
  for (size_t j = 0; j < analytic.size(); ++j)
    EXPECT_TRUE(close(analytic[j], numeric[j], tol)) << "jvp element " << j;
  // <t, vjp(c)> = <jvp(t), c>, to rounding (of f64, or of f32 where a result is f32).
  double lhs = 0;
  bool all_f64 = true;
  for (size_t k = 0; k < diff_.size(); ++k) lhs += dot(ts[k], x_bar[k]);
  for (const Value& v : {out_dot, cot})
    all_f64 = all_f64 && v.type()->str().find("f32") == std::string::npos;
  EXPECT_TRUE(close(lhs, dot(out_dot, cot), all_f64 ? 1e-10 : 1e-6)) << "<t, vjp(c)> = <jvp(t), c>";
}

inline void GradHarness::check_second_order() {
  const double h = case_.h, tol = case_.tol;
  std::vector<Value> rr = rev_rev(xs);
  std::vector<Value> fr = fwd_rev(xs);
  std::vector<Value> rf = rev_fwd(xs);
  ASSERT_EQ(rr.size(), diff_.size() + 1);
  ASSERT_EQ(rf.size(), diff_.size() + 1);
  EXPECT_TRUE(close(fr[0].tensor.item(), rr[0].tensor.item(), 1e-12)) << "s differs between graphs";
  // d/dx of s = <vjp(x, c), r> (reverse over reverse) and of s2 = <jvp(x, t), c> (reverse over
  // forward) against differences.
  for (size_t k = 0; k < diff_.size(); ++k) {
    const size_t i = diff_[k];
    if (!case_.inputs[i].check) continue;
    for (int64_t j = 0; j < xs[i].tensor.numel(); ++j) {
      double ds =
          derivative([&](double eps) { return rev_rev(nudge(i, j, eps))[0].tensor.item(); }, h);
      EXPECT_TRUE(close(rr[k + 1].tensor.get(j), ds, tol))
          << "reverse over reverse, input " << i << " element " << j;
      double ds2 =
          derivative([&](double eps) { return rev_fwd(nudge(i, j, eps))[0].tensor.item(); }, h);
      EXPECT_TRUE(close(rf[k + 1].tensor.get(j), ds2, tol))
          << "reverse over forward, input " << i << " element " << j;
    }
  }
  // Forward over reverse: ds . t against the directional difference of s.
  bool all_checked = true;
  for (size_t i : diff_) all_checked = all_checked && case_.inputs[i].check;
  if (all_checked) {
    double dst = derivative([&](double eps) { return rev_rev(along(eps))[0].tensor.item(); }, h);
    EXPECT_TRUE(close(fr[1].tensor.item(), dst, tol)) << "forward over reverse";
  }
}

}  // namespace spora::autodiff::testing
