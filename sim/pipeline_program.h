// `spora sim FILE --strategy pp.json` and `spora search`'s pipelined candidates: the pipeline
// simulator's input (sim/pipeline.h) from a pipeline setup (parallel/pipeline/setup.h), the
// stage programs of a micro-batch the real pipelined run executes:
//   - one block per stage: its partitioned forward and backward programs (the backward with its
//     recomputation of the forward in it, so PipelineProgram::recompute stays false), as SPMD
//     programs over the stage's mesh (sim/spmd_step.h);
//   - the activation and cotangent bytes between stages, the parameters' bytes and sgd's update;
//   - data parallelism is inside each stage's mesh: the gradients partial over its batch axes
//     are all-reduced once per step after the last micro-batch, as the runtime does (simulated
//     by sim::gradient_sync_seconds over those axes' replicas and counted with the stage's
//     update, so it is exposed, not overlapped with other stages' backward passes).
#pragma once

#include <string>

#include "parallel/pipeline/setup.h"
#include "sim/cluster_spec.h"
#include "sim/pipeline.h"

namespace spora::sim {

// `optimizer` (sgd | momentum | adam): the update each stage runs on its parameters (as
// `update` runs it, sim/step_program.h) and the state it keeps.
PipelineProgram pipeline_program(const parallel::pipeline::PipelineSetup& setup,
                                 const ClusterSpec& cluster, const std::string& matmul_dtype = "",
                                 const std::string& optimizer = "sgd",
                                 UpdateKernel update = UpdateKernel::Ops,
                                 CoreSharing sharing = CoreSharing::Static);

}  // namespace spora::sim
