// The CUDA backend (DESIGN.md section 6, issue 8): device probe, caching allocator for
// Device::Kind::cuda storage, host <-> device copies, and the "kernel.cuda" facet of every
// registry row. See README.md of this folder.
//
// This header has no CUDA include, so every layer that may include backends (tools/, tests)
// compiles with or without the toolkit. Built without CUDA (SPORA_CUDA=OFF or no nvcc), the
// same functions exist: cuda_available() says why not, and the copies throw a user error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "semantics/value.h"

namespace spora::cuda {

// Whether a CUDA device can run kernels now. Never crashes or throws: without a driver (the
// development and CI machines: cudaErrorInsufficientDriver), without a device, or in a build
// without CUDA it returns false and puts the reason in *why ("no CUDA device: ...").
bool cuda_available(std::string* why = nullptr);
// Whether Spora was built with the CUDA parts (the toolkit was found).
bool built_with_cuda();

// Installs the CUDA caching allocator for Device::Kind::cuda (sem::set_allocator). Needs
// cuda_available(); throws lang::UserError with the reason otherwise. Idempotent.
void install();

// Adds the "kernel.cuda" facet (sem::kCudaKernelFacet) to every registry row that has a
// reference kernel: a CUDA kernel where one is written, else the host fallback (inputs copied
// to the host, the CPU kernel or the reference kernel run, the result copied back, with a
// one-time warning per row). Call after ops::register_all() and cpu::register_kernels();
// then sem::set_backend(Backend::Cuda). Registering touches no GPU (works without one).
void register_kernels();

// The tensor on the device (a copy; the tensor itself when it is there already) / on the host.
sem::Tensor to_device(const sem::Tensor& t, int index = 0);
sem::Tensor to_host(const sem::Tensor& t);
// The same over values: every tensor inside tuples and records is moved; other values stay.
sem::Value to_device(const sem::Value& v, int index = 0);
sem::Value to_host(const sem::Value& v);
// Waits for every queued kernel and copy of the backend's stream.
void synchronize();

// One registry row's CUDA status, for the coverage list (README.md, `spora ops`, test_gpu).
struct Coverage {
  std::string name;
  enum class Kind { Native, Host } kind;  // Native: a CUDA kernel (or cuBLAS); Host: fallback
  std::string note;                       // what the native kernel leaves to the fallback
};
// Every row with a reference kernel, sorted by name (after register_kernels()).
std::vector<Coverage> coverage();
// Rows whose fallback ran in this process (each warned once).
std::vector<std::string> fallbacks_used();

// The CUDA caching allocator's counters (cudaMalloc'd blocks; see allocator.h).
struct DeviceMemoryStats {
  int64_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0, reserved_bytes = 0;
  int64_t hits = 0, misses = 0, frees = 0, cuda_mallocs = 0, oom_retries = 0;
};
DeviceMemoryStats memory_stats();
// Returns every cached block to the driver (cudaFree).
void empty_cache();

}  // namespace spora::cuda
