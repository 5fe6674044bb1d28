// CPU kernels of the conv family (ops/conv.cpp): conv2d and its two derivative helpers by
// im2col + OpenBLAS GEMM, and the pooling kernels (max_pool2d, avg_pool2d and the helpers
// max_pool2d_grad, max_pool2d_select, avg_pool2d_grad) by direct loops over planes.
//
// Convolution, for each group g and a chunk of images (the column buffer kept under
// kColBudget elements):
//   col  [K = Cg kh kw, nb P]  = im2col(x)              (P = OH OW, images side by side)
//   conv2d              out_g [Og, nb P] = w_g [Og, K] col         (+ bias, scattered to NCHW)
//   conv2d_weight_grad  dw_g  [Og, K]   += dout_g [Og, nb P] col^T
//   conv2d_input_grad   dcol  [K, nb P]  = w_g^T dout_g, then col2im adds dcol into dx
// im2col and col2im run in parallel over (image, channel) planes, the GEMMs on OpenBLAS's
// threads. GEMM accumulates in the operands' precision (the reference in double): results
// agree within the rounding of the sums of |products|.
//
// Pooling is exact: the same comparisons (nan wins, the first maximum of a window in
// row-major order) and the same double sums in the same order as the reference, in parallel
// over planes. Any dtype but f32/f64, and any geometry the reference rejects, goes to the
// reference kernel (which raises its error).
#include <cmath>
#include <limits>

#include "backends/cpu/blas.h"
#include "backends/cpu/kernels.h"

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

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

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
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.G < 1)
    return false;
  if (g.C % g.G != 0 || g.Cg * g.G != g.C || g.O % g.G != 0) return false;
  g.Og = g.O / g.G;
  g.OH = out_dim(g.H, g.KH, g.sh, g.ph, g.dh);
  g.OW = out_dim(g.W, g.KW, g.sw, g.pw, g.dw);
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

// col[row, col0 + p] for image n, group grp (rows of K, row stride ld).
template <class T>
void im2col(const Conv& g, const T* x, int64_t n, int64_t grp, T* col, int64_t ld, int64_t col0) {
  for (int64_t c = 0; c < g.Cg; ++c) {
    const T* plane = x + (n * g.C + grp * g.Cg + c) * g.H * g.W;
    for (int64_t ky = 0; ky < g.KH; ++ky)
      for (int64_t kx = 0; kx < g.KW; ++kx) {
        T* dst = col + ((c * g.KH + ky) * g.KW + kx) * ld + col0;
        int64_t lo, hi;
        valid_range(g.W, g.OW, g.sw, g.pw, kx * g.dw, lo, hi);
        for (int64_t oy = 0; oy < g.OH; ++oy) {
          T* d = dst + oy * g.OW;
          int64_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.H) {
            std::fill(d, d + g.OW, T(0));
            continue;
          }
          const T* src = plane + iy * g.W - g.pw + kx * g.dw;
          std::fill(d, d + lo, T(0));
          if (g.sw == 1)
            std::copy(src + lo, src + hi, d + lo);
          else
            for (int64_t ox = lo; ox < hi; ++ox) d[ox] = src[ox * g.sw];
          std::fill(d + hi, d + g.OW, T(0));
        }
      }
  }
}

// dx plane (image n, channel grp * Cg + c) += the col2im of dcol (row stride ld).
template <class T>
void col2im_plane(const Conv& g, const T* dcol, int64_t ld, int64_t col0, int64_t c, T* plane) {
  for (int64_t ky = 0; ky < g.KH; ++ky)
    for (int64_t kx = 0; kx < g.KW; ++kx) {
      const T* src = dcol + ((c * g.KH + ky) * g.KW + kx) * ld + col0;
      int64_t lo, hi;
      valid_range(g.W, g.OW, g.sw, g.pw, kx * g.dw, lo, hi);
      for (int64_t oy = 0; oy < g.OH; ++oy) {
        int64_t iy = oy * g.sh - g.ph + ky * g.dh;
        if (iy < 0 || iy >= g.H) continue;
        T* d = plane + iy * g.W - g.pw + kx * g.dw;
        const T* s = src + oy * g.OW;
        for (int64_t ox = lo; ox < hi; ++ox) d[ox * g.sw] += s[ox];
      }
    }
}

// Elements of the column buffer per chunk of images.
constexpr int64_t kColBudget = int64_t{1} << 22;

int64_t images_per_chunk(const Conv& g) {
  int64_t per = std::max<int64_t>(1, g.K() * g.P());
  return std::max<int64_t>(1, std::min(g.N, kColBudget / per));
}

enum class ConvOp { forward, input_grad, weight_grad };

// forward: a = x, b = w, out = y (bias optional). input_grad: a = dout, b = w, out = dx.
// weight_grad: a = x, b = dout, out = dw.
template <class T>
void conv_run(ConvOp op, const Conv& g, const T* a, const T* b, const T* bias, T* out) {
  const int64_t K = g.K(), P = g.P(), nb = images_per_chunk(g);
  std::vector<T> col(static_cast<size_t>(K * nb * P));
  std::vector<T> mat(static_cast<size_t>(g.Og * nb * P));  // [Og, nb P]
  if (op != ConvOp::forward) {
    int64_t n = numel_of(op == ConvOp::input_grad ? g.x_shape() : g.w_shape());
    std::fill(out, out + n, T(0));
  }
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t cnt = std::min(nb, g.N - n0), ld = cnt * P;
    for (int64_t grp = 0; grp < g.G; ++grp) {
      if (op != ConvOp::input_grad) {
        const T* x = a;
        parallel_tasks(cnt, K * P,
                       [&](int64_t i) { im2col(g, x, n0 + i, grp, col.data(), ld, i * P); });
      }
      if (op == ConvOp::forward) {
        const T* w = b + grp * g.Og * K;
        gemm(false, false, g.Og, ld, K, T(1), w, K, col.data(), ld, T(0), mat.data(), ld);
        parallel_for(cnt * g.Og, P, [&](int64_t lo, int64_t hi) {
          for (int64_t r = lo; r < hi; ++r) {
            int64_t i = r / g.Og, o = r % g.Og;
            const T* src = mat.data() + o * ld + i * P;
            T* dst = out + ((n0 + i) * g.O + grp * g.Og + o) * P;
            T bv = bias ? bias[grp * g.Og + o] : T(0);
            for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + bv;
          }
        }, 1);
        continue;
      }
      // Gather dout_g [Og, cnt P] from NCHW.
      const T* dout = op == ConvOp::input_grad ? a : b;
      parallel_for(cnt * g.Og, P, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          int64_t i = r / g.Og, o = r % g.Og;
          const T* src = dout + ((n0 + i) * g.O + grp * g.Og + o) * P;
          std::copy(src, src + P, mat.data() + o * ld + i * P);
        }
      }, 1);
      if (op == ConvOp::weight_grad) {
        T* dw = out + grp * g.Og * K;
        gemm(false, true, g.Og, K, ld, T(1), mat.data(), ld, col.data(), ld, T(1), dw, K);
      } else {
        const T* w = b + grp * g.Og * K;
        gemm(true, false, K, ld, g.Og, T(1), w, K, mat.data(), ld, T(0), col.data(), ld);
        parallel_tasks(cnt * g.Cg, K * P / std::max<int64_t>(1, g.Cg), [&](int64_t t) {
          int64_t i = t / g.Cg, c = t % g.Cg;
          T* plane = out + ((n0 + i) * g.C + grp * g.Cg + c) * g.H * g.W;
          col2im_plane(g, col.data(), ld, i * P, c, plane);
        });
      }
    }
  }
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
  return [input_grad](const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
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
  g.OH = out_dim(g.H, g.kh, g.sh, g.ph, 1);
  g.OW = out_dim(g.W, g.kw, g.sw, g.pw, 1);
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

// The flat index (in the plane) of the window's first maximum, or its first nan.
template <class T>
int64_t window_argmax(const Pool& g, const T* plane, const Window& w) {
  int64_t best = -1;
  for (int64_t iy = w.y0; iy < w.y1; ++iy) {
    for (int64_t ix = w.x0; ix < w.x1; ++ix) {
      int64_t i = iy * g.W + ix;
      T v = plane[i];
      if (best < 0 || v != v || v > plane[best]) best = i;
      if (v != v) return best;
    }
  }
  return best;
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
        const double area = static_cast<double>(g.kh * g.kw);
        parallel_for(g.NC, g.OH * g.OW * g.kh * g.kw, [&](int64_t lo, int64_t hi) {
          for (int64_t nc = lo; nc < hi; ++nc) {
            const T* plane = px + nc * g.H * g.W;
            T* o = po + nc * g.OH * g.OW;
            for (int64_t oy = 0; oy < g.OH; ++oy)
              for (int64_t ox = 0; ox < g.OW; ++ox) {
                Window w = window(g, oy, ox);
                if (is_max) {
                  // The reference: start at -inf, take nan or a strictly larger value.
                  T acc = -std::numeric_limits<T>::infinity();
                  bool nan = false;
                  for (int64_t iy = w.y0; iy < w.y1 && !nan; ++iy)
                    for (int64_t ix = w.x0; ix < w.x1; ++ix) {
                      T v = plane[iy * g.W + ix];
                      if (v != v || v > acc) acc = v;
                      if (acc != acc) {
                        nan = true;
                        break;
                      }
                    }
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
        }, 1);
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
        parallel_for(g.NC, g.OH * g.OW * g.kh * g.kw, [&](int64_t lo, int64_t hi) {
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
              for (int64_t i = 0; i < g.H * g.W; ++i) po[nc * g.H * g.W + i] = static_cast<T>(acc[i]);
          }
        }, 1);
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
      parallel_for(g.NC, g.OH * g.OW * g.kh * g.kw, [&](int64_t lo, int64_t hi) {
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
          for (int64_t i = 0; i < g.H * g.W; ++i) po[nc * g.H * g.W + i] = static_cast<T>(acc[i]);
        }
      }, 1);
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
