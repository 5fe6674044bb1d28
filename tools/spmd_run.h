// Real sharded training runs: `spora train-step FILE --strategy s.json --ranks N` (and the tests that
// check a sharded run against the single-device one).
//
// Every rank (one MPI process, or one thread of the in-process communicator in tests):
//   1. builds the training step of FILE with the *global* batch (sim/step_program.h: the step
//      graph (params..., data...) -> (loss, grads...), sgd);
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
// the single-device reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "semantics/value.h"
#include "sim/step_program.h"

namespace spora::comm {
class Communicator;
}

namespace spora::tools {

struct SpmdOptions {
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
};

struct SpmdResult {
  std::vector<double> losses;       // per step
  std::vector<double> step_seconds; // per step, wall clock of this rank (step and update)
  std::vector<std::string> names;   // of the trainable parameters
  std::vector<sem::Tensor> params;  // global values after the steps (on every rank)
  int collectives = 0;              // collective nodes in the per-rank step
  int gathers = 0;                  // ZeRO-1: all_gathers of updated shards per step
  std::vector<double> state_elements;  // per parameter: optimizer state elements on this rank
  std::string program;              // the per-rank step's IR (printed)
  // With o.profile: this rank's trace summary, its seconds in collectives and in a pipeline's
  // receives, and in all the step's primitives (leaves), over every step.
  std::string profile_summary;
  double collective_seconds = 0, profiled_seconds = 0;
};

// The training step of o.file with the global batch, with the layers the strategy's
// "recompute" names (if any) recomputed in the backward pass (sim/step_program.h).
sim::StepProgram build_training_step(const SpmdOptions& o, const std::string& strategy_json = "");
// The seeded global value of every parameter and input of a step (step 2 above), and the
// optimizer's update of one parameter (or its ZeRO-1 piece) p with gradient g at step t (from
// 1), its state in `state` (sgd: none; momentum: v; adam: m, v): shared with the pipeline
// runner (tools/pipeline_run.h).
std::vector<sem::Tensor> global_values(const ir::Graph& g, size_t trainable, uint64_t seed);
sem::Tensor optimizer_update(const std::string& optimizer, const sem::Tensor& p,
                             const sem::Tensor& g, std::vector<sem::Tensor>& state, double lr,
                             int t);
class RunProfiler;
// Writes a run's trace to `path` (the summary naming `shown`, if given) and keeps the summary,
// the seconds in collectives and receives, and in all leaves, in `r` (--profile).
void finish_profile(const RunProfiler& profiler, const std::string& path, SpmdResult& r,
                    const std::string& shown = "");
// strategy_json empty or world null: the single-device reference. The program is only read
// (the ranks of the in-process communicator share one). A strategy with a "pipeline" runs
// through tools/pipeline_run.h (the overload that builds the program).
SpmdResult run_training(const sim::StepProgram& program, const SpmdOptions& o,
                        comm::Communicator* world, const std::string& strategy_json);
SpmdResult run_training(const SpmdOptions& o, comm::Communicator* world,
                        const std::string& strategy_json);

// A checksum of parameters: sum over every element of (1 + i mod 7) * value, i the element's
// index across the parameters in order (sensitive to values and their positions).
double params_checksum(const std::vector<sem::Tensor>& params);

// `spora train-step FILE --strategy S --ranks N`: outside MPI with N > 1, runs itself under mpirun
// (--oversubscribe, one OpenMP thread per rank); inside, the rank's part; rank 0 prints the loss
// per step and the parameters' checksum. N = 1: the single-device reference.
int cmd_run_spmd(const SpmdOptions& o, const std::string& strategy_path, int ranks,
                 const std::vector<std::string>& argv_for_ranks);

// `spora ir FILE --stage partitioned --strategy s.json`: the per-rank step, then the layouts of
// its parameters and the collectives it runs, as comments.
int cmd_ir_partitioned(const SpmdOptions& o, const std::string& strategy_path);

}  // namespace spora::tools
