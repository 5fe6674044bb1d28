// Helpers of the CPU kernel tests: call a primitive's reference kernel and its CPU kernel on
// the same inputs (attribute defaults filled in), random tensors with special values, and
// the comparison the backend promises (exact, or f32 within 1e-5 relative / 1e-6 absolute
// and f64 within 1e-12).
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu.h"
#include "backends/cpu/kernels.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::cpu::testing {

using sem::Attr;
using sem::Attrs;
using sem::Shape;
using sem::Tensor;
using sem::Value;

inline const sem::Primitive& prim(const std::string& name) {
  static bool once = [] {
    ops::register_all();
    register_kernels();
    // Split loops from 32K add-equivalents on: the tests' larger inputs (1e4-1e5 elements) run
    // the parallel paths, the many small ones stay on one thread.
    set_parallel_work(int64_t{1} << 15);
    set_load_adaptive(false);  // the parallel paths even on a busy machine
    return true;
  }();
  (void)once;
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw std::runtime_error("no primitive " + name);
  return *p;
}

inline Attrs A(std::vector<std::pair<std::string, Attr>> items) {
  Attrs a;
  for (auto& [n, v] : items) a.set(n, v);
  return a;
}

// Attributes in the primitive's parameter order with its defaults filled in.
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

inline Value ref_call(const std::string& name, const std::vector<Value>& in,
                      const Attrs& attrs = {}) {
  const sem::Primitive& p = prim(name);
  return p.eval(in, with_defaults(p, attrs));
}

// The CPU kernel on a copy of the inputs: every input tensor is shared with the caller, so
// the in-place reuse never applies (tests of the reuse call cpu_kernel directly).
inline Value cpu_call(const std::string& name, const std::vector<Value>& in,
                      const Attrs& attrs = {}) {
  const sem::Primitive& p = prim(name);
  const sem::RefKernel* k = p.facet<sem::RefKernel>(sem::kCpuKernelFacet);
  if (!k) throw std::runtime_error(name + " has no cpu kernel");
  std::vector<Value> copy = in;
  return (*k)(copy, with_defaults(p, attrs));
}

// The CPU kernel's result with a team of one thread (the team's must have the same bits).
inline Value cpu_call_one_thread(const std::string& name, const std::vector<Value>& in,
                                 const Attrs& attrs = {}) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Value one = cpu_call(name, in, attrs);
  omp_set_num_threads(saved);
  return one;
}

inline const sem::RefKernel& cpu_kernel(const std::string& name) {
  return *prim(name).facet<sem::RefKernel>(sem::kCpuKernelFacet);
}

// The UserError message of f ("" when it throws none).
template <class F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

// ---- random tensors -------------------------------------------------------------------------

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }

  // Floats uniform in [lo, hi); integers in [ilo, ihi]; bools fair coins.
  Tensor tensor(DType dt, Shape shape, double lo = -2, double hi = 2, int64_t ilo = -20,
                int64_t ihi = 20) {
    Tensor t = Tensor::empty(dt, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dt == DType::boolean)
        t.set(i, integer(0, 1));
      else if (dt == DType::i32 || dt == DType::i64)
        t.set(i, static_cast<double>(integer(ilo, ihi)));
      else
        t.set(i, uniform(lo, hi));
    }
    return t;
  }
  // Sprinkles special float values (nan, +-inf, +-0) over a float tensor.
  void specials(Tensor& t, int every = 7) {
    if (!is_float(t.dtype())) return;
    const double sp[] = {std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(), 0.0, -0.0};
    for (int64_t i = 0; i < t.numel(); i += every) t.set(i, sp[integer(0, 4)]);
  }
};

// ---- comparison -----------------------------------------------------------------------------

// exact: equal values (and zero signs); approx: f32 |d| <= 1e-6 + 1e-5 |want|, f64
// |d| <= 1e-12 (scale + |want|); scaled: both dtypes allow scale (GEMM-like sums, where scale
// is the sum of the magnitudes of the products): f32 also + 1e-6 scale.
enum class Tol { exact, approx, scaled };

inline bool same_bits_or_nan(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return a == b && std::signbit(a) == std::signbit(b);
}

// Checks got against want: same kind, dtype and shape; elements equal or close (Tol), nan
// matching nan.
inline ::testing::AssertionResult matches(const Value& want, const Value& got, Tol tol,
                                          double scale = 0) {
  if (want.kind != got.kind) return ::testing::AssertionFailure() << "kinds differ";
  if (want.kind == Value::Kind::Tuple) {
    if (want.items().size() != got.items().size())
      return ::testing::AssertionFailure() << "tuple sizes differ";
    for (size_t i = 0; i < want.items().size(); ++i) {
      auto r = matches(want.items()[i], got.items()[i], tol, scale);
      if (!r) return r << " (tuple element " << i << ")";
    }
    return ::testing::AssertionSuccess();
  }
  if (!want.is_tensor()) return ::testing::AssertionSuccess();
  const Tensor& w = want.tensor;
  const Tensor& g = got.tensor;
  if (w.dtype() != g.dtype() || w.shape() != g.shape())
    return ::testing::AssertionFailure()
           << "type " << g.type()->str() << ", want " << w.type()->str();
  for (int64_t i = 0; i < w.numel(); ++i) {
    double a = w.get(i), b = g.get(i);
    bool ok;
    if (tol == Tol::exact || !is_float(w.dtype()) || std::isnan(a) || std::isinf(a)) {
      ok =
          tol == Tol::exact ? same_bits_or_nan(a, b) : (a == b || (std::isnan(a) && std::isnan(b)));
    } else if (w.dtype() == DType::f64) {
      ok = std::abs(a - b) <= 1e-12 * (scale + std::abs(a)) + 1e-300;
    } else {
      ok = std::abs(a - b) <= 1e-6 + 1e-5 * std::abs(a) + (tol == Tol::scaled ? 1e-6 * scale : 0);
    }
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << " of " << w.type()->str() << ": got "
             << sem::format_float(b, false) << ", want " << sem::format_float(a, false);
  }
  return ::testing::AssertionSuccess();
}

// Runs both kernels; when the reference raises a user error the CPU kernel must raise the
// same one.
inline ::testing::AssertionResult agree(const std::string& name, const std::vector<Value>& in,
                                        const Attrs& attrs, Tol tol, double scale = 0) {
  Value want, got;
  std::string ref_err = user_error_of([&] { want = ref_call(name, in, attrs); });
  std::string cpu_err = user_error_of([&] { got = cpu_call(name, in, attrs); });
  if (!ref_err.empty() || !cpu_err.empty()) {
    if (ref_err == cpu_err) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << name << ": errors differ: reference '" << ref_err << "', cpu '" << cpu_err << "'";
  }
  auto r = matches(want, got, tol, scale);
  if (!r) {
    std::string shapes;
    for (const Value& v : in) shapes += v.type()->str() + " ";
    r << " [" << name << " on " << shapes << "]";
  }
  return r;
}

// The largest sum of |a_ik b_kj| of a product bounded by max|a| max|b| k (the scale of its
// rounding error, Tol::scaled for matmul).
inline double product_scale(const Tensor& a, const Tensor& b, int64_t k) {
  double ma = 0, mb = 0;
  for (int64_t i = 0; i < a.numel(); ++i) ma = std::max(ma, std::abs(a.get(i)));
  for (int64_t i = 0; i < b.numel(); ++i) mb = std::max(mb, std::abs(b.get(i)));
  return ma * mb * static_cast<double>(k);
}

inline double abs_sum(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::isfinite(t.get(i))) s += std::abs(t.get(i));
  return s;
}

inline Tensor vec_t(DType dt, Shape shape, std::vector<double> values) {
  Tensor t = Tensor::empty(dt, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

}  // namespace spora::cpu::testing
