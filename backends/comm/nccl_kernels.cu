#include <algorithm>
#include <cstdint>

#include "backends/comm/nccl_kernels.h"

namespace spora::comm::cuda {

namespace {

// Mirrors spora::comm::DType and spora::parallel::ReduceOp (checked in nccl.cpp).
enum Type { kF32, kF64, kI32, kI64 };
enum Op { kSum, kMax, kMin, kProd };

template <typename T>
struct Sum {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Prod {
  __device__ T operator()(T a, T b) const { return a * b; }
};
template <typename T>
struct Max {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
template <typename T>
struct Min {
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

// Grid-stride elementwise combine.
template <typename T, typename Op>
__global__ void combine(T* __restrict__ dst, const T* __restrict__ src, std::size_t n, Op op) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = op(dst[i], src[i]);
}

template <typename T>
cudaError_t launch(void* dst, const void* src, std::size_t n, int op, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<std::size_t>((n + threads - 1) / threads, 4096));
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  switch (op) {
    default:
      return cudaErrorInvalidValue;
    case kSum:
      combine<<<blocks, threads, 0, stream>>>(d, s, n, Sum<T>{});
      break;
    case kProd:
      combine<<<blocks, threads, 0, stream>>>(d, s, n, Prod<T>{});
      break;
    case kMax:
      combine<<<blocks, threads, 0, stream>>>(d, s, n, Max<T>{});
      break;
    case kMin:
      combine<<<blocks, threads, 0, stream>>>(d, s, n, Min<T>{});
      break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t reduce(void* dst, const void* src, std::size_t count, int t, int op,
                   cudaStream_t stream) {
  switch (t) {
    case kF32:
      return launch<float>(dst, src, count, op, stream);
    case kF64:
      return launch<double>(dst, src, count, op, stream);
    case kI32:
      return launch<std::int32_t>(dst, src, count, op, stream);
    case kI64:
      return launch<std::int64_t>(dst, src, count, op, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace spora::comm::cuda
