// Real sharded training runs of a program's step (train_step.h).
#include "backends/distributed/train_step.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/distributed/pipeline_step.h"
#include "backends/runtime/profile.h"
#include "lang/diagnostics.h"
#include "parallel/layout/shard_data.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/setup.h"
#include "semantics/interpreter.h"
#include "semantics/ir/printer.h"
#include "semantics/registry.h"

namespace spora::distributed {

namespace {

using sem::Tensor;
using sem::TypeP;
using sem::Value;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The number of classes an integer input of the step indexes: from the cross_entropy
// (logits' class axis) or one_hot (depth) it feeds; 2 when it feeds neither.
int64_t classes_of(const ir::Graph& g, const ir::Node* p) {
  for (const ir::Node* n : g.nodes) {
    if (!n->is_apply() || n->inputs.size() < 2) continue;
    if (n->is_prim("cross_entropy") && n->inputs[1] == p) {
      const sem::Type& logits = *n->inputs[0]->type;
      return logits.shape[logits.rank() >= 2 ? 1 : 0];
    }
  }
  for (const ir::Node* n : g.nodes)
    if (n->is_prim("one_hot") && !n->inputs.empty() && n->inputs[0] == p && n->attrs.has("depth"))
      return n->attrs.get_int("depth");
  return 2;
}

// prim(a, b) (or prim(a)) with the kernel of the current backend.
// `a` by value: where the caller moves in the only reference, an elementwise kernel writes its
// result into a's buffer (cpu::reuse_or_empty), as an optimizer updates in place.
Tensor run_prim(const char* prim, Tensor a, const Tensor* b = nullptr) {
  const sem::Primitive* p = sem::Registry::instance().find(prim);
  if (!p) throw lang::InternalError(fmt::format("no primitive {}", prim));
  std::vector<Value> args;
  args.emplace_back(std::move(a));
  if (b) args.emplace_back(*b);
  return sem::kernel_for(*p)(args, {}).tensor;
}
Tensor run_prim(const char* prim, Tensor a, const Tensor& b) {
  return run_prim(prim, std::move(a), &b);
}
Tensor run_prim(const char* prim, Tensor a, double k) {
  const Tensor s = Tensor::scalar(a.dtype(), k);
  return run_prim(prim, std::move(a), &s);
}

comm::DType comm_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return comm::DType::F32;
    case DType::f64:
      return comm::DType::F64;
    case DType::i32:
      return comm::DType::I32;
    case DType::i64:
      return comm::DType::I64;
    default:
      break;
  }
  throw lang::UserError(fmt::format("cannot gather a {} parameter", dtype_name(t)));
}

// The global value of a parameter from every rank's shard: the rank at coordinate 0 of every
// mesh axis that does not split the tensor writes its block, the world sums.
Tensor gather(const Tensor& local, const TypeP& global, const parallel::Layout& l,
              const parallel::Mesh& mesh, comm::Communicator& world) {
  Tensor full = Tensor::zeros(global->dtype, global->shape);
  const std::vector<int64_t> coords = mesh.coords(world.rank());
  bool writer = true;
  for (int a = 0; a < mesh.ndim(); ++a)
    if (l.dim_of_axis(a) < 0 && coords[static_cast<size_t>(a)] != 0) writer = false;
  if (writer) parallel::write_block(full, local, l.shard_offset(global->shape, mesh, world.rank()));
  Tensor sum = Tensor::empty(global->dtype, global->shape);
  comm::CollectiveCall call;
  call.collective = parallel::Collective::AllReduce;
  call.op = parallel::ReduceOp::Sum;
  call.dtype = comm_dtype(global->dtype);
  call.count = full.numel();
  call.input = full.raw();
  call.output = sum.raw();
  world.native(call);
  return sum;
}

}  // namespace

// The optimizer's update of one parameter (or its ZeRO-1 piece) p with gradient g at step t
// (from 1), its state tensors (of p's shape) in `state`: sgd p - lr g; momentum v = 0.9 v + g,
// p - lr v; adam (Kingma & Ba, b1 0.9, b2 0.999, eps 1e-8) m = b1 m + (1 - b1) g,
// v = b2 v + (1 - b2) g^2, p - lr_t m / (sqrt(v) + eps), lr_t = lr sqrt(1 - b2^t) / (1 - b1^t).
// Elementwise, so a shard's update is the shard of the whole update.
Tensor optimizer_update(const std::string& optimizer, Tensor p, const Tensor& g,
                        std::vector<Tensor>& state, double lr, int t) {
  if (optimizer == "sgd") return run_prim("sub", std::move(p), run_prim("mul", g, lr));
  if (optimizer == "momentum") {
    if (state.empty()) state.push_back(Tensor::zeros(g.dtype(), g.shape()));
    state[0] = run_prim("add", run_prim("mul", std::move(state[0]), 0.9), g);
    return run_prim("sub", std::move(p), run_prim("mul", state[0], lr));
  }
  if (optimizer == "adam") {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    if (state.empty())
      state = {Tensor::zeros(g.dtype(), g.shape()), Tensor::zeros(g.dtype(), g.shape())};
    state[0] =
        run_prim("add", run_prim("mul", std::move(state[0]), b1), run_prim("mul", g, 1 - b1));
    state[1] = run_prim("add", run_prim("mul", std::move(state[1]), b2),
                        run_prim("mul", run_prim("mul", g, g), 1 - b2));
    const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    const Tensor denom = run_prim("add", run_prim("sqrt", state[1]), eps);
    return run_prim("sub", std::move(p), run_prim("mul", run_prim("div", state[0], denom), lr_t));
  }
  throw lang::UserError(fmt::format("unknown optimizer '{}' (sgd, momentum, adam)", optimizer));
}

std::vector<Tensor> global_values(const ir::Graph& g, size_t trainable, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> out;
  for (const ir::Node* p : g.params) {
    const TypeP& t = p->type;
    if (!t->is_tensor())
      throw lang::UserError(
          fmt::format("spora run --strategy feeds tensors; the step's input "
                      "'{}' is {}",
                      p->name, t->str()));
    Tensor x = Tensor::zeros(t->dtype, t->shape);
    if (is_float(t->dtype)) {
      // Weights [fan_in, ...] scaled by 1/sqrt(fan_in) (activations stay of order one),
      // biases small, data standard normal.
      double sd = 1;
      const size_t i = out.size();
      if (i < trainable)
        sd = t->rank() >= 2 ? 1 / std::sqrt(static_cast<double>(t->shape[0])) : 0.1;
      std::normal_distribution<double> normal(0.0, sd);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, normal(rng));
    } else if (t->dtype != DType::boolean) {
      std::uniform_int_distribution<int64_t> pick(0, classes_of(g, p) - 1);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(pick(rng)));
    }
    out.push_back(std::move(x));
  }
  return out;
}

parallel::StepOptions step_options(const TrainStepOptions& o, const std::string& strategy_json) {
  parallel::StepOptions so;
  so.entry = o.entry;
  so.batch_name = o.batch_name;
  so.batch = o.batch;
  so.optimizer = o.optimizer;
  so.lr = o.lr;
  if (!strategy_json.empty()) {
    const parallel::Strategy r = parallel::parse_recompute(strategy_json);
    so.recompute_all = r.recompute_all;
    so.recompute = r.recompute;
  }
  return so;
}

parallel::StepGraph build_training_step(const TrainStepOptions& o,
                                        const std::string& strategy_json) {
  return parallel::build_step_graph(o.file, step_options(o, strategy_json));
}

void finish_profile(const runtime::RunProfiler& profiler, const std::string& path,
                    TrainStepResult& r, const std::string& shown) {
  std::ostringstream summary;
  profiler.write(path, summary, 15, shown);
  r.profile_summary = summary.str();
  const sem::Registry& reg = sem::Registry::instance();
  r.collective_seconds = profiler.leaf_seconds([&](const std::string& name) {
    const sem::Primitive* p = reg.find(name);
    return name == "recv" || (p && p->family == "collective");
  });
  r.profiled_seconds = profiler.leaf_seconds([](const std::string&) { return true; });
}

TrainStepResult run_training(const TrainStepOptions& o, comm::Communicator* world,
                             const std::string& strategy_json) {
  if (world && parallel::pipeline::is_pipeline_strategy(strategy_json))
    return run_pipeline(o, *world, strategy_json);
  return run_training(build_training_step(o, strategy_json), o, world, strategy_json);
}

TrainStepResult run_training(const parallel::StepGraph& program, const TrainStepOptions& o,
                             comm::Communicator* world, const std::string& strategy_json) {
  const ir::Graph& step = *program.step;
  const size_t nparams = program.param_names.size();
  std::vector<Tensor> values = global_values(step, nparams, o.seed);

  TrainStepResult r;
  r.names = program.param_names;
  std::vector<std::vector<Tensor>> state(nparams);
  auto count_state = [&] {
    for (const std::vector<Tensor>& st : state) {
      double n = 0;
      for (const Tensor& t : st) n += static_cast<double>(t.numel());
      r.state_elements.push_back(n);
    }
  };
  if (!world || strategy_json.empty()) {
    sem::Interpreter interp(*program.module);  // not shared: one per call
    std::unique_ptr<runtime::RunProfiler> profiler;
    if (!o.profile.empty()) {
      profiler = std::make_unique<runtime::RunProfiler>(nullptr);
      interp.set_trace(profiler->hook());
    }
    for (int it = 0; it < o.steps; ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<Value> args(values.begin(), values.end());
      const Value out = interp.call(&step, std::move(args));
      r.losses.push_back(out.items()[0].tensor.item());
      for (size_t i = 0; i < nparams; ++i) {
        const auto t_update = std::chrono::steady_clock::now();
        values[i] = optimizer_update(o.optimizer, std::move(values[i]), out.items()[i + 1].tensor,
                                     state[i], o.lr, it + 1);
        if (profiler)
          profiler->add_span("update", t_update, seconds_since(t_update), 0, true,
                             values[i].type()->str(), program.param_names[i]);
      }
      r.step_seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    r.params.assign(values.begin(), values.begin() + static_cast<long>(nparams));
    r.program = ir::print_graph(step);
    count_state();
    if (profiler) finish_profile(*profiler, o.profile, r);
    return r;
  }

  parallel::Strategy strategy = parallel::parse_strategy(strategy_json, step);
  const parallel::Mesh& mesh = strategy.mesh;
  if (mesh.size() != world->size())
    throw lang::UserError(
        fmt::format("the strategy's mesh {} has {} devices, but the run has {} "
                    "ranks",
                    mesh.to_string(), mesh.size(), world->size()));
  parallel::Partitioned part = parallel::partition_training_step(step, nparams, strategy);
  r.collectives = part.collectives;
  r.program = ir::print_graph(*part.graph);

  std::vector<Tensor> local;
  for (size_t i = 0; i < values.size(); ++i) {
    const parallel::Layout& l = part.param_layouts[i];
    const TypeP& t = step.params[i]->type;
    local.push_back(parallel::slice_block(values[i], l.shard_offset(t->shape, mesh, world->rank()),
                                          l.local_shape(t->shape, mesh)));
  }
  // ZeRO-1: where this rank's piece of each sharded update sits in its parameter shard.
  std::vector<std::vector<int64_t>> piece_offset(nparams);
  std::vector<std::vector<int64_t>> piece_shape(nparams);
  const int zero_axis = strategy.optimizer_shard;
  for (size_t i = 0; i < part.optimizer_shards.size() && i < nparams; ++i) {
    const parallel::OptimizerShard& z = part.optimizer_shards[i];
    if (o.verbose && world->rank() == 0)
      std::fprintf(stderr, "optimizer_shard: %s %s: %s\n", r.names[i].c_str(),
                   step.params[i]->type->str().c_str(),
                   z.dim >= 0 ? fmt::format("update split along dim {} over {}", z.dim,
                                            mesh.axis_name(zero_axis))
                                    .c_str()
                              : fmt::format("stays replicated ({})", z.reason).c_str());
    if (z.dim < 0) continue;
    const parallel::Layout& grad = part.output_layouts.at(i + 1);
    const std::vector<int64_t>& shape = step.params[i]->type->shape;
    const std::vector<int64_t> whole =
        part.param_layouts[i].shard_offset(shape, mesh, world->rank());
    piece_offset[i] = grad.shard_offset(shape, mesh, world->rank());
    for (size_t d = 0; d < whole.size(); ++d) piece_offset[i][d] -= whole[d];
    piece_shape[i] = grad.local_shape(shape, mesh);
    ++r.gathers;
  }
  const sem::Primitive* all_gather = sem::Registry::instance().find("all_gather");
  comm::CollectiveScope scope(world, mesh.shape);
  sem::Interpreter interp(*part.module);
  std::unique_ptr<runtime::RunProfiler> profiler;
  if (!o.profile.empty()) {
    world->barrier();  // every rank's time counts from here
    profiler = std::make_unique<runtime::RunProfiler>(nullptr, 200000, world->rank());
    interp.set_trace(profiler->hook());
  }
  for (int it = 0; it < o.steps; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Value> args(local.begin(), local.end());
    const Value out = interp.call(part.graph, std::move(args));
    r.losses.push_back(out.items()[0].tensor.item());
    // The update is outside the interpreter: the profile gets its spans from here, a leaf
    // "update" per parameter and a leaf "all_gather" per ZeRO-1 gather.
    const auto span = [&](const char* name, std::chrono::steady_clock::time_point start,
                          const Tensor& t, size_t param) {
      if (profiler)
        profiler->add_span(name, start, seconds_since(start), 0, true, t.type()->str(),
                           program.param_names[param]);
    };
    for (size_t i = 0; i < nparams; ++i) {
      const Tensor& g = out.items()[i + 1].tensor;
      const auto t_update = std::chrono::steady_clock::now();
      if (piece_shape[i].empty()) {
        local[i] = optimizer_update(o.optimizer, std::move(local[i]), g, state[i], o.lr, it + 1);
        span("update", t_update, local[i], i);
        continue;
      }
      // ZeRO-1: update this rank's piece, then all-gather the pieces into the shard.
      Tensor piece = parallel::slice_block(local[i], piece_offset[i], piece_shape[i]);
      const Tensor updated =
          optimizer_update(o.optimizer, std::move(piece), g, state[i], o.lr, it + 1);
      span("update", t_update, updated, i);
      sem::Attrs a;
      a.set("dim", int64_t{part.optimizer_shards[i].dim});
      a.set("axis", int64_t{zero_axis});
      a.set("mesh", mesh.shape);
      const auto t_gather = std::chrono::steady_clock::now();
      local[i] = sem::kernel_for(*all_gather)({Value(updated)}, a).tensor;
      span("all_gather", t_gather, local[i], i);
    }
    r.step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  count_state();
  if (profiler)
    finish_profile(*profiler, runtime::rank_trace_path(o.profile, world->rank()), r, o.profile);
  for (size_t i = 0; i < nparams; ++i)
    r.params.push_back(gather(local[i], step.params[i]->type, part.param_layouts[i], mesh, *world));
  return r;
}

double params_checksum(const std::vector<Tensor>& params) {
  double sum = 0;
  int64_t k = 0;
  for (const Tensor& p : params)
    for (int64_t i = 0; i < p.numel(); ++i, ++k) sum += static_cast<double>(1 + k % 7) * p.get(i);
  return sum;
}

}  // namespace spora::distributed
