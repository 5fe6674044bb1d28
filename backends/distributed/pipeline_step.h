// Pipelined training runs of the training-step harness: `spora train-step FILE --strategy
// pp.json --ranks N` for a strategy with a "pipeline" key (parallel/pipeline/pipeline.h), and
// `spora ir --stage partitioned` of one.
//
// Every rank (an MPI process, or a thread of the in-process communicator in tests):
//   1. builds the step with the global batch B (for the seeded values, train_step.h) and
//      with the micro-batch B / M (what the stages run); cuts the latter into stages and
//      partitions each stage over the stage's mesh (the strategy without "pipeline"): the
//      pipeline setup of parallel/pipeline/setup.h, which the simulator's pipeline programs
//      start from too (sim/pipeline_program.h);
//   2. is stage r / |mesh| and rank r % |mesh| inside it; keeps its shard of its stage's
//      parameters and of every micro-batch of the data (rows m B/M .. (m+1) B/M - 1);
//   3. per step runs its stage's schedule (parallel/pipeline/schedule.h): F(m) receives the
//      activation from the same inner rank of stage k-1 (non-blocking sends, blocking
//      receives), runs f_k and sends a_k on (the last stage adds the loss); B(m) receives the
//      cotangent from stage k+1 (the last stage seeds 1/M), runs b_k, sends d act back and
//      adds the parameters' gradients; then sgd on its shards. The step's loss (mean of the
//      micro-batch losses) goes to every rank by a world all-reduce;
//   4. gathers the updated parameters (the owning stage's writers, then a world sum).
#pragma once

#include <memory>
#include <string>

#include "backends/distributed/train_step.h"
#include "parallel/pipeline/setup.h"

namespace spora::distributed {

// The ranks a pipeline strategy needs (stages x mesh), checking it against FILE's step.
int pipeline_ranks(const TrainStepOptions& o, const std::string& json_text,
                   const std::string& origin);

// The pipeline setup every rank derives from FILE and the strategy (step 1; o's step options,
// its stage_cost). Build it once and share it between the threads of an in-process run:
// building a step swaps the process-wide autodiff hook (parallel/step/step_graph.h), so two
// threads must not build at once.
std::shared_ptr<const parallel::pipeline::PipelineSetup> prepare_pipeline(
    const TrainStepOptions& o, const std::string& json_text,
    const std::string& origin = "strategy");
TrainStepResult run_pipeline(const parallel::pipeline::PipelineSetup& setup,
                             const TrainStepOptions& o, comm::Communicator& world);

// world.size() must be pipeline_ranks. Every rank returns the losses and the gathered
// parameters; r.program is this rank's stage programs.
TrainStepResult run_pipeline(const TrainStepOptions& o, comm::Communicator& world,
                             const std::string& json_text, const std::string& origin = "strategy");

// The stage programs (forward and backward of every stage, partitioned) as text.
std::string pipeline_ir(const TrainStepOptions& o, const std::string& json_text,
                        const std::string& origin);

}  // namespace spora::distributed
