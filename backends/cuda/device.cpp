// Device probe, context, caching allocator and copies of the CUDA backend (context.h).
#include <atomic>
#include <mutex>
#include <new>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "backends/cuda/cublas_api.h"
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

namespace {
std::atomic<int> g_selected{0};
std::atomic<bool> g_started{false};
}  // namespace

void select_device(int index) {
  std::string why;
  if (!cuda_available(&why)) throw lang::UserError("the CUDA backend cannot start: " + why);
  int count = 0;
  SPORA_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count)
    throw lang::UserError("GPU " + std::to_string(index) + " does not exist: this machine has " +
                          std::to_string(count));
  if (g_started.load() && context().device != index)
    throw lang::UserError("the CUDA backend already runs on GPU " +
                          std::to_string(context().device) + ", not " + std::to_string(index));
  g_selected = index;
}

Context& context() {
  static Context* ctx = [] {
    std::string why;
    if (!cuda_available(&why)) throw lang::UserError("the CUDA backend cannot start: " + why);
    auto* c = new Context();  // never destroyed: tensors may outlive main
    c->device = g_selected.load();
    g_started = true;
    SPORA_CUDA_CHECK(cudaSetDevice(c->device));
    SPORA_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    SPORA_CUDA_CHECK(
        cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, c->device));
    check(cublas().create(&c->blas), "cublasCreate");
    check(cublas().set_stream(c->blas, c->stream), "cublasSetStream");
    // Full f32 precision (no TF32): results match the CPU backend within f32 rounding.
    check(cublas().set_math_mode(c->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return c;
  }();
  return *ctx;
}

// ---- allocator ------------------------------------------------------------------------------

sem::Block DeviceAllocator::allocate(size_t bytes, sem::Lifetime lifetime) {
  const size_t size = std::max<size_t>(512, runtime::CachingAllocator::round_size(bytes));
  const Key key{stream(), lifetime == sem::Lifetime::Long ? 1 : 0, size};
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_) {
    // A block this capture freed already, else one of the shared cache (the uncaptured warm-up
    // run left them there), else a new one; each becomes the graph's.
    void* p = nullptr;
    if (auto it = capture_->free.find(size); it != capture_->free.end()) {
      p = it->second;
      capture_->free.erase(it);
      ++stats_.hits;
    } else if (auto c = free_.find(key); c != free_.end()) {
      p = c->second;
      free_.erase(c);
      ++stats_.hits;
      stats_.cached_bytes -= static_cast<int64_t>(size);
    } else {
      const cudaError_t e = cudaMalloc(&p, size);
      if (e != cudaSuccess) {
        cudaGetLastError();
        throw CaptureAbort(std::string("cudaMalloc of ") + std::to_string(size) +
                           " bytes during capture failed: " + cudaGetErrorName(e));
      }
      ++stats_.misses;
      ++stats_.cuda_mallocs;
      ++capture_->cuda_mallocs;
      stats_.reserved_bytes += static_cast<int64_t>(size);
    }
    capture_->owned[p] = size;
    pool_of_[p] = capture_;
    live_.emplace(p, key);
    stats_.live_bytes += static_cast<int64_t>(size);
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.live_bytes);
    return {p, size, static_cast<uint32_t>(key.pool)};
  }
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
  ++stats_.frees;
  stats_.live_bytes -= static_cast<int64_t>(key.size);
  if (auto p = pool_of_.find(block.ptr); p != pool_of_.end()) {
    p->second->free.emplace(key.size, block.ptr);  // the graph's: never shared
    return;
  }
  free_.emplace(key, block.ptr);
  stats_.cached_bytes += static_cast<int64_t>(key.size);
}

void DeviceAllocator::set_capture_pool(CapturePool* pool) {
  std::lock_guard<std::mutex> lock(mu_);
  capture_ = pool;
}

void DeviceAllocator::release_pool(CapturePool& pool) {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_ == &pool) capture_ = nullptr;
  for (auto& [size, p] : pool.free) {
    free_.emplace(Key{stream(), 0, size}, p);
    stats_.cached_bytes += static_cast<int64_t>(size);
  }
  // Blocks still held by tensors go to the shared cache when those are freed.
  for (auto& [p, size] : pool.owned) pool_of_.erase(p);
  pool.free.clear();
  pool.owned.clear();
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
  capture_guard("a copy from the host");
  SPORA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()));
  SPORA_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  capture_guard("a read of a tensor on the host");
  SPORA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
  SPORA_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

void synchronize() {
  capture_guard("a synchronisation");
  SPORA_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

namespace {
// Device copies of host constants (pin_constant): keyed by the host buffer, which the entry
// keeps alive, so an address is never reused by another tensor while it is a key.
struct Pinned {
  sem::Tensor host, device;
};
std::mutex g_pin_mu;
std::unordered_map<const void*, Pinned> g_pinned;
}  // namespace

void pin_constant(const sem::Tensor& t) {
  if (!t.defined() || !t.device().is_cpu() || t.numel() == 0) return;
  {
    std::lock_guard<std::mutex> lock(g_pin_mu);
    if (g_pinned.count(t.raw())) return;
  }
  sem::Tensor d = to_device(t);
  std::lock_guard<std::mutex> lock(g_pin_mu);
  g_pinned.emplace(t.raw(), Pinned{t, d});
}

sem::Tensor to_device(const sem::Tensor& t, int index) {
  if (!t.defined() || t.device().kind == sem::Device::Kind::cuda) return t;
  {
    std::lock_guard<std::mutex> lock(g_pin_mu);
    if (auto it = g_pinned.find(t.raw()); it != g_pinned.end() &&
                                          it->second.host.dtype() == t.dtype() &&
                                          it->second.host.shape() == t.shape())
      return it->second.device;
  }
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

sem::Value to_device(const sem::Value& v, int index) {
  return map_tensors(v, [index](const sem::Tensor& t) { return to_device(t, index); });
}
sem::Value to_host(const sem::Value& v) {
  return map_tensors(v, [](const sem::Tensor& t) { return to_host(t); });
}

}  // namespace spora::cuda
