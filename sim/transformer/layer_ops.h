// The kernels and tensor-parallel collectives of one micro-batch through a GPT layer, the
// embedding and the output layer, as Megatron-LM runs them (megatron/model/transformer.py,
// language_model.py; Shoeybi et al. 2019 for the tensor-parallel split, Korthikanti et al. 2022
// for sequence parallelism and selective recomputation).
//
// Per layer and micro-batch of b sequences, T = b s tokens, t-way tensor parallelism, E bytes
// per element (16-bit), Tn = T / t with sequence parallelism, else T:
//
//   forward                                             kernel             shape / bytes
//   ln1               fused layer norm (Apex)           memory (norm)      2 Tn h E
//   [sp: all-gather of T h E]
//   qkv               column-parallel, bias in GEMM     GEMM               T x 3h/t x h
//   attn-scores       baddbmm Q K^T                     batched GEMM       b a/t x (s x s x h/a)
//   softmax           fused scale + causal mask + softmax memory (norm)    2 b a/t s^2 E
//   attn-dropout      dropout on the probabilities      memory             b a/t s^2 (2E + 1)
//   attn-context      bmm P V                           batched GEMM       b a/t x (s x h/a x s)
//   context-copy      permute + contiguous              memory (copy)      2 T h/t E
//   proj              row-parallel, bias skipped        GEMM               T x h x h/t
//   [all-reduce of T h E;  sp: reduce-scatter]
//   bias-dropout-add  fused (jit)                       memory             Tn h (3E + 1)
//   ln2                                                 memory (norm)      2 Tn h E
//   [sp: all-gather]
//   fc1               column-parallel, bias skipped     GEMM               T x 4h/t x h
//   bias-gelu         fused (jit)                       memory             2 T 4h/t E
//   fc2               row-parallel                      GEMM               T x h x 4h/t
//   [all-reduce;  sp: reduce-scatter]
//   bias-dropout-add                                    memory             Tn h (3E + 1)
//
// The backward pass has each GEMM's input-gradient and weight-gradient GEMMs, each memory-bound
// kernel's backward (about 1.5x its bytes: the saved input and the incoming gradient are read),
// the gradient accumulation into the parameters' gradient buffers (per parameter E bytes read and
// the buffer read and written), and the tensor-parallel collectives transposed: an all-reduce of
// T h E after the qkv and fc1 input gradients; with sp, an all-gather of T h E before the fc2
// and proj input gradients (the forward reduce-scatters' transpose, on the critical path), a
// reduce-scatter after the qkv and fc1 input gradients, and the all-gathers of the layer norms'
// outputs again for the qkv and fc1 weight gradients. Megatron-LM (megatron/mpu/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication.backward, and mappings.py, as of the paper's
// code, commit 2755bcb87b of 2022-06) runs that re-gather beside the input-gradient GEMM and the
// input gradient's reduce-scatter beside the weight-gradient GEMM; without sp it runs the
// all-reduce beside the weight-gradient GEMM when `async_tensor_model_parallel_allreduce` is on
// (its default since 2021-09; `GptParallel::async_tp_allreduce`, off by default here). A
// collective beside a GEMM is exposed only for the part longer than that GEMM.
//
// Recomputation re-runs before the backward pass: `full` the whole forward pass with its
// collectives, `selective` the attention core (attn-scores, softmax, attn-dropout, attn-context).
//
// Embedding (first stage): gather of T rows, position add, dropout; with t > 1 the vocabulary-
// parallel lookup all-reduces T h E (sp: reduce-scatters). Output layer (last stage): final layer
// norm, logits T x V/t x h against the tied embedding, vocabulary-parallel cross-entropy in f32
// as Megatron's code runs it (six kernels over the logits: cast, max, subtract, exp, sum, divide;
// three all-reduces of T x 4 bytes), and in the backward pass the softmax scaled in place and cast
// back to f16, the logits' two gradient GEMMs and the all-reduce of the input gradient.
#pragma once

#include <string>
#include <vector>

#include "sim/transformer/gpt_config.h"
#include "sim/transformer/kernels.h"

namespace spora::sim::transformer {

enum class CommKind { AllReduce, AllGather, ReduceScatter };
std::string_view comm_kind_name(CommKind k);  // "all-reduce", "all-gather", "reduce-scatter"

struct TpCollective {
  std::string name;
  CommKind kind = CommKind::AllReduce;
  double bytes = 0;    // the whole tensor (all-gather: the gathered one)
  int hidden_by = -1;  // index of a GEMM in the pass that runs beside it, or -1
};

// One pass: its kernels in order and its tensor-parallel collectives (on the critical path
// unless hidden_by).
struct PassOps {
  std::vector<Kernel> kernels;
  std::vector<TpCollective> collectives;
  void append(const PassOps& o);
};

struct LayerShape {
  double b = 1, s = 0, h = 0, a = 0, V = 0, t = 1;
  bool sp = false;
  bool async_allreduce = false;  // backward all-reduce beside the weight-gradient GEMM
  double E = 2;           // bytes per activation / weight element
  double grad_bytes = 2;  // bytes per element of the gradient buffers
};
LayerShape layer_shape(const GptModel& m, const GptParallel& p, int64_t micro_batch);

PassOps layer_forward(const LayerShape& x);
PassOps layer_backward(const LayerShape& x);                // without recomputation
PassOps layer_recompute(const LayerShape& x, Recompute r);  // re-run before the backward
PassOps embedding_forward(const LayerShape& x);
PassOps embedding_backward(const LayerShape& x);
PassOps head_forward(const LayerShape& x);  // final norm, logits, loss
PassOps head_backward(const LayerShape& x);

// Activation bytes one layer keeps per micro-batch until its backward pass (Korthikanti et al.
// 2022, "Reducing Activation Recomputation in Large Transformer Models", table 2):
//   none        s b h (10 + 24 / t + 5 a s / (h t))       sp: s b h (34 / t + 5 a s / (h t))
//   selective   s b h (10 + 24 / t)                       sp: s b h 34 / t
//   full        2 s b h (the layer's input)               sp: 2 s b h / t
double layer_stored_activation_bytes(const LayerShape& x, Recompute r);
// Bytes live while one layer's backward pass runs (its full set without recomputation).
double layer_working_activation_bytes(const LayerShape& x);

}  // namespace spora::sim::transformer
