// CPU kernels of the reduction family (ops/reduction.cpp): sum mean prod max min argmax argmin
// all any, over any set of axes.
//
// The input's axes are collapsed into alternating groups of kept and reduced axes (size-1
// axes dropped, neighbours of one kind merged). Two loop shapes cover every case:
//   A. the last group is reduced: each output element reduces contiguous runs of `inner`
//      elements (one run per combination of the other reduced groups);
//   B. the last group is kept: each output row accumulates whole input rows, vectorised
//      along the row (the bias-gradient shape, sum over axis 0); sums and products over many
//      rows at one stride take fixed blocks of 256 rows in parallel, added in block order.
// Float sums and products accumulate in double (integers in wrapping 64 bits), like the
// reference. Contiguous runs are summed in fixed blocks of 1024 elements whose partial sums
// are added in order, so the result does not depend on the number of threads (the one
// long-run case, a reduction of everything, sums its blocks in parallel). max/min/argmax/
// argmin are exact: nan wins (the first nan), ties keep the first element, so even the sign
// of a zero maximum is the reference's.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/kernels.h"

namespace spora::cpu {

namespace {

enum class Red { sum, mean, prod, max, min, argmax, argmin, all, any };

bool is_arg(Red op) { return op == Red::argmax || op == Red::argmin; }

// The reduced axes (sorted, unique), or false when the attribute is invalid (the reference
// kernel then reports the error).
bool parse_axes(Red op, const Attrs& attrs, int64_t rank, std::vector<int64_t>& axes) {
  axes.clear();
  const sem::Attr* a = attrs.find("axis");
  if (!a || std::holds_alternative<std::monostate>(*a)) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return true;
  }
  std::vector<int64_t> given;
  if (auto* one = std::get_if<int64_t>(a))
    given.push_back(*one);
  else if (auto* many = std::get_if<std::vector<int64_t>>(a); many && !is_arg(op))
    given = *many;
  else
    return false;
  for (int64_t ax : given) {
    int64_t n = ax < 0 ? ax + rank : ax;
    if (n < 0 || n >= rank) return false;
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  return std::adjacent_find(axes.begin(), axes.end()) == axes.end();
}

// ---- layout ---------------------------------------------------------------------------------

struct Layout {
  int64_t out_n = 1, count = 1;
  std::vector<int64_t> kdims, kst;  // kept groups, outer to inner, with their input strides
  std::vector<int64_t> rdims, rst;  // reduced groups
  bool inner_reduced = true;        // the last group of the input is reduced (shape A)
  int64_t inner = 1;                // the length of the last group (stride 1)
};

Layout layout_of(const Shape& s, const std::vector<int64_t>& axes) {
  Layout l;
  std::vector<int64_t> st = strides_of(s);
  int last_kind = -1;  // 0 kept, 1 reduced
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 1) continue;
    int kind = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i)) ? 1 : 0;
    auto& dims = kind ? l.rdims : l.kdims;
    auto& strides = kind ? l.rst : l.kst;
    if (kind == last_kind) {
      dims.back() *= s[i];
      strides.back() = st[i];
    } else {
      dims.push_back(s[i]);
      strides.push_back(st[i]);
    }
    last_kind = kind;
  }
  l.out_n = numel_of(l.kdims);
  l.count = numel_of(l.rdims);
  l.inner_reduced = last_kind != 0;
  if (last_kind == 1) {
    l.inner = l.rdims.back();
    l.rdims.pop_back();
    l.rst.pop_back();
  } else if (last_kind == 0) {
    l.inner = l.kdims.back();
  }
  return l;
}

// Walks the combinations of some groups (dims, strides) in row-major order, as offsets.
struct Odometer {
  const std::vector<int64_t>& dims;
  const std::vector<int64_t>& st;
  std::vector<int64_t> idx;
  int64_t offset = 0;
  Odometer(const std::vector<int64_t>& d, const std::vector<int64_t>& s)
      : dims(d), st(s), idx(d.size(), 0) {}
  void reset() {
    std::fill(idx.begin(), idx.end(), 0);
    offset = 0;
  }
  void next() {
    for (size_t k = dims.size(); k-- > 0;) {
      offset += st[k];
      if (++idx[k] < dims[k]) return;
      offset -= st[k] * dims[k];
      idx[k] = 0;
    }
  }
};

// The input offset of kept element j (groups dims/st, skipping the last `skip_last` groups).
int64_t offset_of(int64_t j, const std::vector<int64_t>& dims, const std::vector<int64_t>& st,
                  size_t skip_last) {
  int64_t off = 0;
  for (size_t k = dims.size() - skip_last; k-- > 0;) {
    off += (j % dims[k]) * st[k];
    j /= dims[k];
  }
  return off;
}

// ---- policies -------------------------------------------------------------------------------
//
// Acc identity(); Acc contig(x, n): the reduction of n contiguous elements; Acc merge(a, b):
// a earlier than b; void rows(acc, x, n): acc[i] = merge(acc[i], x[i]).

constexpr int64_t kBlock = 1024;

template <class T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <class T>
SPORA_INLINE SumAcc<T> widen(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<uint64_t>(static_cast<int64_t>(v));
}

// 32 independent accumulators (four AVX-512 registers of doubles: no add waits for the one
// before it), combined in a fixed order: the same sum on every instruction set.
SPORA_MULTIVERSION((template <class T>), sum_block, (<T>), (const T* x, int64_t n, SumAcc<T>* out),
                   (x, n, out), {
                     constexpr int64_t kLanes = 32;
                     SumAcc<T> acc[kLanes] = {};
                     int64_t i = 0;
                     for (; i + kLanes <= n; i += kLanes)
                       for (int64_t j = 0; j < kLanes; ++j) acc[j] += widen(x[i + j]);
                     for (int64_t j = 0; i < n; ++i, ++j) acc[j] += widen(x[i]);
                     for (int64_t w = kLanes / 2; w > 0; w /= 2)
                       for (int64_t j = 0; j < w; ++j) acc[j] += acc[j + w];
                     *out = acc[0];
                   })

SPORA_MULTIVERSION((template <class T>), prod_block, (<T>), (const T* x, int64_t n, SumAcc<T>* out),
                   (x, n, out), {
                     SumAcc<T> s = 1;
                     _Pragma("omp simd reduction(* : s)") for (int64_t i = 0; i < n; ++i) s *=
                         widen(x[i]);
                     *out = s;
                   })

SPORA_MULTIVERSION((template <class T>), sum_rows, (<T>), (SumAcc<T> * acc, const T* x, int64_t n),
                   (acc, x, n),
                   { _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) acc[i] += widen(x[i]); })

// acc[i] += x[r * ld + i] for r = 0, 1, ..., rows - 1 in that order (the order rows() gives
// each column), 32 columns at a time in registers: one pass over the rows per 32 columns instead
// of a load and a store of every accumulator per row (a bias's gradient, the column sums of
// [1024, 256]: benchmarks/bench_cpu_kernels SumColumns_*).
SPORA_MULTIVERSION((template <class T>), sum_strided_rows, (<T>),
                   (SumAcc<T> * acc, const T* x, int64_t ld, int64_t rows, int64_t n),
                   (acc, x, ld, rows, n), {
                     constexpr int64_t kW = 32;
                     int64_t i0 = 0;
                     for (; i0 + kW <= n; i0 += kW) {
                       SumAcc<T> a[kW];
                       for (int64_t i = 0; i < kW; ++i) a[i] = acc[i0 + i];
                       for (int64_t r = 0; r < rows; ++r) {
                         const T* row = x + r * ld + i0;
                         _Pragma("omp simd") for (int64_t i = 0; i < kW; ++i) a[i] += widen(row[i]);
                       }
                       for (int64_t i = 0; i < kW; ++i) acc[i0 + i] = a[i];
                     }
                     for (; i0 < n; ++i0)
                       for (int64_t r = 0; r < rows; ++r) acc[i0] += widen(x[r * ld + i0]);
                   })

SPORA_MULTIVERSION((template <class T>), prod_rows, (<T>), (SumAcc<T> * acc, const T* x, int64_t n),
                   (acc, x, n),
                   { _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) acc[i] *= widen(x[i]); })

template <class T, bool Prod>
struct SumPolicy {
  using Acc = SumAcc<T>;
  static Acc identity() { return Prod ? 1 : 0; }
  static Acc merge(Acc a, Acc b) { return Prod ? a * b : a + b; }
  static Acc contig(const T* x, int64_t n) {
    Acc s = identity();
    for (int64_t b = 0; b < n; b += kBlock) s = merge(s, block(x + b, std::min(kBlock, n - b)));
    return s;
  }
  static Acc block(const T* x, int64_t n) {
    Acc s;
    if constexpr (Prod)
      prod_block<T>(x, n, &s);
    else
      sum_block<T>(x, n, &s);
    return s;
  }
  static void rows(Acc* acc, const T* x, int64_t n) {
    if constexpr (Prod)
      prod_rows<T>(acc, x, n);
    else
      sum_rows<T>(acc, x, n);
  }
  // rows() over `count` rows ld apart.
  static void strided_rows(Acc* acc, const T* x, int64_t ld, int64_t count, int64_t n) {
    if constexpr (Prod)
      for (int64_t r = 0; r < count; ++r) prod_rows<T>(acc, x + r * ld, n);
    else
      sum_strided_rows<T>(acc, x, ld, count, n);
  }
};

SPORA_MULTIVERSION((template <class T, bool Max>), extreme_block, (<T, Max>),
                   (const T* x, int64_t n, T* m_out, bool* nan_out), (x, n, m_out, nan_out), {
                     T m = Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
                     if constexpr (std::is_floating_point_v<T>)
                       m = Max ? -std::numeric_limits<T>::infinity()
                               : std::numeric_limits<T>::infinity();
                     int nan = 0;
                     if constexpr (Max) {
                       _Pragma("omp simd reduction(max : m) reduction(| : nan)") for (int64_t i = 0;
                                                                                      i < n; ++i) {
                         m = x[i] > m ? x[i] : m;
                         nan |= x[i] != x[i];
                       }
                     } else {
                       _Pragma("omp simd reduction(min : m) reduction(| : nan)") for (int64_t i = 0;
                                                                                      i < n; ++i) {
                         m = x[i] < m ? x[i] : m;
                         nan |= x[i] != x[i];
                       }
                     }
                     *m_out = m;
                     *nan_out = nan != 0;
                   })

SPORA_MULTIVERSION((template <class T, bool Max>), extreme_rows, (<T, Max>),
                   (T * acc, const T* x, int64_t n), (acc, x, n), {
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) {
                       T a = acc[i], v = x[i];
                       T better = (Max ? v > a : v < a) ? v : a;
                       acc[i] = a != a ? a : (v != v ? v : better);
                     }
                   })

template <class T, bool Max>
struct ExtremePolicy {
  using Acc = T;
  static Acc identity() {
    if constexpr (std::is_floating_point_v<T>)
      return Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    return Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  // The reference's running extreme: a nan stays, a nan is taken, else strictly better.
  static Acc merge(Acc a, Acc b) {
    if (a != a) return a;
    if (b != b) return b;
    return (Max ? b > a : b < a) ? b : a;
  }
  static Acc contig(const T* x, int64_t n) {
    T m;
    bool nan;
    extreme_block<T, Max>(x, n, &m, &nan);
    if (nan) {  // the first nan itself
      for (int64_t i = 0; i < n; ++i)
        if (x[i] != x[i]) return x[i];
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (m == 0)  // the first zero, with its sign
        for (int64_t i = 0; i < n; ++i)
          if (x[i] == 0) return x[i];
    }
    return m;
  }
  static void rows(Acc* acc, const T* x, int64_t n) { extreme_rows<T, Max>(acc, x, n); }
};

template <class T, bool All>
struct BoolPolicy {
  using Acc = uint8_t;
  static Acc identity() { return All ? 1 : 0; }
  static Acc merge(Acc a, Acc b) { return All ? (a & b) : (a | b); }
  static Acc contig(const T* x, int64_t n) {
    Acc s = identity();
    for (int64_t i = 0; i < n; ++i) s = merge(s, x[i] != T(0));
    return s;
  }
  static void rows(Acc* acc, const T* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = merge(acc[i], x[i] != T(0));
  }
};

// ---- the two loop shapes --------------------------------------------------------------------

// Reduces x by policy P, handing each output's accumulator to finish(j, acc) (once per output
// j, from the thread that computed it).
template <class P, class T, class Finish>
void reduce_layout(const Layout& l, const T* x, Finish&& finish) {
  using Acc = typename P::Acc;
  if (l.inner_reduced) {
    if (l.out_n == 1 && l.rdims.empty() && l.inner >= 4 * kBlock) {
      // Everything in one contiguous run: block partials in parallel, added in order.
      int64_t nb = (l.inner + kBlock - 1) / kBlock;
      std::vector<Acc> part(static_cast<size_t>(nb));
      parallel_for(
          nb, kBlock,
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k)
              part[k] = P::contig(x + k * kBlock, std::min(kBlock, l.inner - k * kBlock));
          },
          1);
      Acc s = P::identity();
      for (Acc p : part) s = P::merge(s, p);
      finish(0, s);
      return;
    }
    parallel_for(
        l.out_n, l.count,
        [&](int64_t b, int64_t e) {
          Odometer od(l.rdims, l.rst);
          for (int64_t j = b; j < e; ++j) {
            const T* base = x + offset_of(j, l.kdims, l.kst, 0);
            od.reset();
            Acc s = P::identity();
            for (int64_t c = l.count / l.inner; c-- > 0; od.next())
              s = P::merge(s, P::contig(base + od.offset, l.inner));
            finish(j, s);
          }
        },
        1);
    return;
  }
  // Shape B: output rows of `inner` elements, in column chunks.
  constexpr int64_t kChunk = 512;
  if constexpr (requires { P::strided_rows(nullptr, x, 0, 0, 0); }) {
    // A sum over many rows at one stride (a bias's gradient) runs as fixed blocks of kRowBlock
    // rows in parallel from 64K elements on, the blocks' partial sums added in block order:
    // the same bits for any number of threads. W4's ten such sums, whose inputs fused kernels
    // on both cores had just written, took 0.79-0.92 ms per step this way against 1.31-1.41 on
    // one core (bench_workloads --profile=W4/ad, Intel Xeon).
    constexpr int64_t kRowBlock = 256;
    if (l.rdims.size() == 1 && l.count >= 2 * kRowBlock && l.count * l.inner >= (1 << 16)) {
      const int64_t rows = l.out_n / l.inner, nb = (l.count + kRowBlock - 1) / kRowBlock;
      std::vector<Acc> part(static_cast<size_t>(rows * nb * l.inner), P::identity());
      parallel_tasks(rows * nb, parallel_work(), [&](int64_t task) {
        const int64_t row = task / nb, r0 = task % nb * kRowBlock;
        const T* base = x + offset_of(row, l.kdims, l.kst, 1) + r0 * l.rst[0];
        P::strided_rows(part.data() + task * l.inner, base, l.rst[0],
                        std::min(kRowBlock, l.count - r0), l.inner);
      });
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t i = 0; i < l.inner; ++i) {
          const Acc* p = part.data() + row * nb * l.inner + i;
          Acc a = p[0];
          for (int64_t b = 1; b < nb; ++b) a = P::merge(a, p[b * l.inner]);
          finish(row * l.inner + i, a);
        }
      return;
    }
  }
  const int64_t rows = l.out_n / l.inner, chunks = (l.inner + kChunk - 1) / kChunk;
  parallel_tasks(rows * chunks, l.count * std::min(kChunk, l.inner), [&](int64_t task) {
    int64_t row = task / chunks, c0 = (task % chunks) * kChunk;
    int64_t n = std::min(kChunk, l.inner - c0);
    Acc a[kChunk];
    std::fill(a, a + n, P::identity());
    const T* base = x + offset_of(row, l.kdims, l.kst, 1) + c0;
    if constexpr (requires { P::strided_rows(a, base, 0, 0, 0); }) {
      if (l.rdims.size() == 1) {  // one reduced group: rows at a fixed stride
        P::strided_rows(a, base, l.rst[0], l.count, n);
        for (int64_t i = 0; i < n; ++i) finish(row * l.inner + c0 + i, a[i]);
        return;
      }
    }
    Odometer od(l.rdims, l.rst);
    for (int64_t c = l.count; c-- > 0; od.next()) P::rows(a, base + od.offset, n);
    for (int64_t i = 0; i < n; ++i) finish(row * l.inner + c0 + i, a[i]);
  });
}

// ---- argmax / argmin ------------------------------------------------------------------------

// The index of the first extreme of n elements at stride 1 (the first nan if there is one).
template <class T, bool Max>
int64_t arg_contig(const T* x, int64_t n) {
  T m = ExtremePolicy<T, Max>::contig(x, n);
  for (int64_t i = 0; i < n; ++i)
    if (x[i] == m || (m != m && x[i] != x[i])) return i;
  return 0;
}

template <class T, bool Max>
void arg_kernel(const Tensor& x, int64_t axis, bool flat, int32_t* out) {
  const T* px = x.data<T>();
  if (flat) {
    out[0] = static_cast<int32_t>(arg_contig<T, Max>(px, x.numel()));
    return;
  }
  int64_t outer = 1, len = x.shape()[axis], inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  if (inner == 1) {
    parallel_for(
        outer, len,
        [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o)
            out[o] = static_cast<int32_t>(arg_contig<T, Max>(px + o * len, len));
        },
        1);
    return;
  }
  // Along a middle axis: running best and index, vectorised along the inner axis.
  parallel_tasks(outer, len * inner, [&](int64_t o) {
    std::vector<T> best(px + o * len * inner, px + o * len * inner + inner);
    int32_t* where = out + o * inner;
    std::fill(where, where + inner, 0);
    for (int64_t k = 1; k < len; ++k) {
      const T* row = px + (o * len + k) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        T a = best[i], v = row[i];
        bool take = a == a && (v != v || (Max ? v > a : v < a));
        best[i] = take ? v : a;
        where[i] = take ? static_cast<int32_t>(k) : where[i];
      }
    }
  });
}

// ---- the kernel -----------------------------------------------------------------------------

template <class T>
void reduce_typed(Red op, const Tensor& x, const std::vector<int64_t>& axes, bool flat,
                  Tensor& out) {
  const int64_t on = out.numel();
  if (is_arg(op)) {
    if (op == Red::argmax)
      arg_kernel<T, true>(x, flat ? 0 : axes.at(0), flat, out.data<int32_t>());
    else
      arg_kernel<T, false>(x, flat ? 0 : axes.at(0), flat, out.data<int32_t>());
    return;
  }
  Layout l = layout_of(x.shape(), axes);
  if (x.numel() == 0) {  // nothing to reduce (max and min of empty axes were rejected)
    l.kdims.clear();
    l.out_n = on;
    l.count = 0;
  }
  auto run = [&](auto policy, auto finish) {
    using P = decltype(policy);
    if (x.numel() > 0) {
      reduce_layout<P, T>(l, x.data<T>(), finish);
      return;
    }
    parallel_for(on, 2, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) finish(j, P::identity());
    });
  };
  const int64_t count = on ? x.numel() / on : 0;
  switch (op) {
    case Red::sum:
    case Red::prod:
    case Red::mean: {
      auto finish = [&](int64_t j, SumAcc<T> a) {
        if constexpr (std::is_floating_point_v<T>) {
          double v = op == Red::mean ? a / static_cast<double>(count) : a;
          out.data<T>()[j] = static_cast<T>(v);
        } else {
          int64_t v = static_cast<int64_t>(a);
          if (op == Red::mean)
            out.data<float>()[j] =
                static_cast<float>(static_cast<double>(v) / static_cast<double>(count));
          else if (out.dtype() == DType::i64)
            out.data<int64_t>()[j] = v;
          else
            out.data<int32_t>()[j] = static_cast<int32_t>(v);
        }
      };
      if (op == Red::prod)
        run(SumPolicy<T, true>{}, finish);
      else
        run(SumPolicy<T, false>{}, finish);
      return;
    }
    case Red::max:
    case Red::min: {
      auto finish = [&](int64_t j, T a) { out.data<T>()[j] = a; };
      if (op == Red::max)
        run(ExtremePolicy<T, true>{}, finish);
      else
        run(ExtremePolicy<T, false>{}, finish);
      return;
    }
    default: {
      auto finish = [&](int64_t j, uint8_t a) { out.data<uint8_t>()[j] = a; };
      if (op == Red::all)
        run(BoolPolicy<T, true>{}, finish);
      else
        run(BoolPolicy<T, false>{}, finish);
      return;
    }
  }
}

// The result type is the row's (its shape rule: dtype and kept axes; the cases it rejects, such
// as empty max/min/arg axes, go to the reference kernel, which reports them).
CpuKernel reduction_kernel(Red op, const std::string& name) {
  return [op, infer = row_shape_rule(name)](const RefKernel& ref, const std::vector<Value>& in,
                                            const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    std::vector<int64_t> axes;
    if (x.dtype() == DType::f16 || x.dtype() == DType::bf16 ||
        !parse_axes(op, attrs, x.rank(), axes))
      return ref(in, attrs);
    const sem::TypeP type = row_result(infer, in, attrs);
    if (!type || !type->is_tensor()) return ref(in, attrs);
    Tensor out = Tensor::empty(type->dtype, type->shape);
    bool flat = is_arg(op) && attrs.is_none("axis");
    dispatch(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      reduce_typed<T>(op, x, axes, flat, out);
    });
    return out;
  };
}

}  // namespace

void register_reduction() {
  set_kernel("sum", reduction_kernel(Red::sum, "sum"));
  set_kernel("mean", reduction_kernel(Red::mean, "mean"));
  set_kernel("prod", reduction_kernel(Red::prod, "prod"));
  set_kernel("max", reduction_kernel(Red::max, "max"));
  set_kernel("min", reduction_kernel(Red::min, "min"));
  set_kernel("argmax", reduction_kernel(Red::argmax, "argmax"));
  set_kernel("argmin", reduction_kernel(Red::argmin, "argmin"));
  set_kernel("all", reduction_kernel(Red::all, "all"));
  set_kernel("any", reduction_kernel(Red::any, "any"));
}

}  // namespace spora::cpu
