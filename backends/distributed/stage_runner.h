// One rank's stage of a pipeline: the schedule of parallel/pipeline/schedule.h run over
// point-to-point sends (pipeline_step.h, step 3), for the training-step harness and for the
// pipelined step of a program's own main() (spmd_runtime.h, step 9).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "parallel/pipeline/setup.h"
#include "semantics/interpreter.h"

namespace spora::comm {
class Communicator;
class GroupView;
}
namespace spora::runtime {
class RunProfiler;
}

namespace spora::distributed {

// Rank r of the world is stage r / |mesh| and rank
// r % |mesh| of the stage's mesh.
class StageRunner {
 public:
  // world.size() must be the setup's stages x mesh (else lang::UserError).
  StageRunner(const parallel::pipeline::PipelineSetup& setup, comm::Communicator& world);
  ~StageRunner();
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  int stage() const { return k_; }
  int inner_rank() const { return me_; }
  const parallel::pipeline::StageProgram& program() const { return sp_; }
  const parallel::pipeline::PartitionedStage& part() const { return ps_; }
  const std::vector<parallel::pipeline::Action>& actions() const { return actions_; }

  // This rank's shard of micro-batch m of data input j (PipelineProgram::data order), cut from
  // the whole batch's value.
  sem::Tensor micro_data(size_t j, const sem::Tensor& whole, int m) const;
  // One step: every micro-batch through this stage by the schedule. `local`: this stage's
  // parameter shards (StageProgram::params order, PartitionedStage::param_layouts); data[m]:
  // micro-batch m's data shards. Returns the parameters' gradient shards, summed over the
  // micro-batches and reduced over the stage's batch axes; `loss` is the sum of the micro-batch
  // losses on the last stage (0 on the others). Runs the collectives of the stage's mesh on
  // the stage's ranks (a collective scope of its own).
  std::vector<sem::Tensor> step(const std::vector<sem::Tensor>& local,
                                const std::vector<std::vector<sem::Tensor>>& data, double& loss);
  // Spans of the forward and backward calls and the receives (null: none).
  void set_profiler(runtime::RunProfiler* profiler);

 private:
  const parallel::pipeline::PipelineSetup& s_;
  comm::Communicator& world_;
  int inner_, k_, me_;
  const parallel::pipeline::StageProgram& sp_;
  const parallel::pipeline::PartitionedStage& ps_;
  sem::Interpreter forward_, backward_;
  std::vector<parallel::pipeline::Action> actions_;
  std::vector<int64_t> group_;
  std::unique_ptr<comm::GroupView> stage_comm_;
  runtime::RunProfiler* profiler_ = nullptr;
};

}  // namespace spora::distributed
