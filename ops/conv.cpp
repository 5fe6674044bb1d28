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
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/families.h"
#include "ops/kernel_util.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

const Type& float4(const std::vector<TypeP>& in, size_t i, const std::string& prim,
                   const std::string& what) {
  const Type& t = tensor_input(in, i, prim);
  if (t.dtype != DType::f32 && t.dtype != DType::f64)
    user_error(prim + " expects f32 or f64 tensors, got " + t.str());
  if (t.rank() != 4) user_error(prim + " expects a 4-D " + what + ", got " + t.str());
  return t;
}

std::string pair_str(std::pair<int64_t, int64_t> p) {
  return "[" + std::to_string(p.first) + "," + std::to_string(p.second) + "]";
}

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  if (in == sem::kDynamicDim) return sem::kDynamicDim;
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

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
  int64_t oh = out_dim(x.shape[2], w.shape[2], g.stride.first, g.pad.first, g.dil.first);
  int64_t ow = out_dim(x.shape[3], w.shape[3], g.stride.second, g.pad.second, g.dil.second);
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

void add_conv2d(sem::Registry& r) {
  Primitive p;
  p.name = "conv2d";
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
  r.add(std::move(p));
}

// ---- pooling --------------------------------------------------------------------------------

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
  int64_t oh = out_dim(x.shape[2], g.kernel.first, g.stride.first, g.pad.first, 1);
  int64_t ow = out_dim(x.shape[3], g.kernel.second, g.stride.second, g.pad.second, 1);
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
  r.add(std::move(p));
}

}  // namespace

void register_conv(sem::Registry& r) {
  add_conv2d(r);
  add_pool(r, true);
  add_pool(r, false);
}

}  // namespace spora::ops
