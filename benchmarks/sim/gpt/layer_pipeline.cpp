#include "layer_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/transformer/comm_model.h"
#include "sim/transformer/kernels.h"
#include "sim/transformer/layer_ops.h"
#include "sim/transformer/pipeline_schedule.h"

namespace spora::gpt_study {

namespace tr = sim::transformer;

namespace {

struct Models {
  tr::CommModel comm;
  tr::KernelTimer timer;
  tr::Group tp, dp;
  double sm_share;
  Models(const sim::ClusterSpec& c, const tr::GptParallel& p, const tr::GptSimOptions& o)
      : comm(c, o.links),
        timer(c.device, p.precision, 2),
        tp(tr::tensor_group(c, p.tp)),
        dp(tr::data_group(c, p.tp, p.dp)),
        sm_share(tr::comm_sm_share(c, o)) {}

  // A pass's seconds and, of them, its exposed collectives (sim-gpt's).
  std::pair<double, double> time(const tr::PassOps& ops) const {
    const tr::PassTime t = tr::time_pass(ops, timer, comm, tp, sm_share);
    return {t.total(), t.total() - t.compute - t.interference};
  }
};

void check_supported(const tr::GptParallel& p) {
  if (p.micro_batch < 1 || p.virtual_stages != 1 || p.zero != 0 ||
      p.recompute != tr::Recompute::Full || p.sequence_parallel)
    throw std::invalid_argument(fmt::format(
        "simulate_with_layer: supports micro-batch >= 1, one chunk per stage, ZeRO 0, full "
        "recomputation, no sequence parallelism; got micro-batch {}, {} chunks, ZeRO {}, "
        "recompute {}, sequence parallel {}",
        p.micro_batch, p.virtual_stages, p.zero, tr::recompute_name(p.recompute),
        p.sequence_parallel));
}

}  // namespace

LayerCost megatron_layer(const sim::ClusterSpec& cluster, const tr::GptModel& model,
                         const tr::GptParallel& par, const tr::GptSimOptions& options) {
  check_supported(par);
  const Models m(cluster, par, options);
  const tr::LayerShape x = tr::layer_shape(model, par, par.micro_batch);
  LayerCost l;
  std::tie(l.forward, l.forward_comm) = m.time(tr::layer_forward(x));
  std::tie(l.backward, l.backward_comm) = m.time(tr::layer_backward(x));
  const double h = x.h, t = x.t;
  l.local_params = (12 * h * h + 7 * h) / t + 6 * h;
  l.stored_bytes = tr::layer_stored_activation_bytes(x, par.recompute);
  l.working_bytes = tr::layer_working_activation_bytes(x);
  return l;
}

tr::GptSimResult simulate_with_layer(const sim::ClusterSpec& cluster, const tr::GptModel& model,
                                     const tr::GptParallel& par, const LayerCost& layer,
                                     const tr::GptSimOptions& opt) {
  check_supported(par);
  const Models mo(cluster, par, opt);
  const int64_t p = par.pp, mb = par.micro_batches(), b = par.micro_batch;
  const double per_stage = static_cast<double>(model.layers / p);
  const tr::LayerShape x = tr::layer_shape(model, par, b);
  const double grad_bytes = x.grad_bytes;
  const double emb = static_cast<double>(model.vocab) / x.t * x.h;
  auto stage_params = [&](int64_t k) {
    double n = per_stage * layer.local_params;
    if (k == 0) n += emb + static_cast<double>(model.seq) * x.h;
    if (k == p - 1) n += emb + 2 * x.h;
    return n;
  };
  // Recomputation re-runs the layer's forward before its backward pass.
  const double lf = layer.forward, lb = layer.forward + layer.backward;
  const double ef = mo.time(tr::embedding_forward(x)).first;
  const double eb = mo.time(tr::embedding_backward(x)).first;
  const double hf = mo.time(tr::head_forward(x)).first;
  const double hb = mo.time(tr::head_backward(x)).first;

  tr::ScheduleInput in;
  in.stages = p;
  in.chunks = 1;
  in.micro_batches = mb;
  in.forward.assign(p, std::vector<double>(1));
  in.backward.assign(p, std::vector<double>(1));
  for (int64_t k = 0; k < p; ++k) {
    double f = per_stage * lf, bw = per_stage * lb;
    if (k == 0) f += ef, bw += eb;
    if (k == p - 1) f += hf, bw += hb;
    in.forward[k][0] = f;
    in.backward[k][0] = bw;
  }
  const bool across = cluster.nodes > 1 && tr::pipeline_crosses_nodes(cluster, par.tp, par.dp);
  const double act = x.b * x.s * x.h * x.E;
  double p2p = 0;
  if (p > 1) {
    if (across && opt.scatter_gather && par.tp > 1)
      p2p = mo.comm.p2p(true, act / x.t) + mo.comm.seconds(tr::CommKind::AllGather, mo.tp, act);
    else
      p2p = mo.comm.p2p(across, act);
  }
  in.p2p_seconds = p2p;
  const tr::ScheduleResult sched = tr::run_schedule(in);

  std::vector<double> sync_end(p);
  for (int64_t k = 0; k < p; ++k) {
    double t = sched.end[k];
    if (par.dp > 1) {
      const double layer_sync =
          mo.comm.seconds(tr::CommKind::AllReduce, mo.dp, layer.local_params * grad_bytes);
      const double extra = stage_params(k) - per_stage * layer.local_params;
      const double extra_sync = mo.comm.seconds(tr::CommKind::AllReduce, mo.dp, extra * grad_bytes);
      if (opt.grad_overlap) {
        const tr::GradientStream g =
            tr::gradient_stream(sched.last_backward[k], t, per_stage, layer_sync, mo.sm_share);
        t = std::max(t + g.delay, g.end) + extra_sync;
      } else {
        t += per_stage * layer_sync + extra_sync;
      }
    }
    sync_end[k] = t;
  }
  if (p > 1) {
    const double emb_sync =
        mo.comm.seconds(tr::CommKind::AllReduce, tr::Group{2, 1}, emb * grad_bytes);
    const double both = std::max(sync_end[0], sync_end[p - 1]);
    sync_end[0] = sync_end[p - 1] = both + emb_sync;
  }
  tr::GptSimResult r;
  for (int64_t k = 0; k < p; ++k) {
    const double end = sync_end[k] + tr::optimizer_seconds(mo.timer, stage_params(k), grad_bytes,
                                                           par.precision == "f16");
    if (end > r.step_seconds) r.step_seconds = end, r.critical_stage = static_cast<int>(k);
  }
  for (int64_t k : {int64_t{0}, p - 1}) {
    tr::GptMemory mem;
    const double params = stage_params(k);
    mem.parameters = params * 2;
    mem.gradients = params * grad_bytes;
    mem.optimizer_state = params * 12;
    mem.activations =
        static_cast<double>(sched.peak_in_flight[k]) * per_stage * layer.stored_bytes +
        layer.working_bytes;
    if (k == p - 1) mem.activations += 4 * x.s * x.b * x.V / x.t;
    mem.cuda_context = opt.cuda_context_bytes;
    const int comms = (par.tp > 1) + (par.dp > 1) + 2 * (p > 1);
    mem.nccl_buffers = comms * opt.nccl_bytes_per_communicator;
    mem.fragmentation = opt.fragmentation * mem.allocated();
    mem.capacity = cluster.device.memory_bytes;
    if (mem.total() > r.memory.total()) r.memory = mem;
  }
  r.fits = r.memory.capacity <= 0 || r.memory.total() <= r.memory.capacity;
  r.model = model;
  r.parallel = par;
  r.cluster = cluster.name;
  r.parameters = tr::parameter_count(model);
  r.model_flops = tr::megatron_model_flops(model, par.global_batch, par.recompute);
  r.tflops_per_gpu = r.model_flops / (r.step_seconds * static_cast<double>(par.gpus())) / 1e12;
  r.pipeline_seconds = sched.pipeline_seconds;
  r.bubble_fraction = sched.bubble_fraction;
  r.layer_forward_seconds = lf;
  r.layer_backward_seconds = lb;
  r.p2p_seconds = p2p;
  return r;
}

}  // namespace spora::gpt_study
