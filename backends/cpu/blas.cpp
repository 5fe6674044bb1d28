// GEMM for the CPU kernels and the OpenBLAS configuration (blas.h).
#include "backends/cpu/blas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/gemm_choice.h"
#include "backends/cpu/kernels.h"

namespace spora::cpu {

namespace {

// One single-threaded call of `lib` (f64 always OpenBLAS).
template <class T>
void blas_call(GemmLib lib, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>)
    if (lib == GemmLib::onednn) {
      onednn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
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

// How a product is cut: `blocks` calls along the columns (by_cols) or the rows of C, each
// `block` wide (the last one what remains).
struct BlockPlan {
  bool by_cols = true;
  int64_t block = 0, blocks = 1;
};

// Small products are one call. Large ones are cut into blocks of the longer side of C, one
// single-threaded OpenBLAS call each, spread over the threads. The blocks depend only on the
// shape (OpenBLAS's result for an element can depend on the size of the call it is in), so the
// result does not depend on the number of threads: about 4M multiply-adds each and at least two
// from 2M (an RNN step's [32, 256] x [256, 256] then runs on two cores), in equal parts rounded
// up to 16, and at least 128 columns or 64 rows. Every call packs the whole of the other
// operand, so thinner blocks lose to the packing, the more so when that operand is transposed
// and long in k: W4's backward product [1024, 1024] x [256, 1024]^T ran in 0.87 of its time
// on two cores of an Intel Xeon in 64-row blocks than in 32-row ones, with no other product of
// a W4 step slower (benchmarks/results/gemm_rows64_ab_intel_xeon.txt). 128-row blocks gained
// no more and would leave half of a 16-core team idle on m = 1024.
BlockPlan plan_blocks(int64_t m, int64_t n, int64_t k) {
  if (m * n * k < (int64_t{1} << 18)) return {true, n, 1};
  const bool by_cols = n >= m;
  const int64_t side = by_cols ? n : m;
  constexpr int64_t target = int64_t{1} << 22;
  const int64_t parts =
      std::max<int64_t>(m * n * k < target / 2 ? 1 : 2, (m * n * k + target - 1) / target);
  const int64_t even = ((side + parts - 1) / parts + 15) / 16 * 16;
  const int64_t block = std::max<int64_t>(by_cols ? 128 : 64, even);
  return {by_cols, block, (side + block - 1) / block};
}

// The library of the regular blocks of a plan and of its last one.
struct BlockLibs {
  GemmLib regular = GemmLib::openblas, last = GemmLib::openblas;
};

// Block q of one product under plan p.
template <class T>
void gemm_block(const BlockPlan& p, const BlockLibs& libs, int64_t q, bool ta, bool tb, int64_t m,
                int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
                T beta, T* c, int64_t ldc) {
  const int64_t lo = q * p.block, len = std::min(p.block, (p.by_cols ? n : m) - lo);
  const GemmLib lib = q + 1 == p.blocks ? libs.last : libs.regular;
  if (p.by_cols) {
    const T* bb = tb ? b + lo * ldb : b + lo;
    blas_call(lib, ta, tb, m, len, k, alpha, a, lda, bb, ldb, beta, c + lo, ldc);
  } else {
    const T* aa = ta ? a + lo : a + lo * lda;
    blas_call(lib, ta, tb, len, n, k, alpha, aa, lda, b, ldb, beta, c + lo * ldc, ldc);
  }
}

// The library of each block of plan p: the regular blocks' and the last one's (narrower when
// the side does not divide), chosen on the calling thread before the blocks run. A shape met for
// the first time is timed on this product's first block of it (gemm_choice.h), writing into that
// block of C; with beta != 0 the block's C is kept and put back after the trials.
template <class T>
BlockLibs block_libs(const BlockPlan& p, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                     const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (!std::is_same_v<T, float>) {
    return {};
  } else {
    const int64_t side = p.by_cols ? n : m, tail = side - (p.blocks - 1) * p.block;
    auto choose = [&](int64_t q, int64_t len) {
      const GemmShape shape =
          p.by_cols
              ? GemmShape{ta, tb, m, len, k, std::max<int64_t>(1, lda), std::max<int64_t>(1, ldb),
                          ldc}
              : GemmShape{ta, tb, len, n, k, std::max<int64_t>(1, lda), std::max<int64_t>(1, ldb),
                          ldc};
      std::vector<T> kept;
      T* block_c = p.by_cols ? c + q * p.block : c + q * p.block * ldc;
      const auto trial = [&](GemmLib lib) {
        if (beta != T(0) && kept.empty())
          for (int64_t r = 0; r < shape.m; ++r)
            kept.insert(kept.end(), block_c + r * ldc, block_c + r * ldc + shape.n);
        gemm_block(p, BlockLibs{lib, lib}, q, ta, tb, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc);
      };
      const GemmLib lib = choose_gemm(shape, trial);
      for (int64_t r = 0; !kept.empty() && r < shape.m; ++r)
        std::copy_n(kept.data() + r * shape.n, shape.n, block_c + r * ldc);
      return lib;
    };
    BlockLibs out;
    out.last = choose(p.blocks - 1, tail);
    out.regular = p.blocks == 1 || tail == p.block ? out.last : choose(0, p.block);
    return out;
  }
}

// Every block of every product of the batch is one task: a batch of small products (attention's
// per-head [128, 64] x [64, 128]) runs in parallel over its products, a large one over its blocks.
template <class T>
void gemm_many(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, T alpha,
               const T* const* a, int64_t lda, const T* const* b, int64_t ldb, T beta, T* const* c,
               int64_t ldc) {
  if (m == 0 || n == 0 || batches == 0) return;
  if (k == 0) {  // C = beta C
    for (int64_t i = 0; i < batches; ++i)
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j)
          c[i][r * ldc + j] = beta == T(0) ? T(0) : beta * c[i][r * ldc + j];
    return;
  }
  const BlockPlan p = plan_blocks(m, n, k);
  const BlockLibs libs = block_libs<T>(p, ta, tb, m, n, k, a[0], lda, b[0], ldb, beta, c[0], ldc);
  // A multiply-add costs about an eighth of an elementwise add (parallel_work units). The
  // blocks are split over the team from a quarter of parallel_work() (1M multiply-adds by
  // default, about 15 us of one core; one product has several blocks only from 2M,
  // plan_blocks): they compute from their own cache and share nothing.
  parallel_for_from(
      parallel_work() / 4, batches * p.blocks, m * n * k / p.blocks / 8 + 1,
      [&](int64_t first, int64_t last) {
        for (int64_t t = first; t < last; ++t) {
          const int64_t i = t / p.blocks;
          gemm_block(p, libs, t % p.blocks, ta, tb, m, n, k, alpha, a[i], lda, b[i], ldb, beta,
                     c[i], ldc);
        }
      },
      1);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_many(ta, tb, 1, m, n, k, alpha, &a, lda, &b, ldb, beta, &c, ldc);
}
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  gemm_many(ta, tb, 1, m, n, k, alpha, &a, lda, &b, ldb, beta, &c, ldc);
}
void gemm_batch(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, float alpha,
                const float* const* a, int64_t lda, const float* const* b, int64_t ldb, float beta,
                float* const* c, int64_t ldc) {
  gemm_many(ta, tb, batches, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm_batch(bool ta, bool tb, int64_t batches, int64_t m, int64_t n, int64_t k, double alpha,
                const double* const* a, int64_t lda, const double* const* b, int64_t ldb,
                double beta, double* const* c, int64_t ldc) {
  gemm_many(ta, tb, batches, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
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
