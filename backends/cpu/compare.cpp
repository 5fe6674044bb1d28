// CPU kernels of the compare family (ops/compare.cpp): eq ne lt le gt ge, logical_and
// logical_or logical_not, where and cast. All exact: the same comparisons and conversions as
// the reference (cast follows sem::Tensor::cast, including its rounding through double for
// i64 -> f32), in vectorised loops over a BroadcastPlan. Casts from and to f16/bf16 convert
// with half.h (F16C where the CPU has it), bit for bit as the reference; other f16/bf16
// operands are widened to f32 by set_kernel's wrapper (half.h). A cast to the input's own dtype
// returns the input (values are immutable).
#include "backends/cpu/half.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/loops.h"
#include "semantics/half.h"

namespace spora::cpu {

namespace {

#define SPORA_CMP(NAME, EXPR)                 \
  struct NAME {                               \
    template <class T>                        \
    static SPORA_INLINE uint8_t f(T a, T b) { \
      return (EXPR) ? 1 : 0;                  \
    }                                         \
  };
SPORA_CMP(Eq, a == b)
SPORA_CMP(Ne, a != b)
SPORA_CMP(Lt, a < b)
SPORA_CMP(Le, a <= b)
SPORA_CMP(Gt, a > b)
SPORA_CMP(Ge, a >= b)
SPORA_CMP(And, a != 0 && b != 0)
SPORA_CMP(Or, a != 0 || b != 0)
#undef SPORA_CMP

struct Not {
  static SPORA_INLINE uint8_t f(uint8_t a) { return a == 0 ? 1 : 0; }
};

// logical: both operands must be bool (else the reference kernel decides).
template <class Op>
CpuKernel compare_kernel(bool logical) {
  return [=](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& y = in.at(1).tensor;
    const DType dt = x.dtype();
    Shape shape;
    bool ok = y.dtype() == dt &&
              (logical ? dt == DType::boolean : !(dt == DType::f16 || dt == DType::bf16));
    if (!ok || !broadcast_shapes(x.shape(), y.shape(), shape)) return ref(in, attrs);
    if (numel_of(shape) == 0) return Tensor::empty(DType::boolean, shape);
    Tensor out = reuse_or_empty(in, {0, 1}, DType::boolean, shape);
    BroadcastPlan plan = plan_broadcast({&x.shape(), &y.shape()}, shape);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      binary_apply<Op, T, uint8_t>(plan, x.data<T>(), y.data<T>(), out.data<uint8_t>(), 1);
    });
    return out;
  };
}

Value logical_not_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  if (x.dtype() != DType::boolean) return ref(in, attrs);
  Tensor out = reuse_or_empty(in, {0}, DType::boolean, x.shape());
  unary_apply<Not, uint8_t, uint8_t>(x.data<uint8_t>(), out.data<uint8_t>(), x.numel(), 1);
  return out;
}

SPORA_MULTIVERSION((template <class T>), select_vvv, (<T>),
                   (const uint8_t* c, const T* a, const T* b, T* o, int64_t n), (c, a, b, o, n), {
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
                   })

// One side a broadcast scalar (ReLU's derivative where(x > 0, g, 0), masks with a constant):
// the strided loop below does not vectorise.
SPORA_MULTIVERSION((template <class T>), select_vvs, (<T>),
                   (const uint8_t* c, const T* a, T b, T* o, int64_t n), (c, a, b, o, n), {
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b;
                   })
SPORA_MULTIVERSION((template <class T>), select_vsv, (<T>),
                   (const uint8_t* c, T a, const T* b, T* o, int64_t n), (c, a, b, o, n), {
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a : b[i];
                   })

Value where_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& c = in.at(0).tensor;
  const Tensor& a = in.at(1).tensor;
  const Tensor& b = in.at(2).tensor;
  const DType dt = a.dtype();
  Shape ab, shape;
  if (c.dtype() != DType::boolean || b.dtype() != dt || dt == DType::f16 || dt == DType::bf16 ||
      !broadcast_shapes(a.shape(), b.shape(), ab) || !broadcast_shapes(c.shape(), ab, shape))
    return ref(in, attrs);
  if (numel_of(shape) == 0) return Tensor::empty(dt, shape);
  Tensor out = reuse_or_empty(in, {1, 2}, dt, shape);
  BroadcastPlan plan = plan_broadcast({&c.shape(), &a.shape(), &b.shape()}, shape);
  const int64_t sc = plan.st[0].back(), sa = plan.st[1].back(), sb = plan.st[2].back();
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const uint8_t* pc = c.data<uint8_t>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    for_each_run<3>(plan, 1, [&](const int64_t* offs, int64_t pos, int64_t len) {
      const uint8_t* cc = pc + offs[0];
      const T* aa = pa + offs[1];
      const T* bb = pb + offs[2];
      T* oo = po + pos;
      if (sc && sa && sb) {
        select_vvv<T>(cc, aa, bb, oo, len);
      } else if (sc && sa) {
        select_vvs<T>(cc, aa, bb[0], oo, len);
      } else if (sc && sb) {
        select_vsv<T>(cc, aa[0], bb, oo, len);
      } else {
        for (int64_t i = 0; i < len; ++i) oo[i] = cc[i * sc] ? aa[i * sa] : bb[i * sb];
      }
    });
  });
  return out;
}

// ---- cast -----------------------------------------------------------------------------------

// One element as sem::Tensor::cast converts it (through double, except the exact integer paths).
template <class From, class To>
SPORA_INLINE To convert(From v) {
  if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, int32_t>)
    return static_cast<int32_t>(v);
  else if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, uint8_t>)
    return v != 0;
  else if constexpr (std::is_same_v<From, int32_t> && std::is_same_v<To, int64_t>)
    return v;
  else
    return from_double<To>(to_double<From>(v));
}

template <class From, class To>
struct Convert {
  static SPORA_INLINE To f(From v) { return convert<From, To>(v); }
};

}  // namespace

Tensor cast_tensor(const Tensor& x, DType to) {
  if (x.dtype() == to) return x;
  // f16/bf16 (half.h): f32 <-> low vectorised; from low through its exact f32; to low from
  // the exact double of the element, rounded once (semantics/half.h), as the reference does.
  if (is_low(x.dtype())) {
    Tensor wide = upcast(x);
    return to == DType::f32 ? wide : cast_tensor(wide, to);
  }
  if (is_low(to)) {
    if (x.dtype() == DType::f32) return downcast(x, to);
    Tensor out = Tensor::empty(to, x.shape());
    uint16_t* y = out.data<uint16_t>();
    const int64_t n = x.numel();
    dispatch(x.dtype(), [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      const From* p = x.data<From>();
      parallel_for(n, 4, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const double v = to_double<From>(p[i]);
          y[i] = to == DType::f16 ? half::f64_to_f16(v) : half::f64_to_bf16(v);
        }
      });
    });
    return out;
  }
  Tensor out = Tensor::empty(to, x.shape());
  dispatch(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      unary_apply<Convert<From, To>, From, To>(x.data<From>(), out.data<To>(), x.numel(), 2);
    });
  });
  return out;
}

namespace {

Value cast_kernel(const RefKernel&, const std::vector<Value>& in, const Attrs& attrs) {
  return cast_tensor(in.at(0).tensor, attrs.get_dtype("dtype"));
}

}  // namespace

void register_compare() {
  set_kernel("eq", compare_kernel<Eq>(false));
  set_kernel("ne", compare_kernel<Ne>(false));
  set_kernel("lt", compare_kernel<Lt>(false));
  set_kernel("le", compare_kernel<Le>(false));
  set_kernel("gt", compare_kernel<Gt>(false));
  set_kernel("ge", compare_kernel<Ge>(false));
  set_kernel("logical_and", compare_kernel<And>(true));
  set_kernel("logical_or", compare_kernel<Or>(true));
  set_kernel("logical_not", logical_not_kernel);
  set_kernel("where", where_kernel);
  set_kernel("cast", cast_kernel);
}

}  // namespace spora::cpu
