// Typed wrappers of the OpenBLAS GEMM (row-major) used by matmul.cpp and conv.cpp.
#pragma once

#include <cblas.h>

#include <cstdint>

namespace spora::cpu {

// C[m,n] = alpha op(A) op(B) + beta C, row-major with leading dimensions lda, ldb, ldc;
// op(X) = X^T when the flag is set. Any of m, n, k may be 0.
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda > 0 ? lda : 1), b, static_cast<int>(ldb > 0 ? ldb : 1), beta, c,
              static_cast<int>(ldc));
}
inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda > 0 ? lda : 1), b, static_cast<int>(ldb > 0 ? ldb : 1), beta, c,
              static_cast<int>(ldc));
}

}  // namespace spora::cpu
