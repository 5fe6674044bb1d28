// Pipelined training runs (pipeline_run.h).
#include "tools/pipeline_run.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/comm/communicator.h"
#include "backends/comm/group.h"
#include "lang/diagnostics.h"
#include "ops/collective.h"
#include "parallel/layout/shard_data.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/pipeline.h"
#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "semantics/registry.h"
#include "sim/cost.h"
#include "sim/cost_model.h"
#include "sim/step_program.h"
#include "tools/profile.h"

namespace spora::tools {

namespace {

namespace pp = parallel::pipeline;
using sem::Tensor;
using sem::Value;

}  // namespace

struct PipelineSetup {
  sim::StepProgram full, micro;
  pp::PipelineSpec spec;
  parallel::Strategy inner;
  pp::PipelineProgram program;
  std::vector<pp::PartitionedStage> parts;
  int64_t batch = 0, micro_batch = 0;
  std::string origin;
};

namespace {

using Setup = PipelineSetup;

// The sim cost rows (FLOPs + bytes) of a forward node: what "split": "auto" balances.
double node_cost(const ir::Node& n) {
  if (!n.prim || !n.type) return 0;
  std::vector<sem::TypeP> in;
  for (const ir::Node* x : n.inputs) in.push_back(x->type);
  const sim::StepOp op = sim::make_step_op(*n.prim, in, n.type, n.attrs, sim::Phase::Forward);
  return op.cost.flops + op.cost.bytes;
}

Setup setup(const SpmdOptions& o, const std::string& text, const std::string& origin) {
  Setup s;
  s.origin = origin;
  const std::optional<pp::PipelineSpec> spec = pp::parse_pipeline(text, origin);
  if (!spec) throw lang::InternalError("setup of a pipeline without \"pipeline\"");
  s.spec = *spec;
  s.full = build_training_step(o);
  s.batch = s.full.batch;
  const int M = s.spec.micro_batches;
  if (s.batch % M != 0)
    throw lang::UserError(fmt::format("{}: the batch of {} does not split into {} micro-batches",
                                      origin, s.batch, M));
  s.micro_batch = s.batch / M;
  SpmdOptions mo = o;
  mo.batch = s.micro_batch;
  s.micro = build_training_step(mo);
  const ir::Graph& f = *s.full.step;
  const ir::Graph& m = *s.micro.step;
  if (f.params.size() != m.params.size() || s.full.params.size() != s.micro.params.size())
    throw lang::UserError(
        "the step of a micro-batch takes other inputs than the step of the batch");
  for (size_t i = 0; i < f.params.size(); ++i) {
    const sem::Type& a = *f.params[i]->type;
    const sem::Type& b = *m.params[i]->type;
    bool ok = a.rank() == b.rank() && a.dtype == b.dtype;
    for (size_t d = 0; ok && d < a.shape.size(); ++d)
      ok = a.shape[d] == b.shape[d] ||
           (d == 0 && a.shape[0] == s.batch && b.shape[0] == s.micro_batch);
    if (!ok || (i < s.full.params.size() && a.shape != b.shape))
      throw lang::UserError(
          fmt::format("micro-batching splits the inputs along their first dimension (the batch), "
                      "but '{}' is {} "
                      "with a batch of {} and {} with a micro-batch of {}",
                      f.params[i]->name, a.str(), s.batch, b.str(), s.micro_batch));
  }
  s.inner = parallel::parse_strategy(pp::inner_strategy_json(text, origin), m, origin);
  // The stage programs are built and updated here, not by partition_training_step and
  // run_training: say what this runner does not do rather than ignore it.
  if (o.optimizer != "sgd")
    throw lang::UserError(
        fmt::format("{}: a pipeline strategy trains with sgd only for now, not --optimizer {}",
                    origin, o.optimizer));
  if (s.inner.optimizer_shard >= 0 || s.inner.recompute_all || !s.inner.recompute.empty())
    throw lang::UserError(fmt::format(
        "{}: \"optimizer_shard\" and \"recompute\" do not combine with \"pipeline\" yet (the "
        "stages already recompute their forward pass in the backward pass)",
        origin));
  s.program = pp::build_pipeline(m, s.micro.params.size(), s.spec, node_cost);
  s.parts = pp::partition_pipeline(s.program, m, s.inner);
  return s;
}

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

bool is_pipeline_strategy(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() && j.contains("pipeline");
}

int pipeline_ranks(const SpmdOptions& o, const std::string& text, const std::string& origin) {
  const Setup s = setup(o, text, origin);
  return s.spec.stages * s.inner.mesh.rank_count();
}

sim::PipelineProgram pipeline_sim_program(const SpmdOptions& o, const std::string& text,
                                          const std::string& origin,
                                          const sim::ClusterSpec& cluster,
                                          const std::string& matmul_dtype) {
  const Setup s = setup(o, text, origin);
  const std::vector<int64_t> mesh = s.inner.mesh.shape;
  const sim::CostModel model(
      cluster.device, matmul_dtype,
      sim::ranks_on_node(cluster, static_cast<int>(s.spec.stages * s.inner.mesh.rank_count())));
  sim::PipelineProgram p;
  p.stage_devices = s.inner.mesh.rank_count();
  p.replicas = 1;  // data parallelism is inside the stage's mesh
  p.micro_batches = s.spec.micro_batches;
  p.schedule = s.spec.schedule == pp::Schedule::GPipe ? sim::PipelineSchedule::GPipe
                                                      : sim::PipelineSchedule::OneFOneB;
  // b_k already re-runs f_k (parallel/pipeline/pipeline.h): its SPMD program has the
  // recomputation in it, so the simulator must not add it again.
  p.recompute = false;
  const size_t S = s.program.stages.size();
  for (size_t k = 0; k < S; ++k) {
    const pp::StageProgram& sp = s.program.stages[k];
    const pp::PartitionedStage& part = s.parts[k];
    sim::PipelineStage st;
    sim::StageBlock b;
    b.name = fmt::format("stage {}", k);
    b.forward = sim::spmd_program(*part.forward.graph, mesh, 0, "sgd");
    b.backward = sim::spmd_program(*part.backward.graph, mesh, 0, "sgd");
    const ir::Graph& f = *part.forward.graph;
    for (size_t i = 0; i < sp.params.size() && i < f.params.size(); ++i) {
      const sem::TypeP& t = f.params[i]->type;
      st.param_bytes += sim::type_bytes(t);
      int state = 0;
      for (const sim::StepOp& u : sim::update_ops("sgd", t, state))
        st.update_seconds += model.time(u.cost, u.dtype).seconds;
    }
    st.grad_bytes = st.param_bytes;
    // Gradients partial over the batch's mesh axes are all-reduced once per step, after the
    // last micro-batch (as the runtime does; they are not in the backward program): simulated
    // as a ring over those axes' replicas, then the update.
    double partial_bytes = 0;
    std::set<int64_t> axes;
    for (size_t i = 0; i < part.grad_partial.size() && i < f.params.size(); ++i) {
      if (part.grad_partial[i].empty()) continue;
      partial_bytes += sim::type_bytes(f.params[i]->type);
      axes.insert(part.grad_partial[i].begin(), part.grad_partial[i].end());
    }
    if (partial_bytes > 0) {
      int64_t replicas = 1;
      for (int64_t a : axes) replicas *= mesh.at(static_cast<size_t>(a));
      const int64_t t = s.inner.mesh.size() / replicas;
      st.update_seconds += sim::gradient_sync_seconds(cluster, replicas, t, partial_bytes, false);
    }
    if (k + 1 < S) st.send_bytes = sim::type_bytes(f.output->type);
    if (sp.takes_activation && sp.params.size() < f.params.size())
      st.activation_bytes = sim::type_bytes(f.params[sp.params.size()]->type);
    st.working_bytes = b.backward.activation_peak;
    st.blocks.push_back(std::move(b));
    p.stages.push_back(std::move(st));
  }
  for (size_t k = 1; k < S; ++k) p.stages[k].cotangent_bytes = p.stages[k - 1].send_bytes;
  return p;
}

std::string pipeline_ir(const SpmdOptions& o, const std::string& text, const std::string& origin) {
  const Setup s = setup(o, text, origin);
  return fmt::format("# the step of a micro-batch of {} (batch {}), cut into stages\n",
                     s.micro_batch, s.batch) +
         pp::print_pipeline(s.program, s.parts, s.inner);
}

std::shared_ptr<const PipelineSetup> prepare_pipeline(const SpmdOptions& o, const std::string& text,
                                                      const std::string& origin) {
  return std::make_shared<const PipelineSetup>(setup(o, text, origin));
}

SpmdResult run_pipeline(const SpmdOptions& o, comm::Communicator& world, const std::string& text,
                        const std::string& origin) {
  return run_pipeline(*prepare_pipeline(o, text, origin), o, world);
}

SpmdResult run_pipeline(const PipelineSetup& s, const SpmdOptions& o, comm::Communicator& world) {
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
  const size_t nparams = s.full.params.size();
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

  SpmdResult r;
  for (const sim::StepParam& p : s.full.params) r.names.push_back(p.name);
  r.collectives = ps.forward.collectives + ps.backward.collectives;
  r.program = ir::print_module(*ps.forward.module) + ir::print_module(*ps.backward.module);
  if (o.verbose)
    std::fprintf(stderr, "rank %d: stage %d of %d (rank %d of mesh %s), %zu parameters, %s: %s\n",
                 world.rank(), k, S, me, mesh.to_string().c_str(), sp.params.size(),
                 pp::schedule_name(s.spec.schedule).c_str(), pp::schedule_string(actions).c_str());

  // --profile: the forward and backward calls as spans enclosing their nodes, the receives as
  // spans of their own (the pipeline's bubbles), from a barrier every rank left together.
  std::unique_ptr<RunProfiler> profiler;
  if (!o.profile.empty()) {
    world.barrier();
    profiler = std::make_unique<RunProfiler>(nullptr, 200000, world.rank());
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
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0,
          leaf);
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
  if (profiler) finish_profile(*profiler, rank_trace_path(o.profile, world.rank()), r, o.profile);
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

}  // namespace spora::tools
