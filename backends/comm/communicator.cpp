#include "backends/comm/communicator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/comm/mpi_comm.h"

namespace spora::comm {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
  }
  return "?";
}

// (mpi_comm.h; here, since it is read with or without MPI.)
double collective_timeout_seconds() {
  const char* v = std::getenv("SPORA_COLLECTIVE_TIMEOUT");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const double t = std::strtod(v, &end);
  if (*end || !std::isfinite(t) || t < 0)
    throw CommError(
        std::string("SPORA_COLLECTIVE_TIMEOUT must be a number of seconds (0: none), not '") + v +
        "'");
  return t;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

namespace {

// Plain loops over restrict pointers: the compiler vectorises each of them.
template <typename T>
void reduce_typed(T* __restrict dst, const T* __restrict src, std::size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
      break;
    case ReduceOp::Prod:
      for (std::size_t i = 0; i < n; ++i) dst[i] *= src[i];
      break;
    case ReduceOp::Max:
      for (std::size_t i = 0; i < n; ++i) dst[i] = dst[i] < src[i] ? src[i] : dst[i];
      break;
    case ReduceOp::Min:
      for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
      break;
  }
}

}  // namespace

void host_reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) {
  switch (t) {
    case DType::F32:
      reduce_typed(static_cast<float*>(dst), static_cast<const float*>(src), count, op);
      break;
    case DType::F64:
      reduce_typed(static_cast<double*>(dst), static_cast<const double*>(src), count, op);
      break;
    case DType::I32:
      reduce_typed(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(src), count,
                   op);
      break;
    case DType::I64:
      reduce_typed(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(src), count,
                   op);
      break;
  }
}

Request Communicator::irecv_reduce(void*, std::size_t, DType, ReduceOp, int, int) {
  throw CommError("this communicator cannot receive-and-reduce; stage the message instead");
}

void Communicator::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void Communicator::reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) {
  host_reduce(dst, src, count, t, op);
}

Communicator::~Communicator() {
  for (auto& [size, p] : host_free_) std::free(p);
}

void* Communicator::allocate(std::size_t bytes) {
  // 64-byte aligned, rounded up as aligned_alloc requires.
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
  std::lock_guard<std::mutex> lock(host_mu_);
  void* p = nullptr;
  if (auto it = host_free_.find(size); it != host_free_.end()) {
    p = it->second;
    host_free_.erase(it);
    host_cached_ -= size;
  } else {
    p = std::aligned_alloc(64, size);
    if (!p) throw std::bad_alloc();
  }
  host_live_[p] = size;
  return p;
}

void Communicator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(host_mu_);
  auto it = host_live_.find(p);
  if (it == host_live_.end()) {  // not ours (allocated before a move, say): plain free
    std::free(p);
    return;
  }
  const std::size_t size = it->second;
  host_live_.erase(it);
  if (host_cached_ + size > kCachedBytes) {
    std::free(p);
    return;
  }
  host_free_.emplace(size, p);
  host_cached_ += size;
}

void Communicator::upload(void* dst, const void* host_src, std::size_t bytes) {
  copy(dst, host_src, bytes);
}

void Communicator::download(void* host_dst, const void* src, std::size_t bytes) {
  copy(host_dst, src, bytes);
}

}  // namespace spora::comm
