// Device probe, context, caching allocator and copies of the CUDA backend (context.h).
#include <mutex>
#include <new>

#include "backends/cuda/context.h"
#include "backends/runtime/allocator.h"
#include "lang/diagnostics.h"

namespace spora::cuda {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw lang::InternalError(std::string("cuda: ") + what + " failed: " + cudaGetErrorName(e) +
                              " (" + cudaGetErrorString(e) + ")");
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw lang::InternalError(std::string("cublas: ") + what + " failed with status " +
                              std::to_string(static_cast<int>(s)));
}

bool built_with_cuda() { return true; }

namespace {

struct Probe {
  bool ok = false;
  std::string why;
};

// Asked once: cudaGetDeviceCount is the first runtime call, and it reports a missing driver
// (cudaErrorInsufficientDriver with the stub libcuda of the toolkit) or device as an error
// code, never a crash.
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      r.why = std::string("no CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
              ")";
      cudaGetLastError();  // clear the sticky error for later calls
      return r;
    }
    if (count == 0) {
      r.why = "no CUDA device: the driver reports 0 devices";
      return r;
    }
    r.ok = true;
    return r;
  }();
  return p;
}

}  // namespace

bool cuda_available(std::string* why) {
  const Probe& p = probe();
  if (why) *why = p.why;
  return p.ok;
}

Context& context() {
  static Context* ctx = [] {
    std::string why;
    if (!cuda_available(&why)) throw lang::UserError("the CUDA backend cannot start: " + why);
    auto* c = new Context();  // never destroyed: tensors may outlive main
    SPORA_CUDA_CHECK(cudaSetDevice(c->device));
    SPORA_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    SPORA_CUDA_CHECK(
        cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, c->device));
    check(cublasCreate(&c->blas), "cublasCreate");
    check(cublasSetStream(c->blas, c->stream), "cublasSetStream");
    // Full f32 precision (no TF32): results match the CPU backend within f32 rounding.
    check(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return c;
  }();
  return *ctx;
}

// ---- allocator ------------------------------------------------------------------------------

sem::Block DeviceAllocator::allocate(size_t bytes, sem::Lifetime lifetime) {
  const size_t size = std::max<size_t>(512, runtime::CachingAllocator::round_size(bytes));
  const Key key{stream(), lifetime == sem::Lifetime::Long ? 1 : 0, size};
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.find(key); it != free_.end()) {
    void* p = it->second;
    free_.erase(it);
    live_.emplace(p, key);
    ++stats_.hits;
    stats_.cached_bytes -= static_cast<int64_t>(size);
    stats_.live_bytes += static_cast<int64_t>(size);
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
    return {p, size, static_cast<uint32_t>(key.pool)};
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    ++stats_.oom_retries;
    release_cache_locked();
    e = cudaMalloc(&p, size);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  ++stats_.misses;
  ++stats_.cuda_mallocs;
  live_.emplace(p, key);
  stats_.live_bytes += static_cast<int64_t>(size);
  stats_.reserved_bytes += static_cast<int64_t>(size);
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
  return {p, size, static_cast<uint32_t>(key.pool)};
}

void DeviceAllocator::deallocate(const sem::Block& block) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(block.ptr);
  if (it == live_.end()) return;  // not ours: nothing sensible to do in a destructor
  const Key key = it->second;
  live_.erase(it);
  free_.emplace(key, block.ptr);
  ++stats_.frees;
  stats_.live_bytes -= static_cast<int64_t>(key.size);
  stats_.cached_bytes += static_cast<int64_t>(key.size);
}

void DeviceAllocator::release_cache_locked() {
  // Kernels queued on the stream may still read a block freed on the host side.
  cudaStreamSynchronize(stream());
  for (auto& [key, p] : free_) {
    cudaFree(p);
    stats_.cached_bytes -= static_cast<int64_t>(key.size);
    stats_.reserved_bytes -= static_cast<int64_t>(key.size);
  }
  free_.clear();
}

void DeviceAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cache_locked();
}

DeviceMemoryStats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

DeviceAllocator& device_allocator() {
  static DeviceAllocator* a = new DeviceAllocator();  // never destroyed: buffers outlive main
  return *a;
}

void install() {
  context();  // throws the reason when there is no device
  sem::set_allocator(&device_allocator(), sem::Device::Kind::cuda);
  // Tensor::get / item and the interpreter's conditions read cuda tensors through this.
  sem::set_device_to_host(sem::Device::Kind::cuda, [](void* dst, const void* src, size_t bytes) {
    copy_to_host(dst, src, bytes);
  });
}

DeviceMemoryStats memory_stats() { return device_allocator().stats(); }
void empty_cache() { device_allocator().empty_cache(); }

// ---- copies ---------------------------------------------------------------------------------

void copy_to_device(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  SPORA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  SPORA_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  SPORA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  SPORA_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void synchronize() { SPORA_CUDA_CHECK(cudaStreamSynchronize(stream())); }

sem::Tensor to_device(const sem::Tensor& t, int index) {
  if (!t.defined() || t.device().kind == sem::Device::Kind::cuda) return t;
  if (index != 0)
    throw lang::UserError("the CUDA backend runs on device cuda:0 only, not cuda:" +
                          std::to_string(index));
  install();
  sem::Tensor d = sem::Tensor::empty(t.dtype(), t.shape(), sem::Device::cuda(index));
  copy_to_device(d.raw(), t.raw(), t.nbytes());
  return d;
}

sem::Tensor to_host(const sem::Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return t;
  sem::Tensor h = sem::Tensor::empty(t.dtype(), t.shape());
  copy_to_host(h.raw(), t.raw(), t.nbytes());
  return h;
}

namespace {
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
}  // namespace

sem::Value to_device(const sem::Value& v, int index) {
  return map_tensors(v, [index](const sem::Tensor& t) { return to_device(t, index); });
}
sem::Value to_host(const sem::Value& v) {
  return map_tensors(v, [](const sem::Tensor& t) { return to_host(t); });
}

}  // namespace spora::cuda
