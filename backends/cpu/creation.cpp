// CPU kernels of the creation family (ops/creation.cpp): zeros ones full arange normal
// uniform. Exact: each element is the reference's double value converted the way
// sem::Tensor::set converts it, and the random ones reproduce semantics/rng.h element by element
// (element i depends only on (seed, i)), filled in parallel. f16/bf16 results and invalid
// attributes go to the reference kernel.
#include <cmath>

#include "backends/cpu/kernels.h"
#include "semantics/rng.h"

namespace spora::cpu {

namespace {

DType dtype_attr(const Attrs& attrs, DType fallback) {
  return attrs.has("dtype") ? attrs.get_dtype("dtype") : fallback;
}

bool plain(DType dt) { return dt != DType::f16 && dt != DType::bf16; }

// The shape attribute, or false when it has a negative size.
bool shape_attr(const Attrs& attrs, Shape& s) {
  s = attrs.has("shape") ? attrs.get_ints("shape") : Shape{};
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}

// out[i] = f(i) (a double, converted like Tensor::set) in parallel.
template <class F>
Tensor generate(DType dt, const Shape& shape, int64_t cost, F f) {
  Tensor out = Tensor::empty(dt, shape);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    parallel_for(out.numel(), cost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = f(i, Tag<T>{});
    });
  });
  return out;
}

CpuKernel fill_kernel(bool has_value, double fixed) {
  return [=](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    DType dt = dtype_attr(attrs, DType::f32);
    Shape shape;
    if (!plain(dt) || !shape_attr(attrs, shape)) return ref(in, attrs);
    const double v = has_value ? attrs.get_float("value") : fixed;
    Tensor out = Tensor::empty(dt, shape);
    dispatch(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const T x = from_double<T>(v);
      parallel_for(out.numel(), 1, [&](int64_t b, int64_t e) { std::fill(o + b, o + e, x); });
    });
    return out;
  };
}

Value arange_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  DType dt = dtype_attr(attrs, DType::i32);
  if (!plain(dt)) return ref(in, attrs);
  double start = attrs.get_float("start"), stop;
  if (attrs.is_none("stop")) {
    stop = start;
    start = 0;
  } else {
    stop = attrs.get_float("stop");
  }
  double step = attrs.has("step") ? attrs.get_float("step") : 1.0;
  if (step == 0) return ref(in, attrs);
  double n = std::ceil((stop - start) / step);
  if (!std::isfinite(n)) return ref(in, attrs);
  int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  return generate(dt, {count}, 2, [&](int64_t i, auto tag) {
    using T = typename decltype(tag)::type;
    return from_double<T>(start + static_cast<double>(i) * step);
  });
}

CpuKernel random_kernel(bool normal) {
  return [normal](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    DType dt = dtype_attr(attrs, DType::f32);
    Shape shape;
    if ((dt != DType::f32 && dt != DType::f64) || !shape_attr(attrs, shape)) return ref(in, attrs);
    const char* a = normal ? "mean" : "low";
    const char* b = normal ? "std" : "high";
    const double pa = attrs.has(a) ? attrs.get_float(a) : 0.0;
    const double pb = attrs.has(b) ? attrs.get_float(b) : 1.0;
    const uint64_t seed = static_cast<uint64_t>(attrs.has("seed") ? attrs.get_int("seed") : 0);
    return generate(dt, shape, normal ? 40 : 8, [&](int64_t i, auto tag) {
      using T = typename decltype(tag)::type;
      const uint64_t k = static_cast<uint64_t>(i);
      if constexpr (std::is_floating_point_v<T>) {
        if (normal) return static_cast<T>(pa + pb * sem::rng::normal01(seed, k));
        T v = static_cast<T>(pa + (pb - pa) * sem::rng::uniform01(seed, k));
        // rounding reached high: step back below it (the reference's rule)
        if (pb > pa && static_cast<double>(v) >= pb)
          v = std::nextafter(static_cast<T>(pb), static_cast<T>(pa));
        return v;
      } else {
        return T(0);  // unreachable: f32 / f64 only
      }
    });
  };
}

}  // namespace

void register_creation() {
  set_kernel("zeros", fill_kernel(false, 0.0));
  set_kernel("ones", fill_kernel(false, 1.0));
  set_kernel("full", fill_kernel(true, 0.0));
  set_kernel("arange", arange_kernel);
  set_kernel("normal", random_kernel(true));
  set_kernel("uniform", random_kernel(false));
}

}  // namespace spora::cpu
