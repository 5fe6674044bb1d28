// The training-step harness: real sharded training runs of a program's step, `spora train-step
// FILE --strategy s.json --ranks N` (tools/cmd_train_step.cpp) and the tests that check a
// sharded run against the single-device one.
//
// Every rank (one MPI process, or one thread of the in-process communicator in tests):
//   1. builds the training step of FILE with the *global* batch (parallel/step/step_graph.h,
//      the simulator's step builder too: the step graph (params..., data...) -> (loss, grads...));
//   2. draws the same seeded global values for every parameter and input of the step (weights
//      normal with sd 1/sqrt(fan_in), biases sd 0.1, float data standard normal; integer inputs
//      uniform over the classes of the cross_entropy or one_hot they feed, else 0 and 1), so
//      every rank and the single-device run see the same numbers;
//   3. partitions the step with the strategy (parallel/partition): the loss comes back
//      replicated, each gradient in its parameter's layout;
//   4. keeps its shard of each value (the layout's block of the global tensor) and runs
//      `steps` steps: the partitioned step, then the optimizer's update of the local shards
//      (sgd p -= lr g; momentum v = 0.9 v + g, p -= lr v; adam with b1 0.9, b2 0.999, eps 1e-8
//      and bias correction), its state (v; m and v) kept per shard. With the strategy's
//      "optimizer_shard" (ZeRO-1) a parameter whose gradient comes back reduce-scattered
//      (parallel::partition_training_step) is updated on that piece only, with state of the
//      piece's size, and the updated piece is all-gathered over the axis into the parameter
//      (the all_gather primitive of ops/collective.cpp) before the next step;
//   5. gathers the updated parameters (one rank per replica group contributes its block, then
//      a sum all-reduce over the world).
// Without a communicator (or without a strategy) the same steps run on the unpartitioned graph:
// the single-device reference. A strategy with a "pipeline" key runs through pipeline_step.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parallel/pipeline/pipeline.h"
#include "parallel/step/step_graph.h"
#include "semantics/value.h"

namespace spora::comm {
class Communicator;
}

namespace spora::runtime {
class RunProfiler;
}

namespace spora::distributed {

struct TrainStepOptions {
  std::string file;
  std::string entry = "main";
  std::string batch_name = "batch";
  std::optional<int64_t> batch;  // global batch; unset: the program's own
  int steps = 3;
  double lr = 0.01;
  uint64_t seed = 1234;
  std::string optimizer = "sgd";  // sgd | momentum | adam
  std::string profile;            // --profile: the merged Chrome trace of every rank's steps
  bool verbose = false;           // rank 0 says which updates ZeRO-1 shards; pipelines: each
                                  // rank prints its stage and schedule (stderr)
  // A pipeline's "split": "auto" balances the stages by this cost of a forward node; the
  // command line passes the simulator's cost rows (sim::node_cost). Unset: the FLOP estimate
  // parallel::pipeline::default_node_cost.
  parallel::pipeline::NodeCost stage_cost;
};

struct TrainStepResult {
  std::vector<double> losses;          // per step
  std::vector<double> step_seconds;    // per step, wall clock of this rank (step and update)
  std::vector<std::string> names;      // of the trainable parameters
  std::vector<sem::Tensor> params;     // global values after the steps (on every rank)
  int collectives = 0;                 // collective nodes in the per-rank step
  int gathers = 0;                     // ZeRO-1: all_gathers of updated shards per step
  std::vector<double> state_elements;  // per parameter: optimizer state elements on this rank
  std::string program;                 // the per-rank step's IR (printed)
  // With o.profile: this rank's trace summary, its seconds in collectives and in a pipeline's
  // receives, and in all the step's primitives (leaves), over every step.
  std::string profile_summary;
  double collective_seconds = 0, profiled_seconds = 0;
};

// The step builder's options for o (its batch the global batch), with the layers the
// strategy's "recompute" names (if any) recomputed in the backward pass; and the training step
// of o.file built with them (parallel/step/step_graph.h).
parallel::StepOptions step_options(const TrainStepOptions& o,
                                   const std::string& strategy_json = "");
parallel::StepGraph build_training_step(const TrainStepOptions& o,
                                        const std::string& strategy_json = "");
// The seeded global value of every parameter and input of a step (step 2 above), and the
// optimizer's update of one parameter (or its ZeRO-1 piece) p with gradient g at step t (from
// 1), its state in `state` (sgd: none; momentum: v; adam: m, v): shared with the pipeline
// runner (pipeline_step.h). A p or state tensor moved in as its only reference is updated in
// its own buffer, as an optimizer's step updates in place.
std::vector<sem::Tensor> global_values(const ir::Graph& g, size_t trainable, uint64_t seed);
sem::Tensor optimizer_update(const std::string& optimizer, sem::Tensor p, const sem::Tensor& g,
                             std::vector<sem::Tensor>& state, double lr, int t);
// Writes a run's trace to `path` (the summary naming `shown`, if given) and keeps the summary,
// the seconds in collectives and receives, and in all leaves, in `r` (--profile).
void finish_profile(const runtime::RunProfiler& profiler, const std::string& path,
                    TrainStepResult& r, const std::string& shown = "");
// strategy_json empty or world null: the single-device reference. The program is only read
// (the ranks of the in-process communicator share one). A strategy with a "pipeline" runs
// through pipeline_step.h (the overload that builds the program).
TrainStepResult run_training(const parallel::StepGraph& program, const TrainStepOptions& o,
                             comm::Communicator* world, const std::string& strategy_json);
TrainStepResult run_training(const TrainStepOptions& o, comm::Communicator* world,
                             const std::string& strategy_json);

// A checksum of parameters: sum over every element of (1 + i mod 7) * value, i the element's
// index across the parameters in order (sensitive to values and their positions).
double params_checksum(const std::vector<sem::Tensor>& params);

}  // namespace spora::distributed
