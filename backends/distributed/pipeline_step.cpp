// Pipelined training runs (pipeline_step.h).
#include "backends/distributed/pipeline_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "backends/comm/communicator.h"
#include "backends/comm/group.h"
#include "backends/runtime/profile.h"
#include "lang/diagnostics.h"
#include "ops/collective.h"
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

void wait(comm::Communicator& c, comm::Request r) {
  const std::vector<comm::Request> one{r};
  while (c.wait_some(one).empty()) {
  }
}

void wait_all(comm::Communicator& c, std::vector<comm::Request>& rs) {
  while (!rs.empty()) {
    const std::vector<size_t> done = c.wait_some(rs);
    std::vector<comm::Request> rest;
    for (size_t i = 0; i < rs.size(); ++i)
      if (std::find(done.begin(), done.end(), i) == done.end()) rest.push_back(rs[i]);
    rs = std::move(rest);
  }
}

// Tags of the pipeline's messages: above the collective kernels' (100 .. 30100).
int tag(int micro, bool backward) { return 30200 + (2 * micro) % 2400 + (backward ? 1 : 0); }

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
  const std::string& origin = s.origin;
  const parallel::Mesh& mesh = s.inner.mesh;
  const int inner = mesh.rank_count();
  const int S = s.spec.stages, M = s.spec.micro_batches;
  if (world.size() != S * inner)
    throw lang::UserError(
        fmt::format("the pipeline of {} has {} stages x mesh {} = {} ranks, but "
                    "the run has {}",
                    origin, S, mesh.to_string(), S * inner, world.size()));
  const int k = world.rank() / inner, me = world.rank() % inner;
  const pp::StageProgram& sp = s.program.stages[static_cast<size_t>(k)];
  const pp::PartitionedStage& ps = s.parts[static_cast<size_t>(k)];
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
    const sem::Shape& global = step.params[i]->type->shape;
    const sem::Shape& shape = s.micro.step->params[i]->type->shape;
    const parallel::Layout& l = ps.data_layouts[j];
    for (int m = 0; m < M; ++m) {
      std::vector<int64_t> offset(shape.size(), 0);
      if (!shape.empty() && shape[0] != global[0]) offset[0] = m * shape[0];
      const Tensor micro = parallel::slice_block(values[i], offset, shape);
      data[static_cast<size_t>(m)].push_back(parallel::slice_block(
          micro, l.shard_offset(shape, mesh, me), l.local_shape(shape, mesh)));
    }
  }

  std::vector<int64_t> group;
  for (int i = 0; i < inner; ++i) group.push_back(int64_t{k} * inner + i);
  comm::GroupView stage_comm(world, group);
  ops::CollectiveScope scope(&stage_comm, mesh.shape);
  sem::Interpreter forward(*ps.forward.module), backward(*ps.backward.module);
  const std::vector<pp::Action> actions = pp::stage_schedule(s.spec.schedule, S, k, M);
  const int prev = (k - 1) * inner + me, next = (k + 1) * inner + me;
  const sem::TypeP act_type =
      sp.takes_activation ? ps.forward.graph->params[sp.params.size()]->type : nullptr;
  const sem::TypeP ct_type = ps.backward.graph->params.back()->type;

  TrainStepResult r;
  r.names = s.full.param_names;
  r.collectives = ps.forward.collectives + ps.backward.collectives;
  r.program = ir::print_module(*ps.forward.module) + ir::print_module(*ps.backward.module);
  if (o.verbose)
    std::fprintf(stderr, "rank %d: stage %d of %d (rank %d of mesh %s), %zu parameters, %s: %s\n",
                 world.rank(), k, S, me, mesh.to_string().c_str(), sp.params.size(),
                 pp::schedule_name(s.spec.schedule).c_str(), pp::schedule_string(actions).c_str());

  // --profile: the forward and backward calls as spans enclosing their nodes, the receives as
  // spans of their own (the pipeline's bubbles), from a barrier every rank left together.
  std::unique_ptr<runtime::RunProfiler> profiler;
  if (!o.profile.empty()) {
    world.barrier();
    profiler = std::make_unique<runtime::RunProfiler>(nullptr, 200000, world.rank());
    profiler->set_depth_offset(1);
    forward.set_trace(profiler->hook());
    backward.set_trace(profiler->hook());
  }
  auto timed = [&](const std::string& name, bool leaf, auto&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto v = f();
    if (profiler)
      profiler->add_span(
          name, start,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0, leaf);
    return v;
  };
  auto receive = [&](const sem::TypeP& t, int peer, int tg) {
    return timed("recv", true, [&] {
      Tensor x = Tensor::empty(t->dtype, t->shape);
      wait(world, world.irecv(x.raw(), x.nbytes(), peer, tg));
      return x;
    });
  };
  static const sem::Primitive* add = sem::Registry::instance().find("add");  // gradient sums
  for (int it = 0; it < o.steps; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> grads;
    std::map<int, Tensor> acts;  // received activations kept for the backward
    std::vector<Tensor> sent;
    std::vector<comm::Request> sends;
    auto send = [&](const Tensor& x, int peer, int tg) {
      sent.push_back(x);
      sends.push_back(world.isend(sent.back().raw(), x.nbytes(), peer, tg));
    };
    double loss = 0;
    for (const pp::Action& a : actions) {
      const int m = a.micro;
      std::vector<Value> args(local.begin(), local.end());
      if (a.kind == pp::Action::Kind::Forward) {
        if (sp.takes_activation) {
          acts[m] = receive(act_type, prev, tag(m, false));
          args.emplace_back(acts[m]);
        }
        for (const Tensor& d : data[static_cast<size_t>(m)]) args.emplace_back(d);
        const Value out = timed(fmt::format("forward {}", m), false,
                                [&] { return forward.call(ps.forward.graph, std::move(args)); });
        if (k == S - 1)
          loss += out.tensor.item();
        else
          send(out.tensor, next, tag(m, false));
        continue;
      }
      if (sp.takes_activation) args.emplace_back(acts.at(m));
      for (const Tensor& d : data[static_cast<size_t>(m)]) args.emplace_back(d);
      args.emplace_back(k == S - 1 ? Tensor::scalar(ct_type->dtype, 1.0 / M)
                                   : receive(ct_type, next, tag(m, true)));
      const Value out = timed(fmt::format("backward {}", m), false,
                              [&] { return backward.call(ps.backward.graph, std::move(args)); });
      const std::vector<Value>& items = out.items();
      size_t at = 0;
      if (sp.takes_activation) send(items[at++].tensor, prev, tag(m, true));
      for (size_t j = 0; j < sp.params.size(); ++j, ++at) {
        if (grads.size() <= j)
          grads.push_back(items[at].tensor);
        else
          grads[j] = sem::kernel_for(*add)({Value(grads[j]), Value(items[at].tensor)}, {}).tensor;
      }
      acts.erase(m);
    }
    wait_all(world, sends);
    // Gradients left partial over the stage's batch axes: one all-reduce per step.
    for (size_t j = 0; j < sp.params.size(); ++j) {
      if (ps.grad_partial[j].empty()) continue;
      static const sem::Primitive* all_reduce = sem::Registry::instance().find("all_reduce");
      sem::Attrs attrs;
      attrs.set("axes", ps.grad_partial[j]);
      attrs.set("mesh", mesh.shape);
      grads[j] = timed("all_reduce", true, [&] {
        return sem::kernel_for(*all_reduce)({Value(grads[j])}, attrs).tensor;
      });
    }
    for (size_t j = 0; j < sp.params.size(); ++j) {
      std::vector<Tensor> state;  // sgd keeps none (setup refuses the other optimizers)
      local[j] = optimizer_update("sgd", local[j], grads[j], state, o.lr, it + 1);
    }
    // The last stage's first rank has the loss (a mean over the micro-batches): to every rank.
    Tensor l = Tensor::scalar(DType::f64, k == S - 1 && me == 0 ? loss / M : 0.0);
    all_reduce_sum(world, l);
    r.losses.push_back(l.item());
    r.step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
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
