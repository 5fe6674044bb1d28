// A communicator that behaves as a device-memory one (NCCL's contract) over any host one, and
// checks that contract: the collective kernels (ops/collective.cpp) and the schedule executor
// must hand it only buffers it allocated, stage host data through upload / download, issue
// point-to-point messages inside group_start / group_end, and wait for them all at once.
//
//   comm::DeviceCheck checked(mpi_world);       // memory_space() == Device, stream-ordered
//   comm::CollectiveScope scope(&checked, mesh);
//
// A host pointer given to isend, irecv, copy, reduce or native (anything outside the blocks
// allocate() returned) throws CommError naming the call. Stream order is kept as NCCL keeps it:
// messages posted inside a group are queued at its group_end, and a copy, reduce, upload,
// download, wait or the next group first completes every message queued before it (a copy issued
// inside an open group runs before that group's messages, as a cudaMemcpyAsync would). Its "device"
// blocks are host memory, so a CPU-only machine runs every code path a GPU rank runs over NCCL;
// `spora run --ranks N` wraps its MPI world in one when SPORA_COMM_DEVICE_CHECK=1
// (tests/distributed).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/comm/communicator.h"

namespace spora::comm {

class DeviceCheck final : public Communicator {
 public:
  explicit DeviceCheck(Communicator& host) : host_(host) {}
  ~DeviceCheck() override;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string_view backend() const override { return "device-check"; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  bool stream_ordered() const override { return true; }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  // Every request completes before it returns (NCCL's wait is a stream synchronisation).
  std::vector<std::size_t> wait_some(std::span<const Request> requests) override;
  void group_start() override;
  void group_end() override;
  void synchronize() override { drain(); }

  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) override;
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p) override;
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;

  void native(const CollectiveCall& call) override;
  void barrier() override { host_.barrier(); }

  // Messages posted outside a group_start / group_end pair (NCCL deadlocks on a send and a
  // receive between two ranks posted apart); the kernels keep this at 0.
  std::int64_t ungrouped_messages() const { return ungrouped_; }

 private:
  // Throws unless [p, p + bytes) lies inside one allocated block.
  void check(const void* p, std::size_t bytes, const char* what) const;
  // Completes every message queued so far (not those of the open group).
  void drain();
  // Queues a posted message: now when no group is open, else at the group's end.
  Request post(Request r);
  std::vector<Request> queued_, in_group_;
  Communicator& host_;
  mutable std::mutex mu_;
  std::map<const char*, std::size_t> blocks_;  // start -> size
  int group_depth_ = 0;
  std::int64_t ungrouped_ = 0;
};

}  // namespace spora::comm
