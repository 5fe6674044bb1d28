// CPU kernel of matmul (ops/matmul.cpp), NumPy semantics: 1-D operands promoted (and the
// added axis removed), batch axes broadcast; transpose_a / transpose_b go to BLAS as its
// transa / transb, so a flagged operand is read where it lies.
//
// f32/f64 run one OpenBLAS GEMM per batch element (in parallel over the elements and their
// blocks), or a single GEMM over every batch when the right operand has no batch axes of its
// own and the left one is not transposed ([b..., m, k] @ [k, n] is [b... m, k] @ [k, n]).
// BLAS accumulates in the operands' precision where the reference accumulates in double:
// f32 results agree within f32 rounding of the sum of |a_ik b_kj|. Integers run the
// reference's loops (wrapping 64-bit accumulation, exact), parallel over rows. The shapes are
// the row's (semantics/shape_rules.h matmul_shape); f16/bf16 and shape errors go to the
// reference kernel.
#include "backends/cpu/blas.h"
#include "backends/cpu/kernels.h"
#include "semantics/shape_rules.h"

namespace spora::cpu {

namespace {

using sem::MatmulFlags;
using sem::MatmulShape;

// For each batch element of `out`, the batch index it reads in `in` (broadcast).
std::vector<int64_t> batch_map(const Shape& in, const Shape& out) {
  const int64_t n = numel_of(out);
  std::vector<int64_t> map(static_cast<size_t>(n), 0);
  if (n == 0) return map;
  BroadcastPlan plan = plan_broadcast({&in}, out);
  for_each_run<1>(plan, 0, [&](const int64_t* offs, int64_t pos, int64_t len) {
    for (int64_t i = 0; i < len; ++i) map[pos + i] = offs[0] + i * plan.st[0].back();
  });
  return map;
}

template <class T>
void matmul_float(const Tensor& a, const Tensor& b, const MatmulShape& s, MatmulFlags t,
                  Tensor& out) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t m = s.m, k = s.k, n = s.n, nb = numel_of(s.batch);
  if (k == 0) {
    std::fill(po, po + out.numel(), T(0));
    return;
  }
  Shape ba(s.a3.begin(), s.a3.end() - 2), bb(s.b3.begin(), s.b3.end() - 2);
  // Leading dimensions of the operands as stored: op(A) is [m, k], op(B) [k, n].
  const int64_t lda = t.a ? m : k, ldb = t.b ? k : n;
  if (!t.a && numel_of(bb) == 1 && ba == s.batch) {  // one GEMM, the batches stacked as rows
    gemm(false, t.b, nb * m, n, k, T(1), pa, lda, pb, ldb, T(0), po, n);
    return;
  }
  std::vector<int64_t> ma = batch_map(ba, s.batch), mb = batch_map(bb, s.batch);
  std::vector<const T*> as(static_cast<size_t>(nb)), bs(static_cast<size_t>(nb));
  std::vector<T*> cs(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) {
    as[i] = pa + ma[i] * m * k;
    bs[i] = pb + mb[i] * k * n;
    cs[i] = po + i * m * n;
  }
  gemm_batch(t.a, t.b, nb, m, n, k, T(1), as.data(), lda, bs.data(), ldb, T(0), cs.data(), n);
}

template <class T>
void matmul_int(const Tensor& a, const Tensor& b, const MatmulShape& s, Tensor& out) {
  Shape ba(s.a3.begin(), s.a3.end() - 2), bb(s.b3.begin(), s.b3.end() - 2);
  std::vector<int64_t> ma = batch_map(ba, s.batch), mb = batch_map(bb, s.batch);
  const int64_t m = s.m, k = s.k, n = s.n, nb = numel_of(s.batch);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  parallel_for(
      nb * m, k * n,
      [&](int64_t begin, int64_t end) {
        std::vector<uint64_t> row(static_cast<size_t>(n));
        for (int64_t r = begin; r < end; ++r) {
          int64_t bi = r / m, i = r % m;
          const T* A = pa + ma[bi] * m * k + i * k;
          const T* B = pb + mb[bi] * k * n;
          std::fill(row.begin(), row.end(), 0);
          for (int64_t p = 0; p < k; ++p) {
            uint64_t av = static_cast<uint64_t>(static_cast<int64_t>(A[p]));
            const T* Bp = B + p * n;
            for (int64_t j = 0; j < n; ++j)
              row[j] += av * static_cast<uint64_t>(static_cast<int64_t>(Bp[j]));
          }
          T* O = po + r * n;
          for (int64_t j = 0; j < n; ++j) O[j] = static_cast<T>(static_cast<int64_t>(row[j]));
        }
      },
      1);
}

Value matmul_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& a = in.at(0).tensor;
  const Tensor& b = in.at(1).tensor;
  const DType dt = a.dtype();
  const bool ok = b.dtype() == dt &&
                  (dt == DType::f32 || dt == DType::f64 || dt == DType::i32 || dt == DType::i64);
  const MatmulFlags t = sem::matmul_flags(attrs);
  const std::optional<MatmulShape> shape = sem::matmul_shape(a.shape(), b.shape(), t);
  // The reference reports the errors, and runs flagged integer products.
  if (!ok || !shape || ((t.a || t.b) && !is_float(dt))) return ref(in, attrs);
  const MatmulShape& s = *shape;
  Tensor out = Tensor::empty(dt, s.out);
  if (out.numel() == 0) return out;
  switch (dt) {
    case DType::f32:
      matmul_float<float>(a, b, s, t, out);
      break;
    case DType::f64:
      matmul_float<double>(a, b, s, t, out);
      break;
    case DType::i32:
      matmul_int<int32_t>(a, b, s, out);
      break;
    default:
      matmul_int<int64_t>(a, b, s, out);
      break;
  }
  return out;
}

}  // namespace

void register_matmul() { set_kernel("matmul", matmul_kernel); }

}  // namespace spora::cpu
