#include "sim/transformer/layer_ops.h"

namespace spora::sim::transformer {

std::string_view comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::AllReduce:
      return "all-reduce";
    case CommKind::AllGather:
      return "all-gather";
    case CommKind::ReduceScatter:
      return "reduce-scatter";
  }
  return "?";
}

void PassOps::append(const PassOps& o) {
  const int offset = static_cast<int>(kernels.size());
  kernels.insert(kernels.end(), o.kernels.begin(), o.kernels.end());
  for (TpCollective c : o.collectives) {
    if (c.hidden_by >= 0) c.hidden_by += offset;
    collectives.push_back(c);
  }
}

LayerShape layer_shape(const GptModel& m, const GptParallel& p, int64_t micro_batch) {
  LayerShape x;
  x.b = static_cast<double>(micro_batch);
  x.s = static_cast<double>(m.seq);
  x.h = static_cast<double>(m.hidden);
  x.a = static_cast<double>(m.heads);
  x.V = static_cast<double>(m.vocab);
  x.t = static_cast<double>(p.tp);
  x.sp = p.sequence_parallel && p.tp > 1;
  x.async_allreduce = p.async_tp_allreduce && p.tp > 1;
  x.E = 2;
  // Megatron accumulates bf16 gradients in f32 buffers (main_grad); f16 ones in f16.
  x.grad_bytes = p.precision == "bf16" ? 4 : 2;
  return x;
}

namespace {

double tokens(const LayerShape& x) { return x.b * x.s; }
double norm_tokens(const LayerShape& x) { return x.sp ? tokens(x) / x.t : tokens(x); }

// The collective that leaves a row-parallel GEMM (forward) or a column-parallel one (backward).
// `beside`: the weight-gradient GEMM that the backward one runs beside, when it runs
// asynchronously (sequence parallelism, or the asynchronous all-reduce).
void reduce(PassOps& p, const LayerShape& x, const std::string& name, int beside = -1) {
  if (x.t <= 1) return;
  const double bytes = tokens(x) * x.h * x.E;
  const int hidden_by = (x.sp || x.async_allreduce) ? beside : -1;
  p.collectives.push_back(
      {name, x.sp ? CommKind::ReduceScatter : CommKind::AllReduce, bytes, hidden_by});
}
void gather(PassOps& p, const LayerShape& x, const std::string& name, int hidden_by = -1) {
  if (x.t <= 1 || !x.sp) return;
  p.collectives.push_back({name, CommKind::AllGather, tokens(x) * x.h * x.E, hidden_by});
}

void attention_core_forward(PassOps& p, const LayerShape& x) {
  const double heads = x.a / x.t, d = x.h / x.a, probs = x.b * heads * x.s * x.s;
  p.kernels.push_back(gemm("attn-scores", x.s, x.s, d, x.b * heads));
  p.kernels.push_back(memory_kernel("softmax", 2 * probs * x.E, "norm"));
  p.kernels.push_back(memory_kernel("attn-dropout", probs * (2 * x.E + 1), "elementwise"));
  p.kernels.push_back(gemm("attn-context", x.s, d, x.s, x.b * heads));
}

}  // namespace

PassOps layer_forward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, t = x.t, E = x.E;
  p.kernels.push_back(memory_kernel("ln1", 2 * Tn * h * E, "norm"));
  gather(p, x, "ln1-gather");
  p.kernels.push_back(gemm("qkv", T, 3 * h / t, h));
  attention_core_forward(p, x);
  p.kernels.push_back(memory_kernel("context-copy", 2 * T * h / t * E, "copy"));
  p.kernels.push_back(gemm("proj", T, h, h / t));
  reduce(p, x, "proj-reduce");
  p.kernels.push_back(memory_kernel("bias-dropout-add", Tn * h * (3 * E + 1), "elementwise"));
  p.kernels.push_back(memory_kernel("ln2", 2 * Tn * h * E, "norm"));
  gather(p, x, "ln2-gather");
  p.kernels.push_back(gemm("fc1", T, 4 * h / t, h));
  p.kernels.push_back(memory_kernel("bias-gelu", 2 * T * 4 * h / t * E, "elementwise"));
  p.kernels.push_back(gemm("fc2", T, h, 4 * h / t));
  reduce(p, x, "fc2-reduce");
  p.kernels.push_back(memory_kernel("bias-dropout-add", Tn * h * (3 * E + 1), "elementwise"));
  return p;
}

PassOps layer_backward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, t = x.t, E = x.E;
  const double heads = x.a / t, d = h / x.a, probs = x.b * heads * x.s * x.s;
  auto index = [&] { return static_cast<int>(p.kernels.size()); };
  p.kernels.push_back(memory_kernel("bias-dropout-add-grad", Tn * h * (2 * E + 1), "elementwise"));
  gather(p, x, "fc2-grad-gather");  // the forward reduce-scatter's transpose
  p.kernels.push_back(gemm("fc2-dgrad", T, 4 * h / t, h));
  p.kernels.push_back(gemm("fc2-wgrad", 4 * h / t, h, T));
  p.kernels.push_back(memory_kernel("bias-gelu-grad", 3 * T * 4 * h / t * E, "elementwise"));
  gather(p, x, "ln2-gather-again", index());  // beside fc1's input gradient
  p.kernels.push_back(gemm("fc1-dgrad", T, h, 4 * h / t));
  reduce(p, x, "fc1-dgrad-reduce", index());  // beside fc1's weight gradient
  p.kernels.push_back(gemm("fc1-wgrad", h, 4 * h / t, T));
  p.kernels.push_back(memory_kernel("ln2-grad", 3 * Tn * h * E, "norm"));
  p.kernels.push_back(memory_kernel("residual-grad-add", 3 * Tn * h * E, "elementwise"));
  p.kernels.push_back(memory_kernel("bias-dropout-add-grad", Tn * h * (2 * E + 1), "elementwise"));
  gather(p, x, "proj-grad-gather");  // the forward reduce-scatter's transpose
  p.kernels.push_back(gemm("proj-dgrad", T, h / t, h));
  p.kernels.push_back(gemm("proj-wgrad", h, h / t, T));
  p.kernels.push_back(memory_kernel("context-copy-grad", 2 * T * h / t * E, "copy"));
  p.kernels.push_back(gemm("attn-context-grad-p", x.s, x.s, d, x.b * heads));
  p.kernels.push_back(gemm("attn-context-grad-v", x.s, d, x.s, x.b * heads));
  p.kernels.push_back(memory_kernel("attn-dropout-grad", probs * (2 * x.E + 1), "elementwise"));
  p.kernels.push_back(memory_kernel("softmax-grad", 3 * probs * x.E, "norm"));
  p.kernels.push_back(gemm("attn-scores-grad-q", x.s, d, x.s, x.b * heads));
  p.kernels.push_back(gemm("attn-scores-grad-k", x.s, d, x.s, x.b * heads));
  gather(p, x, "ln1-gather-again", index());  // beside qkv's input gradient
  p.kernels.push_back(gemm("qkv-dgrad", T, h, 3 * h / t));
  reduce(p, x, "qkv-dgrad-reduce", index());  // beside qkv's weight gradient
  p.kernels.push_back(gemm("qkv-wgrad", h, 3 * h / t, T));
  p.kernels.push_back(memory_kernel("ln1-grad", 3 * Tn * h * E, "norm"));
  p.kernels.push_back(memory_kernel("residual-grad-add", 3 * Tn * h * E, "elementwise"));
  const double params = (12 * h * h + 7 * h) / t + 6 * h;  // the layer's local parameters
  p.kernels.push_back(
      memory_kernel("grad-accumulate", params * (E + 2 * x.grad_bytes), "elementwise"));
  return p;
}

PassOps layer_recompute(const LayerShape& x, Recompute r) {
  if (r == Recompute::Full) return layer_forward(x);
  PassOps p;
  if (r == Recompute::Selective) attention_core_forward(p, x);
  return p;
}

PassOps embedding_forward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, E = x.E;
  p.kernels.push_back(memory_kernel("embedding-gather", 2 * T * h * E, "copy"));
  reduce(p, x, "embedding-reduce");
  p.kernels.push_back(memory_kernel("position-add", 3 * Tn * h * E, "elementwise"));
  p.kernels.push_back(memory_kernel("embedding-dropout", Tn * h * (2 * E + 1), "elementwise"));
  return p;
}

PassOps embedding_backward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, E = x.E;
  p.kernels.push_back(memory_kernel("embedding-dropout-grad", Tn * h * (2 * E + 1), "elementwise"));
  gather(p, x, "embedding-grad-gather");
  p.kernels.push_back(memory_kernel("embedding-scatter-add", 3 * T * h * E, "copy"));
  p.kernels.push_back(memory_kernel("position-grad", 2 * Tn * h * E, "elementwise"));
  return p;
}

PassOps head_forward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, E = x.E, Vt = x.V / x.t;
  p.kernels.push_back(memory_kernel("final-ln", 2 * Tn * h * E, "norm"));
  gather(p, x, "final-ln-gather");
  p.kernels.push_back(gemm("logits", T, Vt, h));
  // Megatron's vocabulary-parallel cross-entropy (mpu/cross_entropy.py) on the logits cast to
  // f32, one PyTorch kernel per pass over the T x V/t logits: the cast, the row max, the max
  // subtracted in place, exp in place, the row sum, and the in-place division that leaves the
  // softmax for the backward pass. The target pick and the loss touch T values.
  const double n = T * Vt;
  p.kernels.push_back(memory_kernel("ce-cast", n * (E + 4), "copy"));
  p.kernels.push_back(memory_kernel("ce-row-max", n * 4, "reduction"));
  p.kernels.push_back(memory_kernel("ce-sub-max", n * 8, "elementwise"));
  p.kernels.push_back(memory_kernel("ce-exp", n * 8, "elementwise"));
  p.kernels.push_back(memory_kernel("ce-row-sum", n * 4, "reduction"));
  p.kernels.push_back(memory_kernel("ce-softmax", n * 8, "elementwise"));
  if (x.t > 1)
    for (const char* n : {"ce-max", "ce-target", "ce-sum"})
      p.collectives.push_back({n, CommKind::AllReduce, T * 4});
  return p;
}

PassOps head_backward(const LayerShape& x) {
  PassOps p;
  const double T = tokens(x), Tn = norm_tokens(x), h = x.h, E = x.E, Vt = x.V / x.t;
  // The softmax scaled by the loss gradient in place (f32), then the cast's backward to f16.
  const double n = T * Vt;
  p.kernels.push_back(memory_kernel("ce-grad", n * 8, "elementwise"));
  p.kernels.push_back(memory_kernel("ce-grad-cast", n * (4 + E), "copy"));
  gather(p, x, "final-ln-gather-again", static_cast<int>(p.kernels.size()));  // beside dgrad
  p.kernels.push_back(gemm("logits-dgrad", T, h, Vt));
  reduce(p, x, "logits-dgrad-reduce", static_cast<int>(p.kernels.size()));  // beside wgrad
  p.kernels.push_back(gemm("logits-wgrad", Vt, h, T));
  p.kernels.push_back(memory_kernel("final-ln-grad", 3 * Tn * h * E, "norm"));
  return p;
}

double layer_stored_activation_bytes(const LayerShape& x, Recompute r) {
  const double sbh = x.s * x.b * x.h, t = x.t, attn = 5 * x.a * x.s / (x.h * t);
  switch (r) {
    case Recompute::Full:
      return 2 * sbh / (x.sp ? t : 1);
    case Recompute::Selective:
      return x.sp ? sbh * 34 / t : sbh * (10 + 24 / t);
    case Recompute::None:
      return x.sp ? sbh * (34 / t + attn) : sbh * (10 + 24 / t + attn);
  }
  return 0;
}

double layer_working_activation_bytes(const LayerShape& x) {
  return layer_stored_activation_bytes(x, Recompute::None);
}

}  // namespace spora::sim::transformer
