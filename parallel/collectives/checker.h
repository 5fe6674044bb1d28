// The symbolic checker: proves that a schedule implements its collective, without executing
// it, and the analyses that executors share with it (message matching, lockstep rounds).
//
// check_schedule runs five passes and reports the first problem, naming the rank, the step
// (in its text form) and the chunk of data involved:
//
//   1. Form: step ids in order, dependencies on earlier steps only, peers are other ranks,
//      regions inside their buffers, the input never written, copy/reduce regions of equal
//      size that do not overlap.
//   2. Matching: the k-th send a -> b meets the k-th receive on b from a, same element count.
//   3. Races: two steps of a rank that touch overlapping elements, at least one writing, must
//      be ordered by a dependency path (executors run unordered steps concurrently).
//   4. Symbolic run under rendezvous semantics (a send and its receive complete together,
//      once both are posted). Each element is a symbol (set of contributing ranks, index of
//      the input element it derives from); a reduction must combine symbols of the same
//      element with disjoint rank sets, so counting a contribution twice, mixing elements or
//      reading never-written data is caught. Steps that never complete are a deadlock.
//   5. Result: every rank's output must hold exactly what the collective defines (see the
//      buffer table in schedule.h); e.g. all-reduce wants element i of all p ranks.
//
// The symbols use a 64-bit rank set, so the checker handles up to 64 ranks. Its cost is
// linear in the elements moved, so it is meant for small counts (it proves the schedule
// generator for a given rank count and count; tests sweep both).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::parallel {

struct CheckResult {
  std::string error;  // empty when the schedule is correct
  bool ok() const { return error.empty(); }
  explicit operator bool() const { return ok(); }
};

CheckResult check_schedule(const Schedule& schedule);

// Whether check_schedule can hold the schedule: at most 64 ranks and 2^26 buffer elements over
// all ranks' input, output and scratch.
bool fits_symbolic_check(const Schedule& schedule);

// An invalid schedule handed to an analysis below (the message is the checker's).
class ScheduleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Passes 1-3 only: true data flow is not checked. Throws ScheduleError.
void validate_schedule(const Schedule& schedule);

// For every communication step, k: it is the k-th message between its (sender, receiver) pair.
// Executors use k as the message tag. Other steps get -1. Throws ScheduleError when unmatched.
std::vector<std::vector<int>> message_sequence(const Schedule& schedule);

// The round in which each step completes when all ranks advance in lockstep, under rendezvous
// semantics: a step is posted one round after its last dependency completed (round 0 if it
// has none); a local step completes when posted; a send and its receive complete together in
// the round where the later of the two is posted. Stream-ordered executors (NCCL) issue round
// by round. Throws ScheduleError on deadlock.
std::vector<std::vector<int>> lockstep_rounds(const Schedule& schedule);

}  // namespace spora::parallel
