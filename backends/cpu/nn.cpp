// CPU kernels of the nn family (ops/nn.cpp): softmax, log_softmax, logsumexp, cross_entropy,
// layer_norm, layer_norm_grad, batch_norm, dropout. f32 and f64 (anything else goes to the
// reference kernel).
//
// Numerics follow the reference: the maximum is subtracted first (so logits of 1e4 stay
// finite), sums and statistics accumulate in double and the result is rounded once. f32
// exponentials use the vectorised vm::exp (f32 results within a few ulp of the reference);
// f64 uses libm and sums in the reference's order (the reference's values, or within an ulp).
// dropout reproduces the reference's mask exactly (semantics/rng.h).
//
// Layout: an axis splits a tensor into [outer, len, inner]; the common inner == 1 case walks
// contiguous rows, inner > 1 vectorises across the inner axis. Rows run in parallel.
#include <cmath>
#include <limits>

#include "backends/cpu/kernels.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/vmath.h"
#include "semantics/rng.h"

namespace spora::cpu {

namespace {

bool is_f32_or_f64(const Tensor& t) { return t.dtype() == DType::f32 || t.dtype() == DType::f64; }

double shift_of(double m) { return std::isfinite(m) ? m : 0.0; }

struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    len = s[axis];
    for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  }
};

// ---- row primitives (contiguous rows of n elements) -----------------------------------------

// The maximum ignoring nan (the reference's std::max from -inf), as double.
SPORA_MULTIVERSION((template <class T>), row_max, (<T>), (const T* x, int64_t n, double* out),
                   (x, n, out), {
                     T m = -std::numeric_limits<T>::infinity();
                     _Pragma("omp simd reduction(max : m)") for (int64_t i = 0; i < n; ++i) m =
                         x[i] > m ? x[i] : m;
                     *out = static_cast<double>(m);
                   })

// e[i] = exp(x[i] - shift) (e may be null) and the sum of them in double.
SPORA_MULTIVERSION((), row_exp_f32, (),
                   (const float* x, int64_t n, float shift, float* e, double* sum),
                   (x, n, shift, e, sum), {
                     double s = 0;
                     if (e) {
                       _Pragma("omp simd reduction(+ : s)") for (int64_t i = 0; i < n; ++i) {
                         float v = vm::exp(x[i] - shift);
                         e[i] = v;
                         s += static_cast<double>(v);
                       }
                     } else {
                       _Pragma("omp simd reduction(+ : s)") for (int64_t i = 0; i < n; ++i) s +=
                           static_cast<double>(vm::exp(x[i] - shift));
                     }
                     *sum = s;
                   })

// The sum of exp(x - shift) over a row (and the exponentials into e when given).
template <class T>
double row_exp_sum(const T* x, int64_t n, double shift, T* e) {
  if constexpr (std::is_same_v<T, float>) {
    double s;
    row_exp_f32(x, n, static_cast<float>(shift), e, &s);
    return s;
  } else {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = std::exp(x[i] - shift);
      if (e) e[i] = v;
      s += v;
    }
    return s;
  }
}

struct ExpF {
  static SPORA_INLINE float f(float x) { return vm::exp(x); }
};

// Rows [0, rows) of len elements: shift[r] (the row's finite maximum, else 0) and sum[r], the
// sum of exp(x - shift) in double; e (null, or rows x len, may be x itself) receives the
// exponentials. Rows shorter than a vector (10 classes) are done together: x - shift row by
// row, then one vectorised exp over the whole block.
template <class T>
void exp_rows(const T* x, T* e, int64_t rows, int64_t len, double* shift, double* sum) {
  if (std::is_same_v<T, double> || len >= 32) {
    for (int64_t r = 0; r < rows; ++r) {
      double m;
      row_max<T>(x + r * len, len, &m);
      shift[r] = shift_of(m);
      sum[r] = row_exp_sum<T>(x + r * len, len, shift[r], e ? e + r * len : nullptr);
    }
    return;
  }
  std::vector<T> scratch(e ? 0 : static_cast<size_t>(rows * len));
  T* z = e ? e : scratch.data();
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * len;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < len; ++i) m = xr[i] > m ? xr[i] : m;
    shift[r] = shift_of(static_cast<double>(m));
    const T s = static_cast<T>(shift[r]);
    for (int64_t i = 0; i < len; ++i) z[r * len + i] = xr[i] - s;
  }
  if constexpr (std::is_same_v<T, float>) unary_apply<ExpF, float, float>(z, z, rows * len, 0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t i = 0; i < len; ++i) s += static_cast<double>(z[r * len + i]);
    sum[r] = s;
  }
}

// Sums of a row in double: f32 vectorised (reordered; the f32 result rounds the difference
// away), f64 in the reference's order (so f64 statistics are the reference's bit for bit).
SPORA_MULTIVERSION((template <class T>), row_sum, (<T>), (const T* x, int64_t n, double* out),
                   (x, n, out), {
                     double s = 0;
                     if constexpr (std::is_same_v<T, float>) {
                       _Pragma("omp simd reduction(+ : s)") for (int64_t i = 0; i < n; ++i) s +=
                           static_cast<double>(x[i]);
                     } else {
                       for (int64_t i = 0; i < n; ++i) s += x[i];
                     }
                     *out = s;
                   })

SPORA_MULTIVERSION((template <class T>), row_sq_dev, (<T>),
                   (const T* x, int64_t n, double mean, double* out), (x, n, mean, out), {
                     double s = 0;
                     if constexpr (std::is_same_v<T, float>) {
                       _Pragma("omp simd reduction(+ : s)") for (int64_t i = 0; i < n; ++i) {
                         double d = static_cast<double>(x[i]) - mean;
                         s += d * d;
                       }
                     } else {
                       for (int64_t i = 0; i < n; ++i) {
                         double d = x[i] - mean;
                         s += d * d;
                       }
                     }
                     *out = s;
                   })

// ---- softmax / log_softmax ------------------------------------------------------------------

template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t len, bool log) {
  parallel_for(
      rows, len * 12,
      [&](int64_t b, int64_t e) {
        constexpr int64_t kChunk = 256;  // rows per exp_rows call
        std::vector<double> shift(kChunk), sum(kChunk);
        for (int64_t r0 = b; r0 < e; r0 += kChunk) {
          const int64_t cnt = std::min(kChunk, e - r0);
          // softmax: the exponentials go straight into y (x is read first, even when y is x)
          exp_rows<T>(x + r0 * len, log ? nullptr : y + r0 * len, cnt, len, shift.data(),
                      sum.data());
          for (int64_t r = 0; r < cnt; ++r) {
            const T* xr = x + (r0 + r) * len;
            T* yr = y + (r0 + r) * len;
            if (log) {
              const double lse = std::log(sum[r]) + shift[r];
              for (int64_t i = 0; i < len; ++i)
                yr[i] = static_cast<T>(static_cast<double>(xr[i]) - lse);
            } else if constexpr (std::is_same_v<T, float>) {
              const float inv = static_cast<float>(1.0 / sum[r]);
              for (int64_t i = 0; i < len; ++i) yr[i] *= inv;
            } else {
              for (int64_t i = 0; i < len; ++i) yr[i] /= sum[r];
            }
          }
        }
      },
      1);
}

// Along a middle axis: per outer block [len, inner], vectorised along inner.
template <class T>
void softmax_strided(const T* x, T* y, const AxisView& v, bool log) {
  parallel_tasks(v.outer, v.len * v.inner * 12, [&](int64_t o) {
    const T* xo = x + o * v.len * v.inner;
    T* yo = y + o * v.len * v.inner;
    std::vector<double> m(v.inner, -std::numeric_limits<double>::infinity()), sum(v.inner, 0.0);
    for (int64_t k = 0; k < v.len; ++k)
      for (int64_t i = 0; i < v.inner; ++i) {
        double a = static_cast<double>(xo[k * v.inner + i]);
        m[i] = a > m[i] ? a : m[i];
      }
    for (int64_t i = 0; i < v.inner; ++i) m[i] = shift_of(m[i]);
    for (int64_t k = 0; k < v.len; ++k)
      for (int64_t i = 0; i < v.inner; ++i) {
        double z = static_cast<double>(xo[k * v.inner + i]) - m[i];
        double e = std::is_same_v<T, float> ? vm::exp(static_cast<float>(z)) : std::exp(z);
        sum[i] += e;
        if (!log) yo[k * v.inner + i] = static_cast<T>(e);
      }
    for (int64_t i = 0; i < v.inner; ++i) sum[i] = log ? std::log(sum[i]) + m[i] : 1.0 / sum[i];
    for (int64_t k = 0; k < v.len; ++k)
      for (int64_t i = 0; i < v.inner; ++i) {
        int64_t at = k * v.inner + i;
        yo[at] = log ? static_cast<T>(static_cast<double>(xo[at]) - sum[i])
                     : static_cast<T>(static_cast<double>(yo[at]) * sum[i]);
      }
  });
}

CpuKernel softmax_kernel(bool log) {
  return [log](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    int64_t axis = attrs.get_int("axis"), r = x.rank();
    int64_t a = axis < 0 ? axis + r : axis;
    if (!is_f32_or_f64(x) || r == 0 || a < 0 || a >= r) return ref(in, attrs);
    AxisView v(x.shape(), a);
    Tensor out = reuse_or_empty(in, {0}, x.dtype(), x.shape());
    if (x.numel() == 0) return out;
    dispatch(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        if (v.inner == 1)
          softmax_rows<T>(x.data<T>(), out.data<T>(), v.outer, v.len, log);
        else
          softmax_strided<T>(x.data<T>(), out.data<T>(), v, log);
      }
    });
    return out;
  };
}

// ---- logsumexp ------------------------------------------------------------------------------

Value logsumexp_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  if (!is_f32_or_f64(x)) return ref(in, attrs);
  const int64_t r = x.rank();
  std::vector<int64_t> axes;
  const sem::Attr* a = attrs.find("axis");
  if (!a || std::holds_alternative<std::monostate>(*a)) {
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  } else {
    std::vector<int64_t> given = std::holds_alternative<int64_t>(*a)
                                     ? std::vector<int64_t>{std::get<int64_t>(*a)}
                                     : attrs.get_ints("axis");
    for (int64_t ax : given) {
      int64_t n = ax < 0 ? ax + r : ax;
      if (n < 0 || n >= r) return ref(in, attrs);
      axes.push_back(n);
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return ref(in, attrs);
  }
  // Kept axes first, reduced axes last (a copy when they are not already last): rows.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < r; ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) perm.push_back(d);
  perm.insert(perm.end(), axes.begin(), axes.end());
  int64_t len = 1;
  for (int64_t d : axes) len *= x.shape()[d];
  Tensor rows = x;
  bool identity = true;
  for (int64_t i = 0; i < r; ++i) identity = identity && perm[i] == i;
  if (!identity) rows = permute_copy(x, perm);
  // The result's type is the row's (its shape rule).
  static const sem::ShapeRule infer = row_shape_rule("logsumexp");
  const sem::TypeP type = row_result(infer, in, attrs);
  if (!type || !type->is_tensor()) return ref(in, attrs);
  Tensor out = Tensor::empty(type->dtype, type->shape);
  const int64_t n = out.numel();
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = rows.data<T>();
      T* po = out.data<T>();
      parallel_for(
          n, len * 10,
          [&](int64_t b, int64_t e) {
            constexpr int64_t kChunk = 256;
            std::vector<double> shift(kChunk), sum(kChunk);
            for (int64_t r0 = b; r0 < e; r0 += kChunk) {
              const int64_t cnt = std::min(kChunk, e - r0);
              exp_rows<T>(px + r0 * len, nullptr, cnt, len, shift.data(), sum.data());
              for (int64_t r = 0; r < cnt; ++r)
                po[r0 + r] = static_cast<T>(std::log(sum[r]) + shift[r]);
            }
          },
          1);
    }
  });
  return out;
}

// ---- cross_entropy --------------------------------------------------------------------------

Value cross_entropy_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& labels = in.at(1).tensor;
  if (!is_f32_or_f64(x) || x.rank() == 0) return ref(in, attrs);
  const std::string red = attrs.has("reduction") ? attrs.get_string("reduction") : "mean";
  if (red != "mean" && red != "sum" && red != "none") return ref(in, attrs);
  const int64_t axis = x.rank() >= 2 ? 1 : 0;
  Shape label_shape = x.shape();
  label_shape.erase(label_shape.begin() + axis);
  const bool soft = is_float(labels.dtype());
  bool ok = soft ? labels.dtype() == x.dtype() && labels.shape() == x.shape()
                 : (labels.dtype() == DType::i32 || labels.dtype() == DType::i64) &&
                       labels.shape() == label_shape;
  if (!ok) return ref(in, attrs);
  AxisView v(x.shape(), axis);
  const int64_t n = v.outer * v.inner;
  // Class indices, checked in order before any work (the reference's first error).
  std::vector<int64_t> cls;
  if (!soft) {
    cls.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      int64_t c =
          labels.dtype() == DType::i64 ? labels.data<int64_t>()[j] : labels.data<int32_t>()[j];
      if (c < 0 || c >= v.len)
        user_error("cross_entropy label " + std::to_string(c) + " is out of range for " +
                   std::to_string(v.len) + " classes");
      cls[j] = c;
    }
  }
  std::vector<double> loss(static_cast<size_t>(n));
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      const T* pl = soft ? labels.data<T>() : nullptr;
      parallel_for(
          n, v.len * 12,
          [&](int64_t b, int64_t e) {
            constexpr int64_t kChunk = 256;
            std::vector<double> shift(kChunk), sum(kChunk);
            std::vector<T> col(v.inner == 1 ? 0 : static_cast<size_t>(v.len));
            for (int64_t j0 = b; j0 < e; j0 += kChunk) {
              const int64_t cnt = std::min(kChunk, e - j0);
              if (v.inner == 1) {  // label j's classes are row j
                exp_rows<T>(px + j0 * v.len, nullptr, cnt, v.len, shift.data(), sum.data());
              } else {  // gather each label's strided classes
                for (int64_t r = 0; r < cnt; ++r) {
                  const int64_t j = j0 + r, o = j / v.inner, i = j % v.inner;
                  for (int64_t k = 0; k < v.len; ++k) col[k] = px[(o * v.len + k) * v.inner + i];
                  exp_rows<T>(col.data(), nullptr, 1, v.len, &shift[r], &sum[r]);
                }
              }
              for (int64_t r = 0; r < cnt; ++r) {
                const int64_t j = j0 + r, o = j / v.inner, i = j % v.inner;
                const T* row = px + o * v.len * v.inner + i;  // class k at row[k * inner]
                const double lse = std::log(sum[r]) + shift[r];
                double l = 0;
                if (soft) {
                  const T* lrow = pl + o * v.len * v.inner + i;
                  for (int64_t k = 0; k < v.len; ++k)
                    l -= static_cast<double>(lrow[k * v.inner]) *
                         (static_cast<double>(row[k * v.inner]) - lse);
                } else {
                  l = lse - static_cast<double>(row[cls[j] * v.inner]);
                }
                loss[j] = l;
              }
            }
          },
          1);
    }
  });
  if (red == "none") {
    static const sem::ShapeRule infer = row_shape_rule("cross_entropy");  // the row's result type
    const sem::TypeP type = row_result(infer, in, attrs);
    if (!type || !type->is_tensor()) return ref(in, attrs);
    Tensor out = Tensor::empty(type->dtype, type->shape);
    for (int64_t j = 0; j < n; ++j) out.set(j, loss[j]);
    return out;
  }
  double total = 0;
  for (int64_t j = 0; j < n; ++j) total += loss[j];
  return Tensor::scalar(x.dtype(), red == "sum" ? total : total / static_cast<double>(n));
}

// ---- layer_norm -----------------------------------------------------------------------------

// y = (x - mean) rstd [* gamma] [+ beta], in double, rounded once.
SPORA_MULTIVERSION((template <class T>), normalise_row, (<T>),
                   (const T* x, T* y, int64_t n, double mean, double rstd, const T* g, const T* b),
                   (x, y, n, mean, rstd, g, b), {
                     if (g && b) {
                       _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(
                           (static_cast<double>(x[i]) - mean) * rstd * static_cast<double>(g[i]) +
                           static_cast<double>(b[i]));
                     } else if (g) {
                       _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(
                           (static_cast<double>(x[i]) - mean) * rstd * static_cast<double>(g[i]));
                     } else if (b) {
                       _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(
                           (static_cast<double>(x[i]) - mean) * rstd + static_cast<double>(b[i]));
                     } else {
                       _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) y[i] =
                           static_cast<T>((static_cast<double>(x[i]) - mean) * rstd);
                     }
                   })

// A row's mean and 1 / sqrt(biased variance + eps), in double (layer_norm and its gradient).
template <class T>
void row_mean_rstd(const T* x, int64_t n, double eps, double* mean, double* rstd) {
  double var;
  row_sum<T>(x, n, mean);
  *mean /= static_cast<double>(n);
  row_sq_dev<T>(x, n, *mean, &var);
  var /= static_cast<double>(n);
  *rstd = 1.0 / std::sqrt(var + eps);
}

bool has_input(const std::vector<Value>& in, size_t i) {
  return i < in.size() && in[i].kind != Value::Kind::None;
}

Value layer_norm_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const int64_t nd = attrs.get_int("ndim");
  if (!is_f32_or_f64(x) || nd < 1 || nd > x.rank()) return ref(in, attrs);
  Shape norm(x.shape().end() - nd, x.shape().end());
  const bool has_g = has_input(in, 1), has_b = has_input(in, 2);
  for (size_t i : {size_t{1}, size_t{2}})
    if (has_input(in, i) && (in[i].tensor.dtype() != x.dtype() || in[i].tensor.shape() != norm))
      return ref(in, attrs);
  const double eps = attrs.get_float("eps");
  const int64_t inner = numel_of(norm), outer = inner ? x.numel() / inner : 0;
  Tensor out = reuse_or_empty(in, {0}, x.dtype(), x.shape());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      T* py = out.data<T>();
      const T* g = has_g ? in[1].tensor.data<T>() : nullptr;
      const T* b = has_b ? in[2].tensor.data<T>() : nullptr;
      parallel_for(
          outer, inner * 6,
          [&](int64_t lo, int64_t hi) {
            for (int64_t o = lo; o < hi; ++o) {
              const T* xr = px + o * inner;
              double mean, rstd;
              row_mean_rstd<T>(xr, inner, eps, &mean, &rstd);
              normalise_row<T>(xr, py + o * inner, inner, mean, rstd, g, b);
            }
          },
          1);
    }
  });
  return out;
}

// ---- layer_norm_grad ------------------------------------------------------------------------

// Sums of g and of g (x - mean) over a row, in double.
SPORA_MULTIVERSION((template <class T>), row_grad_sums, (<T>),
                   (const T* x, const T* g, int64_t n, double mean, double* sg, double* sgx),
                   (x, g, n, mean, sg, sgx), {
                     double a = 0, c = 0;
                     _Pragma("omp simd reduction(+ : a, c)") for (int64_t i = 0; i < n; ++i) {
                       const double gi = static_cast<double>(g[i]);
                       a += gi;
                       c += gi * (static_cast<double>(x[i]) - mean);
                     }
                     *sg = a;
                     *sgx = c;
                   })

// dx = rstd (g - mg) - (x - mean) rstd^2 mgx, in double, rounded once.
SPORA_MULTIVERSION((template <class T>), grad_row, (<T>),
                   (const T* x, const T* g, T* dx, int64_t n, double mean, double rstd, double mg,
                    double mgx),
                   (x, g, dx, n, mean, rstd, mg, mgx), {
                     const double k = rstd * rstd * mgx;
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) dx[i] =
                         static_cast<T>(rstd * (static_cast<double>(g[i]) - mg) -
                                        (static_cast<double>(x[i]) - mean) * k);
                   })

// Two passes over x for its statistics, one over x and g for the two sums, one to write dx.
Value layer_norm_grad_kernel(const RefKernel& ref, const std::vector<Value>& in,
                             const Attrs& attrs) {
  const Tensor &x = in.at(0).tensor, &g = in.at(1).tensor;
  const int64_t nd = attrs.get_int("ndim");
  if (!is_f32_or_f64(x) || g.dtype() != x.dtype() || g.shape() != x.shape() || nd < 1 ||
      nd > x.rank())
    return ref(in, attrs);
  const double eps = attrs.get_float("eps");
  int64_t inner = 1;
  for (int64_t d = x.rank() - nd; d < x.rank(); ++d) inner *= x.shape()[d];
  const int64_t outer = inner ? x.numel() / inner : 0;
  const double count = static_cast<double>(inner);
  Tensor out = reuse_or_empty(in, {1}, x.dtype(), x.shape());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      const T* pg = g.data<T>();
      T* pd = out.data<T>();
      parallel_for(
          outer, inner * 10,
          [&](int64_t lo, int64_t hi) {
            for (int64_t o = lo; o < hi; ++o) {
              const T* xr = px + o * inner;
              const T* gr = pg + o * inner;
              double mean, rstd, sg, sgx;
              row_mean_rstd<T>(xr, inner, eps, &mean, &rstd);
              row_grad_sums<T>(xr, gr, inner, mean, &sg, &sgx);
              // mean(g xhat) = rstd mean(g (x - mean)).
              grad_row<T>(xr, gr, pd + o * inner, inner, mean, rstd, sg / count,
                          rstd * sgx / count);
            }
          },
          1);
    }
  });
  return out;
}

// ---- batch_norm -----------------------------------------------------------------------------

Value batch_norm_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  if (!is_f32_or_f64(x) || x.rank() < 2 || in.size() < 5) return ref(in, attrs);
  const int64_t C = x.shape()[1];
  for (size_t i = 1; i < 5; ++i)
    if (!in[i].is_tensor() || in[i].tensor.dtype() != x.dtype() || in[i].tensor.shape() != Shape{C})
      return ref(in, attrs);
  const bool training = attrs.get_bool("training");
  const double momentum = attrs.get_float("momentum"), eps = attrs.get_float("eps");
  AxisView v(x.shape(), 1);
  const int64_t count = v.outer * v.inner;
  if (training && count <= 1) return ref(in, attrs);  // the reference's error
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  Tensor new_rm = Tensor::empty(x.dtype(), {C}), new_rv = Tensor::empty(x.dtype(), {C});
  std::vector<double> mean(C), rstd(C);
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      const T* rm = in[3].tensor.data<T>();
      const T* rv = in[4].tensor.data<T>();
      parallel_tasks(C, count * 2, [&](int64_t c) {
        double var;
        if (!training) {
          mean[c] = static_cast<double>(rm[c]);
          var = static_cast<double>(rv[c]);
        } else {
          // f64: one running sum in the reference's order (o, then i)
          double s = 0, ss = 0;
          for (int64_t o = 0; o < v.outer; ++o) {
            const T* row = px + (o * C + c) * v.inner;
            if constexpr (std::is_same_v<T, double>) {
              for (int64_t i = 0; i < v.inner; ++i) s += row[i];
            } else {
              double part;
              row_sum<T>(row, v.inner, &part);
              s += part;
            }
          }
          mean[c] = s / static_cast<double>(count);
          for (int64_t o = 0; o < v.outer; ++o) {
            const T* row = px + (o * C + c) * v.inner;
            if constexpr (std::is_same_v<T, double>) {
              for (int64_t i = 0; i < v.inner; ++i) {
                double d = row[i] - mean[c];
                ss += d * d;
              }
            } else {
              double part;
              row_sq_dev<T>(row, v.inner, mean[c], &part);
              ss += part;
            }
          }
          var = ss / static_cast<double>(count);
          new_rm.data<T>()[c] =
              static_cast<T>((1 - momentum) * static_cast<double>(rm[c]) + momentum * mean[c]);
          new_rv.data<T>()[c] = static_cast<T>((1 - momentum) * static_cast<double>(rv[c]) +
                                               momentum * ss / static_cast<double>(count - 1));
        }
        rstd[c] = 1.0 / std::sqrt(var + eps);
      });
      const T* g = in[1].tensor.data<T>();
      const T* b = in[2].tensor.data<T>();
      T* py = y.data<T>();
      parallel_for(
          v.outer * C, v.inner * 4,
          [&](int64_t lo, int64_t hi) {
            for (int64_t oc = lo; oc < hi; ++oc) {
              int64_t c = oc % C;
              // (x - mean) rstd g + b, the reference's expression
              const double gr = rstd[c], gc = static_cast<double>(g[c]),
                           bc = static_cast<double>(b[c]);
              const T* xr = px + oc * v.inner;
              T* yr = py + oc * v.inner;
              for (int64_t i = 0; i < v.inner; ++i)
                yr[i] = static_cast<T>((static_cast<double>(xr[i]) - mean[c]) * gr * gc + bc);
            }
          },
          1);
    }
  });
  if (!training) return y;
  return Value::tuple({y, new_rm, new_rv});
}

// ---- dropout --------------------------------------------------------------------------------

SPORA_MULTIVERSION((template <class T>), dropout_run, (<T>),
                   (const T* x, T* y, int64_t begin, int64_t end, uint64_t key, double p,
                    double scale),
                   (x, y, begin, end, key, p, scale), {
                     _Pragma("omp simd") for (int64_t i = begin; i < end; ++i) {
                       // sem::rng::uniform01(seed, i) with the key splitmix64(seed) hoisted
                       uint64_t bits = sem::rng::finalize(key + (static_cast<uint64_t>(i) + 1) *
                                                                    sem::rng::kGamma);
                       double u = static_cast<double>(bits >> 11) * 0x1.0p-53;
                       y[i] = u >= p ? static_cast<T>(static_cast<double>(x[i]) * scale) : T(0);
                     }
                   })

Value dropout_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  if (!is_f32_or_f64(x)) return ref(in, attrs);
  const double p = attrs.get_float("p");
  if (!attrs.get_bool("training") || p == 0) return x;
  if (p >= 1) return Tensor::zeros(x.dtype(), x.shape());
  const uint64_t key = sem::rng::splitmix64(static_cast<uint64_t>(attrs.get_int("seed")));
  const double scale = 1.0 / (1.0 - p);
  Tensor out = reuse_or_empty(in, {0}, x.dtype(), x.shape());
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      T* py = out.data<T>();
      parallel_for(x.numel(), 8,
                   [&](int64_t b, int64_t e) { dropout_run<T>(px, py, b, e, key, p, scale); });
    }
  });
  return out;
}

}  // namespace

void register_nn() {
  set_kernel("softmax", softmax_kernel(false));
  set_kernel("log_softmax", softmax_kernel(true));
  set_kernel("logsumexp", logsumexp_kernel);
  set_kernel("cross_entropy", cross_entropy_kernel);
  set_kernel("layer_norm", layer_norm_kernel);
  set_kernel("layer_norm_grad", layer_norm_grad_kernel);
  set_kernel("batch_norm", batch_norm_kernel);
  set_kernel("dropout", dropout_kernel);
}

}  // namespace spora::cpu
