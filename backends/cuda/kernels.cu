// The CUDA kernels of the backend (launch.h): grid-stride elementwise loops over a functor
// table, warp-shuffle block reductions, softmax / cross-entropy / layer-norm rows, im2col.
// Semantics follow the reference kernels (ops/): see backends/cuda/README.md for the
// tolerances.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backends/cuda/launch.h"

namespace spora::cuda::k {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b > 65535 * 4) b = 65535 * 4;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

#define GRID_STRIDE(i, n)                                                                \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// ---- unary functors -------------------------------------------------------------------------

template <class T>
__device__ T apply_unary(int op, T x) {
  switch (op) {
    case neg:
      return -x;
    case abs_:
      return x < T(0) ? -x : x;
    case sign:
      return isnan(x) ? x : T(x > T(0) ? 1 : (x < T(0) ? -1 : 0));
    case square:
      return x * x;
    case relu:
      return x > T(0) ? x : T(0);
    case floor_:
      return floor(x);
    case ceil_:
      return ceil(x);
    case round_:
      return rint(x);  // halves to even, like nearbyint
    case exp_:
      return exp(x);
    case log_:
      return log(x);
    case sqrt_:
      return sqrt(x);
    case rsqrt:
      return T(1) / sqrt(x);
    case tanh_:
      return tanh(x);
    case sigmoid:
      return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
    case gelu:
      return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case sin_:
      return sin(x);
    case cos_:
      return cos(x);
    case erf_:
      return erf(x);
    case log1p_:
      return log1p(x);
    case expm1_:
      return expm1(x);
    case reciprocal:
      return T(1) / x;
    default:
      return x;
  }
}

// One kernel per (dtype, op): the switch is resolved at compile time.
template <class T, int Op>
__global__ void unary_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = apply_unary<T>(Op, x[i]);
}

template <class T, int Op>
cudaError_t launch_unary(const void* x, void* y, int64_t n, cudaStream_t s) {
  unary_kernel<T, Op>
      <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
  return cudaGetLastError();
}

template <class T, int... Ops>
cudaError_t unary_table(int op, const void* x, void* y, int64_t n, cudaStream_t s,
                        std::integer_sequence<int, Ops...>) {
  using Fn = cudaError_t (*)(const void*, void*, int64_t, cudaStream_t);
  static constexpr Fn table[] = {&launch_unary<T, Ops>...};
  return table[op](x, y, n, s);
}

// ---- binary functors (Python floordiv / mod, NumPy nan rules) -------------------------------

template <class T>
__device__ T py_floordiv(T a, T b) {
  if (b == T(0)) return a / b;
  T m = fmod(a, b);
  T d = (a - m) / b;
  if (m != T(0) && ((b < T(0)) != (m < T(0)))) d -= T(1);
  if (d == T(0)) return copysign(T(0), a / b);
  T fl = floor(d);
  if (d - fl > T(0.5)) fl += T(1);
  return fl;
}

template <class T>
__device__ T py_mod(T a, T b) {
  if (b == T(0)) return fmod(a, b);
  T m = fmod(a, b);
  if (m != T(0)) {
    if ((b < T(0)) != (m < T(0))) m += b;
  } else {
    m = copysign(T(0), b);
  }
  return m;
}

template <class T, int Op>
__device__ auto apply_binary(T a, T b) {
  if constexpr (Op == add)
    return a + b;
  else if constexpr (Op == sub)
    return a - b;
  else if constexpr (Op == mul)
    return a * b;
  else if constexpr (Op == div_)
    return a / b;
  else if constexpr (Op == floordiv)
    return py_floordiv(a, b);
  else if constexpr (Op == mod)
    return py_mod(a, b);
  else if constexpr (Op == pow_)
    return T(pow(a, b));
  else if constexpr (Op == maximum)
    return (isnan(a) || isnan(b)) ? T(NAN) : (a > b ? a : b);
  else if constexpr (Op == minimum)
    return (isnan(a) || isnan(b)) ? T(NAN) : (a < b ? a : b);
  else if constexpr (Op == eq)
    return uint8_t(a == b);
  else if constexpr (Op == ne)
    return uint8_t(a != b);
  else if constexpr (Op == lt)
    return uint8_t(a < b);
  else if constexpr (Op == le)
    return uint8_t(a <= b);
  else if constexpr (Op == gt)
    return uint8_t(a > b);
  else
    return uint8_t(a >= b);
}

// Operand offsets of output element i (row-major unravel over the collapsed dims).
template <int K>
__device__ void offsets(const Strided& p, int64_t i, int64_t (&o)[K]) {
  for (int k = 0; k < K; ++k) o[k] = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t c = i % p.dims[d];
    i /= p.dims[d];
    for (int k = 0; k < K; ++k) o[k] += c * p.st[k][d];
  }
}

template <class T, int Op>
__global__ void binary_kernel(const T* __restrict__ a, const T* __restrict__ b, void* out,
                              int64_t n, Strided p, bool contiguous) {
  using R = decltype(apply_binary<T, Op>(T(), T()));
  R* o = static_cast<R*>(out);
  if (contiguous) {
    GRID_STRIDE(i, n) o[i] = apply_binary<T, Op>(a[i], b[i]);
  } else {
    GRID_STRIDE(i, n) {
      int64_t off[2];
      offsets<2>(p, i, off);
      o[i] = apply_binary<T, Op>(a[off[0]], b[off[1]]);
    }
  }
}

bool is_contiguous(const Strided& p, int operands) {
  if (p.rank != 1) return false;
  for (int k = 0; k < operands; ++k)
    if (p.st[k][0] != 1) return false;
  return true;
}

template <class T, int Op>
cudaError_t launch_binary(const void* a, const void* b, void* out, int64_t n, const Strided& p,
                          cudaStream_t s) {
  binary_kernel<T, Op><<<blocks_for(n), kThreads, 0, s>>>(
      static_cast<const T*>(a), static_cast<const T*>(b), out, n, p, is_contiguous(p, 2));
  return cudaGetLastError();
}

template <class T, int... Ops>
cudaError_t binary_table(int op, const void* a, const void* b, void* out, int64_t n,
                         const Strided& p, cudaStream_t s, std::integer_sequence<int, Ops...>) {
  using Fn =
      cudaError_t (*)(const void*, const void*, void*, int64_t, const Strided&, cudaStream_t);
  static constexpr Fn table[] = {&launch_binary<T, Ops>...};
  return table[op](a, b, out, n, p, s);
}

// ---- copies ---------------------------------------------------------------------------------

template <class E>
__global__ void where_kernel(const uint8_t* __restrict__ c, const E* __restrict__ a,
                             const E* __restrict__ b, E* __restrict__ o, int64_t n, Strided p) {
  GRID_STRIDE(i, n) {
    int64_t off[3];
    offsets<3>(p, i, off);
    o[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <class E>
__global__ void gather_kernel(const E* __restrict__ x, E* __restrict__ y, int64_t n, Strided p) {
  GRID_STRIDE(i, n) {
    int64_t off[1];
    offsets<1>(p, i, off);
    y[i] = x[off[0]];
  }
}

template <class F>
cudaError_t by_size(int elem_size, F&& f) {
  switch (elem_size) {
    case 1:
      return f(uint8_t());
    case 2:
      return f(uint16_t());
    case 4:
      return f(uint32_t());
    case 8:
      return f(uint64_t());
    default:
      return cudaErrorInvalidValue;
  }
}

template <class T>
__device__ double to_double(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return static_cast<double>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return static_cast<double>(__bfloat162float(v));
  else
    return static_cast<double>(v);
}

// A double stored as sem::Tensor::set does: floats rounded; integers truncated toward zero,
// nan as 0, clamped to the range; bool v != 0.
template <class T>
__device__ T from_double(double v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, __half>) {
    // The host's rule (semantics/value.cpp): to f32 first, then to nearest even.
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return v != 0.0 ? 1 : 0;
  } else {
    if (v != v) return 0;
    const double lo = sizeof(T) == 4 ? -2147483648.0 : -9223372036854775808.0;
    const double hi = sizeof(T) == 4 ? 2147483647.0 : 9223372036854774784.0;
    v = v < lo ? lo : (v > hi ? hi : v);
    return static_cast<T>(v);
  }
}

template <class From, class To>
__global__ void cast_kernel(const From* __restrict__ x, To* __restrict__ y, int64_t n) {
  GRID_STRIDE(i, n) {
    if constexpr (std::is_same_v<From, uint8_t>) y[i] = from_double<To>(x[i] ? 1.0 : 0.0);
    // sem::Tensor::cast's exact integer paths: i64 -> i32 wraps, i64 -> bool is != 0.
    else if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, int64_t>)
      y[i] = x[i];
    else if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, int32_t>)
      y[i] = static_cast<int32_t>(x[i]);
    else if constexpr (std::is_same_v<From, int64_t> && std::is_same_v<To, uint8_t>)
      y[i] = x[i] != 0;
    else if constexpr (std::is_same_v<From, int32_t> && std::is_same_v<To, int64_t>)
      y[i] = x[i];
    else
      y[i] = from_double<To>(to_double(x[i]));
  }
}

template <class T>
__global__ void fill_kernel(T* y, int64_t n, T v) {
  GRID_STRIDE(i, n) y[i] = v;
}

template <class F>
cudaError_t by_dtype(int dt, F&& f) {
  switch (dt) {
    case F32:
      return f(float());
    case F64:
      return f(double());
    case I32:
      return f(int32_t());
    case I64:
      return f(int64_t());
    case B8:
      return f(uint8_t());
    case F16:
      return f(__half());
    case BF16:
      return f(__nv_bfloat16());
    default:
      return cudaErrorInvalidValue;
  }
}

// ---- block reductions -----------------------------------------------------------------------

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct ProdOp {
  __device__ double operator()(double a, double b) const { return a * b; }
};
// max/min where the first nan wins (nan propagates): the reference keeps the first nan.
struct MaxOp {
  __device__ double operator()(double a, double b) const {
    return isnan(a) ? a : (isnan(b) ? b : (a < b ? b : a));
  }
};
struct MinOp {
  __device__ double operator()(double a, double b) const {
    return isnan(a) ? a : (isnan(b) ? b : (b < a ? b : a));
  }
};

template <class Op>
__device__ double warp_reduce(double v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

// The block's combined value, valid in every thread. blockDim.x a multiple of 32.
template <class Op>
__device__ double block_reduce(double v, Op op, double identity) {
  __shared__ double part[32];
  __shared__ double result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce(v, op);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double w = lane < static_cast<int>(blockDim.x >> 5) ? part[lane] : identity;
    w = warp_reduce(w, op);
    if (lane == 0) result = w;
  }
  __syncthreads();
  const double r = result;
  __syncthreads();  // part/result may be reused by the next call
  return r;
}

template <class T, class Op>
__global__ void reduce_rows(const T* __restrict__ x, T* __restrict__ out, int64_t O, int64_t R,
                            Op op, double identity, double scale) {
  for (int64_t o = blockIdx.x; o < O; o += gridDim.x) {
    const T* row = x + o * R;
    double acc = identity;
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x)
      acc = op(acc, static_cast<double>(row[r]));
    acc = block_reduce(acc, op, identity);
    if (threadIdx.x == 0) out[o] = static_cast<T>(acc * scale);
  }
}

template <class T, class Op>
__global__ void reduce_cols(const T* __restrict__ x, T* __restrict__ out, int64_t O, int64_t R,
                            int64_t I, Op op, double identity, double scale) {
  GRID_STRIDE(j, O * I) {
    const int64_t o = j / I, i = j % I;
    const T* base = x + o * R * I + i;
    double acc = identity;
    for (int64_t r = 0; r < R; ++r) acc = op(acc, static_cast<double>(base[r * I]));
    out[j] = static_cast<T>(acc * scale);
  }
}

template <class T, class Op>
cudaError_t launch_reduce(const void* xv, void* ov, int64_t O, int64_t R, int64_t I, Op op,
                          double identity, double scale, cudaStream_t s) {
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  if (O * I == 0) return cudaSuccess;
  if (I == 1) {
    reduce_rows<T><<<blocks_for(O, 1), kThreads, 0, s>>>(x, out, O, R, op, identity, scale);
  } else {
    reduce_cols<T><<<blocks_for(O * I), kThreads, 0, s>>>(x, out, O, R, I, op, identity, scale);
  }
  return cudaGetLastError();
}

// (value, index) pairs for argmax/argmin: the first nan, else the extreme, ties to the lower
// index (an associative, commutative choice, so any reduction order gives the reference's).
struct ArgPair {
  double v;
  int64_t i;
};
__device__ ArgPair arg_pick(ArgPair a, ArgPair b, bool want_max) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  const bool an = isnan(a.v), bn = isnan(b.v);
  if (an || bn) {
    if (an && bn) return a.i < b.i ? a : b;
    return an ? a : b;
  }
  if (a.v == b.v) return a.i < b.i ? a : b;
  return (want_max ? a.v > b.v : a.v < b.v) ? a : b;
}

template <class T>
__global__ void arg_kernel(const T* __restrict__ x, int32_t* __restrict__ out, int64_t O, int64_t R,
                           int64_t I, bool want_max) {
  __shared__ double sv[32];
  __shared__ int64_t si[32];
  for (int64_t j = blockIdx.x; j < O * I; j += gridDim.x) {
    const int64_t o = j / I, i = j % I;
    ArgPair best{0.0, -1};
    for (int64_t r = threadIdx.x; r < R; r += blockDim.x)
      best = arg_pick(best, ArgPair{static_cast<double>(x[(o * R + r) * I + i]), r}, want_max);
    for (int off = 16; off > 0; off >>= 1) {
      ArgPair other{__shfl_down_sync(0xffffffffu, best.v, off),
                    __shfl_down_sync(0xffffffffu, best.i, off)};
      best = arg_pick(best, other, want_max);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      sv[warp] = best.v;
      si[warp] = best.i;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      ArgPair b{sv[0], si[0]};
      for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w)
        b = arg_pick(b, ArgPair{sv[w], si[w]}, want_max);
      out[j] = static_cast<int32_t>(b.i);
    }
    __syncthreads();
  }
}

// ---- softmax family -------------------------------------------------------------------------

// Max ignoring nan (std::max(m, v) as the reference folds it), then the shift.
struct MaxIgnoreNan {
  __device__ double operator()(double a, double b) const { return a < b ? b : a; }
};

template <class T>
__device__ double row_shift(const T* x, int64_t L, int64_t I) {
  double m = -INFINITY;
  for (int64_t k = threadIdx.x; k < L; k += blockDim.x)
    m = MaxIgnoreNan()(m, static_cast<double>(x[k * I]));
  m = block_reduce(m, MaxIgnoreNan(), -INFINITY);
  return isfinite(m) ? m : 0.0;
}

template <class T>
__device__ double row_sum_exp(const T* x, int64_t L, int64_t I, double shift) {
  double sum = 0;
  for (int64_t k = threadIdx.x; k < L; k += blockDim.x)
    sum += exp(static_cast<double>(x[k * I]) - shift);
  return block_reduce(sum, SumOp(), 0.0);
}

template <class T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t O, int64_t L,
                               int64_t I, bool log) {
  for (int64_t j = blockIdx.x; j < O * I; j += gridDim.x) {
    const int64_t o = j / I, i = j % I;
    const T* xr = x + o * L * I + i;
    T* yr = y + o * L * I + i;
    const double shift = row_shift(xr, L, I);
    const double sum = row_sum_exp(xr, L, I, shift);
    const double lse = ::log(sum);
    for (int64_t k = threadIdx.x; k < L; k += blockDim.x) {
      const double z = static_cast<double>(xr[k * I]) - shift;
      yr[k * I] = static_cast<T>(log ? z - lse : exp(z) / sum);
    }
  }
}

template <class T, class L>
__global__ void ce_kernel(const T* __restrict__ x, const L* __restrict__ labels,
                          T* __restrict__ loss, int* err, int64_t O, int64_t Lc, int64_t I) {
  for (int64_t j = blockIdx.x; j < O * I; j += gridDim.x) {
    const int64_t o = j / I, i = j % I;
    const T* xr = x + o * Lc * I + i;
    const double shift = row_shift(xr, Lc, I);
    const double lse = ::log(row_sum_exp(xr, Lc, I, shift)) + shift;
    if (threadIdx.x == 0) {
      const int64_t c = static_cast<int64_t>(labels[j]);
      if (c < 0 || c >= Lc) {
        atomicExch(err, 1);
        loss[j] = T(0);
      } else {
        loss[j] = static_cast<T>(lse - static_cast<double>(xr[c * I]));
      }
    }
  }
}

template <class T>
__global__ void layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ gamma,
                                  const T* __restrict__ beta, T* __restrict__ y, int64_t rows,
                                  int64_t cols, double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    double sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(xr[c]);
    const double mean = block_reduce(sum, SumOp(), 0.0) / static_cast<double>(cols);
    double sq = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double d = static_cast<double>(xr[c]) - mean;
      sq += d * d;
    }
    const double var = block_reduce(sq, SumOp(), 0.0) / static_cast<double>(cols);
    const double rstd = 1.0 / sqrt(var + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      double v = (static_cast<double>(xr[c]) - mean) * rstd;
      if (gamma) v *= static_cast<double>(gamma[c]);
      if (beta) v += static_cast<double>(beta[c]);
      yr[c] = static_cast<T>(v);
    }
  }
}

// layer_norm_grad: dx = rstd (g - mean(g)) - (x - mean) rstd^2 mean(g xhat), one block a row.
template <class T>
__global__ void layer_norm_grad_kernel(const T* __restrict__ x, const T* __restrict__ g,
                                       T* __restrict__ dx, int64_t rows, int64_t cols, double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    const T* gr = g + r * cols;
    T* dr = dx + r * cols;
    const double n = static_cast<double>(cols);
    double sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(xr[c]);
    const double mean = block_reduce(sum, SumOp(), 0.0) / n;
    double sq = 0, sg = 0, sgx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double d = static_cast<double>(xr[c]) - mean, gc = static_cast<double>(gr[c]);
      sq += d * d;
      sg += gc;
      sgx += gc * d;
    }
    const double rstd = 1.0 / sqrt(block_reduce(sq, SumOp(), 0.0) / n + eps);
    const double mg = block_reduce(sg, SumOp(), 0.0) / n;
    const double k = rstd * rstd * rstd * block_reduce(sgx, SumOp(), 0.0) / n;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      dr[c] = static_cast<T>(rstd * (static_cast<double>(gr[c]) - mg) -
                             (static_cast<double>(xr[c]) - mean) * k);
  }
}

// ---- im2col ---------------------------------------------------------------------------------

struct ConvGeom {
  int64_t N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw;
};

// col has C*KH*KW rows and N*OH*OW columns.
template <class T>
__global__ void im2col_kernel(const T* __restrict__ x, T* __restrict__ col, ConvGeom g) {
  const int64_t cols = g.N * g.OH * g.OW, total = g.C * g.KH * g.KW * cols;
  GRID_STRIDE(idx, total) {
    const int64_t q = idx % cols, row = idx / cols;
    const int64_t kw = row % g.KW, kh = (row / g.KW) % g.KH, c = row / (g.KW * g.KH);
    const int64_t ow = q % g.OW, oh = (q / g.OW) % g.OH, n = q / (g.OW * g.OH);
    const int64_t h = oh * g.sh - g.ph + kh * g.dh, w = ow * g.sw - g.pw + kw * g.dw;
    col[idx] =
        (h >= 0 && h < g.H && w >= 0 && w < g.W) ? x[((n * g.C + c) * g.H + h) * g.W + w] : T(0);
  }
}

// x[n, c, h, w] = sum of the col entries that read it (a gather per input element: no atomics,
// deterministic).
template <class T>
__global__ void col2im_kernel(const T* __restrict__ col, T* __restrict__ x, ConvGeom g) {
  const int64_t cols = g.N * g.OH * g.OW, total = g.N * g.C * g.H * g.W;
  GRID_STRIDE(idx, total) {
    const int64_t w = idx % g.W, h = (idx / g.W) % g.H, c = (idx / (g.W * g.H)) % g.C,
                  n = idx / (g.W * g.H * g.C);
    double acc = 0;
    for (int64_t kh = 0; kh < g.KH; ++kh) {
      const int64_t th = h + g.ph - kh * g.dh;
      if (th < 0 || th % g.sh) continue;
      const int64_t oh = th / g.sh;
      if (oh >= g.OH) continue;
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t tw = w + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw) continue;
        const int64_t ow = tw / g.sw;
        if (ow >= g.OW) continue;
        const int64_t row = (c * g.KH + kh) * g.KW + kw;
        acc += static_cast<double>(col[row * cols + (n * g.OH + oh) * g.OW + ow]);
      }
    }
    x[idx] = static_cast<T>(acc);
  }
}

template <class F>
cudaError_t by_float(int dt, F&& f) {
  if (dt == F32) return f(float());
  if (dt == F64) return f(double());
  return cudaErrorInvalidValue;
}

}  // namespace

// ---- launchers ------------------------------------------------------------------------------

cudaError_t unary(int op, int dt, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (op < 0 || op >= kUnaryCount) return cudaErrorInvalidValue;
  return by_float(dt, [&](auto t) {
    return unary_table<decltype(t)>(op, x, y, n, s, std::make_integer_sequence<int, kUnaryCount>{});
  });
}

cudaError_t binary(int op, int dt, const void* a, const void* b, void* out, int64_t n,
                   const Strided& plan, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (op < 0 || op >= kBinaryCount) return cudaErrorInvalidValue;
  return by_float(dt, [&](auto t) {
    return binary_table<decltype(t)>(op, a, b, out, n, plan, s,
                                     std::make_integer_sequence<int, kBinaryCount>{});
  });
}

cudaError_t where(int elem_size, const uint8_t* c, const void* a, const void* b, void* out,
                  int64_t n, const Strided& plan, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return by_size(elem_size, [&](auto e) {
    using E = decltype(e);
    where_kernel<E><<<blocks_for(n), kThreads, 0, s>>>(
        c, static_cast<const E*>(a), static_cast<const E*>(b), static_cast<E*>(out), n, plan);
    return cudaGetLastError();
  });
}

cudaError_t gather(int elem_size, const void* x, void* y, int64_t n, const Strided& plan,
                   cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return by_size(elem_size, [&](auto e) {
    using E = decltype(e);
    gather_kernel<E>
        <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const E*>(x), static_cast<E*>(y), n, plan);
    return cudaGetLastError();
  });
}

cudaError_t cast(int from, int to, const void* x, void* y, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return by_dtype(from, [&](auto f) {
    using From = decltype(f);
    return by_dtype(to, [&](auto t) {
      using To = decltype(t);
      cast_kernel<From, To>
          <<<blocks_for(n), kThreads, 0, s>>>(static_cast<const From*>(x), static_cast<To*>(y), n);
      return cudaGetLastError();
    });
  });
}

cudaError_t fill(int dt, void* y, int64_t n, double value, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  return by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    // The host's conversion rule, evaluated on the device by a one-element cast would be
    // overkill: fill values are small literals.
    T v;
    if constexpr (std::is_same_v<T, uint8_t>)
      v = value != 0.0 ? 1 : 0;
    else if constexpr (std::is_same_v<T, __half>)
      v = __float2half_rn(static_cast<float>(value));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      v = __float2bfloat16_rn(static_cast<float>(value));
    else
      v = static_cast<T>(value);
    fill_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(y), n, v);
    return cudaGetLastError();
  });
}

cudaError_t reduce(int op, int dt, const void* x, void* out, int64_t O, int64_t R, int64_t I,
                   cudaStream_t s) {
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    switch (op) {
      case r_sum:
        return launch_reduce<T>(x, out, O, R, I, SumOp(), 0.0, 1.0, s);
      case r_mean:
        return launch_reduce<T>(x, out, O, R, I, SumOp(), 0.0, 1.0 / static_cast<double>(R), s);
      case r_prod:
        return launch_reduce<T>(x, out, O, R, I, ProdOp(), 1.0, 1.0, s);
      case r_max:
        return launch_reduce<T>(x, out, O, R, I, MaxOp(), -INFINITY, 1.0, s);
      case r_min:
        return launch_reduce<T>(x, out, O, R, I, MinOp(), INFINITY, 1.0, s);
      default:
        return cudaErrorInvalidValue;
    }
  });
}

cudaError_t arg_reduce(bool want_max, int dt, const void* x, int32_t* out, int64_t O, int64_t R,
                       int64_t I, cudaStream_t s) {
  if (O * I == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    arg_kernel<T><<<blocks_for(O * I, 1), kThreads, 0, s>>>(static_cast<const T*>(x), out, O, R, I,
                                                            want_max);
    return cudaGetLastError();
  });
}

cudaError_t softmax(bool log, int dt, const void* x, void* y, int64_t O, int64_t L, int64_t I,
                    cudaStream_t s) {
  if (O * L * I == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    softmax_kernel<T><<<blocks_for(O * I, 1), kThreads, 0, s>>>(static_cast<const T*>(x),
                                                                static_cast<T*>(y), O, L, I, log);
    return cudaGetLastError();
  });
}

cudaError_t cross_entropy(int dt, int label_dt, const void* x, const void* labels, void* loss,
                          int* err, int64_t O, int64_t L, int64_t I, cudaStream_t s) {
  if (O * I == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    if (label_dt == I64) {
      ce_kernel<T, int64_t><<<blocks_for(O * I, 1), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<const int64_t*>(labels), static_cast<T*>(loss), err,
          O, L, I);
    } else if (label_dt == I32) {
      ce_kernel<T, int32_t><<<blocks_for(O * I, 1), kThreads, 0, s>>>(
          static_cast<const T*>(x), static_cast<const int32_t*>(labels), static_cast<T*>(loss), err,
          O, L, I);
    } else {
      return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
  });
}

namespace {
// out[i, labels[i]] = 1 over zeros; a label outside [0, C) sets *err.
template <class T, class L>
__global__ void one_hot_kernel(const L* __restrict__ labels, T* __restrict__ out, int* err,
                               int64_t n, int64_t C) {
  GRID_STRIDE(i, n) {
    const int64_t k = static_cast<int64_t>(labels[i]);
    if (k < 0 || k >= C)
      *err = 1;
    else
      out[i * C + k] = from_double<T>(1.0);
  }
}
}  // namespace

cudaError_t one_hot(int label_dt, int dt, const void* labels, void* out, int* err, int64_t n,
                    int64_t C, cudaStream_t s) {
  if (n * C == 0) return cudaSuccess;
  const cudaError_t e = fill(dt, out, n * C, 0.0, s);
  if (e != cudaSuccess) return e;
  return by_dtype(dt, [&](auto t) {
    using T = decltype(t);
    if (label_dt == I64)
      one_hot_kernel<T, int64_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const int64_t*>(labels), static_cast<T*>(out), err, n, C);
    else if (label_dt == I32)
      one_hot_kernel<T, int32_t><<<blocks_for(n), kThreads, 0, s>>>(
          static_cast<const int32_t*>(labels), static_cast<T*>(out), err, n, C);
    else
      return cudaErrorInvalidValue;
    return cudaGetLastError();
  });
}

cudaError_t layer_norm(int dt, const void* x, const void* gamma, const void* beta, void* y,
                       int64_t rows, int64_t cols, double eps, cudaStream_t s) {
  if (rows * cols == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    layer_norm_kernel<T><<<blocks_for(rows, 1), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        static_cast<T*>(y), rows, cols, eps);
    return cudaGetLastError();
  });
}

cudaError_t layer_norm_grad(int dt, const void* x, const void* g, void* dx, int64_t rows,
                            int64_t cols, double eps, cudaStream_t s) {
  if (rows * cols == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    layer_norm_grad_kernel<T><<<blocks_for(rows, 1), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(g), static_cast<T*>(dx), rows, cols, eps);
    return cudaGetLastError();
  });
}

cudaError_t im2col(int dt, const void* x, void* col, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t sh, int64_t sw,
                   int64_t ph, int64_t pw, int64_t dh, int64_t dw, cudaStream_t s) {
  const ConvGeom g{N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw};
  const int64_t total = C * KH * KW * N * OH * OW;
  if (total == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    im2col_kernel<T>
        <<<blocks_for(total), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(col), g);
    return cudaGetLastError();
  });
}

cudaError_t col2im(int dt, const void* col, void* x, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t sh, int64_t sw,
                   int64_t ph, int64_t pw, int64_t dh, int64_t dw, cudaStream_t s) {
  const ConvGeom g{N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw};
  const int64_t total = N * C * H * W;
  if (total == 0) return cudaSuccess;
  return by_float(dt, [&](auto t) {
    using T = decltype(t);
    col2im_kernel<T>
        <<<blocks_for(total), kThreads, 0, s>>>(static_cast<const T*>(col), static_cast<T*>(x), g);
    return cudaGetLastError();
  });
}

}  // namespace spora::cuda::k
