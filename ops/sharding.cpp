// The "sharding" facet of every primitive row (parallel/sharding/sharding.h): how each
// primitive may run on a device mesh, grouped by the family file that defines the row. Most
// rules are label specs (parallel/sharding/dim_rule.h): which dims of the inputs and the output
// are one index space that may be cut, which were summed over (split -> partial output), and
// which may never be cut. tests/parallel/layout/sharding_rules_test.cpp checks that every row has a
// rule and that running each rule's strategies on shards and reassembling equals the unsharded op.
//
// What is never split, and why:
//   - a normalised axis (softmax, log_softmax, layer_norm's last ndim, cross_entropy's classes):
//     every output element needs the whole axis;
//   - reduced axes of max, min, prod, argmax, argmin, all, any, logsumexp: their partial results
//     do not combine by a sum (the only partial state layouts have);
//   - conv and pooling spatial dims (windows straddle the shards: halo exchange is not modelled);
//     conv's input channels with a bias (the bias would be added once per shard) or groups > 1;
//   - batch_norm's batch dim in training (the statistics need the whole batch), so its rule
//     splits channels only; in eval mode the batch may be split too;
//   - sliced, gathered, concatenated and stacked axes (the local index would differ per rank);
//     reshape dims except the leading dim of each group of merged/split dims;
//   - random ops (normal, uniform, dropout in training): the counter-based generator numbers
//     elements by their global index, so a shard drawn locally would repeat the first shard's
//     numbers; arange (its values depend on the position);
//   - effects, control flow, lists and tuple/record plumbing: replicated only (the partitioner
//     tracks tuple element layouts itself).
#include <algorithm>
#include <limits>

#include "ops/families.h"
#include "ops/kernel_util.h"
#include "parallel/sharding/dim_rule.h"

namespace spora::ops {

namespace {

using parallel::dim_rule;
using parallel::DimSpec;
using parallel::Layout;
using parallel::Mesh;
using parallel::OpStrategy;
using parallel::replicated_only_rule;
using parallel::set_sharding;
using parallel::ShardingRule;
using Types = std::vector<TypeP>;
using Spec = std::optional<DimSpec>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

bool is_tensor(const Types& in, size_t i) { return i < in.size() && in[i] && in[i]->is_tensor(); }
int rank(const TypeP& t) { return static_cast<int>(t->rank()); }

// Input dims aligned to the right of the output's (NumPy broadcasting): a dim of the output's
// size carries the output dim's label, a broadcast one (size 1 against more) never splits.
std::vector<int> broadcast_map(const TypeP& in, const TypeP& out, const std::vector<int>& out_map) {
  std::vector<int> map;
  const int off = rank(out) - rank(in);
  for (int d = 0; d < rank(in); ++d) {
    const int od = d + off;
    map.push_back(od >= 0 &&
                          in->shape[static_cast<size_t>(d)] == out->shape[static_cast<size_t>(od)]
                      ? out_map[static_cast<size_t>(od)]
                      : -1);
  }
  return map;
}

// Unary and n-ary elementwise ops (with broadcasting): every output dim is a label.
Spec elementwise_spec(const Types& in, const TypeP& out, const Attrs&) {
  if (!out || !out->is_tensor()) return std::nullopt;
  DimSpec s;
  s.output = s.add_dims(rank(out));
  for (size_t i = 0; i < in.size(); ++i)
    s.inputs.push_back(is_tensor(in, i) ? broadcast_map(in[i], out, s.output) : std::vector<int>{});
  return s;
}

ShardingRule elementwise_rule() { return dim_rule(elementwise_spec); }

// A spec that also passes partial sums through the inputs it is linear in (DimSpec::linear):
// Joint for sums of inputs and one-input linear maps, One for products (linear in each factor
// alone). The sharding rules test runs every such strategy on random partial pieces.
parallel::DimSpecFn linear(parallel::DimSpecFn spec, DimSpec::Linear kind,
                           std::vector<int> inputs = {0}) {
  return [spec, kind, inputs](const Types& in, const TypeP& out, const Attrs& attrs) -> Spec {
    Spec s = spec(in, out, attrs);
    if (!s) return s;
    s->linear = kind;
    s->linear_inputs = inputs;
    return s;
  };
}
constexpr DimSpec::Linear kJoint = DimSpec::Linear::Joint;
constexpr DimSpec::Linear kOne = DimSpec::Linear::One;

// cast is linear between floating-point dtypes only (a cast to an integer rounds each piece).
Spec cast_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  Spec s = elementwise_spec(in, out, attrs);
  if (s && is_tensor(in, 0) && is_float(in[0]->dtype) && is_float(out->dtype)) {
    s->linear = kJoint;
    s->linear_inputs = {0};
  }
  return s;
}

// Reductions: kept dims are labels shared with the output; reduced dims are labels that sum and
// mean may split (partial output; mean's local result scaled by 1/p), the others never.
parallel::DimSpecFn reduction_spec(bool sum_like, bool mean) {
  return [sum_like, mean](const Types& in, const TypeP& out, const Attrs& attrs) -> Spec {
    if (!is_tensor(in, 0)) return std::nullopt;
    const Type& x = *in[0];
    std::vector<int64_t> axes = reduction_axes(attrs, "axis", x);
    const bool keep = attrs.has("keepdims") && attrs.get_bool("keepdims");
    DimSpec s;
    std::vector<int> xm;
    for (int d = 0; d < rank(in[0]); ++d) {
      const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (!reduced) {
        const int l = s.add("d" + std::to_string(d));
        xm.push_back(l);
        s.output.push_back(l);
        continue;
      }
      xm.push_back(sum_like ? s.add("r" + std::to_string(d), true, mean) : -1);
      if (keep) s.output.push_back(-1);
    }
    s.inputs = {xm};
    if (out && out->is_tensor() && static_cast<int>(s.output.size()) != rank(out))
      return std::nullopt;  // argmax/argmin over every axis: a flat index
    return s;
  };
}

// matmul with NumPy semantics: batch dims broadcast, 1-D operands promoted.
Spec matmul_spec(const Types& in, const TypeP& out, const Attrs&) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || !out || !out->is_tensor()) return std::nullopt;
  const TypeP &a = in[0], &b = in[1];
  const int ra = rank(a), rb = rank(b);
  DimSpec s;
  const int k = s.add("k", true);
  const int m = ra >= 2 ? s.add("m") : -1;
  const int n = rb >= 2 ? s.add("n") : -1;
  const int batch = rank(out) - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
  std::vector<int> out_batch;
  for (int d = 0; d < batch; ++d) out_batch.push_back(s.add("b" + std::to_string(d)));
  auto batch_map = [&](const TypeP& t, int core) {
    std::vector<int> map;
    const int r = rank(t) - core, off = batch - r;
    for (int d = 0; d < r; ++d) {
      const int od = d + off;
      map.push_back(od >= 0 &&
                            t->shape[static_cast<size_t>(d)] == out->shape[static_cast<size_t>(od)]
                        ? out_batch[static_cast<size_t>(od)]
                        : -1);
    }
    return map;
  };
  std::vector<int> am = ra >= 2 ? batch_map(a, 2) : std::vector<int>{};
  if (ra >= 2) am.push_back(m);
  am.push_back(k);
  std::vector<int> bm = rb >= 2 ? batch_map(b, 2) : std::vector<int>{};
  bm.push_back(k);
  if (rb >= 2) bm.push_back(n);
  s.inputs = {am, bm};
  s.output = out_batch;
  if (m >= 0) s.output.push_back(m);
  if (n >= 0) s.output.push_back(n);
  return s;
}

int64_t groups_of(const Attrs& attrs) { return attrs.has("groups") ? attrs.get_int("groups") : 1; }

// conv2d(x [N,C,H,W], w [O,C/g,kh,kw], b [O]?) -> [N,O,H',W'].
Spec conv2d_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || rank(in[0]) != 4) return std::nullopt;
  const bool bias = is_tensor(in, 2);
  const bool g1 = groups_of(attrs) == 1;
  DimSpec s;
  const int N = s.add("batch");
  const int O = g1 ? s.add("out_ch") : -1;
  const int C = g1 && !bias ? s.add("in_ch", true) : -1;
  s.inputs = {{N, C, -1, -1}, {O, C, -1, -1}};
  if (bias) s.inputs.push_back({O});
  for (size_t i = s.inputs.size(); i < in.size(); ++i) s.inputs.push_back({});
  s.output = {N, O, -1, -1};
  return s;
}

// conv2d_input_grad(g [N,O,H',W'], w [O,C/g,kh,kw], shape) -> [N,C,H,W].
Spec conv_input_grad_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1)) return std::nullopt;
  const bool g1 = groups_of(attrs) == 1;
  DimSpec s;
  const int N = s.add("batch");
  const int C = g1 ? s.add("in_ch") : -1;
  const int O = g1 ? s.add("out_ch", true) : -1;
  s.inputs = {{N, O, -1, -1}, {O, C, -1, -1}};
  s.output = {N, C, -1, -1};
  return s;
}

// conv2d_weight_grad(x [N,C,H,W], g [N,O,H',W'], shape) -> [O,C/g,kh,kw]: the batch is summed
// over (data parallelism's partial weight gradients).
Spec conv_weight_grad_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1)) return std::nullopt;
  const bool g1 = groups_of(attrs) == 1;
  DimSpec s;
  const int N = s.add("batch", true);
  const int C = g1 ? s.add("in_ch") : -1;
  const int O = g1 ? s.add("out_ch") : -1;
  s.inputs = {{N, C, -1, -1}, {N, O, -1, -1}};
  s.output = {O, C, -1, -1};
  return s;
}

// Pooling and its helpers: every tensor input and the output are [N, C, spatial...].
Spec pool_spec(const Types& in, const TypeP& out, const Attrs&) {
  if (!out || !out->is_tensor() || rank(out) != 4) return std::nullopt;
  DimSpec s;
  const int N = s.add("batch"), C = s.add("ch");
  for (size_t i = 0; i < in.size(); ++i)
    s.inputs.push_back(is_tensor(in, i) && rank(in[i]) == 4 ? std::vector<int>{N, C, -1, -1}
                                                            : std::vector<int>{});
  s.output = {N, C, -1, -1};
  return s;
}

// Every dim but the normalised `axis`.
Spec softmax_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || rank(in[0]) == 0) return std::nullopt;
  const int64_t axis = normalize_axis(attrs.get_int("axis"), *in[0]);
  DimSpec s;
  s.output = s.add_dims(rank(in[0]));
  s.output[static_cast<size_t>(axis)] = -1;
  s.inputs = {s.output};
  return s;
}

Spec layer_norm_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0)) return std::nullopt;
  const int r = rank(in[0]);
  const int64_t nd = attrs.get_int("ndim");
  DimSpec s;
  s.output = s.add_dims(r);
  for (int d = r - static_cast<int>(nd); d < r; ++d)
    if (d >= 0) s.output[static_cast<size_t>(d)] = -1;
  s.inputs = {s.output};
  for (size_t i = 1; i < in.size(); ++i)
    s.inputs.push_back(is_tensor(in, i) ? std::vector<int>(static_cast<size_t>(rank(in[i])), -1)
                                        : std::vector<int>{});
  return s;
}

// cross_entropy(logits, labels): the class axis (1, or 0 for 1-D logits) never splits; the other
// dims are the batch, kept (reduction="none") or summed (partial; "mean" scales by 1/p).
Spec cross_entropy_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || rank(in[0]) == 0) return std::nullopt;
  const int r = rank(in[0]);
  const int cls = r >= 2 ? 1 : 0;
  const std::string red = attrs.has("reduction") ? attrs.get_string("reduction") : "mean";
  DimSpec s;
  std::vector<int> xm, kept;
  for (int d = 0; d < r; ++d) {
    if (d == cls) {
      xm.push_back(-1);
      continue;
    }
    const int l = s.add("d" + std::to_string(d), red != "none", red == "mean");
    xm.push_back(l);
    kept.push_back(l);
  }
  const bool soft = rank(in[1]) == r;
  s.inputs = {xm, soft ? xm : kept};
  if (red == "none") s.output = kept;
  return s;
}

// batch_norm: channels (dim 1 of x, dim 0 of the parameters) always; the batch in eval mode.
Spec batch_norm_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || rank(in[0]) < 2) return std::nullopt;
  const bool training = attrs.get_bool("training");
  DimSpec s;
  const int N = training ? -1 : s.add("batch");
  const int C = s.add("ch");
  std::vector<int> xm(static_cast<size_t>(rank(in[0])), -1);
  xm[0] = N;
  xm[1] = C;
  s.inputs = {xm};
  for (size_t i = 1; i < in.size(); ++i) s.inputs.push_back({C});
  if (training)
    s.tuple_outputs = std::vector<std::vector<int>>{xm, {C}, {C}};
  else
    s.output = xm;
  return s;
}

// transpose / permute: output dim i is input dim axes[i].
Spec permute_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0)) return std::nullopt;
  const int r = rank(in[0]);
  std::vector<int64_t> axes;
  if (attrs.is_none("axes")) {
    for (int d = r - 1; d >= 0; --d) axes.push_back(d);
  } else {
    axes = attrs.get_ints("axes");
  }
  if (static_cast<int>(axes.size()) != r) return std::nullopt;
  DimSpec s;
  s.inputs = {s.add_dims(r)};
  for (int64_t a : axes) s.output.push_back(static_cast<int>(normalize_axis(a, *in[0])));
  return s;
}

// Reshape and its kin: the dims of input and output group into runs of equal products; the
// leading dim of each run may split (the run's block then splits into contiguous pieces on
// both sides); the rest of each run, and size-1 dims, never split.
Spec reshape_spec(const Types& in, const TypeP& out, const Attrs&) {
  if (!is_tensor(in, 0) || !out || !out->is_tensor()) return std::nullopt;
  const Shape &a = in[0]->shape, &b = out->shape;
  for (int64_t v : a)
    if (v < 0) return std::nullopt;
  for (int64_t v : b)
    if (v < 0) return std::nullopt;
  DimSpec s;
  std::vector<int> am(a.size(), -1), bm(b.size(), -1);
  size_t i = 0, j = 0;
  auto skip_ones = [&] {
    while (i < a.size() && a[i] == 1) ++i;
    while (j < b.size() && b[j] == 1) ++j;
  };
  skip_ones();
  while (i < a.size() && j < b.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pa = a[i++], pb = b[j++];
    while (pa != pb) {
      if (pa < pb) {
        if (i >= a.size()) return std::nullopt;
        pa *= a[i++];
      } else {
        if (j >= b.size()) return std::nullopt;
        pb *= b[j++];
      }
    }
    const int l = s.add("d" + std::to_string(j0));
    am[i0] = l;
    bm[j0] = l;
    skip_ones();
  }
  s.inputs = {am};
  for (size_t k = 1; k < in.size(); ++k) s.inputs.push_back({});
  s.output = bm;
  return s;
}

// broadcast_to(x, shape): x's dims aligned to the right of the target's.
Spec broadcast_to_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  return elementwise_spec(in, out, attrs);
}

// concat(xs, axis) and stack(xs, axis): every dim but the joined one.
parallel::DimSpecFn join_spec(bool stack) {
  return [stack](const Types& in, const TypeP& out, const Attrs& attrs) -> Spec {
    if (!out || !out->is_tensor()) return std::nullopt;
    for (size_t i = 0; i < in.size(); ++i)
      if (!is_tensor(in, i)) return std::nullopt;
    const int64_t axis = normalize_axis(attrs.get_int("axis"), *out);
    DimSpec s;
    s.output = s.add_dims(rank(out));
    s.output[static_cast<size_t>(axis)] = -1;
    std::vector<int> xm = s.output;
    if (stack) xm.erase(xm.begin() + axis);
    s.inputs.assign(in.size(), xm);
    return s;
  };
}

// Whether axis i of a slice takes the whole dim of size len (start 0, to the end, step 1).
bool whole_axis(const Attrs& attrs, size_t i, int64_t len) {
  const auto& starts = attrs.get_ints("starts");
  const auto& stops = attrs.get_ints("stops");
  const auto& steps = attrs.get_ints("steps");
  const auto& squeeze = attrs.get_ints("squeeze");
  if (i >= starts.size()) return true;
  if (std::find(squeeze.begin(), squeeze.end(), static_cast<int64_t>(i)) != squeeze.end())
    return false;
  const int64_t step = i < steps.size() ? steps[i] : 1;
  const int64_t stop = i < stops.size() ? stops[i] : kMax;
  const int64_t start = starts[i];
  const bool from0 = start == 0 || start == kMax || start == kMin || start <= -len;
  const bool to_end = stop == kMax || stop == kMin || stop >= len;
  return step == 1 && from0 && to_end;
}

// The result dims of slice on x: per x dim, the result dim (or -1 for a squeezed one).
std::vector<int> slice_dims(const Attrs& attrs, int r) {
  const auto& starts = attrs.get_ints("starts");
  const auto& squeeze = attrs.get_ints("squeeze");
  std::vector<int> res;
  int next = 0;
  for (int d = 0; d < r; ++d) {
    const bool sq = static_cast<size_t>(d) < starts.size() &&
                    std::find(squeeze.begin(), squeeze.end(), d) != squeeze.end();
    res.push_back(sq ? -1 : next++);
  }
  return res;
}

// slice(x, ...): only the axes taken whole split.
Spec slice_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !out || !out->is_tensor()) return std::nullopt;
  const int r = rank(in[0]);
  const std::vector<int> res = slice_dims(attrs, r);
  DimSpec s;
  std::vector<int> xm(static_cast<size_t>(r), -1);
  s.output.assign(static_cast<size_t>(rank(out)), -1);
  for (int d = 0; d < r; ++d) {
    const int64_t len = in[0]->shape[static_cast<size_t>(d)];
    if (len < 0 || res[static_cast<size_t>(d)] < 0 ||
        !whole_axis(attrs, static_cast<size_t>(d), len))
      continue;
    const int l = s.add("d" + std::to_string(d));
    xm[static_cast<size_t>(d)] = l;
    s.output[static_cast<size_t>(res[static_cast<size_t>(d)])] = l;
  }
  s.inputs = {xm};
  return s;
}

// slice_grad(g, shape, ...) -> zeros of shape with g where slice reads: the axes slice takes
// whole split alike in g and the result.
Spec slice_grad_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !out || !out->is_tensor()) return std::nullopt;
  const int r = rank(out);
  const std::vector<int> res = slice_dims(attrs, r);
  DimSpec s;
  std::vector<int> gm(static_cast<size_t>(rank(in[0])), -1);
  s.output.assign(static_cast<size_t>(r), -1);
  for (int d = 0; d < r; ++d) {
    const int64_t len = out->shape[static_cast<size_t>(d)];
    if (len < 0 || res[static_cast<size_t>(d)] < 0 ||
        !whole_axis(attrs, static_cast<size_t>(d), len))
      continue;
    const int l = s.add("d" + std::to_string(d));
    s.output[static_cast<size_t>(d)] = l;
    gm[static_cast<size_t>(res[static_cast<size_t>(d)])] = l;
  }
  s.inputs = {gm};
  return s;
}

// The slice attributes of a local application: a cut axis is taken whole, so its bounds become
// "from the start to the end" (a global stop such as 4 would cut a local axis of 2 correctly
// only by clamping; say what is meant instead).
parallel::LocalAttrsFn slice_local_attrs(bool grad) {
  return [grad](const Attrs& a, const OpStrategy& st, const Types& in, const TypeP& out,
                const Mesh& m) {
    const Layout& xl = grad ? st.output : st.inputs.at(0);
    std::vector<int64_t> starts = a.get_ints("starts"), stops = a.get_ints("stops"),
                         steps = a.get_ints("steps");
    for (size_t d = 0; d < xl.tensor_map.size() && d < starts.size(); ++d) {
      if (xl.tensor_map[d] < 0) continue;
      starts[d] = 0;
      if (d < stops.size()) stops[d] = kMax;
      if (d < steps.size()) steps[d] = 1;
    }
    Attrs r;
    for (const auto& [k, v] : a.items()) {
      if (k == "starts")
        r.set(k, starts);
      else if (k == "stops")
        r.set(k, stops);
      else if (k == "steps")
        r.set(k, steps);
      else if (k == "shape" && grad && out && out->is_tensor())
        r.set(k, st.output.local_shape(out->shape, m));
      else
        r.set(k, v);
    }
    return r;
  };
}

// gather(x, indices, axis) -> x.shape[:axis] + indices.shape + x.shape[axis+1:].
Spec gather_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1)) return std::nullopt;
  const int r = rank(in[0]), ri = rank(in[1]);
  const int axis = static_cast<int>(normalize_axis(attrs.get_int("axis"), *in[0]));
  DimSpec s;
  std::vector<int> xm, im;
  for (int d = 0; d < r; ++d) xm.push_back(d == axis ? -1 : s.add("x" + std::to_string(d)));
  for (int d = 0; d < ri; ++d) im.push_back(s.add("i" + std::to_string(d)));
  s.output.assign(xm.begin(), xm.begin() + axis);
  s.output.insert(s.output.end(), im.begin(), im.end());
  s.output.insert(s.output.end(), xm.begin() + axis + 1, xm.end());
  s.inputs = {xm, im};
  return s;
}

// scatter_add(x, indices, updates, axis): x's other dims split alike in updates and the
// result; the indices and the scattered axis never.
Spec scatter_add_spec(const Types& in, const TypeP&, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || !is_tensor(in, 2)) return std::nullopt;
  const int r = rank(in[0]), ri = rank(in[1]);
  const int axis = static_cast<int>(normalize_axis(attrs.get_int("axis"), *in[0]));
  DimSpec s;
  std::vector<int> xm;
  for (int d = 0; d < r; ++d) xm.push_back(d == axis ? -1 : s.add("x" + std::to_string(d)));
  std::vector<int> um(xm.begin(), xm.begin() + axis);
  um.insert(um.end(), static_cast<size_t>(ri), -1);
  um.insert(um.end(), xm.begin() + axis + 1, xm.end());
  s.inputs = {xm, std::vector<int>(static_cast<size_t>(ri), -1), um};
  s.output = xm;
  return s;
}

// one_hot(labels) -> labels.shape + [classes]: the labels' dims.
Spec one_hot_spec(const Types& in, const TypeP&, const Attrs&) {
  if (!is_tensor(in, 0)) return std::nullopt;
  DimSpec s;
  s.inputs = {s.add_dims(rank(in[0]))};
  s.output = s.inputs[0];
  s.output.push_back(-1);
  return s;
}

// Creation with a shape attribute: the output may split anywhere; each rank makes its shard.
Spec creation_spec(const Types&, const TypeP& out, const Attrs&) {
  if (!out || !out->is_tensor()) return std::nullopt;
  DimSpec s;
  s.output = s.add_dims(rank(out));
  return s;
}

// squeeze/unsqueeze/expand_dims/flatten have no shape attribute; reshape's target becomes the
// local shape (a -1 wildcard is resolved by then).
void shape_rules(sem::Registry& r) {
  set_sharding(r, "reshape",
               dim_rule(linear(reshape_spec, kJoint), parallel::local_shape_attr("shape")));
  for (const char* name : {"flatten", "unsqueeze", "expand_dims"})
    set_sharding(r, name, dim_rule(linear(reshape_spec, kJoint)));
  // squeeze(axis=none) drops every size-1 dim: locally that would include a dim of 2 split in
  // two, so the local application names the globally squeezed axes.
  set_sharding(
      r, "squeeze",
      dim_rule(linear(reshape_spec, kJoint),
               [](const Attrs& a, const OpStrategy&, const Types& in, const TypeP&, const Mesh&) {
                 if (!a.is_none("axis") || !is_tensor(in, 0)) return a;
                 std::vector<int64_t> axes;
                 for (int d = 0; d < rank(in[0]); ++d)
                   if (in[0]->shape[static_cast<size_t>(d)] == 1) axes.push_back(d);
                 Attrs r;
                 for (const auto& [k, v] : a.items()) r.set(k, k == "axis" ? Attr{axes} : v);
                 return r;
               }));
  set_sharding(r, "transpose", dim_rule(linear(permute_spec, kJoint)));
  set_sharding(r, "permute", dim_rule(linear(permute_spec, kJoint)));
  set_sharding(r, "broadcast_to",
               dim_rule(linear(broadcast_to_spec, kJoint), parallel::local_shape_attr("shape")));
  // concat and stack are linear in all their inputs together.
  for (const auto& [name, stack] : {std::pair{"concat", false}, std::pair{"stack", true}}) {
    const parallel::DimSpecFn join = join_spec(stack);
    set_sharding(r, name, dim_rule([join](const Types& in, const TypeP& out, const Attrs& a) {
                   Spec s = join(in, out, a);
                   if (s) {
                     s->linear = kJoint;
                     for (size_t i = 0; i < in.size(); ++i)
                       s->linear_inputs.push_back(static_cast<int>(i));
                   }
                   return s;
                 }));
  }
  set_sharding(r, "slice", dim_rule(linear(slice_spec, kJoint), slice_local_attrs(false)));
  set_sharding(r, "slice_grad", dim_rule(linear(slice_grad_spec, kJoint), slice_local_attrs(true)));
  set_sharding(r, "gather", dim_rule(gather_spec));
  set_sharding(r, "scatter_add", dim_rule(scatter_add_spec));
  set_sharding(r, "one_hot", dim_rule(one_hot_spec));
  const std::string plumbing =
      "tuple and record plumbing: the partitioner tracks the layouts of the elements itself";
  for (const char* name : {"make_tuple", "tuple_get", "make_record", "record_get"})
    set_sharding(r, name, replicated_only_rule(plumbing));
}

void elementwise_rules(sem::Registry& r) {
  for (const char* name :
       {"abs",  "sign",    "square",  "relu", "floor", "ceil",  "round", "reciprocal", "floordiv",
        "mod",  "maximum", "minimum", "exp",  "log",   "sqrt",  "rsqrt", "tanh",       "sigmoid",
        "gelu", "sin",     "cos",     "erf",  "log1p", "expm1", "pow"})
    set_sharding(r, name, elementwise_rule());
  // The linear ones pass partial sums on: neg, add and sub of two partial inputs, mul by a
  // factor that is not partial, div of a partial numerator.
  set_sharding(r, "neg", dim_rule(linear(elementwise_spec, kJoint)));
  for (const char* name : {"add", "sub"})
    set_sharding(r, name, dim_rule(linear(elementwise_spec, kJoint, {0, 1})));
  set_sharding(r, "mul", dim_rule(linear(elementwise_spec, kOne, {0, 1})));
  set_sharding(r, "div", dim_rule(linear(elementwise_spec, kOne, {0})));
}

void compare_rules(sem::Registry& r) {
  for (const char* name :
       {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "where"})
    set_sharding(r, name, elementwise_rule());
  set_sharding(r, "cast", dim_rule(cast_spec));
}

void reduction_rules(sem::Registry& r) {
  set_sharding(r, "sum", dim_rule(linear(reduction_spec(true, false), kJoint)));
  set_sharding(r, "mean", dim_rule(linear(reduction_spec(true, true), kJoint)));
  for (const char* name : {"prod", "max", "min", "argmax", "argmin", "all", "any"})
    set_sharding(r, name, dim_rule(reduction_spec(false, false)));
}

void nn_rules(sem::Registry& r) {
  set_sharding(r, "softmax", dim_rule(softmax_spec));
  set_sharding(r, "log_softmax", dim_rule(softmax_spec));
  set_sharding(r, "logsumexp", dim_rule(reduction_spec(false, false)));
  set_sharding(r, "cross_entropy", dim_rule(cross_entropy_spec));
  set_sharding(r, "layer_norm", dim_rule(layer_norm_spec));
  set_sharding(r, "batch_norm", dim_rule(batch_norm_spec));
  // Dropout in eval mode is the identity; in training its mask comes from the global index.
  ShardingRule random_dropout = replicated_only_rule(
      "dropout draws its mask from the global element index (counter-based RNG): a shard drawn "
      "locally would repeat the first shard's mask");
  ShardingRule eval_dropout = elementwise_rule();
  ShardingRule dropout;
  dropout.replicated_only_reason = random_dropout.replicated_only_reason + " (in training)";
  dropout.enumerate = [random_dropout, eval_dropout](const Types& in, const TypeP& out,
                                                     const Attrs& a, const Mesh& m) {
    return (a.get_bool("training") ? random_dropout : eval_dropout).enumerate(in, out, a, m);
  };
  dropout.forward = [random_dropout, eval_dropout](const std::vector<Layout>& l, const Types& in,
                                                   const TypeP& out, const Attrs& a,
                                                   const Mesh& m) {
    return (a.get_bool("training") ? random_dropout : eval_dropout).forward(l, in, out, a, m);
  };
  dropout.local_attrs = parallel::identity_local_attrs;
  set_sharding(r, "dropout", dropout);
}

void conv_rules(sem::Registry& r) {
  set_sharding(r, "conv2d", dim_rule(conv2d_spec));
  set_sharding(r, "conv2d_input_grad",
               dim_rule(conv_input_grad_spec, parallel::local_shape_attr("shape")));
  set_sharding(r, "conv2d_weight_grad",
               dim_rule(conv_weight_grad_spec, parallel::local_shape_attr("shape")));
  for (const char* name : {"max_pool2d", "avg_pool2d", "max_pool2d_select", "max_pool2d_grad"})
    set_sharding(r, name, dim_rule(pool_spec));
  set_sharding(r, "avg_pool2d_grad", dim_rule(pool_spec, parallel::local_shape_attr("shape")));
}

void creation_rules(sem::Registry& r) {
  for (const char* name : {"zeros", "ones", "full"})
    set_sharding(r, name, dim_rule(creation_spec, parallel::local_shape_attr("shape")));
  set_sharding(r, "arange", replicated_only_rule("arange's values depend on the global position"));
  for (const char* name : {"normal", "uniform"})
    set_sharding(r, name,
                 replicated_only_rule("random samples are numbered by their global index "
                                      "(counter-based RNG): a shard drawn locally would repeat "
                                      "the first shard's numbers"));
}

void internal_rules(sem::Registry& r) {
  for (const char* name : {"print", "assert", "grad_check"})
    set_sharding(r, name, replicated_only_rule("an effect on the host: it sees whole values"));
  for (const char* name : {"identity", "stop_gradient"})
    set_sharding(r, name, dim_rule(linear(elementwise_spec, kJoint)));
  for (const char* name : {"if", "while", "for_range", "for_each"})
    set_sharding(r, name,
                 replicated_only_rule("control flow: the partitioner partitions the bodies"));
  for (const char* name : {"list_empty", "list_push", "list_get", "list_len", "list_add_at",
                           "list_add", "list_get_or_zeros"})
    set_sharding(r, name, replicated_only_rule("run-time lists (the tape) live on the host"));
}

}  // namespace

void set_elementwise_sharding(sem::Registry& r, const std::string& name) {
  set_sharding(r, name, elementwise_rule());
}

void register_sharding(sem::Registry& r) {
  elementwise_rules(r);
  compare_rules(r);
  reduction_rules(r);
  set_sharding(r, "matmul", dim_rule(linear(matmul_spec, kOne, {0, 1})));
  shape_rules(r);
  nn_rules(r);
  conv_rules(r);
  creation_rules(r);
  internal_rules(r);
}

}  // namespace spora::ops
