#include "sim/transformer/gpt_sim.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/transformer/kernels.h"
#include "sim/transformer/layer_ops.h"

namespace spora::sim::transformer {

namespace {

struct Step {
  const ClusterSpec& cluster;
  const GptModel& model;
  const GptParallel& par;
  const GptSimOptions& opt;
  CommModel comm;
  KernelTimer timer;
  Group tp, dp;
  double sm_share;  // of the GPU a running collective holds

  Step(const ClusterSpec& c, const GptModel& m, const GptParallel& p, const GptSimOptions& o)
      : cluster(c),
        model(m),
        par(p),
        opt(o),
        comm(c, o.links),
        timer(c.device, p.precision, 2),
        tp(tensor_group(c, p.tp)),
        dp(data_group(c, p.tp, p.dp)),
        sm_share(comm_sm_share(c, o)) {}

  PassTime time(const PassOps& ops) const { return time_pass(ops, timer, comm, tp, sm_share); }

  double local_layer_params() const {
    const double h = static_cast<double>(model.hidden), t = static_cast<double>(par.tp);
    return (12 * h * h + 7 * h) / t + 6 * h;
  }
  double embedding_params() const {
    return static_cast<double>(model.vocab) / static_cast<double>(par.tp) *
           static_cast<double>(model.hidden);
  }
  double stage_params(int64_t k) const {
    const double layers = static_cast<double>(model.layers / par.pp);
    double p = layers * local_layer_params();
    if (k == 0) p += embedding_params() + static_cast<double>(model.seq * model.hidden);
    if (k == par.pp - 1) p += embedding_params() + 2 * static_cast<double>(model.hidden);
    return p;
  }
  double grad_bytes() const { return par.precision == "bf16" ? 4 : 2; }
};

GptSimResult simulate_one(const Step& st, int64_t b) {
  const GptModel& m = st.model;
  GptParallel par = st.par;
  par.micro_batch = b;
  const int64_t p = par.pp, v = par.virtual_stages, mb = par.micro_batches();
  const double layers_per_chunk = static_cast<double>(m.layers / (p * v));
  const LayerShape x = layer_shape(m, par, b);

  PassTime lf = st.time(layer_forward(x));
  PassTime lb = st.time(layer_recompute(x, par.recompute));
  lb.add(st.time(layer_backward(x)));
  // ZeRO-2/3: each layer's gradients reduce-scattered in every backward pass; ZeRO-3: its
  // parameters all-gathered before every pass that uses them.
  const double layer_param_bytes = st.local_layer_params() * 2;
  if (par.zero >= 2)
    lb.comm["dp-reduce-scatter"] +=
        st.comm.seconds(CommKind::ReduceScatter, st.dp, st.local_layer_params() * st.grad_bytes());
  if (par.zero == 3) {
    const double ag = st.comm.seconds(CommKind::AllGather, st.dp, layer_param_bytes);
    lf.comm["dp-all-gather"] += ag;
    lb.comm["dp-all-gather"] += ag * (par.recompute == Recompute::Full ? 2 : 1);
  }
  const PassTime ef = st.time(embedding_forward(x)), eb = st.time(embedding_backward(x));
  const PassTime hf = st.time(head_forward(x)), hb = st.time(head_backward(x));

  ScheduleInput in;
  in.stages = p;
  in.chunks = v;
  in.micro_batches = mb;
  in.forward.assign(p, std::vector<double>(v));
  in.backward.assign(p, std::vector<double>(v));
  std::vector<PassTime> stage_total(p);  // per stage, the whole step's passes
  for (int64_t k = 0; k < p; ++k)
    for (int64_t c = 0; c < v; ++c) {
      PassTime f, bw;
      f.add(lf, layers_per_chunk);
      bw.add(lb, layers_per_chunk);
      if (k == 0 && c == 0) f.add(ef), bw.add(eb);
      if (k == p - 1 && c == v - 1) f.add(hf), bw.add(hb);
      in.forward[k][c] = f.total();
      in.backward[k][c] = bw.total();
      stage_total[k].add(f, static_cast<double>(mb));
      stage_total[k].add(bw, static_cast<double>(mb));
    }
  const bool across = st.cluster.nodes > 1 && pipeline_crosses_nodes(st.cluster, par.tp, par.dp);
  const double act = x.b * x.s * x.h * x.E;
  double p2p = 0;
  if (p > 1) {
    if (x.sp) {
      p2p = st.comm.p2p(across, act / x.t);
    } else if (across && st.opt.scatter_gather && par.tp > 1) {
      p2p = st.comm.p2p(true, act / x.t) + st.comm.seconds(CommKind::AllGather, st.tp, act);
    } else {
      p2p = st.comm.p2p(across, act);
    }
  }
  in.p2p_seconds = p2p;
  const ScheduleResult sched = run_schedule(in);

  // After the passes: gradient sync, embedding sync, optimizer, ZeRO gather; per stage.
  const CommKind sync_kind = par.zero >= 1 ? CommKind::ReduceScatter : CommKind::AllReduce;
  std::vector<double> sync_end(p), pipeline_end(p), overlap_delay(p);
  for (int64_t k = 0; k < p; ++k) {
    pipeline_end[k] = sched.end[k];
    double t = sched.end[k];
    if (par.dp > 1 && par.zero < 2) {
      const double layer_bytes = st.local_layer_params() * st.grad_bytes();
      const double layer_sync = st.comm.seconds(sync_kind, st.dp, layer_bytes);
      const double extra =
          st.stage_params(k) - static_cast<double>(m.layers / p) * st.local_layer_params();
      const double extra_sync = st.comm.seconds(sync_kind, st.dp, extra * st.grad_bytes());
      if (st.opt.grad_overlap) {
        // Chunks finish their last backward in reverse order; inside one, layers in reverse.
        const GradientStream g = gradient_stream(sched.last_backward[k], sched.end[k],
                                                 layers_per_chunk, layer_sync, st.sm_share);
        overlap_delay[k] = g.delay;
        pipeline_end[k] += g.delay;
        t = std::max(pipeline_end[k], g.end) + extra_sync;
      } else {
        t += static_cast<double>(m.layers / p) * layer_sync + extra_sync;
      }
    }
    sync_end[k] = t;
  }
  double emb_sync = 0;
  if (p > 1) {
    emb_sync =
        st.comm.seconds(CommKind::AllReduce, Group{2, 1}, st.embedding_params() * st.grad_bytes());
    const double both = std::max(sync_end[0], sync_end[p - 1]);
    sync_end[0] = sync_end[p - 1] = both + emb_sync;
  }
  GptSimResult r;
  r.step_seconds = 0;
  std::vector<double> opt_s(p), gather_s(p);
  for (int64_t k = 0; k < p; ++k) {
    const double local = st.stage_params(k) / (par.zero >= 1 ? static_cast<double>(par.dp) : 1);
    opt_s[k] = optimizer_seconds(st.timer, local, st.grad_bytes(), par.precision == "f16");
    gather_s[k] = par.zero >= 1 && par.dp > 1
                      ? st.comm.seconds(CommKind::AllGather, st.dp, st.stage_params(k) * 2)
                      : 0;
    const double end = sync_end[k] + opt_s[k] + gather_s[k];
    if (end > r.step_seconds) r.step_seconds = end, r.critical_stage = static_cast<int>(k);
  }
  const int64_t ck = r.critical_stage;
  GptBreakdown& bd = r.breakdown;
  bd.compute = stage_total[ck].compute;
  bd.gemm = stage_total[ck].gemm;
  bd.gemm_flops = stage_total[ck].gemm_flops;
  bd.tp_comm = stage_total[ck].comm;
  bd.interference = stage_total[ck].interference + overlap_delay[ck];
  bd.pipeline_wait = sched.end[ck] - sched.busy[ck];
  bd.embedding_sync = (p > 1 && (ck == 0 || ck == p - 1)) ? emb_sync : 0;
  bd.dp_exposed = sync_end[ck] - pipeline_end[ck] - bd.embedding_sync;
  bd.optimizer = opt_s[ck];
  bd.zero_gather = gather_s[ck];

  // Memory of the first and the last stage; the larger is reported.
  for (int64_t k : {int64_t{0}, p - 1}) {
    GptMemory mem;
    const double params = st.stage_params(k), dp = static_cast<double>(par.dp);
    mem.parameters = params * 2 / (par.zero == 3 ? dp : 1);
    mem.gradients = params * st.grad_bytes() / (par.zero >= 2 ? dp : 1);
    mem.optimizer_state = params * 12 / (par.zero >= 1 ? dp : 1);
    mem.activations = static_cast<double>(sched.peak_in_flight[k]) * layers_per_chunk *
                      layer_stored_activation_bytes(x, par.recompute);
    if (par.recompute != Recompute::None) mem.activations += layer_working_activation_bytes(x);
    if (k == p - 1) mem.activations += 4 * x.s * x.b * x.V / x.t;
    mem.cuda_context = st.opt.cuda_context_bytes;
    const int comms = (par.tp > 1) + (par.dp > 1) + 2 * (p > 1);
    mem.nccl_buffers = comms * st.opt.nccl_bytes_per_communicator;
    mem.fragmentation = st.opt.fragmentation * mem.allocated();
    mem.capacity = st.cluster.device.memory_bytes;
    if (mem.total() > r.memory.total()) r.memory = mem;
  }
  r.fits = r.memory.capacity <= 0 || r.memory.total() <= r.memory.capacity;
  r.parallel = par;
  r.pipeline_seconds = sched.pipeline_seconds;
  r.bubble_fraction = sched.bubble_fraction;
  r.layer_forward_seconds = lf.total();
  r.layer_backward_seconds = lb.total();
  r.p2p_seconds = p2p;
  return r;
}

std::vector<int64_t> micro_batch_candidates(const GptParallel& par) {
  std::vector<int64_t> out;
  const int64_t per_replica = par.global_batch / par.dp;
  for (int64_t b = 1; b <= per_replica; ++b) {
    if (per_replica % b != 0) continue;
    if (par.virtual_stages > 1 && (per_replica / b) % par.pp != 0) continue;
    out.push_back(b);
  }
  return out;
}

}  // namespace

// The optimizer step as Megatron-LM's mixed-precision optimizer runs it
// (megatron/optimizer/optimizer.py, Float16OptimizerWithFloat16Params.step, and its ZeRO-1
// successor on the local shard): memory passes over every local parameter, bytes per parameter:
//   copy-to-main-grad   the 16-bit gradient read, an f32 copy written (g + 4); nothing when the
//                       gradient buffers are f32 already (g = 4: main_grad.float() is no copy)
//   unscale             f16 only (loss scaling): the f32 gradient read and written, checked
//                       for inf and NaN (torch._amp_foreach_non_finite_check_and_unscale_) (8)
//   grad-norm           the f32 gradient read for the clipping norm (multi_tensor_l2norm) (4)
//   fused-adam          apex FusedAdam: f32 master, gradient and both moments read, master and
//                       moments written (28)
//   copy-to-model       the f32 master read, the 16-bit parameter written (6)
// f16 with 16-bit gradients: 52 bytes per parameter; bf16 with f32 gradients: 38. Scaling the
// gradient when its norm exceeds the clip (a further 8 bytes, only on such steps) is not counted.
std::vector<std::pair<std::string, double>> optimizer_passes(double grad_bytes, bool f16) {
  std::vector<std::pair<std::string, double>> passes;
  if (grad_bytes < 4) passes.emplace_back("optimizer-copy-to-main-grad", grad_bytes + 4);
  if (f16) passes.emplace_back("optimizer-unscale", 8);
  passes.emplace_back("optimizer-grad-norm", 4);
  passes.emplace_back("fused-adam", 28);
  passes.emplace_back("optimizer-copy-to-model", 6);
  return passes;
}

double optimizer_seconds(const KernelTimer& timer, double local_params, double grad_bytes,
                         bool f16) {
  double t = 0;
  for (const auto& [name, bytes] : optimizer_passes(grad_bytes, f16))
    t += timer.seconds(memory_kernel(name, local_params * bytes, "elementwise"));
  return t;
}

PassTime time_pass(const PassOps& ops, const KernelTimer& timer, const CommModel& comm,
                   const Group& tp, double sm_share) {
  PassTime t;
  std::vector<double> kernel(ops.kernels.size());
  for (size_t i = 0; i < ops.kernels.size(); ++i) {
    kernel[i] = timer.seconds(ops.kernels[i]);
    t.compute += kernel[i];
    if (ops.kernels[i].kind == KernelKind::Gemm) {
      t.gemm += kernel[i];
      t.gemm_flops += ops.kernels[i].flops();
    }
  }
  for (const TpCollective& c : ops.collectives) {
    double s = comm.seconds(c.kind, tp, c.bytes);
    if (c.hidden_by >= 0) {
      t.interference += sm_share * std::min(s, kernel[c.hidden_by]);
      s = std::max(0.0, s - kernel[c.hidden_by]);
    }
    t.comm[std::string("tp-") + std::string(comm_kind_name(c.kind))] += s;
  }
  return t;
}

GradientStream gradient_stream(const std::vector<PipelinePass>& last_backward, double stage_end,
                               double layers_per_chunk, double layer_sync, double sm_share) {
  // Chunks finish their last backward in reverse order; inside one, layers in reverse. The
  // compute a sync overlaps runs at 1 - s: `delay` is how far the compute after it (the later
  // layers' readiness, the stage's end) has moved.
  GradientStream g;
  for (auto c = last_backward.rbegin(); c != last_backward.rend(); ++c)
    for (int64_t j = 1; j <= static_cast<int64_t>(layers_per_chunk); ++j) {
      const double ready =
          g.delay + c->start + (c->end - c->start) * static_cast<double>(j) / layers_per_chunk;
      const double start = std::max(g.end, ready);
      g.end = start + layer_sync;
      g.delay += sm_share * std::max(0.0, std::min(g.end, stage_end + g.delay) - start);
    }
  return g;
}

double comm_sm_share(const ClusterSpec& cluster, const GptSimOptions& options) {
  return options.comm_sm_share >= 0 ? options.comm_sm_share : cluster.device.comm_sm_share;
}

GptSimResult simulate_gpt(const ClusterSpec& cluster, const GptModel& model, const GptParallel& par,
                          const GptSimOptions& options) {
  if (par.gpus() > cluster.device_count())
    throw GptConfigError(fmt::format("the configuration needs {} GPUs, {} has {}", par.gpus(),
                                     cluster.name, cluster.device_count()));
  const Step st(cluster, model, par, options);
  std::vector<int64_t> sizes =
      par.micro_batch ? std::vector<int64_t>{par.micro_batch} : micro_batch_candidates(par);
  if (sizes.empty())
    throw GptConfigError(fmt::format(
        "no micro-batch size gives a micro-batch count that is a multiple of --pp {}", par.pp));
  GptSimResult best;
  bool have = false;
  std::vector<GptCandidate> tried;
  for (size_t i = 0; i < sizes.size(); ++i) {
    GptSimResult r = simulate_one(st, sizes[i]);
    tried.push_back({sizes[i], r.step_seconds, r.memory.total(), r.fits});
    if (options.progress)
      options.progress(fmt::format("micro-batch {} ({}/{}): step {:.4f} s, {:.1f} GB per GPU{}",
                                   sizes[i], i + 1, sizes.size(), r.step_seconds,
                                   r.memory.total() / 1e9, r.fits ? "" : " (does not fit)"));
    const bool better = !have || (r.fits && !best.fits) ||
                        (r.fits == best.fits && (r.fits ? r.step_seconds < best.step_seconds
                                                        : r.memory.total() < best.memory.total()));
    if (better) best = std::move(r), have = true;
  }
  best.candidates = par.micro_batch ? std::vector<GptCandidate>{} : tried;
  best.model = model;
  best.cluster = cluster.name;
  best.parameters = parameter_count(model);
  best.model_flops = megatron_model_flops(model, par.global_batch, par.recompute);
  best.model_flops_no_recompute = megatron_model_flops(model, par.global_batch, Recompute::None);
  const double gpus = static_cast<double>(par.gpus());
  best.tflops_per_gpu = best.model_flops / (best.step_seconds * gpus) / 1e12;
  best.tflops_per_gpu_no_recompute =
      best.model_flops_no_recompute / (best.step_seconds * gpus) / 1e12;
  best.gemm_model =
      st.timer.gemm().sms ? st.timer.gemm().source : "the spec's op class matmul efficiency";
  best.comm_sm_share = st.sm_share;
  best.links = options.links;
  return best;
}

}  // namespace spora::sim::transformer
