// Communication-computation interference on one device: while a collective runs, its kernels
// hold a share s of the device (NCCL runs one thread block per channel, each on an SM of its
// own), and the compute stream's ops run on what is left.
//
//   cluster spec: device.comm_sm_share: s      (default 0: no interference)
//   spora sim --comm-sm-share S                (overrides it; 0 switches it off)
//
// The model uses SimGrid's CPU sharing of the device's host (speed = peak FLOP/s):
//   - the compute stream runs each stretch of ops as an Exec of seconds x speed (alone: exactly
//     the cost model's time) instead of a sleep;
//   - the communication stream, from the start of a collective (or a bucket's copy in) to its
//     end, holds an Exec bounded at s x speed (CommShare);
//   - max-min sharing then gives the compute stream (1 - s) of the device while they overlap,
//     so an op that overlaps a collective throughout takes 1 / (1 - s) of its time. The
//     collective's own copies and reductions (Execs on the same host) share what is left
//     equally with the compute stream: both slow down, as two memory-bound kernels sharing HBM
//     bandwidth would.
// With s = 0 compute sleeps and nothing changes (bit for bit).
//
// Source for s: an NVIDIA developer-forum measurement on H100 (132 SMs): a concurrent
// ncclAllGather launched 24 thread blocks, one SM each, so s = 24 / 132 = 0.18
// (forums.developer.nvidia.com/t/337991, "Compute-Communication Overlap Causes Severe GEMM
// Performance Degradation because of Tail Effect"). The wave-quantisation tail that thread
// describes (a GEMM of exactly one wave taking two) is not modelled.
#pragma once

#include <simgrid/s4u.hpp>

#include "sim/platform.h"

namespace spora::sim {

// Runs `seconds` of compute-stream work on the calling actor's device: a sleep when `share` is
// 0, else an Exec that shares the device with the communication stream.
void run_compute(const Platform& platform, double seconds, double share);

// Held by a communication stream's actor while it runs a collective: `share` of its device.
class CommShare {
 public:
  explicit CommShare(double share);  // nothing when share is 0
  ~CommShare();
  CommShare(const CommShare&) = delete;
  CommShare& operator=(const CommShare&) = delete;

 private:
  simgrid::s4u::ExecPtr exec_;
};

}  // namespace spora::sim
