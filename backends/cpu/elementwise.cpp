// CPU kernels of the elementwise family (ops/elementwise.cpp): unary math and binary
// arithmetic with NumPy broadcasting.
//
// Same conventions as the reference, bit for bit wherever the reference's formula is one
// IEEE operation or an integer one (neg abs sign square relu floor ceil round sqrt rsqrt
// reciprocal, add sub mul div floordiv mod maximum minimum, integers wrapping): the same
// expressions run in vectorised loops. f32 exp log tanh sigmoid gelu erf use vmath.h (a few
// ulp); the other transcendental functions and all of f64 call the same libm functions as
// the reference. bool, f16 and bf16 operands go to the reference kernel (which rejects them).
//
// Binary ops run over a BroadcastPlan: same shapes and scalar or trailing (bias) operands
// become one flat or row loop with a vector-vector, vector-scalar or scalar-vector body.
// Integer division by zero and negative integer exponents are found before the loop and
// raise the reference's errors.
#include <cmath>
#include <limits>

#include "backends/cpu/kernels.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/vmath.h"

namespace spora::cpu {

namespace {

template <class T>
SPORA_INLINE T wrap_neg(T x) {
  if constexpr (kIsInt<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(U(0) - static_cast<U>(x));
  } else {
    return -x;
  }
}

// ---- unary ----------------------------------------------------------------------------------

struct Neg {
  template <class T>
  static SPORA_INLINE T f(T x) {
    return wrap_neg(x);
  }
};
struct Abs {
  template <class T>
  static SPORA_INLINE T f(T x) {
    return x < T(0) ? wrap_neg(x) : x;
  }
};
struct Sign {
  template <class T>
  static SPORA_INLINE T f(T x) {
    T s = static_cast<T>(x > T(0) ? 1 : (x < T(0) ? -1 : 0));
    if constexpr (std::is_floating_point_v<T>) return x != x ? x : s;
    return s;
  }
};
struct Square {
  template <class T>
  static SPORA_INLINE T f(T x) {
    if constexpr (kIsInt<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
    } else {
      return x * x;
    }
  }
};
struct Relu {
  template <class T>
  static SPORA_INLINE T f(T x) {
    return x > T(0) ? x : T(0);
  }
};

// Float-only ops (integers never reach them: the kernel sends them to the reference).
#define SPORA_FLOAT_OP(NAME, F32, F64)              \
  struct NAME {                                     \
    template <class T>                              \
    static SPORA_INLINE T f(T x) {                  \
      if constexpr (std::is_same_v<T, float>)       \
        return F32;                                 \
      else if constexpr (std::is_same_v<T, double>) \
        return F64;                                 \
      else                                          \
        return x;                                   \
    }                                               \
  };

SPORA_FLOAT_OP(Floor, std::floor(x), std::floor(x))
SPORA_FLOAT_OP(Ceil, std::ceil(x), std::ceil(x))
SPORA_FLOAT_OP(Round, std::nearbyint(x), std::nearbyint(x))
SPORA_FLOAT_OP(Exp, vm::exp(x), std::exp(x))
SPORA_FLOAT_OP(Log, vm::log(x), std::log(x))
SPORA_FLOAT_OP(Sqrt, std::sqrt(x), std::sqrt(x))
SPORA_FLOAT_OP(Rsqrt, 1.0f / std::sqrt(x), 1.0 / std::sqrt(x))
SPORA_FLOAT_OP(TanhPortable, vm::tanh(x), std::tanh(x))
SPORA_FLOAT_OP(Sigmoid, vm::sigmoid(x),
               x >= 0.0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)))
SPORA_FLOAT_OP(GeluPortable, vm::gelu(x), 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)))
// With AVX-512, f32 tanh and gelu map arrays through vmath's table forms (unary_apply).
struct Tanh : TanhPortable {
#if defined(__x86_64__)
  static void map_f32_avx512(const float* x, float* y, int64_t n) { vm::tanh_n_avx512(x, y, n); }
#endif
};
struct Gelu : GeluPortable {
#if defined(__x86_64__)
  static void map_f32_avx512(const float* x, float* y, int64_t n) { vm::gelu_n_avx512(x, y, n); }
#endif
};
SPORA_FLOAT_OP(Sin, std::sin(x), std::sin(x))
SPORA_FLOAT_OP(Cos, std::cos(x), std::cos(x))
SPORA_FLOAT_OP(Erf, vm::erf(x), std::erf(x))
SPORA_FLOAT_OP(Log1p, std::log1p(x), std::log1p(x))
SPORA_FLOAT_OP(Expm1, std::expm1(x), std::expm1(x))
SPORA_FLOAT_OP(Reciprocal, 1.0f / x, 1.0 / x)
#undef SPORA_FLOAT_OP

// int_ok: integers are accepted (floor, ceil and round are the identity on them).
// identity_on_int: the op returns an integer input unchanged.
// cost: work per element relative to an add (for the parallel threshold).
template <class Op>
CpuKernel unary_kernel(bool int_ok, bool identity_on_int, int64_t cost) {
  return [=](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const DType dt = x.dtype();
    const bool is_int = dt == DType::i32 || dt == DType::i64;
    if (!(dt == DType::f32 || dt == DType::f64 || (int_ok && is_int))) return ref(in, attrs);
    if (is_int && identity_on_int) return x;
    Tensor out = reuse_or_empty(in, {0}, dt, x.shape());
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, uint8_t>) {
        unary_apply<Op, T, T>(x.data<T>(), out.data<T>(), x.numel(),
                              std::is_same_v<T, double> ? 2 * cost : cost);
      }
    });
    return out;
  };
}

// ---- binary ---------------------------------------------------------------------------------

template <class T, class F>
SPORA_INLINE T wrap_int(T a, T b, F f) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
}

struct Add {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    if constexpr (kIsInt<T>)
      return wrap_int(a, b, [](auto x, auto y) { return x + y; });
    else
      return a + b;
  }
};
struct Sub {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    if constexpr (kIsInt<T>)
      return wrap_int(a, b, [](auto x, auto y) { return x - y; });
    else
      return a - b;
  }
};
struct Mul {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    if constexpr (kIsInt<T>)
      return wrap_int(a, b, [](auto x, auto y) { return x * y; });
    else
      return a * b;
  }
};
struct Div {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    return a / b;
  }
};
// Python floor division and remainder (the reference's formulas; integer divisors were checked
// to be non-zero before the loop).
struct FloorDiv {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    if constexpr (kIsInt<T>) {
      if (b == 0) return 0;
      if (b == -1) return wrap_neg(a);
      T q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      return q;
    } else {
      if (b == 0) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
      if (div == 0) return std::copysign(T(0), a / b);
      T fl = std::floor(div);
      if (div - fl > T(0.5)) fl += T(1);
      return fl;
    }
  }
};
struct Mod {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    if constexpr (kIsInt<T>) {
      if (b == 0 || b == -1) return 0;
      T m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      return m;
    } else {
      if (b == 0) return std::fmod(a, b);
      T m = std::fmod(a, b);
      if (m != 0) {
        if ((b < 0) != (m < 0)) m += b;
      } else {
        m = std::copysign(T(0), b);
      }
      return m;
    }
  }
};
struct Pow {
  template <class T>
  static SPORA_INLINE T f(T base, T exp) {
    if constexpr (kIsInt<T>) {
      using U = std::make_unsigned_t<T>;
      U result = 1, b = static_cast<U>(base);
      for (T e = exp; e > 0; e >>= 1) {
        if (e & 1) result *= b;
        b *= b;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(base, exp);
    }
  }
};
struct Maximum {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    T m = a > b ? a : b;
    if constexpr (std::is_floating_point_v<T>)
      return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : m;
    return m;
  }
};
struct Minimum {
  template <class T>
  static SPORA_INLINE T f(T a, T b) {
    T m = a < b ? a : b;
    if constexpr (std::is_floating_point_v<T>)
      return (a != a || b != b) ? std::numeric_limits<T>::quiet_NaN() : m;
    return m;
  }
};

enum class Check { none, nonzero, nonnegative };

// The first divisor (exponent) that would make the integer loop fail, as the reference's error.
template <class T>
void check_integer_operand(const Tensor& y, Check check) {
  const T* b = y.data<T>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    if (check == Check::nonzero && b[i] == 0) user_error("integer division by zero");
    if (check == Check::nonnegative && b[i] < 0)
      user_error("integer pow with a negative exponent " + std::to_string(b[i]));
  }
}

template <class Op>
CpuKernel binary_kernel(int64_t cost, Check int_check = Check::none, bool int_to_f32 = false) {
  return [=](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x0 = in.at(0).tensor;
    const Tensor& y0 = in.at(1).tensor;
    DType dt = x0.dtype();
    bool numeric = dt == DType::f32 || dt == DType::f64 || dt == DType::i32 || dt == DType::i64;
    Shape shape;
    if (!numeric || y0.dtype() != dt || !broadcast_shapes(x0.shape(), y0.shape(), shape))
      return ref(in, attrs);
    std::vector<Value> converted;
    const std::vector<Value>* args = &in;
    if (int_to_f32 && dt != DType::f32 && dt != DType::f64) {  // true division of integers
      converted = {Value(cast_tensor(x0, DType::f32)), Value(cast_tensor(y0, DType::f32))};
      args = &converted;
      dt = DType::f32;
    }
    const Tensor& x = (*args)[0].tensor;
    const Tensor& y = (*args)[1].tensor;
    if (numel_of(shape) == 0) return Tensor::empty(dt, shape);
    Tensor out = reuse_or_empty(*args, {0, 1}, dt, shape);
    BroadcastPlan plan = plan_broadcast({&x.shape(), &y.shape()}, shape);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, uint8_t>) {
        if constexpr (kIsInt<T>) {
          if (int_check != Check::none) check_integer_operand<T>(y, int_check);
        }
        binary_apply<Op, T, T>(plan, x.data<T>(), y.data<T>(), out.data<T>(),
                               std::is_same_v<T, double> ? 2 * cost : cost);
      }
    });
    return out;
  };
}

}  // namespace

void register_elementwise() {
  // Relative costs: 1 for an add; a vectorised f32 transcendental about 8, a libm call 20.
  set_kernel("neg", unary_kernel<Neg>(true, false, 1));
  set_kernel("abs", unary_kernel<Abs>(true, false, 1));
  set_kernel("sign", unary_kernel<Sign>(true, false, 1));
  set_kernel("square", unary_kernel<Square>(true, false, 1));
  set_kernel("relu", unary_kernel<Relu>(true, false, 1));
  set_kernel("floor", unary_kernel<Floor>(true, true, 2));
  set_kernel("ceil", unary_kernel<Ceil>(true, true, 2));
  set_kernel("round", unary_kernel<Round>(true, true, 2));
  set_kernel("exp", unary_kernel<Exp>(false, false, 8));
  set_kernel("log", unary_kernel<Log>(false, false, 8));
  set_kernel("sqrt", unary_kernel<Sqrt>(false, false, 4));
  set_kernel("rsqrt", unary_kernel<Rsqrt>(false, false, 4));
  set_kernel("tanh", unary_kernel<Tanh>(false, false, 8));
  set_kernel("sigmoid", unary_kernel<Sigmoid>(false, false, 8));
  set_kernel("gelu", unary_kernel<Gelu>(false, false, 12));
  set_kernel("sin", unary_kernel<Sin>(false, false, 20));
  set_kernel("cos", unary_kernel<Cos>(false, false, 20));
  set_kernel("erf", unary_kernel<Erf>(false, false, 10));
  set_kernel("log1p", unary_kernel<Log1p>(false, false, 20));
  set_kernel("expm1", unary_kernel<Expm1>(false, false, 20));
  set_kernel("reciprocal", unary_kernel<Reciprocal>(false, false, 2));

  set_kernel("add", binary_kernel<Add>(1));
  set_kernel("sub", binary_kernel<Sub>(1));
  set_kernel("mul", binary_kernel<Mul>(1));
  set_kernel("div", binary_kernel<Div>(2, Check::none, /*int_to_f32=*/true));
  set_kernel("floordiv", binary_kernel<FloorDiv>(10, Check::nonzero));
  set_kernel("mod", binary_kernel<Mod>(10, Check::nonzero));
  set_kernel("pow", binary_kernel<Pow>(20, Check::nonnegative));
  set_kernel("maximum", binary_kernel<Maximum>(1));
  set_kernel("minimum", binary_kernel<Minimum>(1));
}

}  // namespace spora::cpu
