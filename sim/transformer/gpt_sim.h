// `spora sim-gpt`: one training step of a GPT model as Megatron-LM runs it, on a cluster spec.
//
//   ClusterSpec c = scale_cluster(load_cluster_spec("dgx-a100-64.yaml"), 32);
//   GptModel m{.hidden = 2304, .layers = 24, .heads = 24};
//   GptParallel p{.global_batch = 512};   resolve_parallel(m, p, 32);
//   GptSimResult r = simulate_gpt(c, m, p);       // p.micro_batch 0: the fastest that fits
//   r.step_seconds, r.tflops_per_gpu, r.memory.total(), r.fits
//
// How a step is put together:
//   1. Kernels (layer_ops.h): the per-layer, embedding and output-layer kernels of one
//      micro-batch, each timed on the device (kernels.h: shape-dependent GEMM efficiency,
//      memory-bound kernels at the spec's bandwidth and op-class efficiencies), and the
//      tensor-parallel collectives between them (comm_model.h), which Megatron runs on the
//      critical path. A pass of chunk c on stage k is L / (p v) layers, plus the embedding on
//      the first virtual stage and the output layer on the last; its backward pass first
//      re-runs the forward (full recomputation) or the attention core (selective).
//   2. The pipeline (pipeline_schedule.h): 1F1B or interleaved 1F1B over the stages, each p2p
//      message the activation of one micro-batch (b s h E bytes): with Megatron's scatter /
//      gather optimisation (tp > 1 and the stages on different nodes) each of the t ranks sends
//      1 / t of it over its own NIC and the next stage all-gathers it over NVLink.
//   3. After a stage's passes: the data-parallel gradient all-reduce (ZeRO >= 1: reduce-scatter)
//      of its gradient buffers, per layer as each layer's gradients become final in the last
//      backward pass when `grad_overlap` (else all of it after the last pass); the all-reduce of
//      the tied embedding's gradients between the first and last stage; the optimizer step
//      as Megatron's mixed-precision optimizer runs it, memory passes over the local
//      parameters (f16: the gradient copied to f32, unscaled, its norm read, fused Adam, the
//      master copied to the 16-bit parameter: 52 bytes per parameter; bf16 with f32 gradients:
//      38; gpt_sim.cpp, optimizer_passes);
//      ZeRO >= 1 all-gathers the updated 16-bit parameters. ZeRO-2 and -3 also reduce-scatter
//      each layer's gradients in every backward pass, ZeRO-3 all-gathers each layer's
//      parameters before every forward, recomputed forward and backward pass (exposed).
//   The step ends when the last stage is done.
//
// Memory per GPU (the fullest of the first and last stage): 16-bit parameters, gradient
// buffers (f16: 2 bytes, bf16: f32, 4), f32 master weights and Adam moments (12 bytes) (ZeRO,
// Rajbhandari et al. SC'20, section 3: stage 1 shards the 12, stage 2 also the gradients, stage
// 3 also the parameters over dp); activations: the micro-batches in flight (the schedule's peak)
// x layers per chunk x layer_stored_activation_bytes, plus one layer's working set when
// recomputing, plus the logits' f32 working set 4 s b V / t on the last stage. Headroom, shown
// apart and counted in `fits`: the CUDA context and kernels, NCCL's buffers per communicator,
// and allocator fragmentation as a share of the rest (GptSimOptions).
//
// Contention (GptSimOptions, each effect switchable so that its share of a step can be shown):
//   - links: concurrent groups of one kind share a node's NICs, and rings across nodes run one
//     channel per NIC (comm_model.h, LinkSharing);
//   - SMs: while a collective runs beside compute (the data-parallel gradient stream beside the
//     last backward passes, the async tensor-parallel all-reduce beside its weight-gradient GEMM)
//     NCCL's kernels hold a share s of the GPU (one thread block per channel; sim/interference.h
//     has the source), so the compute it overlaps runs at 1 - s: a collective that overlaps
//     compute for T seconds delays that compute by s T. First order: the delay does not move
//     the collective itself. Reported as the breakdown's `interference`.
// Not modelled: the pipeline's p2p messages sharing a NIC with the gradient stream, tensor- and
// data-parallel traffic sharing a GPU's NVLink port, a slower GPU or link, data loading and
// logging. Deterministic: no clocks, no randomness.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/transformer/comm_model.h"
#include "sim/transformer/gpt_config.h"
#include "sim/transformer/kernels.h"
#include "sim/transformer/layer_ops.h"
#include "sim/transformer/pipeline_schedule.h"

namespace spora::sim::transformer {

struct GptSimOptions {
  bool grad_overlap = true;    // data-parallel gradient reduction beside the last backward pass
  bool scatter_gather = true;  // Megatron's p2p scatter / gather across nodes
  // Headroom. CUDA context with PyTorch's kernels loaded: 1-2 GB (Bekman, ml-engineering,
  // training/performance, "memory used by the CUDA kernels"); NCCL: NCCL_BUFFSIZE (4 MiB, NCCL
  // environment-variable docs) per side of a ring on each of 8 channels, per communicator.
  double cuda_context_bytes = 1.5e9;
  double nccl_bytes_per_communicator = 2 * 8 * 4 * 1048576.0;
  double fragmentation = 0.05;  // of the allocated peak (PyTorch's caching allocator)
  // Contention (above). comm_sm_share < 0: the spec's device.comm_sm_share (0: none).
  LinkSharing links;
  double comm_sm_share = -1;
  // Called with one line per simulated micro-batch size (for long runs).
  std::function<void(const std::string&)> progress;
};

struct GptMemory {
  double parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;
  double cuda_context = 0, nccl_buffers = 0, fragmentation = 0;
  double capacity = 0;
  double allocated() const { return parameters + gradients + optimizer_state + activations; }
  double total() const { return allocated() + cuda_context + nccl_buffers + fragmentation; }
};

// Where the time of the critical stage goes; the entries add up to the step.
struct GptBreakdown {
  double compute = 0;                     // kernels, recomputation included
  double gemm = 0, gemm_flops = 0;        // of which GEMMs (the rest: memory-bound kernels)
  std::map<std::string, double> tp_comm;  // tensor-parallel collectives by kind
  double pipeline_wait = 0;               // bubble and p2p waits of this stage
  double dp_exposed = 0;                  // gradient reduction not hidden by backward
  double embedding_sync = 0;              // tied embedding all-reduce (pp > 1)
  double optimizer = 0;
  double zero_gather = 0;  // ZeRO's parameter all-gather after the update
  double interference = 0;  // compute slowed by the collectives running beside it
};

struct GptCandidate {  // one micro-batch size tried
  int64_t micro_batch = 0;
  double step_seconds = 0, memory_bytes = 0;
  bool fits = false;
};

struct GptSimResult {
  GptModel model;
  GptParallel parallel;  // resolved: dp and the micro-batch chosen
  std::string cluster;
  double parameters = 0;
  double model_flops = 0, model_flops_no_recompute = 0;  // per step, the paper's count
  double step_seconds = 0;
  double tflops_per_gpu = 0;               // model_flops / step / GPUs / 1e12
  double tflops_per_gpu_no_recompute = 0;  // the 72 B s l h^2 count
  double pipeline_seconds = 0, bubble_fraction = 0;
  double layer_forward_seconds = 0, layer_backward_seconds = 0;  // one layer, one micro-batch
  double p2p_seconds = 0;
  int critical_stage = 0;
  GptBreakdown breakdown;
  GptMemory memory;
  bool fits = false;
  std::vector<GptCandidate> candidates;
  std::string gemm_model;  // the GEMM efficiency model's source
  double comm_sm_share = 0;  // the share used (contention)
  LinkSharing links;
};

// The pieces of a step, shared with the study that puts another layer into the same pipeline
// (benchmarks/sim/gpt/layer_pipeline.h).

// A pass's time split into kernels and exposed tensor-parallel collectives by kind.
struct PassTime {
  double compute = 0;
  double gemm = 0, gemm_flops = 0;  // of which GEMMs, and their FLOPs
  std::map<std::string, double> comm;
  double interference = 0;  // compute slowed by the collectives beside it
  double total() const {
    double t = compute + interference;
    for (const auto& [k, v] : comm) t += v;
    return t;
  }
  void add(const PassTime& o, double times = 1) {
    compute += times * o.compute;
    gemm += times * o.gemm;
    gemm_flops += times * o.gemm_flops;
    interference += times * o.interference;
    for (const auto& [k, v] : o.comm) comm[k] += times * v;
  }
};

// A pass's kernels on the device, its tensor-parallel collectives over `tp`: those hidden by a
// kernel count only what outlasts it, and slow that kernel by sm_share for as long as they
// overlap.
PassTime time_pass(const PassOps& ops, const KernelTimer& timer, const CommModel& comm,
                   const Group& tp, double sm_share);

// The data-parallel gradient stream of one stage beside its last backward passes
// (`last_backward`, one per chunk, in chunk order): each layer's sync of `layer_sync` seconds
// starts when the stream is free and the layer's gradients are final, and the compute it
// overlaps is delayed by sm_share of the overlap.
struct GradientStream {
  double end = 0;    // the last layer's sync ends
  double delay = 0;  // the stage's compute moved by the syncs beside it
};
GradientStream gradient_stream(const std::vector<PipelinePass>& last_backward, double stage_end,
                               double layers_per_chunk, double layer_sync, double sm_share);

// The SM share of a running collective: the options', else the spec's.
double comm_sm_share(const ClusterSpec& cluster, const GptSimOptions& options);

// The optimizer step over `local_params` parameters as Megatron's mixed-precision optimizer
// runs it: its memory passes (gpt_sim.cpp, optimizer_passes) at the timer's rates, with the
// gradient buffers' bytes per element and f16's loss-scale unscaling.
std::vector<std::pair<std::string, double>> optimizer_passes(double grad_bytes, bool f16);
double optimizer_seconds(const KernelTimer& timer, double local_params, double grad_bytes,
                         bool f16);

// Simulates `par` (resolve_parallel first) on `cluster` (already holding the GPUs). With
// par.micro_batch 0 every micro-batch size that divides the batch per replica is simulated and
// the fastest that fits kept (none fits: the smallest in memory, fits false).
GptSimResult simulate_gpt(const ClusterSpec& cluster, const GptModel& model, const GptParallel& par,
                          const GptSimOptions& options = {});

std::string gpt_report(const GptSimResult& r);  // the text report
std::string gpt_json(const GptSimResult& r);    // one JSON object

}  // namespace spora::sim::transformer
