// A communicator over a subset of another one's ranks (the group of a collective over some
// mesh axes, ops/collective.cpp): rank i of the view is world rank group[i]. Point-to-point
// messages, memory and waits go to the world communicator with the peers translated, so every
// schedule of parallel/collectives runs on a group with the Executor (backends/comm/executor.h).
// The world's native collectives and barrier span the whole world: the view has neither.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/comm/communicator.h"

namespace spora::comm {

class GroupView final : public Communicator {
 public:
  // `group`: world ranks, each once, including world.rank(). Throws CommError otherwise.
  GroupView(Communicator& world, std::vector<std::int64_t> group);

  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(group_.size()); }
  std::string_view backend() const override { return world_.backend(); }
  MemorySpace memory_space() const override { return world_.memory_space(); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  bool supports_recv_reduce() const override { return world_.supports_recv_reduce(); }
  Request irecv_reduce(void* data, std::size_t count, DType t, ReduceOp op, int peer,
                       int tag) override;
  std::vector<std::size_t> wait_some(std::span<const Request> requests) override {
    return world_.wait_some(requests);
  }
  bool stream_ordered() const override { return world_.stream_ordered(); }
  void group_start() override { world_.group_start(); }
  void group_end() override { world_.group_end(); }
  void synchronize() override { world_.synchronize(); }

  void copy(void* dst, const void* src, std::size_t bytes) override { world_.copy(dst, src, bytes); }
  void reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) override {
    world_.reduce(dst, src, count, t, op);
  }
  void* allocate(std::size_t bytes) override { return world_.allocate(bytes); }
  void deallocate(void* p) override { world_.deallocate(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override { world_.upload(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override {
    world_.download(dst, src, bytes);
  }

  void native(const CollectiveCall& call) override;  // throws CommError
  void barrier() override;                            // throws CommError

 private:
  int world_rank(int peer) const;
  Communicator& world_;
  std::vector<std::int64_t> group_;
  int me_ = -1;
};

}  // namespace spora::comm
