// The NCCL communicator: one GPU per rank; buffers are device memory.
//
//   if (cuda_device_count(&why) < ranks) skip(why);
//   run_nccl_threads(ranks, [&](Communicator& comm) { ... });  // one thread per GPU
//
// NCCL is stream-ordered: isend/irecv become ncclSend/ncclRecv queued on the rank's stream,
// local copies are cudaMemcpyAsync and reductions a small CUDA kernel on the same stream, and
// wait_some synchronizes the stream. The executor therefore issues schedules in lockstep
// rounds, each round's sends and receives inside one ncclGroupStart/ncclGroupEnd. native()
// calls ncclBroadcast, ncclReduce, ncclAllReduce, ncclAllGather, ncclReduceScatter and
// ncclAlltoAll / ncclGather / ncclScatter (grouped ncclSend/ncclRecv before NCCL 2.28).
//
// Built only when CMake finds CUDA and NCCL (SPORA_HAVE_CUDA); otherwise nccl_available() is
// false and cuda_device_count() returns 0 with the reason.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backends/comm/communicator.h"

namespace spora::comm {

bool nccl_available();

// The number of usable GPUs; 0 (and `why`, when given, says why: no CUDA build, or the
// cudaGetDeviceCount error such as cudaErrorInsufficientDriver) when there are none.
int cuda_device_count(std::string* why = nullptr);

// Runs `body` on `ranks` GPUs (devices 0..ranks-1) of this process, one thread each, over
// communicators from ncclCommInitAll. Throws CommError when there are too few GPUs.
void run_nccl_threads(int ranks, const std::function<void(Communicator&)>& body);

// Multi-process setup (e.g. one process per GPU under mpirun): rank 0 creates an id, every
// rank receives it out of band and joins.
std::string nccl_unique_id();
std::unique_ptr<Communicator> make_nccl_communicator(const std::string& unique_id, int ranks,
                                                     int rank, int device);

}  // namespace spora::comm
