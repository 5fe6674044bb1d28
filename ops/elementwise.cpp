// Elementwise primitives: unary math and binary arithmetic with NumPy broadcasting.
//
// Type rules: a unary op keeps its operand's type; math functions (exp, log, tanh, ...) need a
// float dtype, while neg abs sign square relu floor ceil round also take integers (floor, ceil
// and round are the identity there). Binary ops need equal dtypes (`add operand types do not
// match: f32[2] and f64[2]`), broadcast their shapes the NumPy way (`cannot broadcast f32[2,3]
// and f32[4]`) and reject bool. `div` is true division: integer operands give f32. `floordiv`
// and `mod` follow Python: the quotient is floored and the remainder has the sign of the
// divisor, for ints and floats; an integer division by zero is a run-time error, a float one
// gives inf/nan like NumPy. Integer pow needs a non-negative exponent. Integer arithmetic
// wraps on overflow. Kernels compute in the tensor's own dtype (f32 math in float).
//
// Derivative rules (next to each row): unary ops give g * f'(x) in both modes; binary ops give
// their two partials, unbroadcast (vjp) or broadcast (jvp) to the right shape. Conventions:
// relu'(0) = abs'(0) = 0; maximum/minimum split a tie equally between x and y (PyTorch, JAX);
// d(x % y)/dy = -(x // y); d(x ** y)/dy = x ** y log x for x > 0 and 0 for x <= 0; sign, floor,
// ceil, round and floordiv are not differentiable (zero derivative). Integer operands have none.
#include <cmath>
#include <functional>
#include <type_traits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "ops/unary_math.h"
#include "semantics/amp.h"
#include "semantics/cost.h"
#include "semantics/kernel_ir/kernel_ir.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

using ad::Emitter;
using ad::Node;
using ad::Nodes;

// ---- unary ----------------------------------------------------------------------------------

template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kIsInt = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

// The derivative of a unary op applied to g (a cotangent or a tangent; the Jacobian is
// diagonal, so both modes use the same formula): g * f'(x), given x and y = f(x).
using UnaryDeriv = std::function<Node*(Emitter& e, Node* x, Node* y, Node* g)>;

void set_unary_rules(Primitive& p, UnaryDeriv d) {
  ad::set_rules(
      p,
      [d](Emitter& e, const Node&, const Nodes& in, Node* out, Node* dout) -> Nodes {
        return {ad::diff(in[0]) ? d(e, in[0], out, dout) : nullptr};
      },
      [d](Emitter& e, const Node&, const Nodes& in, Node* out, const Nodes& ts) -> Node* {
        return ts[0] && ad::diff(in[0]) ? d(e, in[0], out, ts[0]) : nullptr;
      });
}

template <class F>
void add_unary(sem::Registry& r, const std::string& name, const std::string& doc, bool int_ok,
               bool differentiable, F f, UnaryDeriv deriv = nullptr) {
  Primitive p;
  p.name = name;
  p.family = "elementwise";
  p.doc = doc;
  p.params = {input("x")};
  p.facets[passes::kFusionFacet] = passes::FusionKind::Elementwise;
  p.differentiable = differentiable;
  p.infer = [name, int_ok](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& t = tensor_input(in, 0, name);
    bool ok = is_float(t.dtype) || (int_ok && is_integer(t.dtype));
    if (!ok)
      user_error(name + " expects a " + (int_ok ? "numeric" : "floating-point") + " tensor, got " +
                 t.str());
    return Type::tensor(t.dtype, t.shape);
  };
  p.eval = [name, f](const std::vector<Value>& in, const Attrs&) -> Value {
    const Tensor& x = in.at(0).tensor;
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    dispatch(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, uint8_t>) {
        user_error(name + " does not accept bool tensors");
      } else {
        const T* a = x.data<T>();
        T* o = out.data<T>();
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<T>(f(a[i]));
      }
    });
    return out;
  };
  if (deriv) set_unary_rules(p, std::move(deriv));
  r.add(std::move(p));
}

// A math function that only makes sense for floats; the integer branch is unreachable because
// the shape rule rejects integers.
#define FLOAT_FN(expr)                                   \
  [](auto x) {                                           \
    using T = decltype(x);                               \
    if constexpr (kIsFloat<T>) {                         \
      return static_cast<T>(expr);                       \
    } else {                                             \
      internal_error("float-only op applied to an int"); \
      return x;                                          \
    }                                                    \
  }

template <class T>
T wrap_neg(T x) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;     // 1 / sqrt(2 pi)
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)

// Short names for the derivative formulas below: k(e, v, like) a scalar constant of like's
// dtype, call(e, "exp", x) a unary primitive.
using ad::k;
Node* call(Emitter& e, const char* prim, Node* x) { return ad::un(e, prim, x); }

void register_unary(sem::Registry& r) {
  // Derivatives: g * f'(x) (sign, floor, ceil and round are not differentiable: zero).
  add_unary(
      r, "neg", "negation -x", true, true, [](auto x) { return wrap_neg(x); },
      [](Emitter& e, Node*, Node*, Node* g) { return e.neg(g); });
  add_unary(
      r, "abs", "absolute value", true, true,
      [](auto x) {
        using T = decltype(x);
        return x < T(0) ? wrap_neg(x) : x;
      },
      // sign(x) (0 at x = 0, a subgradient)
      [](Emitter& e, Node* x, Node*, Node* g) { return e.mul(g, call(e, "sign", x)); });
  add_unary(r, "sign", "sign: -1, 0 or 1 (nan stays nan)", true, false, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    return static_cast<T>(x > T(0) ? 1 : (x < T(0) ? -1 : 0));
  });
  add_unary(
      r, "square", "x * x", true, true,
      [](auto x) {
        using T = decltype(x);
        if constexpr (kIsInt<T>) {
          using U = std::make_unsigned_t<T>;
          return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
        } else {
          return x * x;
        }
      },
      [](Emitter& e, Node* x, Node*, Node* g) { return e.mul(g, e.mul(x, k(e, 2, x))); });
  add_unary(
      r, "relu", "max(x, 0)", true, true,
      [](auto x) {
        using T = decltype(x);
        return x > T(0) ? x : T(0);
      },
      // 1 where x > 0 (0 at x = 0, like PyTorch and JAX), read from the result: relu(x) > 0
      // exactly where x > 0 (nan and -0 included), so the backward pass keeps the result the
      // next layer reads anyway instead of the pre-activation as well.
      [](Emitter& e, Node*, Node* y, Node* g) {
        return ad::where(e, ad::bin(e, "gt", y, k(e, 0, y)), g, k(e, 0, g));
      });
  add_unary(r, "floor", "largest integer <= x", true, false, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsFloat<T>)
      return std::floor(x);
    else
      return x;
  });
  add_unary(r, "ceil", "smallest integer >= x", true, false, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsFloat<T>)
      return std::ceil(x);
    else
      return x;
  });
  add_unary(r, "round", "round to the nearest integer, halves to even (NumPy)", true, false,
            [](auto x) {
              using T = decltype(x);
              if constexpr (kIsFloat<T>)
                return std::nearbyint(x);
              else
                return x;
            });
  add_unary(r, "exp", "e ** x", false, true, FLOAT_FN(std::exp(x)),
            [](Emitter& e, Node*, Node* y, Node* g) { return e.mul(g, y); });
  add_unary(r, "log", "natural logarithm", false, true, FLOAT_FN(std::log(x)),
            [](Emitter& e, Node* x, Node*, Node* g) { return e.div(g, x); });
  add_unary(r, "sqrt", "square root", false, true, FLOAT_FN(std::sqrt(x)),
            // 1 / (2 sqrt(x))
            [](Emitter& e, Node*, Node* y, Node* g) { return e.div(g, e.mul(y, k(e, 2, y))); });
  add_unary(r, "rsqrt", "1 / sqrt(x)", false, true, FLOAT_FN(T(1) / std::sqrt(x)),
            // -x^(-3/2) / 2 = -y / (2x)
            [](Emitter& e, Node* x, Node* y, Node* g) {
              return e.div(e.mul(g, y), e.mul(x, k(e, -2, x)));
            });
  add_unary(
      r, "tanh", "hyperbolic tangent", false, true, FLOAT_FN(std::tanh(x)),
      // 1 - y^2
      [](Emitter& e, Node*, Node* y, Node* g) { return e.mul(g, e.sub(k(e, 1, y), e.mul(y, y))); });
  add_unary(
      r, "sigmoid", "logistic function 1 / (1 + exp(-x)), stable for large |x|", false, true,
      FLOAT_FN(x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x))),
      // y (1 - y)
      [](Emitter& e, Node*, Node* y, Node* g) { return e.mul(g, e.mul(y, e.sub(k(e, 1, y), y))); });
  add_unary(r, "gelu", "x * Phi(x) with the exact erf", false, true,
            FLOAT_FN(T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)))),
            // Phi(x) + x phi(x) = (1 + erf(x / sqrt 2)) / 2 + x exp(-x^2 / 2) / sqrt(2 pi)
            [](Emitter& e, Node* x, Node*, Node* g) {
              Node* cdf = e.mul(k(e, 0.5, x),
                                e.add(k(e, 1, x), call(e, "erf", e.mul(x, k(e, kSqrtHalf, x)))));
              Node* pdf =
                  e.mul(call(e, "exp", e.mul(e.mul(x, x), k(e, -0.5, x))), k(e, kInvSqrt2Pi, x));
              return e.mul(g, e.add(cdf, e.mul(x, pdf)));
            });
  add_unary(r, "sin", "sine", false, true, FLOAT_FN(std::sin(x)),
            [](Emitter& e, Node* x, Node*, Node* g) { return e.mul(g, call(e, "cos", x)); });
  add_unary(r, "cos", "cosine", false, true, FLOAT_FN(std::cos(x)),
            [](Emitter& e, Node* x, Node*, Node* g) { return e.neg(e.mul(g, call(e, "sin", x))); });
  add_unary(r, "erf", "error function", false, true, FLOAT_FN(std::erf(x)),
            // 2 / sqrt(pi) exp(-x^2)
            [](Emitter& e, Node* x, Node*, Node* g) {
              Node* d = e.mul(call(e, "exp", e.neg(e.mul(x, x))), k(e, kTwoOverSqrtPi, x));
              return e.mul(g, d);
            });
  add_unary(r, "log1p", "log(1 + x), accurate near 0", false, true, FLOAT_FN(std::log1p(x)),
            [](Emitter& e, Node* x, Node*, Node* g) { return e.div(g, e.add(x, k(e, 1, x))); });
  add_unary(r, "expm1", "exp(x) - 1, accurate near 0", false, true, FLOAT_FN(std::expm1(x)),
            [](Emitter& e, Node*, Node* y, Node* g) { return e.mul(g, e.add(y, k(e, 1, y))); });
  add_unary(r, "reciprocal", "1 / x", false, true, FLOAT_FN(T(1) / x),
            // -1 / x^2 = -y^2
            [](Emitter& e, Node*, Node* y, Node* g) { return e.neg(e.mul(g, e.mul(y, y))); });
}

// ---- binary ---------------------------------------------------------------------------------

// Python floor division and remainder.
template <class T>
T py_floordiv(T a, T b) {
  if constexpr (kIsInt<T>) {
    if (b == 0) user_error("integer division by zero");
    if (b == -1) return wrap_neg(a);
    T q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    if (b == 0) return a / b;  // inf or nan, like NumPy
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
    return fl;
  }
}

template <class T>
T py_mod(T a, T b) {
  if constexpr (kIsInt<T>) {
    if (b == 0) user_error("integer division by zero");
    if (b == -1) return 0;
    T m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return m;
  } else {
    if (b == 0) return std::fmod(a, b);  // nan
    T m = std::fmod(a, b);
    if (m != 0) {
      if ((b < 0) != (m < 0)) m += b;
    } else {
      m = std::copysign(T(0), b);
    }
    return m;
  }
}

template <class T>
T int_pow(T base, T exp) {
  if (exp < 0) user_error("integer pow with a negative exponent " + std::to_string(exp));
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  for (T e = exp; e > 0; e >>= 1) {
    if (e & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

template <class T, class F>
T wrap_int(T a, T b, F f) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
}

enum class BinOp { add, sub, mul, div, floordiv, mod, pow, maximum, minimum };

template <class T>
T apply_binary(BinOp op, T a, T b) {
  switch (op) {
    case BinOp::add:
      if constexpr (kIsInt<T>)
        return wrap_int(a, b, [](auto x, auto y) { return x + y; });
      else
        return a + b;
    case BinOp::sub:
      if constexpr (kIsInt<T>)
        return wrap_int(a, b, [](auto x, auto y) { return x - y; });
      else
        return a - b;
    case BinOp::mul:
      if constexpr (kIsInt<T>)
        return wrap_int(a, b, [](auto x, auto y) { return x * y; });
      else
        return a * b;
    case BinOp::div:
      return a / b;  // floats only (ints are converted to f32 first)
    case BinOp::floordiv:
      return py_floordiv(a, b);
    case BinOp::mod:
      return py_mod(a, b);
    case BinOp::pow:
      if constexpr (kIsInt<T>)
        return int_pow(a, b);
      else
        return std::pow(a, b);
    case BinOp::maximum:
      if constexpr (kIsFloat<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      }
      return a > b ? a : b;
    case BinOp::minimum:
      if constexpr (kIsFloat<T>) {
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
      }
      return a < b ? a : b;
  }
  return a;
}

// The derivative of a binary op with respect to one operand, applied to g (a cotangent or a
// tangent, of the output's shape): g * df/dx, given x, y and out = f(x, y).
using BinaryDeriv = std::function<Node*(Emitter& e, Node* x, Node* y, Node* out, Node* g)>;

// vjp: each partial summed back to its operand's shape; jvp: the sum of both partials
// (a tangent of a broadcast operand is broadcast to the output's shape).
void set_binary_rules(Primitive& p, BinaryDeriv dx, BinaryDeriv dy) {
  ad::set_rules(
      p,
      [dx, dy](Emitter& e, const Node&, const Nodes& in, Node* out, Node* dout) -> Nodes {
        Node *x = in[0], *y = in[1];
        if (!ad::diff(x)) return {nullptr, nullptr};
        return {e.unbroadcast(dx(e, x, y, out, dout), ad::shape_of(x)),
                e.unbroadcast(dy(e, x, y, out, dout), ad::shape_of(y))};
      },
      [dx, dy](Emitter& e, const Node&, const Nodes& in, Node* out, const Nodes& ts) -> Node* {
        Node *x = in[0], *y = in[1];
        if (!ad::diff(x)) return nullptr;
        const Shape& s = ad::shape_of(out);
        Node* a = ts[0] ? ad::broadcast(e, dx(e, x, y, out, ts[0]), s) : nullptr;
        Node* b = ts[1] ? ad::broadcast(e, dy(e, x, y, out, ts[1]), s) : nullptr;
        return ad::add_opt(e, a, b);
      });
}

// The share of maximum's (minimum's) derivative that goes to x: 1 where x wins, 1/2 at ties
// (like PyTorch and JAX), 0 where y wins. A constant (built from comparisons).
Node* winner_weight(Emitter& e, Node* x, Node* y, const char* wins) {
  Node* half = ad::where(e, ad::bin(e, "eq", x, y), k(e, 0.5, x), k(e, 0, x));
  return ad::where(e, ad::bin(e, wins, x, y), k(e, 1, x), half);
}

void add_binary(sem::Registry& r, const std::string& name, const std::string& doc, BinOp op,
                BinaryDeriv dx = nullptr, BinaryDeriv dy = nullptr) {
  Primitive p;
  p.name = name;
  p.family = "elementwise";
  p.doc = doc;
  p.params = {input("x"), input("y")};
  p.facets[passes::kFusionFacet] = passes::FusionKind::Broadcast;
  p.differentiable = op != BinOp::floordiv;
  p.infer = [name, op](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 2, 2, name);
    const Type& a = tensor_input(in, 0, name);
    const Type& b = tensor_input(in, 1, name);
    Shape shape = binary_broadcast(name, a, b);
    if (a.dtype == DType::boolean)
      user_error(name + " does not accept bool operands: " + a.str() + " and " + b.str());
    if (!is_float(a.dtype) && !is_integer(a.dtype))
      user_error(name + " has no reference kernel for " + a.str());
    DType out = op == BinOp::div && is_integer(a.dtype) ? DType::f32 : a.dtype;
    return Type::tensor(out, shape);
  };
  p.eval = [name, op](const std::vector<Value>& in, const Attrs&) -> Value {
    Tensor x = in.at(0).tensor, y = in.at(1).tensor;
    if (op == BinOp::div && is_integer(x.dtype())) {
      x = x.cast(DType::f32);
      y = y.cast(DType::f32);
    }
    auto shape = broadcast_shapes(x.shape(), y.shape());
    if (!shape) user_error("cannot broadcast " + x.type()->str() + " and " + y.type()->str());
    Tensor out = Tensor::empty(x.dtype(), *shape);
    bool same_x = x.shape() == *shape, same_y = y.shape() == *shape;
    std::vector<int64_t> mx, my;
    if (!same_x) mx = broadcast_index_map(x.shape(), *shape);
    if (!same_y) my = broadcast_index_map(y.shape(), *shape);
    dispatch(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, uint8_t>) {
        user_error(name + " does not accept bool operands");
      } else {
        const T* a = x.data<T>();
        const T* b = y.data<T>();
        T* o = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i)
          o[i] = apply_binary<T>(op, a[same_x ? i : mx[i]], b[same_y ? i : my[i]]);
      }
    });
    return out;
  };
  if (dx && dy) set_binary_rules(p, std::move(dx), std::move(dy));
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void elementwise_costs(sem::Registry& r) {
  for (const char* name :
       {"neg", "abs", "sign", "square", "relu", "floor", "ceil", "round", "reciprocal", "add",
        "sub", "mul", "div", "floordiv", "mod", "maximum", "minimum"})
    set_cost(r, name, sem::elementwise_cost(1));
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "sin", "cos",
                           "erf", "log1p", "expm1", "pow"})
    set_cost(r, name, sem::elementwise_cost(10));
}

void elementwise_rules(sem::Registry& r) {
  for (const char* name :
       {"abs",  "sign",    "square",  "relu", "floor", "ceil",  "round", "reciprocal", "floordiv",
        "mod",  "maximum", "minimum", "exp",  "log",   "sqrt",  "rsqrt", "tanh",       "sigmoid",
        "gelu", "sin",     "cos",     "erf",  "log1p", "expm1", "pow"})
    set_sharding(r, name, elementwise_rule());
  // The linear ones pass partial sums on: neg, add and sub of two partial inputs, mul by a
  // factor that is not partial, div of a partial numerator.
  set_sharding(r, "neg", dim_rule(linear(elementwise_spec, kJoint)));
  for (const char* name : {"add", "sub"})
    set_sharding(r, name, dim_rule(linear(elementwise_spec, kJoint, {0, 1})));
  set_sharding(r, "mul", dim_rule(linear(elementwise_spec, kOne, {0, 1})));
  set_sharding(r, "div", dim_rule(linear(elementwise_spec, kOne, {0})));
}

}  // namespace facets

}  // namespace

sem::Primitive& add_unary_math(sem::Registry& r, const UnaryMath& row) {
  if (row.loop.arity != 1) internal_error(row.name + ": a unary primitive's loop_expr has arity 1");
  const std::function<double(double)> f = row.f;
  UnaryDeriv deriv;
  if (row.deriv) deriv = row.deriv;
  add_unary(
      r, row.name, row.doc, false, static_cast<bool>(row.deriv),
      [f](auto x) {
        using T = decltype(x);
        if constexpr (kIsFloat<T>) {
          return static_cast<T>(f(static_cast<double>(x)));
        } else {
          internal_error("float-only op applied to an int");
          return x;
        }
      },
      deriv);
  sem::Primitive& p = *r.find_mutable(row.name);
  p.facets[kir::kLoopFormFacet] = row.loop.arity;
  p.facets[codegen::kLoopExprFacet] = row.loop;
  if (row.amp != sem::AmpClass::Promote) p.facets[sem::kAmpFacet] = row.amp;
  sem::set_cost(r, row.name, sem::elementwise_cost(row.flops));
  set_elementwise_sharding(r, row.name);
  return p;
}

void register_elementwise(sem::Registry& r) {
  register_unary(r);
  // Autocast (semantics/amp.h): precision-sensitive math in f32 at O1.
  for (const char* name : {"exp", "log", "log1p", "expm1", "reciprocal", "rsqrt"})
    sem::set_amp(r, name, sem::AmpClass::F32);
  // Partial derivatives (floordiv is not differentiable).
  auto pass = [](Emitter&, Node*, Node*, Node*, Node* g) { return g; };
  auto negate = [](Emitter& e, Node*, Node*, Node*, Node* g) { return e.neg(g); };
  add_binary(r, "add", "x + y with broadcasting", BinOp::add, pass, pass);
  add_binary(r, "sub", "x - y with broadcasting", BinOp::sub, pass, negate);
  add_binary(
      r, "mul", "x * y with broadcasting", BinOp::mul,
      [](Emitter& e, Node*, Node* y, Node*, Node* g) { return e.mul(g, y); },
      [](Emitter& e, Node* x, Node*, Node*, Node* g) { return e.mul(g, x); });
  add_binary(
      r, "div", "true division x / y (integer operands give f32)", BinOp::div,
      [](Emitter& e, Node*, Node* y, Node*, Node* g) { return e.div(g, y); },
      // -x / y^2 = -out / y
      [](Emitter& e, Node*, Node* y, Node* out, Node* g) {
        return e.neg(e.div(e.mul(g, out), y));
      });
  add_binary(r, "floordiv", "floor division x // y (Python semantics)", BinOp::floordiv);
  add_binary(r, "mod", "remainder x % y with the sign of y (Python semantics)", BinOp::mod, pass,
             // x % y = x - (x // y) * y, and x // y is piecewise constant
             [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
               return e.neg(e.mul(g, ad::bin(e, "floordiv", x, y)));
             });
  add_binary(
      r, "pow", "x ** y (integer exponents must be non-negative)", BinOp::pow,
      // y x^(y-1)
      [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
        return e.mul(g, e.mul(y, ad::bin(e, "pow", x, e.sub(y, k(e, 1, y)))));
      },
      // out log(x) for x > 0, else 0 (x^y is real there only for integer y, where it is flat
      // in y along the integers); log reads 1 at x <= 0 so no nan reaches the mask
      [](Emitter& e, Node* x, Node*, Node* out, Node* g) {
        Node* pos = ad::bin(e, "gt", x, k(e, 0, x));
        Node* log_x = call(e, "log", ad::where(e, pos, x, k(e, 1, x)));
        return ad::where(e, pos, e.mul(g, e.mul(out, log_x)), k(e, 0, g));
      });
  add_binary(
      r, "maximum", "elementwise maximum (nan propagates)", BinOp::maximum,
      [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
        return e.mul(g, winner_weight(e, x, y, "gt"));
      },
      [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
        return e.mul(g, winner_weight(e, y, x, "gt"));
      });
  add_binary(
      r, "minimum", "elementwise minimum (nan propagates)", BinOp::minimum,
      [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
        return e.mul(g, winner_weight(e, x, y, "lt"));
      },
      [](Emitter& e, Node* x, Node* y, Node*, Node* g) {
        return e.mul(g, winner_weight(e, y, x, "lt"));
      });
  sem::set_amp(r, "pow", sem::AmpClass::F32);
  // Cost and sharding rules of the rows above.
  facets::elementwise_costs(r);
  facets::elementwise_rules(r);
}

}  // namespace spora::ops
