// The pipeline simulator's input from a pipeline setup (pipeline_program.h).
#include "sim/pipeline_program.h"

#include <fmt/format.h>

#include <set>

#include "semantics/cost.h"
#include "sim/cost_model.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"

namespace spora::sim {

namespace pp = parallel::pipeline;

PipelineProgram pipeline_program(const pp::PipelineSetup& s, const ClusterSpec& cluster,
                                 const std::string& matmul_dtype, const std::string& optimizer,
                                 UpdateKernel update, CoreSharing sharing) {
  const std::vector<int64_t> mesh = s.inner.mesh.shape;
  // With `running`, one rank per core: the pipeline simulator shares the cores among the
  // passes and updates that run at once (sim/pipeline.h).
  const bool running = sharing == CoreSharing::Running;
  const CostModel model(
      cluster.device, matmul_dtype,
      running
          ? 1
          : ranks_on_node(cluster, static_cast<int>(s.spec.stages * s.inner.mesh.rank_count())));
  PipelineProgram p;
  p.core_sharing = sharing;
  p.stage_devices = s.inner.mesh.rank_count();
  p.replicas = 1;  // data parallelism is inside the stage's mesh
  p.micro_batches = s.spec.micro_batches;
  p.schedule =
      s.spec.schedule == pp::Schedule::GPipe ? PipelineSchedule::GPipe : PipelineSchedule::OneFOneB;
  // b_k already re-runs f_k (parallel/pipeline/pipeline.h): its SPMD program has the
  // recomputation in it, so the simulator must not add it again.
  p.recompute = false;
  const size_t S = s.program.stages.size();
  for (size_t k = 0; k < S; ++k) {
    const pp::StageProgram& sp = s.program.stages[k];
    const pp::PartitionedStage& part = s.parts[k];
    PipelineStage st;
    StageBlock b;
    b.name = fmt::format("stage {}", k);
    b.forward = spmd_program(*part.forward.graph, mesh, 0, "sgd");
    b.backward = spmd_program(*part.backward.graph, mesh, 0, "sgd");
    const ir::Graph& f = *part.forward.graph;
    for (size_t i = 0; i < sp.params.size() && i < f.params.size(); ++i) {
      const sem::TypeP& t = f.params[i]->type;
      st.param_bytes += sem::type_bytes(t);
      int state = 0;
      for (const StepOp& u : update_ops(optimizer, t, state, update))
        st.update_seconds += model.time(u.cost, u.dtype).seconds;
      st.optimizer_state_bytes += state * sem::type_bytes(t);
    }
    st.grad_bytes = st.param_bytes;
    // Gradients partial over the batch's mesh axes are all-reduced once per step, after the
    // last micro-batch (as the runtime does; they are not in the backward program): simulated
    // as a ring over those axes' replicas, then the update.
    double partial_bytes = 0;
    std::set<int64_t> axes;
    for (size_t i = 0; i < part.grad_partial.size() && i < f.params.size(); ++i) {
      if (part.grad_partial[i].empty()) continue;
      partial_bytes += sem::type_bytes(f.params[i]->type);
      axes.insert(part.grad_partial[i].begin(), part.grad_partial[i].end());
    }
    if (partial_bytes > 0) {
      int64_t replicas = 1;
      for (int64_t a : axes) replicas *= mesh.at(static_cast<size_t>(a));
      const int64_t t = s.inner.mesh.size() / replicas;
      SpmdSimOptions sync;
      if (running) sync.ranks_on_node = 1;
      st.update_seconds += gradient_sync_seconds(cluster, replicas, t, partial_bytes, false, sync);
    }
    if (k + 1 < S) st.send_bytes = sem::type_bytes(f.output->type);
    if (sp.takes_activation && sp.params.size() < f.params.size())
      st.activation_bytes = sem::type_bytes(f.params[sp.params.size()]->type);
    st.working_bytes = b.backward.activation_peak;
    st.blocks.push_back(std::move(b));
    p.stages.push_back(std::move(st));
  }
  for (size_t k = 1; k < S; ++k) p.stages[k].cotangent_bytes = p.stages[k - 1].send_bytes;
  return p;
}

}  // namespace spora::sim
