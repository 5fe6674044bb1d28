// Fused groups on the GPU (issue 8): the GPU target of codegen::FusedRuntime
// (backends/codegen/fused_runtime.h). No CUDA include: tools/ uses it in every build.
//
// The module's groups are emitted as CUDA (codegen::emit_cuda), compiled with NVRTC for the
// device's compute capability (sm_90 on an H100/H200), cached on disk by a hash
// (SPORA_CACHE_DIR, `<hash>.cubin`), loaded with the driver API (cuModuleLoadData /
// cuModuleGetFunction into the runtime's primary context, the functions taken through
// cudaGetDriverEntryPointByVersion so nothing links libcuda) and launched with cuLaunchKernel on
// the backend's stream. The matmul/conv anchor of a group runs with its cuBLAS kernel first.
#pragma once

#include <memory>
#include <string>

#include "backends/codegen/fused_runtime.h"

namespace spora::cuda {

// The target, or null with the reason in *why (no device, a build without CUDA).
std::shared_ptr<codegen::GpuKernels> make_fused_gpu(std::string* why = nullptr);

}  // namespace spora::cuda
