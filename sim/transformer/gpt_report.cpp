// The text report and the JSON object of a simulated GPT step (sim/transformer/gpt_sim.h).
#include <fmt/format.h>

#include "sim/transformer/gpt_sim.h"

namespace spora::sim::transformer {

namespace {
std::string gb(double bytes) { return fmt::format("{:.2f} GB", bytes / 1e9); }
std::string ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }
}  // namespace

std::string gpt_report(const GptSimResult& r) {
  const GptModel& m = r.model;
  const GptParallel& p = r.parallel;
  std::string o;
  o += fmt::format(
      "# spora sim-gpt: {:.2f}B parameters (h {} l {} a {} V {} s {}) on {} GPUs of {}\n",
      r.parameters / 1e9, m.hidden, m.layers, m.heads, m.vocab, m.seq, p.gpus(), r.cluster);
  o += fmt::format(
      "# tp {} pp {} dp {} virtual-stages {}, batch {} = dp x {} micro-batches of {}, "
      "recompute {}{}{}, zero {}, {}\n",
      p.tp, p.pp, p.dp, p.virtual_stages, p.global_batch, p.micro_batches(), p.micro_batch,
      recompute_name(p.recompute), p.sequence_parallel ? ", sequence parallel" : "",
      p.async_tp_allreduce ? ", async tp all-reduce" : "", p.zero, p.precision);
  o += fmt::format("step                {:.4f} s\n", r.step_seconds);
  o += fmt::format("TFLOP/s per GPU     {:.1f} (model FLOPs, {} count: {:.4g} per step)\n",
                   r.tflops_per_gpu,
                   p.recompute == Recompute::Full ? "96 B s l h^2" : "72 B s l h^2", r.model_flops);
  o += fmt::format("  without recompute {:.1f} (72 B s l h^2 count: {:.4g})\n",
                   r.tflops_per_gpu_no_recompute, r.model_flops_no_recompute);
  o += fmt::format("pipeline            {:.4f} s, bubble {:.1f}%, p2p {} per message\n",
                   r.pipeline_seconds, 100 * r.bubble_fraction, ms(r.p2p_seconds));
  o += fmt::format("one layer           forward {}, backward {} (recomputation included)\n",
                   ms(r.layer_forward_seconds), ms(r.layer_backward_seconds));
  const GptBreakdown& b = r.breakdown;
  o += fmt::format("breakdown (stage {}):\n", r.critical_stage);
  o += fmt::format(
      "  compute           {:.4f} s (GEMMs {:.4f} s at {:.1f} TFLOP/s, memory-bound {:.4f} s)\n",
      b.compute, b.gemm, b.gemm > 0 ? b.gemm_flops / b.gemm / 1e12 : 0.0, b.compute - b.gemm);
  for (const auto& [kind, s] : b.tp_comm) o += fmt::format("  {:<17} {:.4f} s\n", kind, s);
  o += fmt::format("  pipeline wait     {:.4f} s (bubble and p2p)\n", b.pipeline_wait);
  o += fmt::format("  dp grad exposed   {:.4f} s\n", b.dp_exposed);
  if (b.embedding_sync > 0) o += fmt::format("  embedding sync    {:.4f} s\n", b.embedding_sync);
  o += fmt::format("  optimizer         {:.4f} s\n", b.optimizer);
  if (b.zero_gather > 0) o += fmt::format("  zero all-gather   {:.4f} s\n", b.zero_gather);
  o += fmt::format("  interference      {:.4f} s (compute beside collectives at SM share {:.3g})\n",
                   b.interference, r.comm_sm_share);
  o += fmt::format("links               {}, {}\n",
                   r.links.channels ? "one ring per NIC across nodes" : "one ring across nodes",
                   r.links.nic_sharing ? "concurrent groups share a node's NICs"
                                       : "every group has a NIC of its own");
  const GptMemory& mem = r.memory;
  o += fmt::format(
      "memory per GPU      {} of {} ({})\n", gb(mem.total()), gb(mem.capacity),
      r.fits ? "fits" : fmt::format("does not fit: {} over", gb(mem.total() - mem.capacity)));
  o += fmt::format("  parameters {}, gradients {}, optimizer state {}, activations {}\n",
                   gb(mem.parameters), gb(mem.gradients), gb(mem.optimizer_state),
                   gb(mem.activations));
  o += fmt::format("  headroom: CUDA context {}, NCCL buffers {}, fragmentation {}\n",
                   gb(mem.cuda_context), gb(mem.nccl_buffers), gb(mem.fragmentation));
  if (!r.candidates.empty()) {
    o += "micro-batch auto:";
    for (const GptCandidate& c : r.candidates)
      o += fmt::format(" {}: {:.4f} s {}{};", c.micro_batch, c.step_seconds, gb(c.memory_bytes),
                       c.fits ? "" : " (no fit)");
    o.back() = '\n';
  }
  o += fmt::format("GEMM efficiency: {}\n", r.gemm_model);
  return o;
}

std::string gpt_json(const GptSimResult& r) {
  const GptModel& m = r.model;
  const GptParallel& p = r.parallel;
  const GptMemory& mem = r.memory;
  const GptBreakdown& b = r.breakdown;
  std::string tp;
  for (const auto& [kind, s] : b.tp_comm)
    tp += fmt::format("{}\"{}\": {:.9g}", tp.empty() ? "" : ", ", kind, s);
  std::string cand;
  for (const GptCandidate& c : r.candidates)
    cand += fmt::format(
        "{}{{\"micro_batch\": {}, \"step_seconds\": {:.9g}, \"memory_bytes\": {:.9g}, "
        "\"fits\": {}}}",
        cand.empty() ? "" : ", ", c.micro_batch, c.step_seconds, c.memory_bytes, c.fits);
  return fmt::format(
      "{{\"cluster\": \"{}\", \"gpus\": {}, \"parameters\": {:.9g}, "
      "\"model\": {{\"hidden\": {}, \"layers\": {}, \"heads\": {}, \"vocab\": {}, \"seq\": {}}}, "
      "\"parallel\": {{\"batch\": {}, \"micro_batch\": {}, \"micro_batches\": {}, \"tp\": {}, "
      "\"pp\": {}, \"dp\": {}, \"virtual_stages\": {}, \"recompute\": \"{}\", "
      "\"sequence_parallel\": {}, \"async_tp_allreduce\": {}, \"zero\": {}, "
      "\"precision\": \"{}\"}}, "
      "\"step_seconds\": {:.9g}, \"tflops_per_gpu\": {:.9g}, "
      "\"tflops_per_gpu_no_recompute\": {:.9g}, \"model_flops\": {:.9g}, "
      "\"pipeline_seconds\": {:.9g}, \"bubble_fraction\": {:.9g}, \"p2p_seconds\": {:.9g}, "
      "\"layer_forward_seconds\": {:.9g}, \"layer_backward_seconds\": {:.9g}, "
      "\"breakdown\": {{\"stage\": {}, \"compute\": {:.9g}, \"gemm\": {:.9g}, "
      "\"gemm_flops\": {:.9g}, \"tp_comm\": {{{}}}, "
      "\"pipeline_wait\": {:.9g}, \"dp_exposed\": {:.9g}, \"embedding_sync\": {:.9g}, "
      "\"optimizer\": {:.9g}, \"zero_gather\": {:.9g}, \"interference\": {:.9g}}}, "
      "\"contention\": {{\"comm_sm_share\": {:.9g}, \"channels\": {}, \"nic_sharing\": {}}}, "
      "\"memory_per_gpu_bytes\": {:.9g}, \"memory\": {{\"parameters\": {:.9g}, "
      "\"gradients\": {:.9g}, \"optimizer_state\": {:.9g}, \"activations\": {:.9g}, "
      "\"cuda_context\": {:.9g}, \"nccl_buffers\": {:.9g}, \"fragmentation\": {:.9g}, "
      "\"capacity\": {:.9g}}}, \"fits\": {}, \"candidates\": [{}]}}\n",
      r.cluster, p.gpus(), r.parameters, m.hidden, m.layers, m.heads, m.vocab, m.seq,
      p.global_batch, p.micro_batch, p.micro_batches(), p.tp, p.pp, p.dp, p.virtual_stages,
      recompute_name(p.recompute), p.sequence_parallel, p.async_tp_allreduce, p.zero, p.precision,
      r.step_seconds,
      r.tflops_per_gpu, r.tflops_per_gpu_no_recompute, r.model_flops, r.pipeline_seconds,
      r.bubble_fraction, r.p2p_seconds, r.layer_forward_seconds, r.layer_backward_seconds,
      r.critical_stage, b.compute, b.gemm, b.gemm_flops, tp, b.pipeline_wait, b.dp_exposed,
      b.embedding_sync, b.optimizer, b.zero_gather, b.interference, r.comm_sm_share,
      r.links.channels, r.links.nic_sharing, mem.total(), mem.parameters, mem.gradients,
      mem.optimizer_state, mem.activations, mem.cuda_context, mem.nccl_buffers, mem.fragmentation,
      mem.capacity, r.fits, cand);
}

}  // namespace spora::sim::transformer
