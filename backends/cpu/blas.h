// GEMM for the CPU kernels (matmul.cpp, conv.cpp): OpenBLAS, single-threaded inside, split
// across the OpenMP threads of the backend (blas.cpp).
#pragma once

#include <cstdint>

namespace spora::cpu {

// C[m,n] = alpha op(A) op(B) + beta C, row-major with leading dimensions lda, ldb, ldc;
// op(X) = X^T when the flag is set. Any of m, n, k may be 0. Large products are cut into
// blocks along their longer output side, spread over the OpenMP threads: the blocks, and so
// the result, depend on the shapes only, never on the number of threads.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// C_i = alpha op(A_i) op(B_i) + beta C_i for i < batches, the products of one shape: every
// block of every product is one task for the threads (the blocks are gemm's), so a batch of
// small products runs in parallel too. Same results as gemm on each product.
void gemm_batch(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, float alpha,
                const float* const* a, int64_t lda, const float* const* b, int64_t ldb, float beta,
                float* const* c, int64_t ldc);
void gemm_batch(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, double alpha,
                const double* const* a, int64_t lda, const double* const* b, int64_t ldb,
                double beta, double* const* c, int64_t ldc);

// Makes OpenBLAS single-threaded (the backend's OpenMP threads run the GEMM blocks: one thread
// pool, not two spinning against each other on few cores) and, where OpenBLAS did not know
// this CPU and fell back to its generic SSE3 kernels ("Prescott") while OPENBLAS_CORETYPE is
// unset, re-selects the AVX-512 or AVX2 kernels (4x faster). Called by register_kernels().
void configure_blas();

}  // namespace spora::cpu
