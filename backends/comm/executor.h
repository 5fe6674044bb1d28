// Executes a collective schedule (parallel/collectives/schedule.h) over any communicator.
//
//   Executor ex(schedule, comm, DType::F32);   // per rank: checks, tags, scratch, staging
//   ex.run(input, output);                      // as often as needed
//
// Host backends (threads, MPI) run the rank's step DAG as a dataflow loop:
//   1. every step whose dependencies are done is started: a copy or reduce runs at once; a
//      send or receive is posted non-blocking (a receive-reduce either goes straight to the
//      backend, or lands in a private staging area and is reduced when it completes);
//   2. when nothing else can start, block in wait_some until a message completes;
//   3. completing a step releases the steps that depend on it; repeat until all are done.
// So all independent transfers are in flight at once (e.g. every receive of a round is
// pre-posted), and a rank never spins.
//
// Stream-ordered backends (NCCL) issue the schedule in lockstep rounds instead (see
// lockstep_rounds in parallel/collectives/checker.h): per round, its local steps, then all of
// its sends and receives in one group, then the reductions of staged receives.
//
// Message tags: the k-th message between a pair of ranks carries tag k, so the order in which
// the DAG happens to post messages never matters.
#pragma once

#include <vector>

#include "backends/comm/communicator.h"
#include "parallel/collectives/schedule.h"

namespace spora::comm {

class Executor {
 public:
  // Throws parallel::ScheduleError for a malformed schedule and CommError when the schedule's
  // rank count differs from the communicator's.
  Executor(const parallel::Schedule& schedule, Communicator& comm, DType dtype);

  // input and output in the communicator's memory space, sized as the schedule's collective
  // requires (either may be null where that size is 0).
  void run(const void* input, void* output);

 private:
  std::vector<parallel::Step> steps_;  // this rank's program (a copy: the schedule may go)
  parallel::ReduceOp op_;
  Communicator& comm_;
  DType dtype_;
  int rank_;
  std::vector<int> tag_;               // per step
  std::vector<std::int64_t> staging_;  // per step: element offset in staging_buffer_, or -1
  std::vector<std::vector<int>> dependents_;
  std::vector<std::vector<int>> rounds_;  // stream-ordered backends: step ids per round
  Buffer scratch_, staging_buffer_;
};

// One-shot convenience.
void execute(const parallel::Schedule& schedule, Communicator& comm, DType dtype, const void* input,
             void* output);

}  // namespace spora::comm
