// The "cost" facet of every primitive row (semantics/cost.h): FLOPs, bytes moved and op class as
// functions of the row's types, grouped by the family file that defines the row. The
// simulator turns them into device time with the cluster spec's roofline, efficiencies and
// launch overheads (sim/cost_model.h). tests/sim/cost_test.cpp checks that every row but the
// control-flow ones has a rule, and the closed forms below.
//
// Conventions:
//   - bytes: every input read once and the output written once, at their own sizes (a
//     broadcast operand counts once, not once per use); views (reshape, tuple and record
//     plumbing) move nothing.
//   - flops: a multiply-add is 2. Arithmetic is 1 per element; transcendental functions
//     (exp, log, tanh, erf, ...) a nominal 10, as they cost several instructions each; these
//     ops are memory-bound on every device we model, so the figure rarely decides the time.
//   - matmul: 2 m n k per batch element. conv2d: 2 x output elements x (C/groups) kh kw, plus
//     the bias; its two derivative helpers the same count (each is one convolution).
//   - pooling: one comparison or addition per output element per window element.
//   - normalisations: per input element, softmax and log_softmax 5 (max, subtract, exp, sum,
//     divide), cross_entropy 5, layer_norm and batch_norm 8 (mean, variance, normalise, scale,
//     shift).
#include "semantics/cost.h"

#include <algorithm>

#include "ops/families.h"
#include "ops/kernel_util.h"

namespace spora::ops {

namespace {

using sem::CostRule;
using sem::elements;
using sem::input_bytes;
using sem::OpCost;
using sem::set_cost;
using sem::type_bytes;
using Types = std::vector<TypeP>;

// The product of a pooling row's kernel attribute (an int or a pair).
double window(const Attrs& attrs) {
  const auto& k = attrs.get_ints("kernel");
  if (k.empty()) return 1;
  return k.size() == 1 ? static_cast<double>(k[0] * k[0]) : static_cast<double>(k[0] * k[1]);
}

// Multiply-adds per output element of a convolution with weight w [O, C/groups, kh, kw].
double conv_macs_per_output(const TypeP& w) {
  if (!w || !w->is_tensor() || w->rank() != 4 || w->shape[0] <= 0) return 0;
  return elements(w) / static_cast<double>(w->shape[0]);
}

// The forward GEMM of one image and group of a convolution with weight w and output y
// [N, O, Ho, Wo]: (O/groups, Ho Wo, (C/groups) kh kw); zeros when a shape is unknown.
std::array<double, 3> conv_gemm(const TypeP& w, const TypeP& y, const Attrs& attrs) {
  if (!w || !y || !w->is_tensor() || !y->is_tensor() || w->rank() != 4 || y->rank() != 4) return {};
  const double groups = attrs.has("groups") ? static_cast<double>(attrs.get_int("groups")) : 1;
  return {static_cast<double>(w->shape[0]) / groups,
          static_cast<double>(y->shape[2]) * static_cast<double>(y->shape[3]),
          conv_macs_per_output(w)};
}

// Per element of the first input, for the normalisations whose output may be a tuple.
CostRule per_input_element(double flops, const std::string& op_class) {
  return [flops, op_class](const Types& in, const TypeP& out, const Attrs&) {
    return OpCost{flops * (in.empty() ? 0 : elements(in[0])), input_bytes(in) + type_bytes(out),
                  op_class};
  };
}

CostRule pool_cost(bool over_output) {
  return [over_output](const Types& in, const TypeP& out, const Attrs& attrs) {
    // Forward rows and max_pool2d_select work per output window; the gradient helpers per
    // element of their cotangent (one window each).
    const TypeP& windows = over_output ? out : in.back();
    return OpCost{elements(windows) * window(attrs), input_bytes(in) + type_bytes(out), "pool"};
  };
}

void elementwise_costs(sem::Registry& r) {
  for (const char* name : {"neg", "abs", "sign", "square", "relu", "floor", "ceil", "round",
                           "reciprocal", "add", "sub", "mul", "div", "floordiv", "mod", "maximum",
                           "minimum"})
    set_cost(r, name, sem::elementwise_cost(1));
  for (const char* name : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "gelu", "sin", "cos",
                           "erf", "log1p", "expm1", "pow"})
    set_cost(r, name, sem::elementwise_cost(10));
}

void compare_costs(sem::Registry& r) {
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                           "logical_not", "where", "cast"})
    set_cost(r, name, sem::elementwise_cost(1));
}

void reduction_costs(sem::Registry& r) {
  for (const char* name : {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any"})
    set_cost(r, name, sem::reduction_cost(1));
}

void matmul_costs(sem::Registry& r) {
  set_cost(r, "matmul", [](const Types& in, const TypeP& out, const Attrs&) {
    // out holds batch x m x n elements (promoted axes removed), each a dot product over k.
    const double k = in[0]->rank() > 0 ? static_cast<double>(in[0]->shape.back()) : 0;
    OpCost c{2 * k * elements(out), input_bytes(in) + type_bytes(out), "matmul"};
    const auto dim = [](const TypeP& t, int from_end) {
      return t->rank() >= from_end ? static_cast<double>(t->shape[t->rank() - from_end]) : 1.0;
    };
    c.gemm = {in[0]->rank() >= 2 ? dim(in[0], 2) : 1, in[1]->rank() >= 2 ? dim(in[1], 1) : 1, k};
    // A batched left operand times one matrix runs as one GEMM with the batches stacked as rows
    // (backends/cpu/matmul.cpp), e.g. f32[8,128,256] @ f32[256,256] as 1024 x 256 x 256.
    const double rows = elements(in[0]) / std::max(k, 1.0);
    if (in[0]->rank() > 2 && in[1]->rank() <= 2 && rows > 0) c.gemm[0] = rows;
    return c;
  });
}

void shape_costs(sem::Registry& r) {
  for (const char* name : {"reshape", "flatten", "squeeze", "unsqueeze", "expand_dims",
                           "make_tuple", "tuple_get", "make_record", "record_get"})
    set_cost(r, name, sem::view_cost());
  for (const char* name : {"transpose", "permute", "broadcast_to", "concat", "stack", "slice",
                           "gather"})
    set_cost(r, name, sem::copy_cost());
  set_cost(r, "one_hot", sem::elementwise_cost(1));
  // Zeros of the input's shape written, g read into them.
  set_cost(r, "slice_grad", [](const Types& in, const TypeP& out, const Attrs&) {
    return OpCost{0, input_bytes(in) + type_bytes(out), "copy"};
  });
  // x copied to the output, one addition per update.
  set_cost(r, "scatter_add", [](const Types& in, const TypeP& out, const Attrs&) {
    return OpCost{in.size() > 2 ? elements(in[2]) : 0, input_bytes(in) + type_bytes(out), "copy"};
  });
}

void nn_costs(sem::Registry& r) {
  set_cost(r, "softmax", per_input_element(5, "norm"));
  set_cost(r, "log_softmax", per_input_element(5, "norm"));
  set_cost(r, "logsumexp", sem::reduction_cost(4));
  set_cost(r, "cross_entropy", per_input_element(5, "norm"));
  set_cost(r, "layer_norm", per_input_element(8, "norm"));
  set_cost(r, "batch_norm", per_input_element(8, "norm"));
  set_cost(r, "dropout", sem::elementwise_cost(3));
}

void conv_costs(sem::Registry& r) {
  // c.gemm: the GEMM of one image and group as backends/cpu/conv.cpp runs it, with Og output
  // channels per group, P output pixels and K = (C/groups) kh kw: forward [Og, K] x [K, P],
  // input gradient [K, Og] x [Og, P], weight gradient [Og, P] x [P, K].
  set_cost(r, "conv2d", [](const Types& in, const TypeP& out, const Attrs& attrs) {
    const bool bias = in.size() > 2 && in[2] && in[2]->is_tensor();
    const double flops = elements(out) * (2 * conv_macs_per_output(in[1]) + (bias ? 1 : 0));
    OpCost c{flops, input_bytes(in) + type_bytes(out), "conv"};
    c.gemm = conv_gemm(in[1], out, attrs);
    return c;
  });
  // conv2d_input_grad(g, w): one multiply-add per cotangent element per weight of its channel.
  set_cost(r, "conv2d_input_grad", [](const Types& in, const TypeP& out, const Attrs& attrs) {
    OpCost c{2 * elements(in[0]) * conv_macs_per_output(in[1]), input_bytes(in) + type_bytes(out),
             "conv"};
    const auto [og, p, k] = conv_gemm(in[1], in[0], attrs);
    c.gemm = {k, p, og};
    return c;
  });
  // conv2d_weight_grad(x, g) -> w's shape: the same products, accumulated into w.
  set_cost(r, "conv2d_weight_grad", [](const Types& in, const TypeP& out, const Attrs& attrs) {
    OpCost c{2 * elements(in[1]) * conv_macs_per_output(out), input_bytes(in) + type_bytes(out),
             "conv"};
    const auto [og, p, k] = conv_gemm(out, in[1], attrs);
    c.gemm = {og, k, p};
    return c;
  });
  set_cost(r, "max_pool2d", pool_cost(true));
  set_cost(r, "avg_pool2d", pool_cost(true));
  set_cost(r, "max_pool2d_select", pool_cost(true));
  set_cost(r, "max_pool2d_grad", pool_cost(false));
  set_cost(r, "avg_pool2d_grad", pool_cost(false));
}

void creation_costs(sem::Registry& r) {
  set_cost(r, "zeros", sem::creation_cost(0));
  set_cost(r, "ones", sem::creation_cost(0));
  set_cost(r, "full", sem::creation_cost(0));
  set_cost(r, "arange", sem::creation_cost(1));
  set_cost(r, "normal", sem::creation_cost(10));
  set_cost(r, "uniform", sem::creation_cost(10));
}

void internal_costs(sem::Registry& r) {
  for (const char* name : {"print", "assert", "grad_check"}) set_cost(r, name, sem::host_cost());
  for (const char* name : {"identity", "stop_gradient"}) set_cost(r, name, sem::view_cost());
}

void tape_costs(sem::Registry& r) {
  for (const char* name : {"list_empty", "list_push", "list_get", "list_len", "list_add_at",
                           "list_add", "list_get_or_zeros"})
    set_cost(r, name, sem::host_cost());
}

// Collectives (ops/collective.cpp): the local memory traffic (the input read, the output
// written) and one addition per received element for the reductions, in the class "comm".
// The network time is not here: it depends on the cluster's links and the algorithm, which
// the simulator models from the collective schedule (parallel/collectives).
void collective_costs(sem::Registry& r) {
  auto comm_cost = [](bool reduces) -> CostRule {
    return [reduces](const Types& in, const TypeP& out, const Attrs& attrs) {
      int64_t group = 1;
      if (attrs.has("axes")) {
        for (int64_t a : attrs.get_ints("axes")) group *= attrs.get_ints("mesh").at(a);
      } else if (attrs.has("axis")) {
        group = attrs.get_ints("mesh").at(attrs.get_int("axis"));
      }
      const double flops = reduces ? static_cast<double>(group - 1) * elements(out) : 0;
      return OpCost{flops, input_bytes(in) + type_bytes(out), "comm"};
    };
  };
  set_cost(r, "all_reduce", comm_cost(true));
  set_cost(r, "reduce_scatter", comm_cost(true));
  set_cost(r, "all_gather", comm_cost(false));
  set_cost(r, "all_to_all", comm_cost(false));
  set_cost(r, "shard_slice", sem::copy_cost());
}

}  // namespace

void register_costs(sem::Registry& r) {
  elementwise_costs(r);
  compare_costs(r);
  reduction_costs(r);
  matmul_costs(r);
  shape_costs(r);
  nn_costs(r);
  conv_costs(r);
  creation_costs(r);
  internal_costs(r);
  tape_costs(r);
  collective_costs(r);
}

}  // namespace spora::ops
