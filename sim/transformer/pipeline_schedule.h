// Megatron-LM's pipeline schedules, timed: 1F1B (PipeDream-flush) and interleaved 1F1B.
//
// p stages, each holding v model chunks (virtual stages; v = 1 is plain 1F1B), m micro-batches.
// Chunk c of stage k holds virtual stage c p + k: a micro-batch goes through stages 0 .. p-1 for
// chunk 0, then again for chunk 1, and so on; its backward pass goes the other way.
//
// Order of passes on stage k (megatron/schedules.py):
//   1f1b          w = min(p - k - 1, m) forwards, then F(w + i) B(i) pairs, then the last w
//                 backwards (chunk 0 throughout)
//   interleaved   total = m v passes each way; w = min((p - k - 1) 2 + (v - 1) p, total)
//                 (all of them when m = p); then pairs and the rest, as above. The j-th forward
//                 is micro-batch (j / (p v)) p + j mod p of chunk (j mod (p v)) / p; the j-th
//                 backward the same micro-batch of chunk v - 1 - (j mod (p v)) / p.
//
// Timing: a stage runs its passes in that order, each as soon as the stage is free and its
// input has arrived: a forward needs the same micro-batch's forward on the previous virtual
// stage, a backward the next virtual stage's backward (the last virtual stage: its own forward),
// plus the p2p time of the message when the two sit on different stages (`p2p_seconds`; the
// hop from stage p-1 back to stage 0 between chunks too). Sends are asynchronous (a stage does
// not wait for its message to arrive). Deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace spora::sim::transformer {

struct PipelinePass {
  char kind = 'F';  // F or B (B includes any recomputation)
  int64_t micro_batch = 0;
  int64_t chunk = 0;
  double start = 0, end = 0;
};

struct ScheduleInput {
  int64_t stages = 1, chunks = 1, micro_batches = 1;
  // [stage][chunk] seconds of one micro-batch's forward and backward pass.
  std::vector<std::vector<double>> forward, backward;
  double p2p_seconds = 0;
};

struct ScheduleResult {
  std::vector<std::vector<PipelinePass>> passes;  // per stage, in execution order
  std::vector<double> end;                        // per stage: its last pass ends
  std::vector<double> busy;                       // per stage: sum of its passes
  // [stage][chunk]: the last backward pass of that chunk (where its gradients become final).
  std::vector<std::vector<PipelinePass>> last_backward;
  double pipeline_seconds = 0;          // the last pass of any stage
  double bubble_fraction = 0;           // mean over stages of idle / pipeline_seconds
  std::vector<int64_t> peak_in_flight;  // per stage: chunk-micro-batches held at once
};

// The pass order of stage k (times left 0). Throws std::invalid_argument for the interleaved
// schedule when m is not a multiple of p.
std::vector<PipelinePass> stage_order(int64_t k, int64_t p, int64_t v, int64_t m);

// Throws std::invalid_argument for an impossible input (and std::logic_error on a deadlock,
// which the orders above cannot produce).
ScheduleResult run_schedule(const ScheduleInput& in);

}  // namespace spora::sim::transformer
