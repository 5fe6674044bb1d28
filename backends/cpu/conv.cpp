// CPU kernels of the conv family (ops/conv.cpp): conv2d and its two derivative helpers by
// im2col + OpenBLAS GEMM, and the pooling kernels (max_pool2d, avg_pool2d and the helpers
// max_pool2d_grad, max_pool2d_select, avg_pool2d_grad) by direct loops over planes.
//
// Convolution, per image n and group g, with col [K = Cg kh kw, P = OH OW] = im2col(x[n, g])
// in a per-thread scratch buffer (it stays in cache between im2col and the GEMM):
//   conv2d              y[n, g]  [Og, P]  = w_g [Og, K] col  (+ bias), in place in NCHW
//   conv2d_input_grad   dcol     [K, P]   = w_g^T dout[n, g], then col2im adds it into dx[n]
//   conv2d_weight_grad  dw_g     [Og, K] += dout[n, g] col^T (images in 8 fixed groups whose
//                                            partial sums are added in order)
// (image, group) tasks run in parallel, each GEMM single-threaded; a single task splits its
// GEMM across the threads instead. GEMM accumulates in the operands' precision (the reference
// in double): results agree within the rounding of the sums of |products|.
//
// Pooling is exact: the same comparisons (nan wins, the first maximum of a window in
// row-major order) and the same double sums in the same order as the reference, in parallel
// over planes. Any dtype but f32/f64, and any geometry the reference rejects, goes to the
// reference kernel (which raises its error).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "backends/cpu/blas.h"
#include "backends/cpu/kernels.h"
#include "semantics/shape_rules.h"

namespace spora::cpu {

namespace {

// An int attribute or a list of one or two ints (conv2d stride=1 or stride=[1,2]).
bool pair_attr(const Attrs& attrs, const char* name, int64_t& a, int64_t& b) {
  const sem::Attr* v = attrs.find(name);
  if (!v) return false;
  if (auto* one = std::get_if<int64_t>(v)) {
    a = b = *one;
    return true;
  }
  auto* list = std::get_if<std::vector<int64_t>>(v);
  if (!list || list->empty() || list->size() > 2) return false;
  a = (*list)[0];
  b = list->back();
  return true;
}

using sem::window_out_dim;  // the rows' own output lengths (semantics/shape_rules.h)

bool is_float4(const Tensor& t) {
  return (t.dtype() == DType::f32 || t.dtype() == DType::f64) && t.rank() == 4;
}

// ---- convolution ----------------------------------------------------------------------------

struct Conv {
  int64_t N, C, H, W, O, Cg, KH, KW, OH, OW, G, Og;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t K() const { return Cg * KH * KW; }
  int64_t P() const { return OH * OW; }
  Shape x_shape() const { return {N, C, H, W}; }
  Shape w_shape() const { return {O, Cg, KH, KW}; }
  Shape out_shape() const { return {N, O, OH, OW}; }
};

// The geometry of conv2d(x of shape xs, w of shape ws); false where the reference reports an
// error.
bool conv_geom(const Shape& xs, const Shape& ws, const Attrs& attrs, Conv& g) {
  if (xs.size() != 4 || ws.size() != 4) return false;
  if (!pair_attr(attrs, "stride", g.sh, g.sw) || !pair_attr(attrs, "padding", g.ph, g.pw) ||
      !pair_attr(attrs, "dilation", g.dh, g.dw))
    return false;
  g.G = attrs.get_int("groups");
  g.N = xs[0], g.C = xs[1], g.H = xs[2], g.W = xs[3];
  g.O = ws[0], g.Cg = ws[1], g.KH = ws[2], g.KW = ws[3];
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.G < 1) return false;
  if (g.C % g.G != 0 || g.Cg * g.G != g.C || g.O % g.G != 0) return false;
  g.Og = g.O / g.G;
  g.OH = window_out_dim(g.H, g.KH, g.sh, g.ph, g.dh);
  g.OW = window_out_dim(g.W, g.KW, g.sw, g.pw, g.dw);
  return g.OH > 0 && g.OW > 0;
}

// The output columns [lo, hi) whose input column ox * s - p + k d lies in [0, W).
void valid_range(int64_t W, int64_t OW, int64_t s, int64_t p, int64_t kd, int64_t& lo,
                 int64_t& hi) {
  int64_t a = p - kd;  // ox * s >= a
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t b = W - 1 + p - kd;  // ox * s <= b
  hi = b < 0 ? 0 : std::min(OW, b / s + 1);
  if (hi < lo) hi = lo;
}

// The output rows [lo, hi) whose input row oy sh - ph + ky dh lies in [0, H) (lo <= hi <= OH).
void valid_rows(const Conv& g, int64_t ky, int64_t& lo, int64_t& hi) {
  const int64_t a = g.ph - ky * g.dh, b = g.H - 1 + g.ph - ky * g.dh;  // a <= oy sh <= b
  lo = a <= 0 ? 0 : std::min(g.OH, (a + g.sh - 1) / g.sh);
  hi = b < 0 ? lo : std::clamp(b / g.sh + 1, lo, g.OH);
}

// Row copies and zeroing for im2col. Its rows are as long as the output is wide, often
// 10-30 elements, where a loop of scalar copies, with the geometry reloaded per row, cost more
// than the GEMM (perf of LeNet's second convolution, 10-wide rows, on an Intel Xeon: im2col 68%
// of the samples), and GCC's rewriting of such loops into memmove and memset calls costs more
// still. A row is copied as two fixed-size blocks that overlap (the first and the last bytes),
// or as 64-byte blocks and a last one ending at the row's end: a few vector moves, every
// element written with its own value. im2col is compiled without the rewriting; these inline
// into it.
// Block(s, d) over `rows` rows of b bytes (row strides lds and ldd in bytes), in the blocks
// above; strides and sizes are arguments, so nothing is reloaded per row.
template <template <int> class Block>
struct Rows {
  template <int B>
  SPORA_INLINE static void two(const char* s, int64_t lds, char* d, int64_t ldd, int64_t rows,
                               int64_t b) {
    for (int64_t r = 0; r < rows; ++r, s += lds, d += ldd)
      Block<B>::run(s, d), Block<B>::run(s + b - B, d + b - B);
  }
  SPORA_INLINE static void run(const char* s, int64_t lds, char* d, int64_t ldd, int64_t rows,
                               int64_t b) {
    if (b >= 64) {
      for (int64_t r = 0; r < rows; ++r, s += lds, d += ldd) {
        for (int64_t i = 0; i + 64 <= b; i += 64) Block<64>::run(s + i, d + i);
        Block<64>::run(s + b - 64, d + b - 64);
      }
    } else if (b >= 32) {
      two<32>(s, lds, d, ldd, rows, b);
    } else if (b >= 16) {
      two<16>(s, lds, d, ldd, rows, b);
    } else if (b >= 8) {
      two<8>(s, lds, d, ldd, rows, b);
    } else if (b >= 4) {
      two<4>(s, lds, d, ldd, rows, b);
    }
  }
};
template <int B>
struct Move {
  SPORA_INLINE static void run(const char* s, char* d) { __builtin_memcpy(d, s, B); }
};
template <int B>
struct Zero {
  SPORA_INLINE static void run(const char*, char* d) { __builtin_memset(d, 0, B); }
};
// dst[r * ldd + i] = src[r * lds + i] (or 0) for r < rows, i < n (strides in elements).
template <class T>
SPORA_INLINE void copy_rows(const T* src, int64_t lds, T* dst, int64_t ldd, int64_t rows,
                            int64_t n) {
  constexpr int64_t E = sizeof(T);
  Rows<Move>::run(reinterpret_cast<const char*>(src), lds * E, reinterpret_cast<char*>(dst),
                  ldd * E, rows, n * E);
}
template <class T>
SPORA_INLINE void zero_rows(T* dst, int64_t ldd, int64_t rows, int64_t n) {
  constexpr int64_t E = sizeof(T);
  char* d = reinterpret_cast<char*>(dst);
  Rows<Zero>::run(d, ldd * E, d, ldd * E, rows, n * E);  // the source walks dst, unread
}
template <class T>
SPORA_INLINE void zero_short(int64_t n, T* dst) {
  zero_rows(dst, 0, 1, n);
}

#if defined(__GNUC__) && !defined(__clang__)
#define SPORA_NO_MEM_CALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define SPORA_NO_MEM_CALLS  // clang (the sanitizer builds) has no attribute for it
#endif

// col[row, col0 + p] for image n, group grp (rows of K, row stride ld).
template <class T>
SPORA_NO_MEM_CALLS void im2col(const Conv& g, const T* x, int64_t n, int64_t grp, T* col,
                               int64_t ld, int64_t col0) {
  // Stride 1 with the output as wide as the input ("same" padding): the rows of one (c, ky,
  // kx) are one shifted run of the plane, copied at once, whose columns that wrapped into the
  // neighbouring row are then zeroed.
  const bool same_width = g.sh == 1 && g.sw == 1 && g.OW == g.W;
  for (int64_t c = 0; c < g.Cg; ++c) {
    const T* plane = x + (n * g.C + grp * g.Cg + c) * g.H * g.W;
    for (int64_t ky = 0; ky < g.KH; ++ky)
      for (int64_t kx = 0; kx < g.KW; ++kx) {
        T* dst = col + ((c * g.KH + ky) * g.KW + kx) * ld + col0;
        int64_t lo, hi;
        valid_range(g.W, g.OW, g.sw, g.pw, kx * g.dw, lo, hi);
        if (same_width) {
          int64_t y0, y1;
          valid_rows(g, ky, y0, y1);
          zero_short(y0 * g.OW, dst);
          zero_short((g.OH - y1) * g.OW, dst + y1 * g.OW);
          if (y1 > y0 && hi > lo) {
            const int64_t shift = (ky * g.dh - g.ph) * g.W + kx * g.dw - g.pw;
            const int64_t first = y0 * g.OW + lo, last = (y1 - 1) * g.OW + hi;
            std::copy(plane + first + shift, plane + last + shift, dst + first);
          }
          zero_rows(dst + y0 * g.OW, g.OW, y1 - y0, hi > lo ? lo : g.OW);
          if (hi > lo) zero_rows(dst + y0 * g.OW + hi, g.OW, y1 - y0, g.OW - hi);
          continue;
        }
        if (g.sw == 1) {
          // The rows oy with 0 <= iy = oy sh - ph + ky dh < H: columns [lo, hi) copied, the
          // others zeroed; the rows outside zeroed whole.
          const int64_t OW = g.OW, OH = g.OH;
          int64_t oy0, oy1;
          valid_rows(g, ky, oy0, oy1);
          zero_short(oy0 * OW, dst);
          zero_short((OH - oy1) * OW, dst + oy1 * OW);
          const int64_t rows = oy1 - oy0;
          T* d = dst + oy0 * OW;
          if (hi <= lo) {
            zero_short(rows * OW, d);
            continue;
          }
          zero_rows(d, OW, rows, lo);
          zero_rows(d + hi, OW, rows, OW - hi);
          copy_rows(plane + (oy0 * g.sh - g.ph + ky * g.dh) * g.W - g.pw + kx * g.dw + lo,
                    g.sh * g.W, d + lo, OW, rows, hi - lo);
          continue;
        }
        for (int64_t oy = 0; oy < g.OH; ++oy) {
          T* d = dst + oy * g.OW;
          int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.H) {
            zero_short(g.OW, d);
            continue;
          }
          const T* src = plane + iy * g.W - g.pw + kx * g.dw;
          zero_short(lo, d);
          for (int64_t ox = lo; ox < hi; ++ox) d[ox] = src[ox * g.sw];
          zero_short(g.OW - hi, d + hi);
        }
      }
  }
}

// d[r * ldd + i] += s[r * lds + i] for r < rows, i < n: col2im's rows, with strides and sizes
// in registers. Scalar on purpose: successive kx add into the same row shifted by one element,
// and AVX2 and AVX-512 versions (whole vectors and a masked one for the tail) ran LeNet's second
// input gradient slower than this loop on an Intel Xeon
// (benchmarks/results/conv_rows_ab_intel_xeon.txt).
template <class T>
void add_rows(T* d, int64_t ldd, const T* s, int64_t lds, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r, d += ldd, s += lds)
    for (int64_t i = 0; i < n; ++i) d[i] += s[i];
}

// dx plane (image n, channel grp * Cg + c) += the col2im of dcol (row stride ld).
template <class T>
void col2im_plane(const Conv& g, const T* dcol, int64_t ld, int64_t col0, int64_t c, T* plane) {
  for (int64_t ky = 0; ky < g.KH; ++ky)
    for (int64_t kx = 0; kx < g.KW; ++kx) {
      const T* src = dcol + ((c * g.KH + ky) * g.KW + kx) * ld + col0;
      int64_t lo, hi;
      valid_range(g.W, g.OW, g.sw, g.pw, kx * g.dw, lo, hi);
      if (hi <= lo) continue;
      if (g.sw == 1) {
        // The rows oy with 0 <= iy = oy sh - ph + ky dh < H, one call for all of them.
        int64_t oy0, oy1;
        valid_rows(g, ky, oy0, oy1);
        if (oy1 > oy0)
          add_rows(plane + (oy0 * g.sh - g.ph + ky * g.dh) * g.W - g.pw + kx * g.dw + lo,
                   g.sh * g.W, src + oy0 * g.OW + lo, g.OW, oy1 - oy0, hi - lo);
        continue;
      }
      for (int64_t oy = 0; oy < g.OH; ++oy) {
        int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.H) continue;
        T* d = plane + iy * g.W - g.pw + kx * g.dw;
        const T* s = src + oy * g.OW;
        for (int64_t ox = lo; ox < hi; ++ox) d[ox * g.sw] += s[ox];
      }
    }
}

enum class ConvOp { forward, input_grad, weight_grad };

// Per-thread scratch (a column buffer), reused across the tasks a thread runs.
template <class T>
struct Scratch {
  std::vector<std::unique_ptr<T[]>> bufs;
  int64_t size;
  explicit Scratch(int64_t n) : bufs(static_cast<size_t>(std::max(1, max_threads()))), size(n) {}
  T* get() {
    // Threads of the backend's own team have distinct numbers below max_threads(); a call
    // made from inside another parallel region runs its tasks on one thread.
    auto& b = bufs[static_cast<size_t>(omp_get_thread_num()) % bufs.size()];
    if (!b) b.reset(new T[static_cast<size_t>(size)]);  // uninitialised: im2col writes it all
    return b.get();
  }
};

// Fixed groups of images for the weight gradient (their partial sums are added in order, so
// the result does not depend on the number of threads).
constexpr int64_t kWeightGradGroups = 8;

// forward: a = x, b = w, out = y (bias optional). input_grad: a = dout, b = w, out = dx.
// weight_grad: a = x, b = dout, out = dw.
template <class T>
void conv_run(ConvOp op, const Conv& g, const T* a, const T* b, const T* bias, T* out) {
  const int64_t K = g.K(), P = g.P();
  Scratch<T> col(K * P);
  if (op == ConvOp::forward) {
    // y[n, group] = w_g [Og, K] col [K, P] (+ bias), written in place in NCHW.
    parallel_tasks(g.N * g.G, g.Og * K * P, [&](int64_t t) {
      const int64_t n = t / g.G, grp = t % g.G;
      T* c = col.get();
      im2col(g, a, n, grp, c, P, 0);
      T* y = out + (n * g.O + grp * g.Og) * P;
      gemm(false, false, g.Og, P, K, T(1), b + grp * g.Og * K, K, c, P, T(0), y, P);
      if (bias)
        for (int64_t o = 0; o < g.Og; ++o) {
          const T bv = bias[grp * g.Og + o];
          for (int64_t p = 0; p < P; ++p) y[o * P + p] += bv;
        }
    });
    return;
  }
  if (op == ConvOp::input_grad) {
    // dcol [K, P] = w_g^T dout[n, group] (contiguous [Og, P]), then col2im into dx[n].
    std::fill(out, out + numel_of(g.x_shape()), T(0));
    parallel_tasks(g.N * g.G, g.Og * K * P, [&](int64_t t) {
      const int64_t n = t / g.G, grp = t % g.G;
      T* c = col.get();
      gemm(true, false, K, P, g.Og, T(1), b + grp * g.Og * K, K, a + (n * g.O + grp * g.Og) * P, P,
           T(0), c, P);
      for (int64_t ch = 0; ch < g.Cg; ++ch)
        col2im_plane(g, c, P, 0, ch, out + (n * g.C + grp * g.Cg + ch) * g.H * g.W);
    });
    return;
  }
  // dw_g [Og, K] += dout[n, group] [Og, P] col^T, images in fixed groups, partials in order.
  const int64_t wn = numel_of(g.w_shape());
  const int64_t groups = std::min(g.N, kWeightGradGroups);
  std::vector<T> partial(static_cast<size_t>(groups * wn), T(0));
  parallel_tasks(groups, (g.N / groups + 1) * g.O * K * P, [&](int64_t q) {
    T* dw = partial.data() + q * wn;
    T* c = col.get();
    for (int64_t n = q * g.N / groups; n < (q + 1) * g.N / groups; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        im2col(g, a, n, grp, c, P, 0);
        gemm(false, true, g.Og, K, P, T(1), b + (n * g.O + grp * g.Og) * P, P, c, P, T(1),
             dw + grp * g.Og * K, K);
      }
  });
  std::copy(partial.begin(), partial.begin() + wn, out);
  for (int64_t q = 1; q < groups; ++q)
    for (int64_t i = 0; i < wn; ++i) out[i] += partial[q * wn + i];
}

bool has_input(const std::vector<Value>& in, size_t i) {
  return i < in.size() && in[i].kind != Value::Kind::None;
}

Value conv2d_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& w = in.at(1).tensor;
  Conv g;
  if (!is_float4(x) || w.dtype() != x.dtype() || !conv_geom(x.shape(), w.shape(), attrs, g))
    return ref(in, attrs);
  const bool has_b = has_input(in, 2);
  if (has_b && (in[2].tensor.dtype() != x.dtype() || in[2].tensor.shape() != Shape{g.O}))
    return ref(in, attrs);
  Tensor out = Tensor::empty(x.dtype(), g.out_shape());
  if (out.numel() == 0) return out;
  dispatch(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if (g.K() == 0) {
        T* o = out.data<T>();
        for (int64_t i = 0; i < out.numel(); ++i)
          o[i] = has_b ? in[2].tensor.data<T>()[(i / g.P()) % g.O] : T(0);
        return;
      }
      conv_run<T>(ConvOp::forward, g, x.data<T>(), w.data<T>(),
                  has_b ? in[2].tensor.data<T>() : nullptr, out.data<T>());
    }
  });
  return out;
}

// conv2d_input_grad(g, w, ..., shape) and conv2d_weight_grad(x, g, ..., shape).
CpuKernel conv_grad_kernel(bool input_grad) {
  return [input_grad](const RefKernel& ref, const std::vector<Value>& in,
                      const Attrs& attrs) -> Value {
    const Tensor& a = in.at(0).tensor;
    const Tensor& b = in.at(1).tensor;
    const Tensor& dout = input_grad ? a : b;
    if (!is_float4(a) || !is_float4(b) || a.dtype() != b.dtype()) return ref(in, attrs);
    const Shape& shape = attrs.get_ints("shape");
    Conv g;
    if (shape.size() != 4 ||
        !conv_geom(input_grad ? shape : a.shape(), input_grad ? b.shape() : shape, attrs, g) ||
        dout.shape() != g.out_shape())
      return ref(in, attrs);
    Tensor out = Tensor::empty(a.dtype(), shape);
    if (out.numel() == 0) return out;
    dispatch(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        if (g.N == 0 || g.O == 0 || g.K() == 0) {
          std::fill(out.data<T>(), out.data<T>() + out.numel(), T(0));
          return;
        }
        conv_run<T>(input_grad ? ConvOp::input_grad : ConvOp::weight_grad, g, a.data<T>(),
                    b.data<T>(), nullptr, out.data<T>());
      }
    });
    return out;
  };
}

// ---- pooling --------------------------------------------------------------------------------

struct Pool {
  int64_t NC, H, W, OH, OW, kh, kw, sh, sw, ph, pw;
};

bool pool_geom(const Shape& xs, const Attrs& attrs, Pool& g) {
  if (xs.size() != 4) return false;
  if (!pair_attr(attrs, "kernel", g.kh, g.kw)) return false;
  if (attrs.is_none("stride")) {
    g.sh = g.kh, g.sw = g.kw;
  } else if (!pair_attr(attrs, "stride", g.sh, g.sw)) {
    return false;
  }
  if (!attrs.has("padding"))
    g.ph = g.pw = 0;
  else if (!pair_attr(attrs, "padding", g.ph, g.pw))
    return false;
  if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0 || 2 * g.ph > g.kh ||
      2 * g.pw > g.kw)
    return false;
  g.NC = xs[0] * xs[1], g.H = xs[2], g.W = xs[3];
  g.OH = window_out_dim(g.H, g.kh, g.sh, g.ph, 1);
  g.OW = window_out_dim(g.W, g.kw, g.sw, g.pw, 1);
  return g.OH > 0 && g.OW > 0;
}

Shape pooled_shape(const Shape& xs, const Pool& g) { return {xs[0], xs[1], g.OH, g.OW}; }

// The window of output (oy, ox) clipped to the input: rows [y0, y1), columns [x0, x1).
struct Window {
  int64_t y0, y1, x0, x1;
};
Window window(const Pool& g, int64_t oy, int64_t ox) {
  int64_t y = oy * g.sh - g.ph, x = ox * g.sw - g.pw;
  return {std::max<int64_t>(y, 0), std::min(y + g.kh, g.H), std::max<int64_t>(x, 0),
          std::min(x + g.kw, g.W)};
}

// Whether a window's element replaces the best so far: with random data as likely as not, so
// the compiler is told to select (cmov, maxss) rather than branch: a branch per element
// mispredicted half the time and made max pooling and its gradient 45% of W3's step.
#define SPORA_COIN(c) __builtin_expect_with_probability((c), 1, 0.5)

// parallel_for's cost of one window element, in elementwise operations: a load, a compare, two
// selects and the window's bounds (LeNet's first pooling, 300K window elements, now runs on
// the team: alone it took 0.6-0.8 ms).
constexpr int64_t kWindowCost = 4;

// The flat index (in the plane) of the window's first nan (the window holds one).
template <class T>
int64_t window_first_nan(const Pool& g, const T* plane, const Window& w) {
  for (int64_t iy = w.y0; iy < w.y1; ++iy)
    for (int64_t ix = w.x0; ix < w.x1; ++ix)
      if (plane[iy * g.W + ix] != plane[iy * g.W + ix]) return iy * g.W + ix;
  return w.y0 * g.W + w.x0;
}

// The flat index (in the plane) of the window's first maximum, or its first nan (a second,
// branching pass over the window, only for windows that hold a nan).
template <class T>
int64_t window_argmax(const Pool& g, const T* plane, const Window& w) {
  int64_t best = w.y0 * g.W + w.x0;
  T bv = plane[best];
  bool nan = false;
  for (int64_t iy = w.y0; iy < w.y1; ++iy) {
    for (int64_t ix = w.x0; ix < w.x1; ++ix) {
      const int64_t i = iy * g.W + ix;
      const T v = plane[i];
      nan |= v != v;
      const bool take = SPORA_COIN(v > bv);
      best = take ? i : best;
      bv = take ? v : bv;
    }
  }
  return nan ? window_first_nan(g, plane, w) : best;
}

// 2x2 windows with stride 2 and no padding over planes of even width (most networks'
// pooling, LeNet's among them) run as long vector loops over a whole plane instead of one
// window at a time: the first maximum of each horizontal pair (h, flat over the plane's pairs,
// which never straddle rows), then of h's element and the one a row of pairs below (v), whose
// even rows are the output. Scanning a window in row-major order and taking a strictly
// larger value is the same as doing so for each row and then across rows, so the result is
// the reference's, signed zeros and ties included. A plane holding a nan goes to the window
// loops below it (the first nan wins there). On an Intel Xeon (2 threads), LeNet's first
// pooling takes 0.054-0.080 ms against 0.465-0.573 in those loops, its gradient 0.197-0.232
// against 0.516-0.536 (bench_cpu_kernels MaxPool2d_LeNet1 and MaxPool2dGrad_LeNet1;
// benchmarks/results/w3_pool_im2col_ab_intel_xeon.txt).
bool pairs_2x2(const Pool& g) {
  return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 &&
         g.W == 2 * g.OW && g.H * g.W < (int64_t{1} << 31);
}

SPORA_MULTIVERSION((template <class T>), plane_nan, (<T>), (const T* x, int64_t n, int* nan),
                   (x, n, nan), {
                     int bad = 0;
                     for (int64_t i = 0; i < n; ++i) bad |= x[i] != x[i];
                     *nan = bad;
                   })

// h[i] = the first maximum of x[2i], x[2i + 1]; with arg: its flat index too.
SPORA_MULTIVERSION((template <class T>), pair_max, (<T>),
                   (const T* x, int64_t n, T* h, int32_t* arg), (x, n, h, arg), {
                     if (!arg) {
                       for (int64_t i = 0; i < n; ++i) {
                         const T a = x[2 * i], b = x[2 * i + 1];
                         h[i] = b > a ? b : a;
                       }
                       return;
                     }
                     for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) {
                       const T a = x[2 * i], b = x[2 * i + 1];
                       const bool take = b > a;
                       h[i] = take ? b : a;
                       arg[i] = take ? 2 * i + 1 : 2 * i;
                     }
                   })

// v[i] = the first maximum of h[i], h[i + d] (and its index, from harg).
SPORA_MULTIVERSION((template <class T>), shifted_max, (<T>),
                   (const T* h, const int32_t* harg, int64_t n, int64_t d, T* v, int32_t* varg),
                   (h, harg, n, d, v, varg), {
                     if (!harg) {
                       for (int64_t i = 0; i < n; ++i) {
                         const T a = h[i], b = h[i + d];
                         v[i] = b > a ? b : a;
                       }
                       return;
                     }
                     for (int64_t i = 0; i < n; ++i) {
                       const T a = h[i], b = h[i + d];
                       const bool take = b > a;
                       v[i] = take ? b : a;
                       varg[i] = take ? harg[i + d] : harg[i];
                     }
                   })

// The maxima (and, with arg, their flat indices) of a nan-free plane's 2x2 windows, into
// out [OH, OW]; h and v: scratch of 2 OH OW elements each.
template <class T>
void plane_max_2x2(const Pool& g, const T* plane, T* out, int32_t* arg, T* h, T* v, int32_t* harg,
                   int32_t* varg) {
  const int64_t n = 2 * g.OH * g.OW;  // the pairs of the 2 OH rows the windows cover
  pair_max(plane, n, h, harg);
  shifted_max(h, harg, n - g.OW, g.OW, v, varg);
  for (int64_t oy = 0; oy < g.OH; ++oy) {
    const int64_t from = 2 * oy * g.OW;
    if (out) std::copy(v + from, v + from + g.OW, out + oy * g.OW);
    if (arg) std::copy(varg + from, varg + from + g.OW, arg + oy * g.OW);
  }
}

CpuKernel pool_kernel(bool is_max) {
  return [is_max](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    Pool g;
    if (!is_float4(x) || !pool_geom(x.shape(), attrs, g)) return ref(in, attrs);
    Tensor out = Tensor::empty(x.dtype(), pooled_shape(x.shape(), g));
    dispatch(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* px = x.data<T>();
        T* po = out.data<T>();
        if (is_max && pairs_2x2(g)) {
          parallel_for(
              g.NC, g.H * g.W,
              [&](int64_t lo, int64_t hi) {
                std::vector<T> h(static_cast<size_t>(4 * g.OH * g.OW));
                for (int64_t nc = lo; nc < hi; ++nc) {
                  const T* plane = px + nc * g.H * g.W;
                  T* o = po + nc * g.OH * g.OW;
                  int nan = 0;
                  plane_nan(plane, g.H * g.W, &nan);
                  if (!nan) {
                    plane_max_2x2<T>(g, plane, o, nullptr, h.data(), h.data() + h.size() / 2,
                                     nullptr, nullptr);
                    continue;
                  }
                  for (int64_t oy = 0; oy < g.OH; ++oy)
                    for (int64_t ox = 0; ox < g.OW; ++ox)
                      o[oy * g.OW + ox] = plane[window_argmax(g, plane, window(g, oy, ox))];
                }
              },
              1);
          return;
        }
        const double area = static_cast<double>(g.kh * g.kw);
        parallel_for(
            g.NC, kWindowCost * g.OH * g.OW * g.kh * g.kw,
            [&](int64_t lo, int64_t hi) {
              for (int64_t nc = lo; nc < hi; ++nc) {
                const T* plane = px + nc * g.H * g.W;
                T* o = po + nc * g.OH * g.OW;
                for (int64_t oy = 0; oy < g.OH; ++oy)
                  for (int64_t ox = 0; ox < g.OW; ++ox) {
                    Window w = window(g, oy, ox);
                    if (is_max) {
                      // The reference: start at -inf, take the first nan or a strictly
                      // larger value (the first nan: found again where the window has one).
                      T acc = -std::numeric_limits<T>::infinity();
                      bool nan = false;
                      for (int64_t iy = w.y0; iy < w.y1; ++iy)
                        for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                          const T v = plane[iy * g.W + ix];
                          nan |= v != v;
                          acc = SPORA_COIN(v > acc) ? v : acc;
                        }
                      if (nan) acc = plane[window_first_nan(g, plane, w)];
                      o[oy * g.OW + ox] = acc;
                    } else {
                      double acc = 0;
                      for (int64_t iy = w.y0; iy < w.y1; ++iy)
                        for (int64_t ix = w.x0; ix < w.x1; ++ix)
                          acc += static_cast<double>(plane[iy * g.W + ix]);
                      o[oy * g.OW + ox] = static_cast<T>(acc / area);
                    }
                  }
              }
            },
            1);
      }
    });
    return out;
  };
}

// max_pool2d_grad(x, g) (select = false) and max_pool2d_select(x, t) (select = true).
CpuKernel max_pool_helper_kernel(bool select) {
  return [select](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& v = in.at(1).tensor;
    Pool g;
    if (!is_float4(x) || v.dtype() != x.dtype() || !pool_geom(x.shape(), attrs, g) ||
        v.shape() != (select ? x.shape() : pooled_shape(x.shape(), g)))
      return ref(in, attrs);
    Tensor out = Tensor::empty(x.dtype(), select ? pooled_shape(x.shape(), g) : x.shape());
    dispatch(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        const T* px = x.data<T>();
        const T* pv = v.data<T>();
        T* po = out.data<T>();
        // Windows that do not overlap (stride >= kernel, as in LeNet's 2x2 pooling): every input
        // element takes at most one gradient, 0 + g (the sum of one value in double, rounded
        // back, is that value; 0 + -0 is +0, as the accumulation gives), into a zeroed plane.
        const bool disjoint = !select && g.sh >= g.kh && g.sw >= g.kw;
        if (pairs_2x2(g)) {
          parallel_for(
              g.NC, 2 * g.H * g.W,
              [&](int64_t lo, int64_t hi) {
                const size_t m = static_cast<size_t>(g.OH * g.OW);
                std::vector<T> h(4 * m);
                std::vector<int32_t> arg(5 * m);
                for (int64_t nc = lo; nc < hi; ++nc) {
                  const T* plane = px + nc * g.H * g.W;
                  int nan = 0;
                  plane_nan(plane, g.H * g.W, &nan);
                  if (!nan) {
                    plane_max_2x2<T>(g, plane, nullptr, arg.data(), h.data(), h.data() + 2 * m,
                                     arg.data() + m, arg.data() + 3 * m);
                  } else {
                    for (int64_t oy = 0; oy < g.OH; ++oy)
                      for (int64_t ox = 0; ox < g.OW; ++ox)
                        arg[static_cast<size_t>(oy * g.OW + ox)] =
                            static_cast<int32_t>(window_argmax(g, plane, window(g, oy, ox)));
                  }
                  if (select) {
                    const T* t = pv + nc * g.H * g.W;
                    T* o = po + nc * g.OH * g.OW;
                    for (size_t q = 0; q < m; ++q) o[q] = t[arg[q]];
                  } else {  // disjoint windows: each element takes at most one gradient
                    const T* gv = pv + nc * g.OH * g.OW;
                    T* o = po + nc * g.H * g.W;
                    std::fill(o, o + g.H * g.W, T(0));
                    for (size_t q = 0; q < m; ++q) o[arg[q]] = T(0) + gv[q];
                  }
                }
              },
              1);
          return;
        }
        parallel_for(
            g.NC, kWindowCost * g.OH * g.OW * g.kh * g.kw,
            [&](int64_t lo, int64_t hi) {
              if (disjoint) {
                for (int64_t nc = lo; nc < hi; ++nc) {
                  const T* plane = px + nc * g.H * g.W;
                  T* o = po + nc * g.H * g.W;
                  std::fill(o, o + g.H * g.W, T(0));
                  for (int64_t oy = 0; oy < g.OH; ++oy)
                    for (int64_t ox = 0; ox < g.OW; ++ox)
                      o[window_argmax(g, plane, window(g, oy, ox))] =
                          T(0) + pv[(nc * g.OH + oy) * g.OW + ox];
                }
                return;
              }
              std::vector<double> acc(select ? 0 : static_cast<size_t>(g.H * g.W));
              for (int64_t nc = lo; nc < hi; ++nc) {
                const T* plane = px + nc * g.H * g.W;
                if (!select) std::fill(acc.begin(), acc.end(), 0.0);
                for (int64_t oy = 0; oy < g.OH; ++oy)
                  for (int64_t ox = 0; ox < g.OW; ++ox) {
                    int64_t j = (nc * g.OH + oy) * g.OW + ox;
                    int64_t arg = window_argmax(g, plane, window(g, oy, ox));
                    if (select)
                      po[j] = pv[nc * g.H * g.W + arg];
                    else
                      acc[arg] += static_cast<double>(pv[j]);
                  }
                if (!select)
                  for (int64_t i = 0; i < g.H * g.W; ++i)
                    po[nc * g.H * g.W + i] = static_cast<T>(acc[i]);
              }
            },
            1);
      }
    });
    return out;
  };
}

Value avg_pool_grad_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& gt = in.at(0).tensor;
  const Shape& shape = attrs.get_ints("shape");
  Pool g;
  if (!is_float4(gt) || !pool_geom(shape, attrs, g) || gt.shape() != pooled_shape(shape, g))
    return ref(in, attrs);
  Tensor out = Tensor::empty(gt.dtype(), shape);
  dispatch(gt.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* pg = gt.data<T>();
      T* po = out.data<T>();
      const double inv = 1.0 / static_cast<double>(g.kh * g.kw);
      parallel_for(
          g.NC, kWindowCost * g.OH * g.OW * g.kh * g.kw,
          [&](int64_t lo, int64_t hi) {
            std::vector<double> acc(static_cast<size_t>(g.H * g.W));
            for (int64_t nc = lo; nc < hi; ++nc) {
              std::fill(acc.begin(), acc.end(), 0.0);
              for (int64_t oy = 0; oy < g.OH; ++oy)
                for (int64_t ox = 0; ox < g.OW; ++ox) {
                  double v = static_cast<double>(pg[(nc * g.OH + oy) * g.OW + ox]) * inv;
                  Window w = window(g, oy, ox);
                  for (int64_t iy = w.y0; iy < w.y1; ++iy)
                    for (int64_t ix = w.x0; ix < w.x1; ++ix) acc[iy * g.W + ix] += v;
                }
              for (int64_t i = 0; i < g.H * g.W; ++i)
                po[nc * g.H * g.W + i] = static_cast<T>(acc[i]);
            }
          },
          1);
    }
  });
  return out;
}

}  // namespace

void register_conv() {
  set_kernel("conv2d", conv2d_kernel);
  set_kernel("conv2d_input_grad", conv_grad_kernel(true));
  set_kernel("conv2d_weight_grad", conv_grad_kernel(false));
  set_kernel("max_pool2d", pool_kernel(true));
  set_kernel("avg_pool2d", pool_kernel(false));
  set_kernel("max_pool2d_grad", max_pool_helper_kernel(false));
  set_kernel("max_pool2d_select", max_pool_helper_kernel(true));
  set_kernel("avg_pool2d_grad", avg_pool_grad_kernel);
}

}  // namespace spora::cpu
