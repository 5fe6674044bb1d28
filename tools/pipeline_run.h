// Pipelined training runs: `spora run FILE --strategy pp.json --ranks N` for a strategy with a
// "pipeline" key (parallel/pipeline/pipeline.h), and `spora ir --stage partitioned` of one.
//
// Every rank (an MPI process, or a thread of the in-process communicator in tests):
//   1. builds the step with the global batch B (for the seeded values, tools/spmd_run.h) and
//      with the micro-batch B / M (what the stages run); cuts the latter into stages and
//      partitions each stage over the stage's mesh (the strategy without "pipeline");
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

#include "sim/cluster_spec.h"
#include "sim/pipeline.h"
#include "tools/spmd_run.h"

namespace spora::tools {

bool is_pipeline_strategy(const std::string& json_text);

// The ranks a pipeline strategy needs (stages x mesh), checking it against FILE's step.
int pipeline_ranks(const SpmdOptions& o, const std::string& json_text, const std::string& origin);

// The programs and partitions every rank derives from FILE and the strategy (step 1). Build it
// once and share it between the threads of an in-process run: building a step swaps the
// process-wide autodiff hook (sim/step_program.h), so two threads must not build at once.
struct PipelineSetup;
std::shared_ptr<const PipelineSetup> prepare_pipeline(const SpmdOptions& o,
                                                      const std::string& json_text,
                                                      const std::string& origin = "strategy");
SpmdResult run_pipeline(const PipelineSetup& setup, const SpmdOptions& o,
                        comm::Communicator& world);

// world.size() must be pipeline_ranks. Every rank returns the losses and the gathered
// parameters; r.program is this rank's stage programs.
SpmdResult run_pipeline(const SpmdOptions& o, comm::Communicator& world,
                        const std::string& json_text, const std::string& origin = "strategy");

// `spora sim FILE --strategy pp.json`: the stage programs of a micro-batch as the pipeline
// simulator's input (sim/pipeline.h): one block per stage, its partitioned forward and
// backward programs (the backward with its recomputation of the forward in it), the
// activation and cotangent bytes between stages, the parameters' bytes and sgd's update.
// Data parallelism is inside each stage's mesh: the gradients partial over its batch axes are
// all-reduced once per step after the last micro-batch, as the runtime does (simulated by
// sim::gradient_sync_seconds over those axes' replicas and counted with the stage's update,
// so it is exposed, not overlapped with other stages' backward passes).
sim::PipelineProgram pipeline_sim_program(const SpmdOptions& o, const std::string& json_text,
                                          const std::string& origin,
                                          const sim::ClusterSpec& cluster,
                                          const std::string& matmul_dtype = "");

// The stage programs (forward and backward of every stage, partitioned) as text.
std::string pipeline_ir(const SpmdOptions& o, const std::string& json_text,
                        const std::string& origin);

}  // namespace spora::tools
