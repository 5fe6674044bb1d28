// A GPT training configuration as Megatron-LM runs it, and the FLOPs the Megatron-LM paper counts.
//
//   GptModel model{.hidden = 2304, .layers = 24, .heads = 24, .vocab = 51200, .seq = 2048};
//   GptParallel par{.global_batch = 512, .tp = 1, .pp = 1};      // dp: what remains of --gpus
//   resolve_parallel(model, par, 32);                             // dp = 32, checks
//   megatron_model_flops(model, 512, Recompute::Full)             // 96 B s l h^2 (1 + ...)
//
// Model: a decoder-only Transformer of `layers` pre-LN layers (self-attention of `heads` heads,
// a 4h GeLU MLP), learned position embeddings, the output layer tied to the word embedding.
//
// Parallelism, in Megatron-LM's rank order (rank = (pp_rank x dp + dp_rank) x tp + tp_rank):
// tensor parallelism over tp consecutive ranks (inside a node when tp <= devices per node),
// data parallelism over dp groups of stride tp, pipeline parallelism outermost. A replica
// processes global_batch / dp sequences per step in micro-batches of `micro_batch`.
//
// Parameter count (Narayanan et al., SC'21, section 5.1):
//   P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h))
// Model FLOPs per step (ibid., section 5.1 and appendix; the count reproduced by Megatron-LM's
// and BigScience's throughput loggers, `flops_per_iteration`), B the global batch:
//   with full recomputation (forward, recomputed forward, backward = 4 forward passes)
//     F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))
//   without recomputation (3 forward passes), by the same count (per layer and forward pass
//   24 B s h^2 + 4 B s^2 h, the logits 2 B s h V, which are never recomputed):
//     F = 72 B s l h^2 (1 + s / (6 h) + V / (12 l h))
// Selective recomputation counts as "without": the recomputed attention core is not model work.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace spora::sim::transformer {

// A user error in a configuration: a one-line message, lowercase, with the values.
class GptConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Recompute { None, Selective, Full };
std::string_view recompute_name(Recompute r);        // "none" | "selective" | "full"
Recompute parse_recompute(const std::string& name);  // throws GptConfigError

struct GptModel {
  int64_t hidden = 0;  // h
  int64_t layers = 0;  // l
  int64_t heads = 0;   // a
  int64_t vocab = 51200;
  int64_t seq = 2048;  // s
};

struct GptParallel {
  int64_t global_batch = 0;        // B: sequences per step, over all replicas
  int64_t micro_batch = 0;         // b; 0: choose (the fastest that fits)
  int64_t tp = 1, pp = 1, dp = 0;  // dp 0: what remains of the GPUs
  int64_t virtual_stages = 1;      // model chunks per pipeline stage (interleaved 1F1B)
  Recompute recompute = Recompute::Full;
  bool sequence_parallel = false;
  // Megatron-LM's async_tensor_model_parallel_allreduce: the backward all-reduce of a
  // column-parallel GEMM's input gradient runs beside its weight-gradient GEMM (layer_ops.h).
  bool async_tp_allreduce = false;
  int zero = 0;                    // 0..3 (ZeRO stage, over the data-parallel group)
  std::string precision = "bf16";  // bf16 | f16: 16-bit activations, weights and GEMMs
  int64_t micro_batches() const { return global_batch / (dp * micro_batch); }  // m per replica
  int64_t gpus() const { return tp * pp * dp; }
};

// Fills dp (when 0) from `gpus` and checks the whole configuration; the micro-batch is checked
// when it is set. Throws GptConfigError, e.g.
//   "--tp 5 does not divide --heads 24"
//   "--pp 5 does not divide --layers 24"
//   "tp x pp x dp = 1 x 1 x 16 = 16 GPUs, but --gpus is 32"
void resolve_parallel(const GptModel& model, GptParallel& par, int64_t gpus);
// The micro-batch alone: b divides the batch per replica, and the interleaved schedule's
// micro-batch count is a multiple of pp. Throws GptConfigError.
void check_micro_batch(const GptParallel& par, int64_t micro_batch);

// Parameters of the whole model (the formula above, which is exact for this architecture).
double parameter_count(const GptModel& m);
// Parameters of one Transformer layer: 12 h^2 + 13 h.
double layer_parameter_count(const GptModel& m);

// Model FLOPs of one step of `global_batch` sequences as the Megatron-LM paper counts them:
// Full: 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)); None, Selective: 72 B s l h^2 (1 + s / (6 h)
// + V / (12 l h)).
double megatron_model_flops(const GptModel& m, int64_t global_batch, Recompute recompute);

}  // namespace spora::sim::transformer
