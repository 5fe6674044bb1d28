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
#include <cmath>
#include <type_traits>

#include "ops/families.h"
#include "ops/kernel_util.h"

namespace spora::ops {

namespace {

// ---- unary ----------------------------------------------------------------------------------

template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kIsInt = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

template <class F>
void add_unary(sem::Registry& r, const std::string& name, const std::string& doc, bool int_ok,
               bool differentiable, F f) {
  Primitive p;
  p.name = name;
  p.family = "elementwise";
  p.doc = doc;
  p.params = {input("x")};
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

void register_unary(sem::Registry& r) {
  add_unary(r, "neg", "negation -x", true, true, [](auto x) { return wrap_neg(x); });
  add_unary(r, "abs", "absolute value", true, true, [](auto x) {
    using T = decltype(x);
    return x < T(0) ? wrap_neg(x) : x;
  });
  add_unary(r, "sign", "sign: -1, 0 or 1 (nan stays nan)", true, false, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsFloat<T>) {
      if (std::isnan(x)) return x;
    }
    return static_cast<T>(x > T(0) ? 1 : (x < T(0) ? -1 : 0));
  });
  add_unary(r, "square", "x * x", true, true, [](auto x) {
    using T = decltype(x);
    if constexpr (kIsInt<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
    } else {
      return x * x;
    }
  });
  add_unary(r, "relu", "max(x, 0)", true, true, [](auto x) {
    using T = decltype(x);
    return x > T(0) ? x : T(0);
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
  add_unary(r, "exp", "e ** x", false, true, FLOAT_FN(std::exp(x)));
  add_unary(r, "log", "natural logarithm", false, true, FLOAT_FN(std::log(x)));
  add_unary(r, "sqrt", "square root", false, true, FLOAT_FN(std::sqrt(x)));
  add_unary(r, "rsqrt", "1 / sqrt(x)", false, true, FLOAT_FN(T(1) / std::sqrt(x)));
  add_unary(r, "tanh", "hyperbolic tangent", false, true, FLOAT_FN(std::tanh(x)));
  add_unary(
      r, "sigmoid", "logistic function 1 / (1 + exp(-x)), stable for large |x|", false, true,
      FLOAT_FN(x >= T(0) ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x))));
  add_unary(r, "gelu", "x * Phi(x) with the exact erf", false, true,
            FLOAT_FN(T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)))));
  add_unary(r, "sin", "sine", false, true, FLOAT_FN(std::sin(x)));
  add_unary(r, "cos", "cosine", false, true, FLOAT_FN(std::cos(x)));
  add_unary(r, "erf", "error function", false, true, FLOAT_FN(std::erf(x)));
  add_unary(r, "log1p", "log(1 + x), accurate near 0", false, true, FLOAT_FN(std::log1p(x)));
  add_unary(r, "expm1", "exp(x) - 1, accurate near 0", false, true, FLOAT_FN(std::expm1(x)));
  add_unary(r, "reciprocal", "1 / x", false, true, FLOAT_FN(T(1) / x));
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

void add_binary(sem::Registry& r, const std::string& name, const std::string& doc, BinOp op) {
  Primitive p;
  p.name = name;
  p.family = "elementwise";
  p.doc = doc;
  p.params = {input("x"), input("y")};
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
  r.add(std::move(p));
}

}  // namespace

void register_elementwise(sem::Registry& r) {
  register_unary(r);
  add_binary(r, "add", "x + y with broadcasting", BinOp::add);
  add_binary(r, "sub", "x - y with broadcasting", BinOp::sub);
  add_binary(r, "mul", "x * y with broadcasting", BinOp::mul);
  add_binary(r, "div", "true division x / y (integer operands give f32)", BinOp::div);
  add_binary(r, "floordiv", "floor division x // y (Python semantics)", BinOp::floordiv);
  add_binary(r, "mod", "remainder x % y with the sign of y (Python semantics)", BinOp::mod);
  add_binary(r, "pow", "x ** y (integer exponents must be non-negative)", BinOp::pow);
  add_binary(r, "maximum", "elementwise maximum (nan propagates)", BinOp::maximum);
  add_binary(r, "minimum", "elementwise minimum (nan propagates)", BinOp::minimum);
}

}  // namespace spora::ops
