// GEMM for the CPU kernels and the OpenBLAS configuration (blas.h).
#include "backends/cpu/blas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/kernels.h"

namespace spora::cpu {

namespace {

template <class T>
void blas_call(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const auto tra = ta ? CblasTrans : CblasNoTrans, trb = tb ? CblasTrans : CblasNoTrans;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  const int LDA = static_cast<int>(lda > 0 ? lda : 1), LDB = static_cast<int>(ldb > 0 ? ldb : 1);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, tra, trb, M, N, K, alpha, a, LDA, b, LDB, beta, c,
                static_cast<int>(ldc));
  else
    cblas_dgemm(CblasRowMajor, tra, trb, M, N, K, alpha, a, LDA, b, LDB, beta, c,
                static_cast<int>(ldc));
}

template <class T>
void gemm_split(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  // Large products: fixed blocks of the longer side of C (128 columns or 32 rows), one
  // single-threaded OpenBLAS call each, spread over the threads. The blocks depend only on the
  // shape (OpenBLAS's result for an element can depend on the size of the call it is in), so
  // the result does not depend on the number of threads.
  if (m * n * k < (int64_t{1} << 18)) {
    blas_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool by_cols = n >= m;
  const int64_t side = by_cols ? n : m, block = by_cols ? 128 : 32;
  const int64_t blocks = (side + block - 1) / block;
  // A multiply-add costs about an eighth of an elementwise add (parallel_work units).
  parallel_for(
      blocks, m * n * k / blocks / 8 + 1,
      [&](int64_t first, int64_t last) {
        for (int64_t q = first; q < last; ++q) {
          const int64_t lo = q * block, len = std::min(block, side - lo);
          if (by_cols) {
            const T* bb = tb ? b + lo * ldb : b + lo;
            blas_call(ta, tb, m, len, k, alpha, a, lda, bb, ldb, beta, c + lo, ldc);
          } else {
            const T* aa = ta ? a + lo : a + lo * lda;
            blas_call(ta, tb, len, n, k, alpha, aa, lda, b, ldb, beta, c + lo * ldc, ldc);
          }
        }
      },
      1);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_split(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_split(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void configure_blas() {
  // Looked up at run time: these are OpenBLAS's own entry points (absent from other BLAS).
  using Fn = void (*)();
  using SetThreads = void (*)(int);
  using Name = char* (*)();
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(1);
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  auto name = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!name || !quit || !init || std::string(name()) != "Prescott") return;
  const char* core = isa() == Isa::avx512 ? "SkylakeX" : isa() == Isa::avx2 ? "Haswell" : nullptr;
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 0);
  quit();
  init();  // re-selects the kernels from OPENBLAS_CORETYPE
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace spora::cpu
