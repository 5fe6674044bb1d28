#include "grad_cases.h"

#include <limits>

namespace spora::autodiff::testing {

namespace {

using Ints = std::vector<int64_t>;
constexpr int64_t kOmit = std::numeric_limits<int64_t>::max();  // an omitted slice bound
const Attr kNone = Attr{std::monostate{}};

GradCase op(std::string name, std::string prim, std::vector<InputSpec> inputs, Attrs a = {}) {
  GradCase c;
  c.name = std::move(name);
  c.prim = std::move(prim);
  c.inputs = std::move(inputs);
  c.attrs = std::move(a);
  return c;
}

void unary(std::vector<GradCase>& cs) {
  const Shape s{2, 3};
  for (const char* p : {"neg", "square", "exp", "tanh", "sigmoid", "gelu", "sin", "cos", "erf",
                        "expm1", "identity"})
    cs.push_back(op(p, p, {f64(s)}));
  // Parallel annotations (ops/annotation.cpp): identities whose cotangent passes through.
  cs.push_back(
      op("shard_hint", "shard_hint", {f64(s)}, attrs({{"layout", std::string("(2, 1)")}})));
  cs.push_back(op("stage_boundary", "stage_boundary", {f64(s)}, attrs({{"stage", int64_t{1}}})));
  for (const char* p : {"abs", "relu", "reciprocal"})
    cs.push_back(op(p, p, {f64(s, Draw::away_from_zero)}));
  for (const char* p : {"log", "sqrt", "rsqrt", "log1p"})
    cs.push_back(op(p, p, {f64(s, Draw::positive)}));
}

void binary(std::vector<GradCase>& cs) {
  for (const char* p : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    Draw dy = std::string(p) == "div" ? Draw::away_from_zero : Draw::normal;
    std::string n = p;
    cs.push_back(op(n + "_same", p, {f64({2, 3}), f64({2, 3}, dy)}));
    cs.push_back(op(n + "_row", p, {f64({2, 3}), f64({3}, dy)}));
    cs.push_back(op(n + "_outer", p, {f64({2, 1}), f64({1, 3}, dy)}));
    cs.push_back(op(n + "_scalar", p, {f64({}), f64({2, 3}, dy)}));
  }
  // x / y kept clear of integers, where x % y jumps.
  cs.push_back(op("mod", "mod",
                  {fixed({2, 3}, {0.3, 2.9, -1.2, 4.4, -3.3, 0.8}), fixed({3}, {1.7, -2.3, 0.9})}));
  cs.push_back(op("pow", "pow", {f64({2, 3}, Draw::positive), f64({2, 3})}));
  cs.push_back(op("pow_broadcast", "pow", {f64({3}, Draw::positive), f64({2, 1})}));
  // Negative bases with an integer exponent: d/dx only (d/dy does not exist there).
  cs.push_back(op("pow_square_negative_base", "pow",
                  {f64({2, 3}, Draw::away_from_zero), unchecked(fixed({}, {2.0}))}));
}

void compare_and_cast(std::vector<GradCase>& cs) {
  cs.push_back(op("where", "where", {bools({2, 3}), f64({2, 3}), f64({2, 3})}));
  cs.push_back(op("where_broadcast", "where", {bools({2, 1}), f64({3}), f64({2, 3})}));
  cs.push_back(op("where_scalar_branch", "where", {bools({2, 3}), f64({}), f64({2, 3})}));
  cs.push_back(op("cast_f64_f64", "cast", {f64({2, 3})}, attrs({{"dtype", DType::f64}})));
  // f32 output: differences carry f32 rounding, so a big step and a loose tolerance (cast is
  // linear, the step costs nothing).
  GradCase c = op("cast_f64_f32", "cast", {f64({2, 3})}, attrs({{"dtype", DType::f32}}));
  c.h = 0.25;
  c.tol = 1e-5;
  cs.push_back(c);
}

void reductions(std::vector<GradCase>& cs) {
  const Shape s{2, 3, 2};
  for (const char* p : {"sum", "mean", "prod", "max", "min"}) {
    Draw d = std::string(p) == "prod" ? Draw::away_from_zero : Draw::distinct;
    std::string n = p;
    cs.push_back(op(n + "_all", p, {f64(s, d)}));
    cs.push_back(op(n + "_axis1", p, {f64(s, d)}, attrs({{"axis", Ints{1}}})));
    cs.push_back(
        op(n + "_axis1_keepdims", p, {f64(s, d)}, attrs({{"axis", Ints{1}}, {"keepdims", true}})));
    cs.push_back(op(n + "_axes02", p, {f64(s, d)}, attrs({{"axis", Ints{0, -1}}})));
    cs.push_back(
        op(n + "_all_keepdims", p, {f64(s, d)}, attrs({{"axis", kNone}, {"keepdims", true}})));
  }
  cs.push_back(op("logsumexp_all", "logsumexp", {f64({2, 3, 2})}));
  cs.push_back(op("logsumexp_axis1", "logsumexp", {f64({2, 3, 2})}, attrs({{"axis", Ints{1}}})));
  cs.push_back(op("logsumexp_axes_keepdims", "logsumexp", {f64({2, 3, 2})},
                  attrs({{"axis", Ints{0, 2}}, {"keepdims", true}})));
}

void matmul(std::vector<GradCase>& cs) {
  cs.push_back(op("matmul_2d", "matmul", {f64({2, 3}), f64({3, 4})}));
  cs.push_back(op("matmul_vec_mat", "matmul", {f64({3}), f64({3, 4})}));
  cs.push_back(op("matmul_mat_vec", "matmul", {f64({2, 3}), f64({3})}));
  cs.push_back(op("matmul_vec_vec", "matmul", {f64({3}), f64({3})}));
  cs.push_back(op("matmul_batched", "matmul", {f64({2, 2, 3}), f64({2, 3, 4})}));
  cs.push_back(op("matmul_batch_broadcast", "matmul", {f64({2, 1, 2, 3}), f64({3, 3, 2})}));
  cs.push_back(op("matmul_batch_times_matrix", "matmul", {f64({2, 2, 3}), f64({3, 2})}));
  cs.push_back(op("matmul_vec_batched", "matmul", {f64({3}), f64({2, 3, 2})}));
  // transpose_a / transpose_b: the operands read as stored, op(a) @ op(b).
  const Attrs ta = attrs({{"transpose_a", true}}), tb = attrs({{"transpose_b", true}});
  const Attrs both = attrs({{"transpose_a", true}, {"transpose_b", true}});
  cs.push_back(op("matmul_transpose_a", "matmul", {f64({3, 2}), f64({3, 4})}, ta));
  cs.push_back(op("matmul_transpose_b", "matmul", {f64({2, 3}), f64({4, 3})}, tb));
  cs.push_back(op("matmul_transpose_both", "matmul", {f64({3, 2}), f64({4, 3})}, both));
  cs.push_back(
      op("matmul_transpose_a_broadcast", "matmul", {f64({2, 1, 3, 2}), f64({3, 3, 2})}, ta));
  cs.push_back(op("matmul_vec_transpose_b", "matmul", {f64({3}), f64({2, 4, 3})}, tb));
  cs.push_back(op("matmul_transpose_both_batched", "matmul", {f64({2, 3, 2}), f64({4, 3})}, both));
}

void shapes(std::vector<GradCase>& cs) {
  cs.push_back(op("transpose", "transpose", {f64({2, 3, 4})}));
  cs.push_back(
      op("transpose_axes", "transpose", {f64({2, 3, 4})}, attrs({{"axes", Ints{1, 0, 2}}})));
  cs.push_back(op("permute", "permute", {f64({2, 3, 4})}, attrs({{"axes", Ints{1, 2, 0}}})));
  cs.push_back(op("reshape", "reshape", {f64({2, 3, 2})}, attrs({{"shape", Ints{3, -1}}})));
  cs.push_back(op("broadcast_to", "broadcast_to", {f64({3})}, attrs({{"shape", Ints{2, 3}}})));
  cs.push_back(
      op("broadcast_to_inner", "broadcast_to", {f64({2, 1})}, attrs({{"shape", Ints{3, 2, 4}}})));
  cs.push_back(op("flatten", "flatten", {f64({2, 3, 2})}));
  cs.push_back(op("squeeze", "squeeze", {f64({2, 1, 3, 1})}));
  cs.push_back(op("squeeze_axis", "squeeze", {f64({2, 1, 3, 1})}, attrs({{"axis", Ints{1}}})));
  cs.push_back(op("unsqueeze", "unsqueeze", {f64({2, 3})}, attrs({{"axis", int64_t{1}}})));
  cs.push_back(op("expand_dims", "expand_dims", {f64({2, 3})}, attrs({{"axis", int64_t{-1}}})));
  cs.push_back(op("concat_axis1", "concat", {f64({2, 1}), f64({2, 3}), f64({2, 2})},
                  attrs({{"axis", int64_t{1}}})));
  cs.push_back(op("concat_axis0", "concat", {f64({1, 3}), f64({2, 3})}));
  cs.push_back(
      op("stack", "stack", {f64({2, 3}), f64({2, 3}), f64({2, 3})}, attrs({{"axis", int64_t{1}}})));
  cs.push_back(
      op("stack_last", "stack", {f64({2, 3}), f64({2, 3})}, attrs({{"axis", int64_t{-1}}})));
  // x[1:3, ::2]
  cs.push_back(op("slice", "slice", {f64({3, 4})},
                  attrs({{"starts", Ints{1, 0}},
                         {"stops", Ints{3, kOmit}},
                         {"steps", Ints{1, 2}},
                         {"squeeze", Ints{}}})));
  // x[::-1, -1] and x[0]
  cs.push_back(op("slice_reverse_index", "slice", {f64({3, 4})},
                  attrs({{"starts", Ints{kOmit, -1}},
                         {"stops", Ints{kOmit, 0}},
                         {"steps", Ints{-1, 1}},
                         {"squeeze", Ints{1}}})));
  cs.push_back(op(
      "slice_index", "slice", {f64({3, 4, 2})},
      attrs({{"starts", Ints{0}}, {"stops", Ints{1}}, {"steps", Ints{1}}, {"squeeze", Ints{0}}})));
  cs.push_back(op("slice_grad", "slice_grad", {f64({2, 2})},
                  attrs({{"shape", Ints{3, 4}},
                         {"starts", Ints{1, 0}},
                         {"stops", Ints{3, kOmit}},
                         {"steps", Ints{1, 2}},
                         {"squeeze", Ints{}}})));
  // Repeated and negative indices accumulate.
  cs.push_back(op("gather", "gather", {f64({4, 3}), fixed({5}, {0, 2, 2, -1, 1}, DType::i64)}));
  cs.push_back(op("gather_axis1_2d_indices", "gather",
                  {f64({2, 4, 2}), fixed({2, 2}, {3, 0, 3, 1}, DType::i32)},
                  attrs({{"axis", int64_t{1}}})));
  cs.push_back(op("scatter_add", "scatter_add",
                  {f64({4, 3}), fixed({5}, {0, 2, 2, -1, 1}, DType::i64), f64({5, 3})}));
  cs.push_back(op("scatter_add_axis1", "scatter_add",
                  {f64({2, 4}), indices({3}, 0, 4), f64({2, 3})}, attrs({{"axis", int64_t{1}}})));
}

void nn(std::vector<GradCase>& cs) {
  cs.push_back(op("softmax", "softmax", {f64({2, 4})}));
  cs.push_back(op("softmax_axis0", "softmax", {f64({3, 2, 2})}, attrs({{"axis", int64_t{0}}})));
  cs.push_back(op("log_softmax", "log_softmax", {f64({2, 4})}));
  cs.push_back(
      op("log_softmax_axis1", "log_softmax", {f64({2, 3, 2})}, attrs({{"axis", int64_t{1}}})));
  for (const char* red : {"mean", "sum", "none"}) {
    std::string r = red;
    cs.push_back(op("cross_entropy_" + r, "cross_entropy", {f64({3, 4}), indices({3}, 0, 4)},
                    attrs({{"reduction", r}})));
    cs.push_back(op("cross_entropy_soft_" + r, "cross_entropy",
                    {f64({3, 4}), f64({3, 4}, Draw::positive)}, attrs({{"reduction", r}})));
  }
  cs.push_back(op("cross_entropy_1d", "cross_entropy", {f64({5}), indices({}, 0, 5, DType::i32)}));
  cs.push_back(
      op("cross_entropy_spatial", "cross_entropy", {f64({2, 3, 2, 2}), indices({2, 2, 2}, 0, 3)}));
  cs.push_back(op("cross_entropy_spatial_soft", "cross_entropy",
                  {f64({2, 3, 2}), f64({2, 3, 2}, Draw::positive)},
                  attrs({{"reduction", std::string("none")}})));
  cs.push_back(op("layer_norm", "layer_norm", {f64({3, 4})}));
  cs.push_back(op("layer_norm_affine", "layer_norm", {f64({3, 4}), f64({4}), f64({4})}));
  cs.push_back(op("layer_norm_gamma_ndim2", "layer_norm", {f64({2, 3, 2}), f64({3, 2})},
                  attrs({{"ndim", int64_t{2}}})));
  cs.push_back(op("layer_norm_grad", "layer_norm_grad", {f64({3, 4}), f64({3, 4})}));
  cs.push_back(op("layer_norm_grad_ndim2", "layer_norm_grad", {f64({2, 3, 2}), f64({2, 3, 2})},
                  attrs({{"ndim", int64_t{2}}, {"eps", 0.5}})));
  for (bool training : {false, true}) {
    std::string m = training ? "_training" : "_inference";
    cs.push_back(op("batch_norm_2d" + m, "batch_norm",
                    {f64({4, 3}), f64({3}), f64({3}), f64({3}), f64({3}, Draw::positive)},
                    attrs({{"training", training}, {"momentum", 0.3}})));
    cs.push_back(op("batch_norm_4d" + m, "batch_norm",
                    {f64({2, 3, 2, 2}), f64({3}), f64({3}), f64({3}), f64({3}, Draw::positive)},
                    attrs({{"training", training}, {"eps", 0.01}})));
  }
  cs.push_back(op("dropout", "dropout", {f64({4, 5})}, attrs({{"p", 0.3}, {"seed", int64_t{7}}})));
  cs.push_back(
      op("dropout_eval", "dropout", {f64({4, 5})}, attrs({{"p", 0.3}, {"training", false}})));
}

void conv(std::vector<GradCase>& cs) {
  cs.push_back(op("conv2d", "conv2d", {f64({1, 2, 5, 5}), f64({3, 2, 3, 3}), f64({3})}));
  cs.push_back(op("conv2d_no_bias_batch", "conv2d", {f64({2, 1, 4, 4}), f64({2, 1, 2, 2})}));
  cs.push_back(op("conv2d_stride_padding", "conv2d",
                  {f64({1, 2, 5, 6}), f64({2, 2, 3, 3}), f64({2})},
                  attrs({{"stride", Ints{2}}, {"padding", Ints{1}}})));
  cs.push_back(op("conv2d_asymmetric", "conv2d", {f64({1, 1, 5, 6}), f64({2, 1, 2, 3})},
                  attrs({{"stride", Ints{1, 2}}, {"padding", Ints{0, 1}}})));
  cs.push_back(op("conv2d_dilation", "conv2d", {f64({1, 1, 6, 6}), f64({1, 1, 2, 2})},
                  attrs({{"dilation", Ints{2}}, {"padding", Ints{1}}})));
  cs.push_back(op("conv2d_groups", "conv2d", {f64({1, 4, 4, 4}), f64({6, 2, 2, 2}), f64({6})},
                  attrs({{"groups", int64_t{2}}, {"stride", Ints{2}}})));
  // The helpers the rules emit (their own rules give the second derivatives of conv2d).
  Attrs geom = attrs({{"stride", Ints{2}}, {"padding", Ints{1}}, {"groups", int64_t{2}}});
  Attrs gi = geom, gw = geom;
  gi.set("shape", Ints{1, 4, 5, 5});
  gw.set("shape", Ints{4, 2, 3, 3});
  cs.push_back(
      op("conv2d_input_grad", "conv2d_input_grad", {f64({1, 4, 3, 3}), f64({4, 2, 3, 3})}, gi));
  cs.push_back(
      op("conv2d_weight_grad", "conv2d_weight_grad", {f64({1, 4, 5, 5}), f64({1, 4, 3, 3})}, gw));
  // Pooling; max pooling on distinct values (no ties).
  cs.push_back(op("max_pool2d", "max_pool2d", {f64({1, 2, 4, 4}, Draw::distinct)},
                  attrs({{"kernel", Ints{2}}})));
  cs.push_back(op("max_pool2d_overlap", "max_pool2d", {f64({2, 1, 5, 5}, Draw::distinct)},
                  attrs({{"kernel", Ints{3}}, {"stride", Ints{1}}, {"padding", Ints{1}}})));
  cs.push_back(op("max_pool2d_grad", "max_pool2d_grad",
                  {f64({1, 1, 5, 5}, Draw::distinct), f64({1, 1, 4, 4})},
                  attrs({{"kernel", Ints{2}}, {"stride", Ints{1}}})));
  cs.push_back(op("max_pool2d_select", "max_pool2d_select",
                  {f64({1, 1, 5, 5}, Draw::distinct), f64({1, 1, 5, 5})},
                  attrs({{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}})));
  cs.push_back(op("avg_pool2d", "avg_pool2d", {f64({1, 2, 4, 4})}, attrs({{"kernel", Ints{2}}})));
  cs.push_back(op("avg_pool2d_padding", "avg_pool2d", {f64({1, 1, 5, 5})},
                  attrs({{"kernel", Ints{3}}, {"stride", Ints{2}}, {"padding", Ints{1}}})));
  cs.push_back(op("avg_pool2d_grad", "avg_pool2d_grad", {f64({1, 1, 3, 3})},
                  attrs({{"kernel", Ints{3}},
                         {"stride", Ints{2}},
                         {"padding", Ints{1}},
                         {"shape", Ints{1, 1, 5, 5}}})));
}

}  // namespace

const std::vector<GradCase>& grad_cases() {
  static const std::vector<GradCase> cases = [] {
    std::vector<GradCase> cs;
    unary(cs);
    binary(cs);
    compare_and_cast(cs);
    reductions(cs);
    matmul(cs);
    shapes(cs);
    nn(cs);
    conv(cs);
    return cs;
  }();
  return cases;
}

}  // namespace spora::autodiff::testing
