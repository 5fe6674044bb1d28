// Pipelined training runs (pipeline_step.h).
#include "backends/distributed/pipeline_step.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "backends/comm/communicator.h"
#include "backends/distributed/stage_runner.h"
#include "backends/runtime/profile.h"
#include "lang/diagnostics.h"
#include "parallel/layout/shard_data.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/pipeline.h"
#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "semantics/registry.h"

namespace spora::distributed {

namespace {

namespace pp = parallel::pipeline;
using sem::Tensor;
using sem::Value;

void all_reduce_sum(comm::Communicator& world, Tensor& t) {
  Tensor sum = Tensor::empty(t.dtype(), t.shape());
  comm::CollectiveCall call;
  call.collective = parallel::Collective::AllReduce;
  call.op = parallel::ReduceOp::Sum;
  call.dtype = t.dtype() == DType::f32 ? comm::DType::F32 : comm::DType::F64;
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    throw lang::UserError(fmt::format("cannot gather a {} parameter", dtype_name(t.dtype())));
  call.count = t.numel();
  call.input = t.raw();
  call.output = sum.raw();
  world.native(call);
  t = sum;
}

}  // namespace

int pipeline_ranks(const TrainStepOptions& o, const std::string& text, const std::string& origin) {
  return prepare_pipeline(o, text, origin)->ranks();
}

std::string pipeline_ir(const TrainStepOptions& o, const std::string& text,
                        const std::string& origin) {
  return pp::print_setup(*prepare_pipeline(o, text, origin));
}

std::shared_ptr<const pp::PipelineSetup> prepare_pipeline(const TrainStepOptions& o,
                                                          const std::string& text,
                                                          const std::string& origin) {
  if (o.optimizer != "sgd")
    throw lang::UserError(fmt::format(
        "{}: `spora train-step` runs a pipeline strategy with sgd only, not --optimizer {} (a "
        "program's own optimizer runs with it under `spora run --strategy`)",
        origin, o.optimizer));
  return std::make_shared<const pp::PipelineSetup>(
      pp::setup_pipeline(o.file, step_options(o), text, origin,
                         o.stage_cost ? o.stage_cost : pp::NodeCost(pp::default_node_cost)));
}

TrainStepResult run_pipeline(const TrainStepOptions& o, comm::Communicator& world,
                             const std::string& text, const std::string& origin) {
  return run_pipeline(*prepare_pipeline(o, text, origin), o, world);
}

TrainStepResult run_pipeline(const pp::PipelineSetup& s, const TrainStepOptions& o,
                             comm::Communicator& world) {
  StageRunner runner(s, world);
  const parallel::Mesh& mesh = s.inner.mesh;
  const int k = runner.stage(), me = runner.inner_rank();
  const int S = s.spec.stages, M = s.spec.micro_batches;
  const pp::StageProgram& sp = runner.program();
  const pp::PartitionedStage& ps = runner.part();
  const ir::Graph& step = *s.full.step;
  const size_t nparams = s.full.param_names.size();
  std::vector<Tensor> values = global_values(step, nparams, o.seed);

  // This rank's shards: its stage's parameters, every micro-batch of the data.
  std::vector<Tensor> local;
  for (size_t j = 0; j < sp.params.size(); ++j) {
    const sem::Shape& shape = step.params[sp.params[j]]->type->shape;
    const parallel::Layout& l = ps.param_layouts[j];
    local.push_back(parallel::slice_block(values[sp.params[j]], l.shard_offset(shape, mesh, me),
                                          l.local_shape(shape, mesh)));
  }
  std::vector<std::vector<Tensor>> data(static_cast<size_t>(M));
  for (size_t j = 0; j < s.program.data.size(); ++j) {
    const size_t i = s.program.data[j];
    for (int m = 0; m < M; ++m)
      data[static_cast<size_t>(m)].push_back(runner.micro_data(j, values[i], m));
  }

  TrainStepResult r;
  r.names = s.full.param_names;
  r.collectives = ps.forward.collectives + ps.backward.collectives;
  r.program = ir::print_module(*ps.forward.module) + ir::print_module(*ps.backward.module);
  if (o.verbose)
    std::fprintf(stderr, "rank %d: stage %d of %d (rank %d of mesh %s), %zu parameters, %s: %s\n",
                 world.rank(), k, S, me, mesh.to_string().c_str(), sp.params.size(),
                 pp::schedule_name(s.spec.schedule).c_str(),
                 pp::schedule_string(runner.actions()).c_str());

  // --profile: the forward and backward calls as spans enclosing their nodes, the receives as
  // spans of their own (the pipeline's bubbles), from a barrier every rank left together.
  std::unique_ptr<runtime::RunProfiler> profiler;
  if (!o.profile.empty()) {
    world.barrier();
    profiler = std::make_unique<runtime::RunProfiler>(nullptr, 200000, world.rank());
    profiler->set_depth_offset(1);
    runner.set_profiler(profiler.get());
  }
  for (int it = 0; it < o.steps; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    double loss = 0;
    std::vector<Tensor> grads = runner.step(local, data, loss);
    for (size_t j = 0; j < sp.params.size(); ++j) {
      std::vector<Tensor> state;  // sgd keeps none (setup refuses the other optimizers)
      local[j] = optimizer_update("sgd", std::move(local[j]), grads[j], state, o.lr, it + 1);
    }
    // The last stage's first rank has the loss (a mean over the micro-batches): to every rank.
    Tensor l = Tensor::scalar(DType::f64, k == S - 1 && me == 0 ? loss / M : 0.0);
    all_reduce_sum(world, l);
    r.losses.push_back(l.item());
    r.step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  runner.set_profiler(nullptr);
  if (profiler)
    finish_profile(*profiler, runtime::rank_trace_path(o.profile, world.rank()), r, o.profile);
  // The owning stage's writers (coordinate 0 on the mesh axes that do not split a parameter)
  // write their blocks; the world sums.
  const std::vector<int64_t> coords = mesh.coords(me);
  for (size_t i = 0; i < nparams; ++i) {
    const sem::TypeP& t = step.params[i]->type;
    Tensor full = Tensor::zeros(t->dtype, t->shape);
    for (size_t j = 0; j < sp.params.size(); ++j) {
      if (sp.params[j] != i) continue;
      const parallel::Layout& l = ps.param_layouts[j];
      bool writer = true;
      for (int a = 0; a < mesh.ndim(); ++a)
        if (l.dim_of_axis(a) < 0 && coords[static_cast<size_t>(a)] != 0) writer = false;
      if (writer) parallel::write_block(full, local[j], l.shard_offset(t->shape, mesh, me));
    }
    all_reduce_sum(world, full);
    r.params.push_back(full);
  }
  return r;
}

}  // namespace spora::distributed
