// Internal to backends/cuda: the device context (one stream and one cuBLAS handle per process,
// on device 0), error checks, and the CUDA caching allocator. Includes the CUDA headers: only
// this folder's sources (built when the toolkit is found) include it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda.h"
#include "semantics/value.h"

namespace spora::cuda {

// Throws lang::InternalError naming the call and CUDA's message when `e` is an error.
void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);
#define SPORA_CUDA_CHECK(call) ::spora::cuda::check((call), #call)

// The backend's device, stream and cuBLAS handle. Every kernel and copy is queued on the one
// stream, so a block freed by one kernel can be handed to the next without synchronising
// (stream order); the allocator keys its cache by stream for the day there are several.
struct Context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  int sm_count = 0;
};
// Created on first use (after cuda_available() said yes); throws lang::UserError otherwise.
Context& context();
// The stream, with the backend's GPU current on the calling thread (a thread starts on GPU 0;
// the interpreter's deep-recursion threads and a rank that uses GPU k both need this).
inline cudaStream_t stream() {
  Context& c = context();
  thread_local int current = -1;
  if (current != c.device) {
    cudaSetDevice(c.device);
    current = c.device;
  }
  return c.stream;
}

// A grid for n elements with `threads` per block (grid-stride loops cover the rest).
inline unsigned grid_for(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  int64_t cap = int64_t{context().sm_count > 0 ? context().sm_count : 132} * 32;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// ---- CUDA graph capture (graphs.cpp) ---------------------------------------------------------

// Thrown by whatever cannot be recorded in a CUDA graph while the stream is being captured (a
// copy to or from the host, a host fallback kernel, a synchronisation): the capture is given
// up and the function runs uncaptured from then on. Not a lang::UserError, so no kernel wrapper
// or interpreter handler takes it for the user's error.
struct CaptureAbort : std::exception {
  explicit CaptureAbort(std::string w) : why(std::move(w)) {}
  const char* what() const noexcept override { return why.c_str(); }
  std::string why;
};
// Whether the backend's stream is being captured now.
bool capturing();
// Throws CaptureAbort("<what> during capture") when capturing.
void capture_guard(const char* what);
// A kernel's device error flag (an i32 scalar) that capture cannot read right away: read after
// each replay of the graph being captured (a set flag: the call runs again uncaptured, which
// raises the error).
void defer_check(const sem::Tensor& flag);
// One kernel (or cuBLAS call) queued: counted as launched, or as captured while capturing.
void note_launch(int64_t n = 1);

// Blocks the allocator handed out while a graph was captured: they belong to the graph (its
// kernels write them on every replay), so a freed one goes back to this pool, never to the
// shared cache, and is reused only by later allocations of the same capture.
struct CapturePool {
  std::multimap<size_t, void*> free;  // by size
  std::map<void*, size_t> owned;
  int64_t cuda_mallocs = 0;  // blocks the shared cache could not give (cudaMalloc in capture)
};

// The caching allocator of Device::Kind::cuda storage (installed by install()).
//
// - Blocks come from cudaMalloc (never managed memory) and are not returned to the driver
//   when freed: they are cached and handed out again for a later request of the same size
//   class (runtime::CachingAllocator::round_size, at least 512 bytes), per stream and per
//   lifetime pool (sem::Lifetime: parameters and optimizer state never share blocks with
//   activations).
// - A cudaMalloc that fails frees the whole cache and tries once more (oom_retries), then
//   throws std::bad_alloc.
// - Thread-safe (one mutex). Blocks are 256-byte aligned (cudaMalloc), never split.
class DeviceAllocator final : public sem::Allocator {
 public:
  sem::Block allocate(size_t bytes, sem::Lifetime lifetime) override;
  void deallocate(const sem::Block& block) override;
  DeviceMemoryStats stats() const;
  void empty_cache();
  // While a graph is captured, allocations come from (and frees go to) `pool` (null: stop).
  void set_capture_pool(CapturePool* pool);
  // Hands a finished (or given up) capture's free blocks back to the shared cache; only for a
  // pool whose graph is gone or never ran.
  void release_pool(CapturePool& pool);

 private:
  struct Key {
    cudaStream_t stream;
    int pool;
    size_t size;
    friend bool operator<(const Key& a, const Key& b) {
      if (a.stream != b.stream) return a.stream < b.stream;
      if (a.pool != b.pool) return a.pool < b.pool;
      return a.size < b.size;
    }
  };
  mutable std::mutex mu_;
  std::multimap<Key, void*> free_;
  std::map<void*, Key> live_;
  DeviceMemoryStats stats_;
  CapturePool* capture_ = nullptr;
  std::map<void*, CapturePool*> pool_of_;  // every block a capture pool owns
  void release_cache_locked();
};
DeviceAllocator& device_allocator();

// Host <-> device copies on the backend's stream (synchronous for the host's sake: the host
// buffer may be freed or read right after).
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
// Keeps a device copy of a host constant (an IR constant: its buffer never changes) that
// to_device hands out instead of copying again: a captured graph reads it, and uncaptured
// calls save the copy. Not while capturing (it copies).
void pin_constant(const sem::Tensor& t);

// v with its tensors replaced, in order, by f(tensor) (tuples and records rebuilt).
template <class F>
sem::Value map_tensors(const sem::Value& v, F&& f) {
  switch (v.kind) {
    case sem::Value::Kind::Tensor:
      return sem::Value(f(v.tensor));
    case sem::Value::Kind::Tuple:
    case sem::Value::Kind::Record: {
      std::vector<sem::Value> items;
      items.reserve(v.items().size());
      for (const sem::Value& e : v.items()) items.push_back(map_tensors(e, f));
      return v.kind == sem::Value::Kind::Tuple
                 ? sem::Value::tuple(std::move(items))
                 : sem::Value::record(v.record_type, std::move(items));
    }
    default:
      return v;
  }
}

}  // namespace spora::cuda
