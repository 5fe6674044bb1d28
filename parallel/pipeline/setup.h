// A pipeline strategy applied to a program: what real pipelined runs
// (backends/distributed/pipeline_step.h), their simulation (sim/pipeline_program.h) and
// `spora ir --stage partitioned` all start from.
//
//   PipelineSetup s = setup_pipeline("model.sp", step_options, json_text, "pp2.json", cost);
//   s.full.step     the step of the global batch B (the seeded values are drawn for it)
//   s.micro.step    the step of a micro-batch B / M: what the stages run
//   s.program       s.micro cut into stages (pipeline.h), by `cost` where "split" is "auto"
//   s.parts         each stage partitioned over the stage's mesh (s.inner: the strategy
//                   without "pipeline")
//
// Checks (lang::UserError naming `origin`): M divides B, the micro-batch's step takes the same
// inputs as the batch's with dimension 0 of the data cut, and what the pipelined runs do not do:
// "optimizer_shard", "recompute" (the stages already recompute their forward pass in the
// backward pass). The optimizer is the consumer's (the harness trains with sgd only). Building swaps the process-wide autodiff hook
// (parallel/step/step_graph.h): build once, share between in-process ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/partition/partition.h"
#include "parallel/pipeline/pipeline.h"
#include "parallel/step/step_graph.h"

namespace spora::parallel::pipeline {

// Whether a strategy JSON text has a "pipeline" key.
bool is_pipeline_strategy(const std::string& json_text);

struct PipelineSetup {
  StepGraph full, micro;
  PipelineSpec spec;
  Strategy inner;
  PipelineProgram program;
  std::vector<PartitionedStage> parts;
  int64_t batch = 0, micro_batch = 0;
  std::string origin;

  int ranks() const { return spec.stages * inner.mesh.rank_count(); }  // stages x mesh
};

// `options.batch`: the global batch (unset: the program's).
PipelineSetup setup_pipeline(const std::string& file, const StepOptions& options,
                             const std::string& json_text, const std::string& origin = "strategy",
                             const NodeCost& cost = default_node_cost);

// The stage programs (forward and backward of every stage, partitioned) as text.
std::string print_setup(const PipelineSetup& setup);

}  // namespace spora::parallel::pipeline
