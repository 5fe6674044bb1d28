// cuBLAS loaded on first use (cublas_api.h).
#include "backends/cuda/cublas_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>
#include <string>
#include <type_traits>

#include "lang/diagnostics.h"

// The symbol a cublas_v2.h name stands for ("cublasSgemm" is a macro for "cublasSgemm_v2").
#define SPORA_SYMBOL_NAME(f) SPORA_SYMBOL_NAME_(f)
#define SPORA_SYMBOL_NAME_(f) #f

namespace spora::cuda {

namespace {

CublasApi load() {
  void* lib = nullptr;
  std::string why;
  for (const char* name : {SPORA_CUBLAS_SONAME, SPORA_CUBLAS_PATH}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* e = dlerror();
    why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", name, e ? e : "not found");
  }
  if (!lib) throw lang::UserError("cannot load cuBLAS for the CUDA backend (" + why + ")");
  CublasApi api;
  // The exported entry point's own type: the assignment below checks it against the header.
  static_assert(std::is_same_v<decltype(api.gemm_strided_batched_ex),
                               decltype(static_cast<decltype(api.gemm_strided_batched_ex)>(
                                   &cublasGemmStridedBatchedEx))>);
  auto get = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn)
      throw lang::UserError(fmt::format("cuBLAS ({}) has no entry point {}", SPORA_CUBLAS_SONAME,
                                        symbol));
  };
  get(api.create, SPORA_SYMBOL_NAME(cublasCreate));
  get(api.set_stream, SPORA_SYMBOL_NAME(cublasSetStream));
  get(api.set_math_mode, SPORA_SYMBOL_NAME(cublasSetMathMode));
  get(api.sgemm, SPORA_SYMBOL_NAME(cublasSgemm));
  get(api.dgemm, SPORA_SYMBOL_NAME(cublasDgemm));
  get(api.sgemm_strided_batched, SPORA_SYMBOL_NAME(cublasSgemmStridedBatched));
  get(api.dgemm_strided_batched, SPORA_SYMBOL_NAME(cublasDgemmStridedBatched));
  get(api.gemm_strided_batched_ex, SPORA_SYMBOL_NAME(cublasGemmStridedBatchedEx));
  return api;  // the library stays loaded for the process
}

}  // namespace

const CublasApi& cublas() {
  static std::once_flag once;
  static CublasApi api;
  std::call_once(once, [] { api = load(); });
  return api;
}

}  // namespace spora::cuda
