// Convolution and pooling, PyTorch conventions (NCHW input, OIHW weight).
//
//   conv2d(x, w, b=none, stride=1, padding=0, dilation=1, groups=1)
//     x [N, C, H, W], w [O, C/groups, kh, kw], b [O] (optional); stride/padding/dilation are an
//     int or a pair (height, width), given as an int list [s] or [sh, sw]. Zero padding.
//     Output [N, O, (H + 2ph - dh(kh-1) - 1) / sh + 1, (W + ...) / sw + 1] (floor).
//   max_pool2d(x, kernel, stride=none, padding=0)   avg_pool2d(x, kernel, stride=none, padding=0)
//     x [N, C, H, W]; kernel/stride/padding an int or a pair; stride none = kernel. Padding
//     must be at most half the kernel. Max pooling ignores padded positions; average pooling
//     divides by the full window size, padded zeros included (PyTorch count_include_pad=True).
//     Output size floor((H + 2p - k) / s) + 1 (ceil_mode=False).
// Kernels are direct loops accumulating in double; f32 and f64 only.
//
// Derivative helpers, each linear in its tensor operands with its own rules, so derivatives of
// any order stay in this file (attributes as in conv2d / the pools, plus the result `shape`,
// which the output size alone does not determine):
//   conv2d_input_grad(g, w, ..., shape)    the transpose of conv2d in x (a transposed conv)
//   conv2d_weight_grad(x, g, ..., shape)   the transpose of conv2d in w
//   max_pool2d_grad(x, g, kernel, stride, padding)    adds each g to its window's argmax in x
//   max_pool2d_select(x, t, kernel, stride, padding)  t read at each window's argmax in x
//       (the argmax is the first maximum in row-major window order, a nan if there is one;
//       the two are each other's transpose and do not depend smoothly on x)
//   avg_pool2d_grad(g, kernel, stride, padding, shape) spreads each g / window size back
// Rules: conv2d dx = conv2d_input_grad(dout, w), dw = conv2d_weight_grad(x, dout),
// db = sum(dout, [0, 2, 3]); jvp conv2d(tx, w) + conv2d(x, tw) + tb. For the helpers:
// <d, input_grad(g, w)> = <conv2d(d, w), g> = <weight_grad(d, g), w>, and
// <d, weight_grad(x, g)> = <conv2d(x, d), g> = <input_grad(g, d), x>.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/amp.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

const Type& float4(const std::vector<TypeP>& in, size_t i, const std::string& prim,
                   const std::string& what) {
  const Type& t = tensor_input(in, i, prim);
  if (!is_float(t.dtype)) user_error(prim + " expects float tensors, got " + t.str());
  if (t.rank() != 4) user_error(prim + " expects a 4-D " + what + ", got " + t.str());
  return t;
}

std::string pair_str(std::pair<int64_t, int64_t> p) {
  return "[" + std::to_string(p.first) + "," + std::to_string(p.second) + "]";
}

using sem::window_out_dim;

// ---- conv2d ---------------------------------------------------------------------------------

struct ConvGeom {
  std::pair<int64_t, int64_t> stride, pad, dil;
  int64_t groups;
  Shape out;
};

ConvGeom conv_geom(const std::vector<TypeP>& in, const Attrs& attrs) {
  expect_inputs(in, 2, 3, "conv2d");
  const Type& x = float4(in, 0, "conv2d", "input [N, C, H, W]");
  const Type& w = float4(in, 1, "conv2d", "weight [O, C/groups, kh, kw]");
  if (x.dtype != w.dtype)
    user_error("conv2d operand types do not match: " + x.str() + " and " + w.str());
  ConvGeom g;
  g.stride = int_pair(attrs, "stride", "conv2d");
  g.pad = int_pair(attrs, "padding", "conv2d");
  g.dil = int_pair(attrs, "dilation", "conv2d");
  g.groups = attrs.get_int("groups");
  if (g.stride.first < 1 || g.stride.second < 1)
    user_error("conv2d stride must be positive, got " + pair_str(g.stride));
  if (g.dil.first < 1 || g.dil.second < 1)
    user_error("conv2d dilation must be positive, got " + pair_str(g.dil));
  if (g.pad.first < 0 || g.pad.second < 0)
    user_error("conv2d padding must be non-negative, got " + pair_str(g.pad));
  if (g.groups < 1) user_error("conv2d groups must be positive, got " + std::to_string(g.groups));
  int64_t C = x.shape[1], O = w.shape[0];
  bool dyn = C == sem::kDynamicDim;
  if ((!dyn && (C % g.groups != 0 || w.shape[1] * g.groups != C)) || O % g.groups != 0)
    user_error("conv2d channels do not match: input " + x.str() + " and weight " + w.str() +
               " (groups=" + std::to_string(g.groups) + ")");
  if (has_input(in, 2)) {
    const Type& b = tensor_input(in, 2, "conv2d");
    if (b.dtype != x.dtype || b.shape != Shape{O})
      user_error("conv2d bias " + b.str() + " does not match weight " + w.str());
  }
  int64_t oh = window_out_dim(x.shape[2], w.shape[2], g.stride.first, g.pad.first, g.dil.first);
  int64_t ow = window_out_dim(x.shape[3], w.shape[3], g.stride.second, g.pad.second, g.dil.second);
  if (oh == 0 || ow == 0)
    user_error("conv2d kernel " + Type::tensor(w.dtype, {w.shape[2], w.shape[3]})->str() +
               " with dilation " + pair_str(g.dil) + " does not fit input " + x.str() +
               " with padding " + pair_str(g.pad));
  g.out = {x.shape[0], O, oh, ow};
  return g;
}

Value conv2d_eval(const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& w = in.at(1).tensor;
  bool has_b = has_input(in, 2);
  std::vector<TypeP> types = {x.type(), w.type()};
  if (has_b) types.push_back(in[2].tensor.type());
  ConvGeom g = conv_geom(types, attrs);
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t O = w.shape()[0], Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  int64_t OH = g.out[2], OW = g.out[3], Og = O / g.groups;
  Tensor out = Tensor::empty(x.dtype(), g.out);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t grp = o / Og;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = has_b ? in[2].tensor.get(o) : 0.0;
          for (int64_t c = 0; c < Cg; ++c) {
            int64_t ci = grp * Cg + c;
            for (int64_t ky = 0; ky < KH; ++ky) {
              int64_t iy = oy * g.stride.first - g.pad.first + ky * g.dil.first;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t ix = ox * g.stride.second - g.pad.second + kx * g.dil.second;
                if (ix < 0 || ix >= W) continue;
                acc += x.get(((n * C + ci) * H + iy) * W + ix) *
                       w.get(((o * Cg + c) * KH + ky) * KW + kx);
              }
            }
          }
          out.set(((n * O + o) * OH + oy) * OW + ox, acc);
        }
    }
  return out;
}

// The four geometry attributes of conv2d (without a helper's `shape`).
Attrs conv_attrs(const Attrs& a) {
  Attrs out;
  for (const char* name : {"stride", "padding", "dilation", "groups"})
    if (const Attr* v = a.find(name)) out.set(name, *v);
  return out;
}
Attrs with_shape(Attrs a, const Shape& shape) {
  a.set("shape", shape);
  return a;
}

// Every multiply-add of a convolution: f(x index, w index, out index), flat NCHW / OIHW.
template <class F>
void conv_taps(const Shape& xs, const Shape& ws, const ConvGeom& g, F f) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = g.out[2], OW = g.out[3], Og = O / g.groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t oi = ((n * O + o) * OH + oy) * OW + ox;
          for (int64_t c = 0; c < Cg; ++c) {
            int64_t ci = (o / Og) * Cg + c;
            for (int64_t ky = 0; ky < KH; ++ky) {
              int64_t iy = oy * g.stride.first - g.pad.first + ky * g.dil.first;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t ix = ox * g.stride.second - g.pad.second + kx * g.dil.second;
                if (ix < 0 || ix >= W) continue;
                f(((n * C + ci) * H + iy) * W + ix, ((o * Cg + c) * KH + ky) * KW + kx, oi);
              }
            }
          }
        }
}

// conv2d_input_grad (input_grad = true: operands g, w; result x's shape) or
// conv2d_weight_grad (operands x, g; result w's shape).
void add_conv_grad(sem::Registry& r, bool input_grad) {
  const std::string name = input_grad ? "conv2d_input_grad" : "conv2d_weight_grad";
  Primitive p;
  p.name = name;
  p.family = "conv";
  p.facets[passes::kFusionFacet] = passes::FusionKind::OutputFusable;
  p.doc = input_grad ? "conv2d_input_grad(g, w, stride, padding, dilation, groups, shape): the "
                       "vjp of conv2d in x (a transposed convolution)"
                     : "conv2d_weight_grad(x, g, stride, padding, dilation, groups, shape): the "
                       "vjp of conv2d in w";
  p.params = {input(input_grad ? "g" : "x"),
              input(input_grad ? "w" : "g"),
              attr("stride", AK::Ints, ints({1})),
              attr("padding", AK::Ints, ints({0})),
              attr("dilation", AK::Ints, ints({1})),
              attr("groups", AK::Int, int_attr(1)),
              attr("shape", AK::Ints)};
  // The conv2d this is the transpose of: (x type, w type, its geometry), checked against g.
  auto conv_of = [name, input_grad](const std::vector<TypeP>& in, const Attrs& attrs) {
    expect_inputs(in, 2, 2, name);
    const Type& g = tensor_input(in, input_grad ? 0 : 1, name);
    const Type& other = tensor_input(in, input_grad ? 1 : 0, name);
    const Shape& shape = attrs.get_ints("shape");
    if (shape.size() != 4)
      user_error(name + " shape must have 4 dims, got " + sem::attr_str(ints(shape)));
    TypeP made = Type::tensor(other.dtype, shape);
    std::vector<TypeP> conv_in =
        input_grad ? std::vector<TypeP>{made, in[1]} : std::vector<TypeP>{in[0], made};
    ConvGeom geom = conv_geom(conv_in, attrs);
    if (g.dtype != other.dtype || g.shape != geom.out)
      user_error(name + ": " + g.str() + " does not match the conv2d output " +
                 Type::tensor(other.dtype, geom.out)->str());
    return std::make_tuple(conv_in[0], conv_in[1], geom);
  };
  p.infer = [conv_of, input_grad](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    auto [x, w, geom] = conv_of(in, attrs);
    return input_grad ? x : w;
  };
  p.eval = [conv_of, input_grad](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    auto [x, w, geom] = conv_of({in.at(0).type(), in.at(1).type()}, attrs);
    const Tensor& a = in[0].tensor;  // g (input_grad) or x
    const Tensor& b = in[1].tensor;  // w (input_grad) or g
    const Shape& shape = input_grad ? x->shape : w->shape;
    std::vector<double> acc(static_cast<size_t>(numel_of(shape)), 0.0);
    if (input_grad)
      conv_taps(x->shape, w->shape, geom,
                [&](int64_t xi, int64_t wi, int64_t oi) { acc[xi] += a.get(oi) * b.get(wi); });
    else
      conv_taps(x->shape, w->shape, geom,
                [&](int64_t xi, int64_t wi, int64_t oi) { acc[wi] += a.get(xi) * b.get(oi); });
    Tensor out = Tensor::empty(a.dtype(), shape);
    for (size_t i = 0; i < acc.size(); ++i) out.set(static_cast<int64_t>(i), acc[i]);
    return out;
  };
  // Bilinear: vjp and jvp from the identities in the header.
  p.facets[autodiff::kVjpFacet] =
      ad::VjpRule([input_grad](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
                               ad::Node* d) -> ad::Nodes {
        Attrs geom = conv_attrs(node.attrs);
        if (input_grad)  // in = (g, w)
          return {e.op("conv2d", {d, in[1]}, geom),
                  e.op("conv2d_weight_grad", {d, in[0]}, with_shape(geom, ad::shape_of(in[1])))};
        // in = (x, g)
        return {e.op("conv2d_input_grad", {in[1], d}, with_shape(geom, ad::shape_of(in[0]))),
                e.op("conv2d", {in[0], d}, geom)};
      });
  p.facets[autodiff::kJvpFacet] =
      ad::JvpRule([name](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
                         const ad::Nodes& ts) -> ad::Node* {
        ad::Node* a = ts[0] ? e.op(name, {ts[0], in[1]}, node.attrs) : nullptr;
        ad::Node* b = ts[1] ? e.op(name, {in[0], ts[1]}, node.attrs) : nullptr;
        return ad::add_opt(e, a, b);
      });
  r.add(std::move(p));
}

ad::Nodes conv2d_vjp(ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
                     ad::Node* dout) {
  ad::Node *x = in[0], *w = in[1];
  Attrs geom = conv_attrs(node.attrs);
  ad::Nodes out{e.wants(0) ? e.op("conv2d_input_grad", {dout, w}, with_shape(geom, ad::shape_of(x)))
                           : nullptr,
                e.wants(1)
                    ? e.op("conv2d_weight_grad", {x, dout}, with_shape(geom, ad::shape_of(w)))
                    : nullptr};
  if (in.size() > 2) out.push_back(e.sum(dout, {0, 2, 3}, false));
  return out;
}

ad::Node* conv2d_jvp(ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node* out,
                     const ad::Nodes& ts) {
  Attrs geom = conv_attrs(node.attrs);
  ad::Node* t = ts[0] ? e.op("conv2d", {ts[0], in[1]}, geom) : nullptr;
  if (ts[1]) t = ad::add_opt(e, t, e.op("conv2d", {in[0], ts[1]}, geom));
  if (in.size() > 2 && ts[2]) {
    ad::Node* b = e.reshape(ts[2], {1, ad::shape_of(in[2])[0], 1, 1});
    t = ad::add_opt(e, t, ad::broadcast(e, b, ad::shape_of(out)));
  }
  return t;
}

void add_conv2d(sem::Registry& r) {
  Primitive p;
  p.name = "conv2d";
  p.facets[passes::kFusionFacet] = passes::FusionKind::OutputFusable;
  p.family = "conv";
  p.doc =
      "conv2d(x, w, b=none, stride=1, padding=0, dilation=1, groups=1): NCHW x OIHW convolution";
  p.params = {input("x"),
              input("w"),
              optional_input("b"),
              attr("stride", AK::Ints, ints({1})),
              attr("padding", AK::Ints, ints({0})),
              attr("dilation", AK::Ints, ints({1})),
              attr("groups", AK::Int, int_attr(1))};
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    return Type::tensor(in[0]->dtype, conv_geom(in, attrs).out);
  };
  p.eval = conv2d_eval;
  ad::set_rules(p, conv2d_vjp, conv2d_jvp);
  r.add(std::move(p));
}

// ---- pooling --------------------------------------------------------------------------------

// The pooling attributes (without a helper's `shape`).
Attrs pool_attrs(const Attrs& a) {
  Attrs out;
  for (const char* name : {"kernel", "stride", "padding"})
    if (const Attr* v = a.find(name)) out.set(name, *v);
  return out;
}

struct PoolGeom {
  std::pair<int64_t, int64_t> kernel, stride, pad;
  Shape out;
};

PoolGeom pool_geom(const std::string& name, const Type& x, const Attrs& attrs) {
  PoolGeom g;
  g.kernel = int_pair(attrs, "kernel", name);
  g.stride = attrs.is_none("stride") ? g.kernel : int_pair(attrs, "stride", name);
  g.pad =
      attrs.has("padding") ? int_pair(attrs, "padding", name) : std::pair<int64_t, int64_t>{0, 0};
  if (g.kernel.first < 1 || g.kernel.second < 1)
    user_error(name + " kernel must be positive, got " + pair_str(g.kernel));
  if (g.stride.first < 1 || g.stride.second < 1)
    user_error(name + " stride must be positive, got " + pair_str(g.stride));
  if (g.pad.first < 0 || g.pad.second < 0 || 2 * g.pad.first > g.kernel.first ||
      2 * g.pad.second > g.kernel.second)
    user_error(name + " padding " + pair_str(g.pad) + " must be between 0 and half the kernel " +
               pair_str(g.kernel));
  int64_t oh = window_out_dim(x.shape[2], g.kernel.first, g.stride.first, g.pad.first, 1);
  int64_t ow = window_out_dim(x.shape[3], g.kernel.second, g.stride.second, g.pad.second, 1);
  if (oh == 0 || ow == 0)
    user_error(name + " kernel " + pair_str(g.kernel) + " does not fit input " + x.str() +
               " with padding " + pair_str(g.pad));
  g.out = {x.shape[0], x.shape[1], oh, ow};
  return g;
}

void add_pool(sem::Registry& r, bool is_max) {
  std::string name = is_max ? "max_pool2d" : "avg_pool2d";
  Primitive p;
  p.name = name;
  p.family = "conv";
  p.doc = name + "(x, kernel, stride=none, padding=0): " + (is_max ? "maximum" : "average") +
          " over kernel windows (NCHW)";
  p.params = {input("x"), attr("kernel", AK::Ints), attr("stride", AK::IntsOrNone, none()),
              attr("padding", AK::Ints, ints({0}))};
  p.infer = [name](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& x = float4(in, 0, name, "input [N, C, H, W]");
    return Type::tensor(x.dtype, pool_geom(name, x, attrs).out);
  };
  p.eval = [name, is_max](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    PoolGeom g = pool_geom(name, *x.type(), attrs);
    int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
    int64_t OH = g.out[2], OW = g.out[3];
    Tensor out = Tensor::empty(x.dtype(), g.out);
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t ky = 0; ky < g.kernel.first; ++ky) {
            int64_t iy = oy * g.stride.first - g.pad.first + ky;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < g.kernel.second; ++kx) {
              int64_t ix = ox * g.stride.second - g.pad.second + kx;
              if (ix < 0 || ix >= W) continue;
              double v = x.get((nc * H + iy) * W + ix);
              if (is_max)
                acc = (std::isnan(v) || v > acc) ? v : acc;
              else
                acc += v;
              if (is_max && std::isnan(acc)) break;
            }
          }
          if (!is_max) acc /= static_cast<double>(g.kernel.first * g.kernel.second);
          out.set((nc * OH + oy) * OW + ox, acc);
        }
    return out;
  };
  if (is_max) {
    ad::set_rules(
        p,
        [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
           ad::Node* dout) -> ad::Nodes {
          return {e.op("max_pool2d_grad", {in[0], dout}, node.attrs)};
        },
        [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
           const ad::Nodes& ts) -> ad::Node* {
          return ts[0] ? e.op("max_pool2d_select", {in[0], ts[0]}, node.attrs) : nullptr;
        });
  } else {
    ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node* x, ad::Node* dout) {
      return e.op("avg_pool2d_grad", {dout}, with_shape(pool_attrs(node.attrs), ad::shape_of(x)));
    });
  }
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

// For each output element of max_pool2d, the flat index in x of its window's argmax.
std::vector<int64_t> pool_argmax(const Tensor& x, const PoolGeom& g) {
  int64_t NC = x.shape()[0] * x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t OH = g.out[2], OW = g.out[3];
  std::vector<int64_t> arg(static_cast<size_t>(NC * OH * OW), -1);
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        int64_t& best = arg[static_cast<size_t>((nc * OH + oy) * OW + ox)];
        for (int64_t ky = 0; ky < g.kernel.first; ++ky) {
          int64_t iy = oy * g.stride.first - g.pad.first + ky;
          if (iy < 0 || iy >= H) continue;
          for (int64_t kx = 0; kx < g.kernel.second; ++kx) {
            int64_t ix = ox * g.stride.second - g.pad.second + kx;
            if (ix < 0 || ix >= W) continue;
            int64_t i = (nc * H + iy) * W + ix;
            double v = x.get(i);
            if (best < 0 || std::isnan(v) || v > x.get(best)) best = i;
            if (std::isnan(v)) break;
          }
          if (best >= 0 && std::isnan(x.get(best))) break;
        }
      }
  return arg;
}

// max_pool2d_grad(x, g, ...) (select = false: the result has x's shape) and
// max_pool2d_select(x, t, ...) (select = true: the result has the pooled shape).
void add_max_pool_helper(sem::Registry& r, bool select) {
  const std::string name = select ? "max_pool2d_select" : "max_pool2d_grad";
  Primitive p;
  p.name = name;
  p.family = "conv";
  p.doc = select ? "max_pool2d_select(x, t, kernel, stride, padding): t at each window's argmax "
                   "in x (the jvp of max_pool2d)"
                 : "max_pool2d_grad(x, g, kernel, stride, padding): each g added at its window's "
                   "argmax in x (the vjp of max_pool2d)";
  p.params = {input("x"), input(select ? "t" : "g"), attr("kernel", AK::Ints),
              attr("stride", AK::IntsOrNone, none()), attr("padding", AK::Ints, ints({0}))};
  p.infer = [name, select](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 2, 2, name);
    const Type& x = float4(in, 0, name, "input [N, C, H, W]");
    const Type& v = float4(in, 1, name, select ? "tangent" : "cotangent");
    Shape pooled = pool_geom(name, x, attrs).out;
    const Shape& want = select ? x.shape : pooled;
    if (v.dtype != x.dtype || v.shape != want)
      user_error(name + ": " + v.str() + " does not match " + Type::tensor(x.dtype, want)->str());
    return Type::tensor(x.dtype, select ? pooled : x.shape);
  };
  p.eval = [name, select](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& v = in.at(1).tensor;
    PoolGeom g = pool_geom(name, *x.type(), attrs);
    std::vector<int64_t> arg = pool_argmax(x, g);
    if (select) {
      Tensor out = Tensor::empty(x.dtype(), g.out);
      for (size_t j = 0; j < arg.size(); ++j) out.set(static_cast<int64_t>(j), v.get(arg[j]));
      return out;
    }
    std::vector<double> acc(static_cast<size_t>(x.numel()), 0.0);
    for (size_t j = 0; j < arg.size(); ++j)
      acc[static_cast<size_t>(arg[j])] += v.get(static_cast<int64_t>(j));
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    for (size_t i = 0; i < acc.size(); ++i) out.set(static_cast<int64_t>(i), acc[i]);
    return out;
  };
  // Linear in the second operand, piecewise constant in x; each is the other's transpose.
  const std::string other = select ? "max_pool2d_grad" : "max_pool2d_select";
  ad::set_rules(
      p,
      [other](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
              ad::Node* d) -> ad::Nodes {
        return {nullptr, e.op(other, {in[0], d}, node.attrs)};
      },
      [name](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
             const ad::Nodes& ts) -> ad::Node* {
        return ts[1] ? e.op(name, {in[0], ts[1]}, node.attrs) : nullptr;
      });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

void add_avg_pool_grad(sem::Registry& r) {
  Primitive p;
  p.name = "avg_pool2d_grad";
  p.family = "conv";
  p.doc =
      "avg_pool2d_grad(g, kernel, stride, padding, shape): each g / window size spread over "
      "its window (the vjp of avg_pool2d)";
  p.params = {input("g"), attr("kernel", AK::Ints), attr("stride", AK::IntsOrNone, none()),
              attr("padding", AK::Ints, ints({0})), attr("shape", AK::Ints)};
  auto geom_of = [](const Type& g, const Attrs& attrs) {
    const Shape& shape = attrs.get_ints("shape");
    if (shape.size() != 4)
      user_error("avg_pool2d_grad shape must have 4 dims, got " + sem::attr_str(ints(shape)));
    PoolGeom geom = pool_geom("avg_pool2d_grad", *Type::tensor(g.dtype, shape), attrs);
    if (geom.out != g.shape)
      user_error("avg_pool2d_grad: " + g.str() + " does not match the pooled shape " +
                 Type::tensor(g.dtype, geom.out)->str());
    return geom;
  };
  p.infer = [geom_of](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "avg_pool2d_grad");
    const Type& g = float4(in, 0, "avg_pool2d_grad", "cotangent");
    geom_of(g, attrs);
    return Type::tensor(g.dtype, attrs.get_ints("shape"));
  };
  p.eval = [geom_of](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& g = in.at(0).tensor;
    PoolGeom geom = geom_of(*g.type(), attrs);
    const Shape& shape = attrs.get_ints("shape");
    int64_t NC = shape[0] * shape[1], H = shape[2], W = shape[3], OH = geom.out[2],
            OW = geom.out[3];
    double inv = 1.0 / static_cast<double>(geom.kernel.first * geom.kernel.second);
    std::vector<double> acc(static_cast<size_t>(numel_of(shape)), 0.0);
    for (int64_t nc = 0; nc < NC; ++nc)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double v = g.get((nc * OH + oy) * OW + ox) * inv;
          for (int64_t ky = 0; ky < geom.kernel.first; ++ky) {
            int64_t iy = oy * geom.stride.first - geom.pad.first + ky;
            if (iy < 0 || iy >= H) continue;
            for (int64_t kx = 0; kx < geom.kernel.second; ++kx) {
              int64_t ix = ox * geom.stride.second - geom.pad.second + kx;
              if (ix >= 0 && ix < W) acc[static_cast<size_t>((nc * H + iy) * W + ix)] += v;
            }
          }
        }
    Tensor out = Tensor::empty(g.dtype(), shape);
    for (size_t i = 0; i < acc.size(); ++i) out.set(static_cast<int64_t>(i), acc[i]);
    return out;
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node*, ad::Node* dout) {
    return e.op("avg_pool2d", {dout}, pool_attrs(node.attrs));
  });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

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

CostRule pool_cost(bool over_output) {
  return [over_output](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
    // Forward rows and max_pool2d_select work per output window; the gradient helpers per
    // element of their cotangent (one window each), priced by a table of their own where the
    // spec has one (they fill the input-shaped gradient and scatter into it: another kernel).
    const TypeP& windows = over_output ? out : in.back();
    OpCost c{elements(windows) * window(attrs), input_bytes(in) + type_bytes(out), "pool"};
    if (!over_output) c.table = "pool_grad";
    return c;
  };
}

void conv_costs(sem::Registry& r) {
  // c.gemm: the GEMM of one image and group as backends/cpu/conv.cpp runs it, with Og output
  // channels per group, P output pixels and K = (C/groups) kh kw: forward [Og, K] x [K, P],
  // input gradient [K, Og] x [Og, P], weight gradient [Og, P] x [P, K].
  set_cost(r, "conv2d", [](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
    const bool bias = in.size() > 2 && in[2] && in[2]->is_tensor();
    const double flops = elements(out) * (2 * conv_macs_per_output(in[1]) + (bias ? 1 : 0));
    OpCost c{flops, input_bytes(in) + type_bytes(out), "conv"};
    c.gemm = conv_gemm(in[1], out, attrs);
    return c;
  });
  // conv2d_input_grad(g, w): one multiply-add per cotangent element per weight of its channel.
  set_cost(r, "conv2d_input_grad", [](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
    OpCost c{2 * elements(in[0]) * conv_macs_per_output(in[1]), input_bytes(in) + type_bytes(out),
             "conv"};
    const auto [og, p, k] = conv_gemm(in[1], in[0], attrs);
    c.gemm = {k, p, og};
    c.table = "conv_input_grad";
    return c;
  });
  // conv2d_weight_grad(x, g) -> w's shape: the same products, accumulated into w.
  set_cost(r, "conv2d_weight_grad", [](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
    OpCost c{2 * elements(in[1]) * conv_macs_per_output(out), input_bytes(in) + type_bytes(out),
             "conv"};
    const auto [og, p, k] = conv_gemm(out, in[1], attrs);
    c.gemm = {og, k, p};
    c.table = "conv_weight_grad";
    return c;
  });
  set_cost(r, "max_pool2d", pool_cost(true));
  set_cost(r, "avg_pool2d", pool_cost(true));
  set_cost(r, "max_pool2d_select", pool_cost(true));
  set_cost(r, "max_pool2d_grad", pool_cost(false));
  set_cost(r, "avg_pool2d_grad", pool_cost(false));
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

}  // namespace facets

}  // namespace

void register_conv(sem::Registry& r) {
  add_conv2d(r);
  add_conv_grad(r, true);
  add_conv_grad(r, false);
  add_pool(r, true);
  add_pool(r, false);
  add_max_pool_helper(r, false);
  add_max_pool_helper(r, true);
  add_avg_pool_grad(r);
  sem::set_amp(r, "conv2d", sem::AmpClass::Low);  // autocast (semantics/amp.h)
  // Cost and sharding rules of the rows above.
  facets::conv_costs(r);
  facets::conv_rules(r);
}

}  // namespace spora::ops
