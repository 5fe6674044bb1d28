// The communicator interface: what a collective schedule is executed over.
//
// One interface, three implementations:
//   threads   in-process, one thread per rank, shared memory (threads.h) -- tests, one machine
//   mpi       OpenMPI, one process per rank (mpi_comm.h)                  -- CPU ranks, clusters
//   nccl      NCCL, one GPU per rank (nccl_comm.h; built with CUDA)       -- GPUs
//
// A communicator offers exactly what the schedule executor (executor.h) needs, plus the
// backend's own ("native") collectives for comparison:
//   - tagged non-blocking point-to-point (isend / irecv; optionally irecv_reduce, which
//     combines the message into the destination without a staging buffer), completed by
//     wait_some. A message matches the receive with the same (peer, tag).
//   - local copy and reduce, in the communicator's memory space (host memory, or GPU memory
//     for NCCL), plus allocate / upload / download so tests can be written once for all
//     backends.
//   - stream-ordered backends (NCCL) cannot complete requests one by one: every operation is
//     queued on a stream in issue order, send/recv pairs must be issued inside the same
//     group_start / group_end, and wait_some means "synchronize the stream". The executor
//     then issues the schedule in lockstep rounds (parallel/collectives/checker.h).
//
// Element types: f32, f64, i32, i64. Reductions: parallel::ReduceOp (sum, max, min, prod).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::comm {

using parallel::Collective;
using parallel::ReduceOp;

enum class DType { F32, F64, I32, I64 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "f64", "i32", "i64"
std::optional<DType> parse_dtype(std::string_view name);

enum class MemorySpace { Host, Device };

// dst[i] = dst[i] (op) src[i] for i < count, on the host.
void host_reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op);

// A pending non-blocking operation, valid until wait_some reports it complete.
struct Request {
  std::int64_t id = -1;
};

// One native collective call; buffer sizes as in the table of parallel/collectives/schedule.h.
struct CollectiveCall {
  Collective collective = Collective::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  DType dtype = DType::F32;
  std::int64_t count = 0;
  int root = 0;
  const void* input = nullptr;
  void* output = nullptr;
};

// A failure reported by a backend (MPI/NCCL/CUDA error, or a peer that aborted).
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view backend() const = 0;  // "threads", "mpi", "nccl"
  virtual MemorySpace memory_space() const { return MemorySpace::Host; }

  // --- point-to-point ---
  virtual Request isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual bool supports_recv_reduce() const { return false; }
  virtual Request irecv_reduce(void* data, std::size_t count, DType t, ReduceOp op, int peer,
                               int tag);
  // Blocks until at least one of `requests` has completed and returns the positions of all
  // that have; those requests are released.
  virtual std::vector<std::size_t> wait_some(std::span<const Request> requests) = 0;
  virtual bool stream_ordered() const { return false; }
  virtual void group_start() {}
  virtual void group_end() {}
  virtual void synchronize() {}  // waits for all queued work (stream-ordered backends)

  // --- memory in this communicator's space ---
  virtual void copy(void* dst, const void* src, std::size_t bytes);
  virtual void reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op);
  virtual void* allocate(std::size_t bytes);
  virtual void deallocate(void* p);
  virtual void upload(void* dst, const void* host_src, std::size_t bytes);
  virtual void download(void* host_dst, const void* src, std::size_t bytes);

  // --- the backend's own collectives, and a barrier ---
  virtual void native(const CollectiveCall& call) = 0;
  virtual void barrier() = 0;

 private:
  // Host memory (the default allocate/deallocate): freed blocks are kept by size and handed
  // out again, up to kCachedBytes. An executor allocates its scratch and staging on every
  // call; fresh blocks of a few hundred KiB and more come from mmap, and touching them costs a
  // page fault per 4 KiB (W4's partitioned step spent 10 of its 58 ms so).
  static constexpr std::size_t kCachedBytes = std::size_t{256} << 20;
  std::mutex host_mu_;
  std::unordered_map<void*, std::size_t> host_live_;
  std::multimap<std::size_t, void*> host_free_;
  std::size_t host_cached_ = 0;
};

// Owns memory from Communicator::allocate.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Communicator& comm, std::size_t bytes)
      : comm_(&comm), data_(bytes ? comm.allocate(bytes) : nullptr), bytes_(bytes) {}
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~Buffer() {
    if (data_) comm_->deallocate(data_);
  }
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void swap(Buffer& o) {
    std::swap(comm_, o.comm_);
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
  }
  Communicator* comm_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace spora::comm
