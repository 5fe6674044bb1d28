// Internal: the CUDA side of the NCCL communicator (nccl_kernels.cu), compiled by nvcc as
// C++17, so it sees no Spora header: types and ops travel as the enums' integer values.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace spora::comm::cuda {

// dst[i] = dst[i] (op) src[i] for i < count, queued on `stream`.
// dtype: static_cast<int>(DType); op: static_cast<int>(ReduceOp).
cudaError_t reduce(void* dst, const void* src, std::size_t count, int dtype, int op,
                   cudaStream_t stream);

}  // namespace spora::comm::cuda
