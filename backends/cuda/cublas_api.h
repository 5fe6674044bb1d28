// Internal to backends/cuda: cuBLAS, loaded on first use. The library (with cuBLASLt, which it
// needs) is half a gigabyte whose constructors register their kernels when it is loaded: linked
// as a dependency, it cost every `spora` process about half a second of start-up, CPU runs
// included. Loaded with dlopen when the CUDA backend makes its context, it costs only the runs
// that use a GPU. The entry points are the header's own (cublas_v2.h's *_v2 symbols), typed by
// decltype where the name is not overloaded, so a signature that does not match the header is a
// compile error.
#pragma once

#include <cublas_v2.h>

namespace spora::cuda {

struct CublasApi {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm) sgemm = nullptr;
  decltype(&cublasDgemm) dgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
  // The exported one (the header adds an inline overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_strided_batched_ex)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
      const void*, cudaDataType, int, long long int, const void*, cudaDataType, int, long long int,
      const void*, void*, cudaDataType, int, long long int, int, cublasComputeType_t,
      cublasGemmAlgo_t) = nullptr;
};

// Loads the library the build found (by its soname through the usual search, LD_LIBRARY_PATH
// included, then by the build's path) once; throws lang::UserError naming both and dlerror()'s
// message when neither loads or an entry point is missing.
const CublasApi& cublas();

}  // namespace spora::cuda
