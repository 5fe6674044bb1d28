// Pipeline schedules (parallel/pipeline/README.md): the order in which one stage runs the
// forward and backward passes of the micro-batches of a training step.
//
//   gpipe   F0 F1 ... F(M-1)  B0 B1 ... B(M-1)                      (GPipe: M activations live)
//   1f1b    stage k of S: warm-up of w = min(S-k-1, M) forwards, then alternately one forward
//           and one backward, then the cool-down of the last w backwards (PipeDream-flush,
//           Megatron-LM's non-interleaved schedule): at most min(S-k, M) activations live.
//
// Both run the backwards in micro-batch order on every stage, so a stage's blocking receives
// (the activation of F(m) from stage k-1, the cotangent of B(m) from stage k+1) always match a
// send that its neighbour reaches without waiting on this stage: no deadlock with non-blocking
// sends.
#pragma once

#include <string>
#include <vector>

namespace spora::parallel::pipeline {

enum class Schedule { OneFOneB, GPipe };

std::string schedule_name(Schedule s);  // "1f1b", "gpipe"

struct Action {
  enum class Kind { Forward, Backward } kind = Kind::Forward;
  int micro = 0;
  friend bool operator==(const Action&, const Action&) = default;
};

// The actions of `stage` (0-based) of a `stages`-stage pipeline over `micro` micro-batches.
std::vector<Action> stage_schedule(Schedule s, int stages, int stage, int micro);

// "F0 F1 B0 F2 B1 B2": what --verbose prints and the tests compare.
std::string schedule_string(const std::vector<Action>& actions);

// The most micro-batches whose forward has run and whose backward has not, over the actions:
// how many stage inputs the stage keeps at once.
int peak_live(const std::vector<Action>& actions);

}  // namespace spora::parallel::pipeline
