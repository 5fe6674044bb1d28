// One rank's stage of a pipeline (stage_runner.h).
#include "backends/distributed/stage_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/comm/group.h"
#include "backends/runtime/profile.h"
#include "lang/diagnostics.h"
#include "parallel/layout/shard_data.h"
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

}  // namespace

StageRunner::StageRunner(const pp::PipelineSetup& s, comm::Communicator& world)
    : s_(s),
      world_(world),
      inner_(s.inner.mesh.rank_count()),
      k_(world.rank() / inner_),
      me_(world.rank() % inner_),
      sp_(s.program.stages.at(static_cast<size_t>(k_))),
      ps_(s.parts.at(static_cast<size_t>(k_))),
      forward_(*ps_.forward.module),
      backward_(*ps_.backward.module),
      actions_(pp::stage_schedule(s.spec.schedule, s.spec.stages, k_, s.spec.micro_batches)) {
  const int S = s.spec.stages;
  if (world.size() != S * inner_)
    throw lang::UserError(
        fmt::format("the pipeline of {} has {} stages x mesh {} = {} ranks, but "
                    "the run has {}",
                    s.origin, S, s.inner.mesh.to_string(), S * inner_, world.size()));
  for (int i = 0; i < inner_; ++i) group_.push_back(int64_t{k_} * inner_ + i);
  stage_comm_ = std::make_unique<comm::GroupView>(world, group_);
}

StageRunner::~StageRunner() = default;

void StageRunner::set_profiler(runtime::RunProfiler* profiler) {
  profiler_ = profiler;
  forward_.set_trace(profiler ? profiler->hook() : sem::TraceHook());
  backward_.set_trace(profiler ? profiler->hook() : sem::TraceHook());
}

std::vector<Tensor> StageRunner::step(const std::vector<Tensor>& local,
                                      const std::vector<std::vector<Tensor>>& data, double& loss) {
  const int S = s_.spec.stages, M = s_.spec.micro_batches;
  const int k = k_, inner = inner_;
  const pp::StageProgram& sp = sp_;
  const pp::PartitionedStage& ps = ps_;
  comm::Communicator& world = world_;
  comm::CollectiveScope scope(stage_comm_.get(), s_.inner.mesh.shape);
  const int prev = (k - 1) * inner + me_, next = (k + 1) * inner + me_;
  const sem::TypeP act_type =
      sp.takes_activation ? ps.forward.graph->params[sp.params.size()]->type : nullptr;
  const sem::TypeP ct_type = ps.backward.graph->params.back()->type;
  auto timed = [&](const std::string& name, bool leaf, auto&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto v = f();
    if (profiler_)
      profiler_->add_span(
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
  std::vector<Tensor> grads;
  std::map<int, Tensor> acts;  // received activations kept for the backward
  std::vector<Tensor> sent;
  std::vector<comm::Request> sends;
  // Messages go over the world (MPI) from host memory: a GPU rank's tensor is sent from its
  // host copy, and what arrives stays on the host until a device kernel takes it.
  auto send = [&](const Tensor& x, int peer, int tg) {
    sent.push_back(sem::host_tensor(x));
    sends.push_back(world.isend(sent.back().raw(), x.nbytes(), peer, tg));
  };
  loss = 0;
  for (const pp::Action& a : actions_) {
    const int m = a.micro;
    std::vector<Value> args(local.begin(), local.end());
    if (a.kind == pp::Action::Kind::Forward) {
      if (sp.takes_activation) {
        acts[m] = receive(act_type, prev, tag(m, false));
        args.emplace_back(acts[m]);
      }
      for (const Tensor& d : data.at(static_cast<size_t>(m))) args.emplace_back(d);
      const Value out = timed(fmt::format("forward {}", m), false,
                              [&] { return forward_.call(ps.forward.graph, std::move(args)); });
      if (k == S - 1)
        loss += out.tensor.item();
      else
        send(out.tensor, next, tag(m, false));
      continue;
    }
    if (sp.takes_activation) args.emplace_back(acts.at(m));
    for (const Tensor& d : data.at(static_cast<size_t>(m))) args.emplace_back(d);
    args.emplace_back(k == S - 1 ? Tensor::scalar(ct_type->dtype, 1.0 / M)
                                 : receive(ct_type, next, tag(m, true)));
    const Value out = timed(fmt::format("backward {}", m), false,
                            [&] { return backward_.call(ps.backward.graph, std::move(args)); });
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
    attrs.set("mesh", s_.inner.mesh.shape);
    grads[j] = timed("all_reduce", true, [&] {
      return sem::kernel_for(*all_reduce)({Value(grads[j])}, attrs).tensor;
    });
  }
  return grads;
}

Tensor StageRunner::micro_data(size_t j, const Tensor& whole, int m) const {
  const size_t i = s_.program.data.at(j);
  const sem::Shape& global = s_.full.step->params[i]->type->shape;
  const sem::Shape& shape = s_.micro.step->params[i]->type->shape;
  const parallel::Layout& l = ps_.data_layouts.at(j);
  const parallel::Mesh& mesh = s_.inner.mesh;
  std::vector<int64_t> offset(shape.size(), 0);
  if (!shape.empty() && shape[0] != global[0]) offset[0] = m * shape[0];
  const Tensor micro = parallel::slice_block(whole, offset, shape);
  return parallel::slice_block(micro, l.shard_offset(shape, mesh, me_), l.local_shape(shape, mesh));
}

}  // namespace spora::distributed
