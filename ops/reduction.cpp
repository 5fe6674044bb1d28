// Reductions: sum mean prod max min (axis=none|int|ints, keepdims), argmax argmin (axis=none|int,
// keepdims), all any.
//
// Result dtypes: sum/prod keep the dtype (bool counts as i32); mean keeps a float dtype and
// gives f32 for int/bool; max/min keep the dtype; argmax/argmin give i32 indices (the flat
// row-major index when axis is none; the first occurrence of the extreme; nan counts as the
// extreme, like NumPy); all/any give bool (an element is true when non-zero). Float sums
// accumulate in double and round once; integer sums accumulate in i64 and wrap. The sum of no
// elements is 0, the product 1, the mean nan; max/min/argmax/argmin of no elements are errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/amp.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

enum class Red { sum, mean, prod, max, min, argmax, argmin, all, any };

bool is_arg(Red op) { return op == Red::argmax || op == Red::argmin; }

DType result_dtype(Red op, DType in) {
  switch (op) {
    case Red::sum:
    case Red::prod:
      return in == DType::boolean ? DType::i32 : in;
    case Red::mean:
      return is_float(in) ? in : DType::f32;
    case Red::max:
    case Red::min:
      return in;
    case Red::argmax:
    case Red::argmin:
      return DType::i32;
    case Red::all:
    case Red::any:
      return DType::boolean;
  }
  return in;
}

// The reduced axes (sorted) of x under the op's axis attribute.
std::vector<int64_t> axes_of(Red op, const Type& t, const Attrs& attrs) {
  if (is_arg(op) && !attrs.is_none("axis")) return {normalize_axis(attrs.get_int("axis"), t)};
  return reduction_axes(attrs, "axis", t);
}

// The shape of the result with the reduced axes kept as 1 (keep) or removed.
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& axes, bool keep) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      out.push_back(s[i]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

void check_nonempty(const std::string& name, const Type& t, const std::vector<int64_t>& axes) {
  for (int64_t a : axes)
    if (t.shape[a] == 0) user_error(name + " of an empty axis: " + t.str());
}

// arg_flat: argmax/argmin with axis=none return the flat index.
template <class T>
Tensor reduce_kernel(Red op, const Tensor& x, const std::vector<int64_t>& axes,
                     const Shape& out_shape, bool arg_flat) {
  Shape keep_shape = reduced_shape(x.shape(), axes, true);
  int64_t out_n = numel_of(keep_shape);
  std::vector<int64_t> map = broadcast_index_map(keep_shape, x.shape());
  const T* a = x.data<T>();
  int64_t n = x.numel();
  DType odt = result_dtype(op, x.dtype());
  Tensor out = Tensor::empty(odt, out_shape);
  if (op == Red::sum || op == Red::mean || op == Red::prod) {
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<double> acc(out_n, op == Red::prod ? 1.0 : 0.0);
      for (int64_t i = 0; i < n; ++i) {
        if (op == Red::prod)
          acc[map[i]] *= a[i];
        else
          acc[map[i]] += a[i];
      }
      int64_t count = out_n ? n / out_n : 0;
      for (int64_t j = 0; j < out_n; ++j)
        out.set(j, op == Red::mean ? acc[j] / static_cast<double>(count) : acc[j]);
    } else {
      std::vector<uint64_t> acc(out_n, op == Red::prod ? 1u : 0u);
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(a[i]));
        if (op == Red::prod)
          acc[map[i]] *= v;
        else
          acc[map[i]] += v;
      }
      int64_t count = out_n ? n / out_n : 0;
      for (int64_t j = 0; j < out_n; ++j) {
        int64_t v = static_cast<int64_t>(acc[j]);
        if (op == Red::mean)
          out.set(j, static_cast<double>(v) / static_cast<double>(count));
        else if (odt == DType::i64)
          out.data<int64_t>()[j] = v;
        else
          out.data<int32_t>()[j] = static_cast<int32_t>(v);
      }
    }
  } else if (op == Red::all || op == Red::any) {
    std::vector<uint8_t> acc(out_n, op == Red::all ? 1 : 0);
    for (int64_t i = 0; i < n; ++i) {
      bool v = a[i] != T(0);
      if (op == Red::all)
        acc[map[i]] = acc[map[i]] && v;
      else
        acc[map[i]] = acc[map[i]] || v;
    }
    for (int64_t j = 0; j < out_n; ++j) out.data<uint8_t>()[j] = acc[j];
  } else {
    // max/min/argmax/argmin: the running extreme per output element, in the native type.
    bool want_max = op == Red::max || op == Red::argmax;
    std::vector<T> best(out_n);
    std::vector<int64_t> where(out_n, -1);
    int64_t axis_stride = 1, axis_size = 1;
    if (is_arg(op) && !arg_flat) {
      axis_stride = strides_of(x.shape())[axes.at(0)];
      axis_size = x.shape()[axes.at(0)];
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t j = map[i];
      T v = a[i];
      bool take = where[j] < 0;
      if (!take) {
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(best[j])) continue;
          if (std::isnan(v)) take = true;
        }
        if (!take) take = want_max ? v > best[j] : v < best[j];
      }
      if (take) {
        best[j] = v;
        where[j] = i;
      }
    }
    for (int64_t j = 0; j < out_n; ++j) {
      if (!is_arg(op)) {
        out.data<T>()[j] = best[j];
      } else {
        int64_t flat = where[j];
        // With an axis, the coordinate along it; with axis=none, the flat index.
        int64_t k = arg_flat ? flat : (flat / axis_stride) % axis_size;
        out.data<int32_t>()[j] = static_cast<int32_t>(k);
      }
    }
  }
  return out;
}

// ---- derivative rules -----------------------------------------------------------------------
//
// With axes A and keepdims k, expand(v) = v broadcast back to x's shape (Emitter::expand_reduced):
//   sum    vjp expand(dout)                         jvp sum(t)
//   mean   vjp expand(dout) / count                 jvp mean(t)
//   max    vjp expand(dout) * w                     jvp sum(t * w)     w = (x == expand(out)),
//          min alike; ties share the derivative equally (w / number of ties), like JAX
//   prod   vjp expand(dout) * p                     jvp sum(t * p)     p = d out / d x:
//          out / x without zeros in the group; the product of the others at a group's only
//          zero; 0 elsewhere (second derivatives at exact zeros are not exact)

using ad::Emitter;
using ad::Node;
using ad::Nodes;

struct ReductionAxes {
  std::vector<int64_t> axes;
  bool keepdims;
  int64_t count;  // elements per group
};

ReductionAxes reduction_of(const Node& node, const Node* x) {
  ReductionAxes ra;
  ra.axes = reduction_axes(node.attrs, "axis", *x->type);
  ra.keepdims = node.attrs.has("keepdims") && node.attrs.get_bool("keepdims");
  ra.count = 1;
  for (int64_t a : ra.axes) ra.count *= x->type->shape[static_cast<size_t>(a)];
  return ra;
}

Node* expand(Emitter& e, Node* v, const Node* x, const ReductionAxes& ra) {
  return e.expand_reduced(v, ad::shape_of(x), ra.axes, ra.keepdims);
}

// d out / d x (with x's shape) of the reductions whose derivative is a weighted selection.
Node* partials(Emitter& e, Red op, Node* x, Node* out, const ReductionAxes& ra) {
  if (op == Red::max || op == Red::min) {
    Node* hit = e.cast(ad::bin(e, "eq", x, expand(e, out, x, ra)), x->type->dtype);
    return e.div(hit, e.sum(hit, ra.axes, true));
  }
  // prod
  Node* zero = ad::bin(e, "eq", x, ad::k(e, 0, x));
  Node* safe = ad::where(e, zero, ad::k(e, 1, x), x);
  Attrs keep = ad::attrs_of({{"axis", ra.axes}, {"keepdims", true}});
  Node* others = e.op("prod", {safe}, keep);  // product of the non-zero elements
  Node* zeros = e.sum(e.cast(zero, x->type->dtype), ra.axes, true);
  Node* no_zero = ad::bin(e, "eq", zeros, ad::k(e, 0, x));
  Node* one_zero = ad::bin(e, "eq", zeros, ad::k(e, 1, x));
  Node* at_zero = ad::where(e, ad::bin(e, "logical_and", one_zero, zero), others, ad::k(e, 0, x));
  return ad::where(e, no_zero, e.div(others, safe), at_zero);
}

void set_reduction_rules(Primitive& p, Red op) {
  ad::set_rules(
      p,
      [op](Emitter& e, const Node& node, const Nodes& in, Node* out, Node* dout) -> Nodes {
        Node* x = in[0];
        if (!ad::diff(x)) return {nullptr};
        ReductionAxes ra = reduction_of(node, x);
        Node* g = expand(e, dout, x, ra);
        if (op == Red::sum) return {g};
        if (op == Red::mean) return {e.div(g, ad::k(e, static_cast<double>(ra.count), x))};
        return {e.mul(g, partials(e, op, x, out, ra))};
      },
      [op](Emitter& e, const Node& node, const Nodes& in, Node* out, const Nodes& ts) -> Node* {
        Node* x = in[0];
        if (!ts[0] || !ad::diff(x)) return nullptr;
        if (op == Red::sum || op == Red::mean) return e.op(node.prim->name, {ts[0]}, node.attrs);
        ReductionAxes ra = reduction_of(node, x);
        return e.sum(e.mul(ts[0], partials(e, op, x, out, ra)), ra.axes, ra.keepdims);
      });
}

void add_reduction(sem::Registry& r, const std::string& name, const std::string& doc, Red op) {
  Primitive p;
  p.name = name;
  p.family = "reduction";
  // argmax/argmin track an index: the kernel generator does not emit them.
  p.facets[passes::kFusionFacet] =
      is_arg(op) ? passes::FusionKind::Opaque : passes::FusionKind::Reduction;
  p.doc = doc;
  p.params = {
      input("x"),
      attr("axis", is_arg(op) ? ParamSpec::AttrKind::IntOrNone : ParamSpec::AttrKind::IntsOrNone,
           none()),
      attr("keepdims", ParamSpec::AttrKind::Bool, Attr{false})};
  p.differentiable = op != Red::argmax && op != Red::argmin && op != Red::all && op != Red::any;
  p.infer = [name, op](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& t = tensor_input(in, 0, name);
    if (!is_float(t.dtype) && !is_integer(t.dtype) && t.dtype != DType::boolean)
      user_error(name + " has no reference kernel for " + t.str());
    std::vector<int64_t> axes = axes_of(op, t, attrs);
    if (op == Red::max || op == Red::min || is_arg(op)) check_nonempty(name, t, axes);
    bool keep = attrs.has("keepdims") && attrs.get_bool("keepdims");
    return Type::tensor(result_dtype(op, t.dtype), reduced_shape(t.shape, axes, keep));
  };
  p.eval = [name, op](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    TypeP tp = x.type();
    const Type& t = *tp;
    std::vector<int64_t> axes = axes_of(op, t, attrs);
    if (op == Red::max || op == Red::min || is_arg(op)) check_nonempty(name, t, axes);
    bool keep = attrs.has("keepdims") && attrs.get_bool("keepdims");
    Shape out_shape = reduced_shape(x.shape(), axes, keep);
    return dispatch(x.dtype(), name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return reduce_kernel<T>(op, x, axes, out_shape, attrs.is_none("axis"));
    });
  };
  if (p.differentiable) set_reduction_rules(p, op);
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void reduction_costs(sem::Registry& r) {
  for (const char* name : {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "all", "any"})
    set_cost(r, name, sem::reduction_cost(1));
}

void reduction_rules(sem::Registry& r) {
  set_sharding(r, "sum", dim_rule(linear(reduction_spec(true, false), kJoint)));
  set_sharding(r, "mean", dim_rule(linear(reduction_spec(true, true), kJoint)));
  for (const char* name : {"prod", "max", "min", "argmax", "argmin", "all", "any"})
    set_sharding(r, name, dim_rule(reduction_spec(false, false)));
}

}  // namespace facets

}  // namespace

void register_reduction(sem::Registry& r) {
  add_reduction(r, "sum", "sum over axis (none: all axes)", Red::sum);
  add_reduction(r, "mean", "mean over axis (none: all axes)", Red::mean);
  add_reduction(r, "prod", "product over axis (none: all axes)", Red::prod);
  add_reduction(r, "max", "maximum over axis (none: all axes)", Red::max);
  add_reduction(r, "min", "minimum over axis (none: all axes)", Red::min);
  add_reduction(r, "argmax", "i32 index of the first maximum along axis (none: flat index)",
                Red::argmax);
  add_reduction(r, "argmin", "i32 index of the first minimum along axis (none: flat index)",
                Red::argmin);
  add_reduction(r, "all", "true when every element is non-zero (over axis)", Red::all);
  add_reduction(r, "any", "true when some element is non-zero (over axis)", Red::any);
  // Autocast (semantics/amp.h): sums and products in f32 at O1.
  for (const char* name : {"sum", "mean", "prod"}) sem::set_amp(r, name, sem::AmpClass::F32);
  // Cost and sharding rules of the rows above.
  facets::reduction_costs(r);
  facets::reduction_rules(r);
}

}  // namespace spora::ops
