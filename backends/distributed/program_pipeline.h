// The pipelined step of a program's own main() (spmd_runtime.h step 9): what the compile does.
//
// StepCapture, alive while the program is lowered, takes the first reverse-mode derivative the
// program takes with a seed of 1 (`value_and_grad(loss)(net, x, y)`, `grad(loss)(...)`, also in
// a loop body) as parallel/step/step_graph.h does: it copies the region into a top-level graph
// `pipeline.step`, (leaves..., externals...) -> (loss, gradient of every leaf...), flagged
// noinline, and emits a call of it in place of the derivative. finish() then makes the program
// read the loss from that call as well, so that the region's own forward pass is dead code.
// On one device the call computes what the region did; under a pipeline plan the runtime runs
// the call as the schedule of the stage programs (SpmdRuntime, step 9), whose setup
// (parallel/pipeline/setup.h) is built from the same program with the same capture, so the call's
// arguments are the setup's step parameters in order.
#pragma once

#include <memory>
#include <string>

#include "parallel/pipeline/setup.h"
#include "parallel/step/step_graph.h"
#include "semantics/ir/ir.h"

namespace spora::distributed {

inline constexpr const char* kPipelineStepGraph = "pipeline.step";

// A scalar constant equal to 1: the seed of value_and_grad and grad (a vjp's may be anything).
bool is_unit_seed(const ir::Node* dout);

class StepCapture {
 public:
  StepCapture();   // swaps the process-wide autodiff hook (semantics/ad_hooks.h)
  ~StepCapture();  // restores it
  StepCapture(const StepCapture&) = delete;
  StepCapture& operator=(const StepCapture&) = delete;

  // After the lowering. lang::UserError naming `origin` when the program took no derivative
  // that a pipeline can run (none, or none with a seed of 1 in main's own code or loop bodies).
  void finish(ir::Module& m, const std::string& origin);

 private:
  parallel::ReverseHook saved_;
  bool done_ = false;
  ir::Node* output_ = nullptr;
  ir::Node* loss_ = nullptr;
};

// The pipeline setup of the program at `path` for a strategy text with a "pipeline" key: the
// step of the program's batch (its `let batch = <integer>`) and of a micro-batch, cut into
// stages, each partitioned over the stage's mesh. lang::UserError naming `origin` for what does
// not fit (no `let batch`, micro-batches that do not divide it, a split, a layout).
std::shared_ptr<const parallel::pipeline::PipelineSetup> program_pipeline_setup(
    const std::string& path, const std::string& json_text, const std::string& origin);

}  // namespace spora::distributed
