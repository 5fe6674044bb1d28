// Internal to backends/cuda: the launchers of the CUDA kernels (kernels.cu), compiled by nvcc as
// C++17, so they see no Spora header: dtypes and ops travel as the enums below, tensors as
// device pointers, and every launcher queues its kernels on `s` and returns the launch error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace spora::cuda::k {

// F16 / BF16: __half / __nv_bfloat16 storage; only cast, fill, where and the gathering copies
// take them (other kernels compute them in f32 through casts: register.cpp).
enum Dt : int { F32 = 0, F64 = 1, I32 = 2, I64 = 3, B8 = 4, F16 = 5, BF16 = 6 };

enum Unary : int {
  neg,
  abs_,
  sign,
  square,
  relu,
  floor_,
  ceil_,
  round_,
  exp_,
  log_,
  sqrt_,
  rsqrt,
  tanh_,
  sigmoid,
  gelu,
  sin_,
  cos_,
  erf_,
  log1p_,
  expm1_,
  reciprocal,
  kUnaryCount
};
enum Binary : int {
  add,
  sub,
  mul,
  div_,
  floordiv,
  mod,
  pow_,
  maximum,
  minimum,  // -> the operands' dtype
  eq,
  ne,
  lt,
  le,
  gt,
  ge,  // -> bool (uint8)
  kBinaryCount
};
enum Reduce : int { r_sum, r_mean, r_prod, r_max, r_min };

constexpr int kMaxDims = 8;
// Up to three operands read through strides over a collapsed output (0 where broadcast).
struct Strided {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t st[3][kMaxDims] = {};
};

// y[i] = op(x[i]); float dtypes only.
cudaError_t unary(int op, int dt, const void* x, void* y, int64_t n, cudaStream_t s);
// out[i] = op(a[.], b[.]) through plan (operands 0 and 1); float dtypes only.
cudaError_t binary(int op, int dt, const void* a, const void* b, void* out, int64_t n,
                   const Strided& plan, cudaStream_t s);
// out[i] = c[.] ? a[.] : b[.] (operands 0, 1, 2 of plan); any element size 1, 2, 4 or 8.
cudaError_t where(int elem_size, const uint8_t* c, const void* a, const void* b, void* out,
                  int64_t n, const Strided& plan, cudaStream_t s);
// y[i] = x[.] through operand 0 of plan (broadcast_to, transpose, permute): a gathering copy.
cudaError_t gather(int elem_size, const void* x, void* y, int64_t n, const Strided& plan,
                   cudaStream_t s);
// y[i] = x[i] converted as sem::Tensor::cast (integers truncated, clamped, nan -> 0; to f16 /
// bf16 through f32, rounded to nearest even, like the host's conversion).
cudaError_t cast(int from, int to, const void* x, void* y, int64_t n, cudaStream_t s);
// y[i] = value (f32/f64/i32/i64/bool).
cudaError_t fill(int dt, void* y, int64_t n, double value, cudaStream_t s);
// x seen as [O, R, I]: out[o, i] = reduce over r (sums in double; max/min: the first nan wins).
cudaError_t reduce(int op, int dt, const void* x, void* out, int64_t O, int64_t R, int64_t I,
                   cudaStream_t s);
// argmax (want_max) / argmin along R of [O, R, I]: i32 index (the first nan, else the first
// extreme).
cudaError_t arg_reduce(bool want_max, int dt, const void* x, int32_t* out, int64_t O, int64_t R,
                       int64_t I, cudaStream_t s);
// softmax / log_softmax along L of [O, L, I], stable (shift by the finite maximum).
cudaError_t softmax(bool log, int dt, const void* x, void* y, int64_t O, int64_t L, int64_t I,
                    cudaStream_t s);
// Per-label loss of cross_entropy with class indices along L of logits [O, L, I]:
// loss[o * I + i] = logsumexp - x[o, label, i]; *err is set to 1 when a label is out of range.
cudaError_t cross_entropy(int dt, int label_dt, const void* x, const void* labels, void* loss,
                          int* err, int64_t O, int64_t L, int64_t I, cudaStream_t s);
// one_hot: out [n, C] of dtype dt, zeros with 1 at each label (i32/i64); *err is set to 1 when
// a label is out of range.
cudaError_t one_hot(int label_dt, int dt, const void* labels, void* out, int* err, int64_t n,
                    int64_t C, cudaStream_t s);
// layer_norm over rows of length `cols`; gamma / beta may be null.
cudaError_t layer_norm(int dt, const void* x, const void* gamma, const void* beta, void* y,
                       int64_t rows, int64_t cols, double eps, cudaStream_t s);
// layer_norm's input gradient over rows of length `cols` (ops/nn.cpp, layer_norm_grad).
cudaError_t layer_norm_grad(int dt, const void* x, const void* g, void* dx, int64_t rows,
                            int64_t cols, double eps, cudaStream_t s);
// im2col of one NCHW image batch: col[(c, kh, kw), (n, oh, ow)] (zero padding), for conv2d
// as a GEMM; and col2im, its adjoint (accumulating), for the input gradient.
cudaError_t im2col(int dt, const void* x, void* col, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t sh, int64_t sw,
                   int64_t ph, int64_t pw, int64_t dh, int64_t dw, cudaStream_t s);
cudaError_t col2im(int dt, const void* col, void* x, int64_t N, int64_t C, int64_t H, int64_t W,
                   int64_t KH, int64_t KW, int64_t OH, int64_t OW, int64_t sh, int64_t sw,
                   int64_t ph, int64_t pw, int64_t dh, int64_t dw, cudaStream_t s);

}  // namespace spora::cuda::k
