// The run-time context of the collective primitives (ops/collective.cpp): which communicator
// the kernels of all_reduce, all_gather, reduce_scatter, all_to_all and shard_slice talk
// over, and this rank's place in the device mesh. The runners (backends/distributed, tools/)
// set it; the kernels read it.
//
//   comm::Communicator& world = ...;             // one rank per mesh device (MPI, threads)
//   comm::CollectiveScope scope(&world, {2, 2}); // set for this thread until the scope ends
//   interp.call(per_rank_graph, local_args);     // the collectives now run over `world`
//
// The context is thread-local so that the in-process communicator (one thread per rank,
// backends/comm/threads.h) runs one SPMD program per thread in one process (the tests).
// Without a context the kernels throw a user error that says how to get one
// ("all_reduce needs a multi-rank run: spora run --ranks N").
//
// Mesh convention (the same as parallel/layout's Mesh): ranks are laid out row-major over the
// mesh shape, the last axis varies fastest; rank 3 of a [2, 2] mesh has coordinates (1, 1).
// The group of a collective over mesh axes A is the ranks whose coordinates agree with this
// rank's on every axis outside A, ordered by rank (for one axis: by the coordinate on it).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace spora::comm {

class Communicator;

// Sets the calling thread's context (nullptr clears it). The communicator must have exactly
// product(mesh) ranks; the kernels check it.
void set_collective_context(Communicator* comm, std::vector<int64_t> mesh);
Communicator* collective_communicator();

// The whole context, to be restored after a nested one (a pipeline stage's collectives inside a
// run over the world).
struct CollectiveContext {
  Communicator* comm = nullptr;
  std::vector<int64_t> mesh;
  int64_t calls = 0;  // collectives run so far: their message tags
};
CollectiveContext collective_context();
void restore_collective_context(CollectiveContext c);
// The number of the calling thread's next collective (counts from 0 after each
// set_collective_context): every rank runs the same collectives in the same order, so it
// tags their messages.
int64_t next_collective_call();

class CollectiveScope {
 public:
  // Sets the context; the one it replaces comes back when the scope ends.
  CollectiveScope(Communicator* comm, std::vector<int64_t> mesh) : saved_(collective_context()) {
    set_collective_context(comm, std::move(mesh));
  }
  ~CollectiveScope() { restore_collective_context(std::move(saved_)); }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  CollectiveContext saved_;
};

// Row-major mesh arithmetic (see above).
std::vector<int64_t> mesh_coords(const std::vector<int64_t>& mesh, int64_t rank);
int64_t mesh_rank(const std::vector<int64_t>& mesh, const std::vector<int64_t>& coords);
// The ranks of `rank`'s group over `axes`, in rank order.
std::vector<int64_t> mesh_group(const std::vector<int64_t>& mesh, int64_t rank,
                                const std::vector<int64_t>& axes);

}  // namespace spora::comm
