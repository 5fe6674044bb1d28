// Shape primitives: transpose/permute, reshape, broadcast_to, concat, stack, slice, gather,
// one_hot, squeeze/unsqueeze/expand_dims, flatten; and the tuple/record constructors and
// projections the front end emits (make_tuple, tuple_get, make_record, record_get).
//
// Indexing and slicing: ONE primitive, slice(x, starts, stops, steps, squeeze), all four int
// lists. Entry i describes axis i; axes past len(starts) are taken whole.
//   - Axis i listed in `squeeze` is indexed by the plain integer starts[i] and removed from the
//     result; stops[i] and steps[i] are ignored for it (anything may be there). A negative
//     index counts from the end (Python); an index out of range is the error
//     `index 5 is out of range for axis 0 of size 3`.
//   - Any other axis is the Python slice starts[i]:stops[i]:steps[i], with Python's clamping
//     (PySlice_AdjustIndices): negative start/stop count from the end, out-of-range bounds
//     clamp, negative steps walk backwards, step 0 is an error. An omitted bound is written
//     INT64_MAX or INT64_MIN (either one; it means "from the beginning / to the end in the
//     step's direction"); so `x[::-1]` is starts=[INT64_MAX] stops=[INT64_MAX] steps=[-1].
//     stops and steps may be shorter than starts (missing stops are omitted bounds, missing
//     steps are 1).
// Examples (x: f32[3,4]):
//   x[1:3, ::2]  starts=[1,0]  stops=[3,INT64_MAX]  steps=[1,2]  squeeze=[]   -> f32[2,2]
//   x[0]         starts=[0]    stops=[1]            steps=[1]    squeeze=[0]  -> f32[4]
//   x[:, -1]     starts=[0,-1] stops=[INT64_MAX,0]  steps=[1,1]  squeeze=[1]  -> f32[3]
//
// Other conventions: transpose(x, axes=none) reverses the axes when axes is none (the matrix
// transpose of a 2-D tensor); permute(x, axes) needs axes. reshape accepts one -1 wildcard.
// gather(x, indices, axis) is NumPy `take`: the result shape is x.shape[:axis] + indices.shape
// + x.shape[axis+1:], negative indices count from the end. one_hot(labels, num_classes,
// dtype) appends a class axis; a label outside [0, num_classes) is an error. make_record's
// field names travel in the string attribute `names`, comma-separated ("w,b").
//
// Two helpers exist for the derivatives (each the adjoint of the op it serves, linear, with
// its own rules, so derivatives of any order stay in this file):
//   slice_grad(g, shape, starts, stops, steps, squeeze): zeros of `shape` with g written where
//     slice(., starts, stops, steps, squeeze) reads (the vjp of slice).
//   scatter_add(x, indices, updates, axis=0): x with updates added at indices along axis, the
//     inverse layout of gather (NumPy np.add.at(x, (:, ..., indices), updates)); repeated
//     indices accumulate (the vjp of gather is scatter_add(zeros, indices, dout)).
//
// Derivative rules: every op here is linear, so jvp applies the op itself to the tangent and
// vjp applies its transpose: permute by the inverse permutation, reshape back, unbroadcast,
// slices of dout (concat, stack), slice_grad (slice), scatter_add (gather) and gather
// (scatter_add). Tuple and record ops are routed by the AD engines themselves.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/shape_rules.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// out[o] = x[base + sum_k idx_k(o) * st[k]]: the one copy loop behind transpose, slice and
// broadcast_to (strides may be 0 or negative). Copies bytes, so it works for every dtype.
Tensor strided_copy(const Tensor& x, const Shape& out_shape, const std::vector<int64_t>& st,
                    int64_t base) {
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  size_t es = dtype_size(x.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  size_t r = out_shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t offset = base;
  for (int64_t f = 0; f < out.numel(); ++f) {
    std::memcpy(dst + f * es, src + offset * es, es);
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < out_shape[k]) {
        offset += st[k];
        break;
      }
      offset -= st[k] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
  return out;
}

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "shape";
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;  // the rows below say when not
  return p;
}

// ---- transpose / permute --------------------------------------------------------------------

std::vector<int64_t> perm_of(const Type& t, const Attrs& attrs, const std::string& name) {
  std::vector<int64_t> perm;
  if (attrs.is_none("axes")) {
    for (int64_t i = t.rank(); i-- > 0;) perm.push_back(i);
    return perm;
  }
  const auto& axes = attrs.get_ints("axes");
  std::vector<bool> seen(t.rank(), false);
  bool ok = static_cast<int64_t>(axes.size()) == t.rank();
  for (int64_t a : axes) {
    if (!ok) break;
    int64_t n = a < 0 ? a + t.rank() : a;
    if (n < 0 || n >= t.rank() || seen[n])
      ok = false;
    else
      seen[n] = true;
    perm.push_back(n);
  }
  if (!ok)
    user_error(name + " axes " + sem::attr_str(ints(axes)) +
               " are not a permutation of the axes of " + t.str());
  return perm;
}

void add_transpose(sem::Registry& r, const std::string& name, bool axes_optional) {
  Primitive p = row(
      name,
      axes_optional ? "permute the axes (axes=none: reverse them, the matrix transpose)"
                    : "permute the axes: result axis i is input axis axes[i]",
      {input("x"), axes_optional ? attr("axes", AK::IntsOrNone, none()) : attr("axes", AK::Ints)});
  p.infer = [name](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& t = tensor_input(in, 0, name);
    Shape out;
    for (int64_t a : perm_of(t, attrs, name)) out.push_back(t.shape[a]);
    return Type::tensor(t.dtype, out);
  };
  p.eval = [name](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    return permuted(x, perm_of(*x.type(), attrs, name));
  };
  ad::set_linear_rules(
      p, [name](ad::Emitter& e, const ad::Node& node, ad::Node* x, ad::Node* dout) {
        std::vector<int64_t> perm = perm_of(*x->type, node.attrs, name), inverse(perm.size());
        for (size_t i = 0; i < perm.size(); ++i)
          inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
        return e.op("permute", {dout}, ad::attrs_of({{"axes", inverse}}));
      });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Injective;
  r.add(std::move(p));
}

}  // namespace

Tensor permuted(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_st = strides_of(x.shape());
  Shape out;
  std::vector<int64_t> st;
  for (int64_t a : perm) {
    out.push_back(x.shape()[static_cast<size_t>(a)]);
    st.push_back(in_st[static_cast<size_t>(a)]);
  }
  return strided_copy(x, out, st, 0);
}

namespace {

// The transpose of every op that only reshapes: reshape back.
ad::Node* reshape_back(ad::Emitter& e, const ad::Node&, ad::Node* x, ad::Node* dout) {
  return e.reshape(dout, ad::shape_of(x));
}

// ---- reshape / broadcast_to / flatten / squeeze / expand_dims ------------------------------

Shape reshape_target(const Type& t, const std::vector<int64_t>& shape) {
  int64_t known = 1, wild = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (wild >= 0)
        user_error("reshape to " + sem::attr_str(ints(shape)) + " has more than one -1");
      wild = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      user_error("reshape to " + sem::attr_str(ints(shape)) + " has a negative size");
    } else {
      known *= shape[i];
    }
  }
  int64_t n = t.numel();
  Shape out = shape;
  if (n < 0) return out;  // dynamic input: checked at run time (a wildcard stays dynamic)
  if (wild >= 0) {
    if (known == 0 || n % known != 0)
      user_error("cannot reshape " + t.str() + " (" + std::to_string(n) + " elements) to " +
                 sem::attr_str(ints(shape)));
    out[wild] = n / known;
  } else if (known != n) {
    user_error("cannot reshape " + t.str() + " (" + std::to_string(n) + " elements) to " +
               sem::attr_str(ints(shape)) + " (" + std::to_string(known) + " elements)");
  }
  return out;
}

void add_reshape(sem::Registry& r) {
  Primitive p = row("reshape", "reshape(x, shape): same elements, new shape (one -1 wildcard)",
                    {input("x"), attr("shape", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "reshape");
    const Type& t = tensor_input(in, 0, "reshape");
    return Type::tensor(t.dtype, reshape_target(t, attrs.get_ints("shape")));
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    return x.reshaped(reshape_target(*x.type(), attrs.get_ints("shape")));
  };
  ad::set_linear_rules(p, reshape_back);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Injective;
  r.add(std::move(p));
}

void check_broadcast_to(const Type& t, const Shape& shape) {
  bool ok = t.shape.size() <= shape.size();
  for (size_t i = 0; ok && i < t.shape.size(); ++i) {
    int64_t d = t.shape[i], o = shape[i + shape.size() - t.shape.size()];
    ok = d == o || d == 1 || d == sem::kDynamicDim || o == sem::kDynamicDim;
  }
  if (!ok) user_error("cannot broadcast " + t.str() + " to " + sem::attr_str(ints(shape)));
}

void add_broadcast_to(sem::Registry& r) {
  Primitive p = row("broadcast_to", "broadcast_to(x, shape): NumPy broadcast to a given shape",
                    {input("x"), attr("shape", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "broadcast_to");
    const Type& t = tensor_input(in, 0, "broadcast_to");
    check_broadcast_to(t, attrs.get_ints("shape"));
    return Type::tensor(t.dtype, attrs.get_ints("shape"));
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Shape& shape = attrs.get_ints("shape");
    check_broadcast_to(*x.type(), shape);
    std::vector<int64_t> in_st = strides_of(x.shape());
    std::vector<int64_t> st(shape.size(), 0);
    size_t lead = shape.size() - x.shape().size();
    for (size_t i = 0; i < x.shape().size(); ++i)
      st[lead + i] = x.shape()[i] == shape[lead + i] ? in_st[i] : 0;
    return strided_copy(x, shape, st, 0);
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node&, ad::Node* x, ad::Node* dout) {
    return e.unbroadcast(dout, ad::shape_of(x));
  });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Broadcast;
  r.add(std::move(p));
}

Shape flatten_shape(const Type& t, const Attrs& attrs) {
  if (t.rank() == 0) return {1};
  int64_t s = normalize_axis(attrs.get_int("start_axis"), t);
  Shape out(t.shape.begin(), t.shape.begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i < t.rank(); ++i) {
    if (t.shape[i] == sem::kDynamicDim) {
      n = sem::kDynamicDim;
      break;
    }
    n *= t.shape[i];
  }
  out.push_back(n);
  return out;
}

Shape squeeze_shape(const Type& t, const Attrs& attrs) {
  std::vector<bool> drop(t.rank(), false);
  if (attrs.is_none("axis")) {
    for (int64_t i = 0; i < t.rank(); ++i) drop[i] = t.shape[i] == 1;
  } else {
    for (int64_t a : reduction_axes(attrs, "axis", t)) {
      if (t.shape[a] != 1 && t.shape[a] != sem::kDynamicDim)
        user_error("cannot squeeze axis " + std::to_string(a) + " of " + t.str() +
                   ": its size is " + std::to_string(t.shape[a]));
      drop[a] = true;
    }
  }
  Shape out;
  for (int64_t i = 0; i < t.rank(); ++i)
    if (!drop[i]) out.push_back(t.shape[i]);
  return out;
}

Shape expand_shape(const Type& t, const Attrs& attrs) {
  int64_t a = normalize_axis(attrs.get_int("axis"), t, /*extra=*/true);
  Shape out = t.shape;
  out.insert(out.begin() + a, 1);
  return out;
}

// A row whose result is a reshape of its input (flatten, squeeze, unsqueeze, expand_dims).
void add_reshape_like(sem::Registry& r, const std::string& name, const std::string& doc,
                      std::vector<ParamSpec> params, Shape (*shape_fn)(const Type&, const Attrs&)) {
  Primitive p = row(name, doc, std::move(params));
  p.infer = [name, shape_fn](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, name);
    const Type& t = tensor_input(in, 0, name);
    return Type::tensor(t.dtype, shape_fn(t, attrs));
  };
  p.eval = [shape_fn](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    return x.reshaped(shape_fn(*x.type(), attrs));
  };
  ad::set_linear_rules(p, reshape_back);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Injective;
  r.add(std::move(p));
}

// ---- concat / stack -------------------------------------------------------------------------

std::vector<const Type*> list_types(const std::vector<TypeP>& in, const std::string& name) {
  if (in.empty()) user_error(name + " needs at least one tensor");
  std::vector<const Type*> ts;
  for (size_t i = 0; i < in.size(); ++i) ts.push_back(&tensor_input(in, i, name));
  return ts;
}

std::string list_str(const std::vector<const Type*>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i]->str();
  return s;
}

// The result type of concat (stack=false) or stack (stack=true), and the normalised axis.
std::pair<TypeP, int64_t> join_type(const std::vector<const Type*>& ts, int64_t axis_attr,
                                    bool stack) {
  const std::string name = stack ? "stack" : "concat";
  const Type& first = *ts[0];
  if (!stack && first.rank() == 0) user_error("concat does not accept scalars: " + list_str(ts));
  int64_t axis = normalize_axis(axis_attr, first, /*extra=*/stack);
  Shape out = first.shape;
  for (size_t i = 1; i < ts.size(); ++i) {
    const Type& t = *ts[i];
    bool ok = t.dtype == first.dtype && t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d) {
      if (!stack && d == axis) continue;
      ok = t.shape[d] == first.shape[d] || t.shape[d] == sem::kDynamicDim ||
           first.shape[d] == sem::kDynamicDim;
    }
    if (!ok)
      user_error(name + " shapes do not match along axis " + std::to_string(axis) + ": " +
                 list_str(ts));
    if (!stack) {
      if (out[axis] == sem::kDynamicDim || t.shape[axis] == sem::kDynamicDim)
        out[axis] = sem::kDynamicDim;
      else
        out[axis] += t.shape[axis];
    }
  }
  if (stack) out.insert(out.begin() + axis, static_cast<int64_t>(ts.size()));
  return {Type::tensor(first.dtype, out), axis};
}

// slice attributes taking [start, stop) (or, squeezed, index `start`) along `axis`, everything
// along the axes before it.
Attrs axis_slice(int64_t axis, int64_t start, int64_t stop, bool squeeze) {
  std::vector<int64_t> starts(static_cast<size_t>(axis), 0), stops(static_cast<size_t>(axis), kMax),
      steps(static_cast<size_t>(axis) + 1, 1), sq;
  starts.push_back(start);
  stops.push_back(stop);
  if (squeeze) sq.push_back(axis);
  return ad::attrs_of({{"starts", starts}, {"stops", stops}, {"steps", steps}, {"squeeze", sq}});
}

// The vjp of concat (stack): the slice of dout each input was copied to.
ad::VjpRule join_vjp(bool stack) {
  return [stack](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
                 ad::Node* dout) -> ad::Nodes {
    if (!ad::diff(in[0])) return ad::Nodes(in.size(), nullptr);
    int64_t axis = normalize_axis(node.attrs.get_int("axis"), *in[0]->type, stack);
    ad::Nodes out;
    int64_t offset = 0;
    for (ad::Node* x : in) {
      int64_t len = stack ? 1 : ad::shape_of(x)[static_cast<size_t>(axis)];
      out.push_back(e.op("slice", {dout}, axis_slice(axis, offset, offset + len, stack)));
      offset += len;
    }
    return out;
  };
}

void add_join(sem::Registry& r, bool stack) {
  std::string name = stack ? "stack" : "concat";
  Primitive p = row(name,
                    stack ? "stack(xs, axis=0): join equal-shaped tensors along a new axis"
                          : "concat(xs, axis=0): join tensors along an existing axis",
                    {input_list("xs"), attr("axis", AK::Int, int_attr(0))});
  p.infer = [name, stack](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    return join_type(list_types(in, name), attrs.get_int("axis"), stack).first;
  };
  p.eval = [name, stack](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    std::vector<TypeP> types;
    for (const Value& v : in) types.push_back(v.type());
    auto [type, axis] = join_type(list_types(types, name), attrs.get_int("axis"), stack);
    Tensor out = Tensor::empty(type->dtype, type->shape);
    // Copy block by block: outer = product of dims before axis; each input contributes a
    // contiguous chunk of (its size along axis) * inner elements per outer index.
    size_t es = dtype_size(type->dtype);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= type->shape[d];
    int64_t out_row = outer ? out.numel() / outer : 0;
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    int64_t col = 0;
    for (const Value& v : in) {
      const Tensor& x = v.tensor;
      int64_t chunk = outer ? x.numel() / outer : 0;
      const uint8_t* src = static_cast<const uint8_t*>(x.raw());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + (o * out_row + col) * es, src + o * chunk * es, chunk * es);
      col += chunk;
    }
    return out;
  };
  ad::set_rules(p, join_vjp(stack),
                [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
                   const ad::Nodes& ts) -> ad::Node* {
                  if (!ad::diff(in[0]) || !ad::any_tangent(ts)) return nullptr;
                  ad::Nodes parts;
                  for (size_t i = 0; i < in.size(); ++i)
                    parts.push_back(ad::tangent_or_zero(e, in, ts, i));
                  return e.op(node.prim->name, parts, node.attrs);
                });
  // the kernel generator does not emit joins
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

// ---- slice ----------------------------------------------------------------------------------

using sem::SlicePlan;

// The slice of a tensor of type t (dims may be dynamic at compile time: then the result dim is
// dynamic and integer indices are checked at run time); UserError for the user's mistakes.
SlicePlan plan_slice(const Type& t, const Attrs& attrs) {
  SlicePlan plan = sem::plan_slice(t.shape, attrs, t.str());
  if (plan.error == SlicePlan::Error::User) user_error(plan.message);
  if (plan.error == SlicePlan::Error::Internal) internal_error(plan.message);
  return plan;
}

// The slice attributes of a slice or slice_grad row.
Attrs slice_attrs(const Attrs& a) {
  Attrs out;
  for (const char* name : {"starts", "stops", "steps", "squeeze"})
    if (const Attr* v = a.find(name)) out.set(name, *v);
  return out;
}

void add_slice(sem::Registry& r) {
  Primitive p =
      row("slice",
          "x[...] indexing and slicing: Python slices per axis, squeeze = integer-indexed axes",
          {input("x"), attr("starts", AK::Ints), attr("stops", AK::Ints), attr("steps", AK::Ints),
           attr("squeeze", AK::Ints, ints({}))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "slice");
    const Type& t = tensor_input(in, 0, "slice");
    return Type::tensor(t.dtype, plan_slice(t, attrs).out);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    SlicePlan plan = plan_slice(*x.type(), attrs);
    return strided_copy(x, plan.out, plan.st, plan.base);
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node* x, ad::Node* dout) {
    Attrs a = ad::attrs_of({{"shape", ad::shape_of(x)}});
    Attrs slicing = slice_attrs(node.attrs);
    for (const auto& [name, value] : slicing.items()) a.set(name, value);
    return e.op("slice_grad", {dout}, a);
  });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Injective;
  r.add(std::move(p));
}

void add_slice_grad(sem::Registry& r) {
  Primitive p =
      row("slice_grad",
          "slice_grad(g, shape, starts, stops, steps, squeeze): zeros of shape with g "
          "where slice reads (the vjp of slice)",
          {input("g"), attr("shape", AK::Ints), attr("starts", AK::Ints), attr("stops", AK::Ints),
           attr("steps", AK::Ints), attr("squeeze", AK::Ints, ints({}))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "slice_grad");
    const Type& g = tensor_input(in, 0, "slice_grad");
    TypeP out = Type::tensor(g.dtype, attrs.get_ints("shape"));
    Shape want = plan_slice(*out, attrs).out;
    if (want != g.shape)
      user_error("slice_grad: " + g.str() + " does not match the slice " +
                 Type::tensor(g.dtype, want)->str() + " of " + out->str());
    return out;
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& g = in.at(0).tensor;
    Tensor out = Tensor::zeros(g.dtype(), attrs.get_ints("shape"));
    SlicePlan plan = plan_slice(*out.type(), attrs);
    // The copy loop of strided_copy, writing instead of reading (the slots are distinct).
    size_t es = dtype_size(g.dtype());
    const uint8_t* src = static_cast<const uint8_t*>(g.raw());
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    std::vector<int64_t> idx(plan.out.size(), 0);
    int64_t offset = plan.base;
    for (int64_t f = 0; f < g.numel(); ++f) {
      std::memcpy(dst + offset * es, src + f * es, es);
      for (size_t k = plan.out.size(); k-- > 0;) {
        if (++idx[k] < plan.out[k]) {
          offset += plan.st[k];
          break;
        }
        offset -= plan.st[k] * (idx[k] - 1);
        idx[k] = 0;
      }
    }
    return out;
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node*, ad::Node* dout) {
    return e.op("slice", {dout}, slice_attrs(node.attrs));
  });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

// ---- gather / one_hot -----------------------------------------------------------------------

void add_gather(sem::Registry& r) {
  Primitive p = row("gather", "gather(x, indices, axis=0): NumPy take along axis",
                    {input("x"), input("indices"), attr("axis", AK::Int, int_attr(0))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 2, 2, "gather");
    const Type& x = tensor_input(in, 0, "gather");
    const Type& idx = tensor_input(in, 1, "gather");
    if (!is_integer(idx.dtype)) user_error("gather indices must be i32 or i64, got " + idx.str());
    int64_t axis = normalize_axis(attrs.get_int("axis"), x);
    Shape out(x.shape.begin(), x.shape.begin() + axis);
    out.insert(out.end(), idx.shape.begin(), idx.shape.end());
    out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
    return Type::tensor(x.dtype, out);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& idx = in.at(1).tensor;
    int64_t axis = normalize_axis(attrs.get_int("axis"), *x.type());
    int64_t outer = 1, inner = 1, len = x.shape()[axis];
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
    out_shape.insert(out_shape.end(), idx.shape().begin(), idx.shape().end());
    out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor out = Tensor::empty(x.dtype(), out_shape);
    size_t es = dtype_size(x.dtype());
    const uint8_t* src = static_cast<const uint8_t*>(x.raw());
    uint8_t* dst = static_cast<uint8_t*>(out.raw());
    int64_t ni = idx.numel();
    for (int64_t j = 0; j < ni; ++j) {
      int64_t k = idx.dtype() == DType::i64 ? idx.data<int64_t>()[j] : idx.data<int32_t>()[j];
      int64_t n = k < 0 ? k + len : k;
      if (n < 0 || n >= len)
        user_error("index " + std::to_string(k) + " is out of range for axis " +
                   std::to_string(axis) + " of size " + std::to_string(len));
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + ((o * ni + j) * inner) * es, src + ((o * len + n) * inner) * es,
                    inner * es);
    }
    return out;
  };
  ad::set_rules(
      p,
      [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
         ad::Node* dout) -> ad::Nodes {
        if (!ad::diff(in[0])) return {nullptr, nullptr};
        return {e.op("scatter_add", {e.zeros_like(in[0]), in[1], dout}, node.attrs), nullptr};
      },
      [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
         const ad::Nodes& ts) -> ad::Node* {
        if (!ts[0] || !ad::diff(in[0])) return nullptr;
        return e.op("gather", {ts[0], in[1]}, node.attrs);
      });
  // data-dependent reads: not fused
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

// The flat index along `axis` of indices element j (negative counts from the end).
int64_t index_at(const Tensor& idx, int64_t j, int64_t len, int64_t axis) {
  int64_t k = idx.dtype() == DType::i64 ? idx.data<int64_t>()[j] : idx.data<int32_t>()[j];
  int64_t n = k < 0 ? k + len : k;
  if (n < 0 || n >= len)
    user_error("index " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) +
               " of size " + std::to_string(len));
  return n;
}

void add_scatter_add(sem::Registry& r) {
  Primitive p =
      row("scatter_add",
          "scatter_add(x, indices, updates, axis=0): x with updates added at indices "
          "along axis (the vjp of gather)",
          {input("x"), input("indices"), input("updates"), attr("axis", AK::Int, int_attr(0))});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 3, 3, "scatter_add");
    const Type& x = tensor_input(in, 0, "scatter_add");
    const Type& idx = tensor_input(in, 1, "scatter_add");
    const Type& upd = tensor_input(in, 2, "scatter_add");
    if (!is_integer(idx.dtype))
      user_error("scatter_add indices must be i32 or i64, got " + idx.str());
    if (!is_float(x.dtype) && !is_integer(x.dtype))
      user_error("scatter_add expects a numeric tensor, got " + x.str());
    int64_t axis = normalize_axis(attrs.get_int("axis"), x);
    Shape want(x.shape.begin(), x.shape.begin() + axis);
    want.insert(want.end(), idx.shape.begin(), idx.shape.end());
    want.insert(want.end(), x.shape.begin() + axis + 1, x.shape.end());
    if (upd.dtype != x.dtype || upd.shape != want)
      user_error("scatter_add updates " + upd.str() + " do not match " +
                 Type::tensor(x.dtype, want)->str() + " for " + x.str() + " and indices " +
                 idx.str());
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const Tensor& idx = in.at(1).tensor;
    const Tensor& upd = in.at(2).tensor;
    int64_t axis = normalize_axis(attrs.get_int("axis"), *x.type());
    int64_t outer = 1, inner = 1, len = x.shape()[axis], ni = idx.numel();
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    Tensor out = x.clone();
    dispatch(x.dtype(), "scatter_add", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const T* u = upd.data<T>();
      for (int64_t j = 0; j < ni; ++j) {
        int64_t n = index_at(idx, j, len, axis);
        for (int64_t b = 0; b < outer; ++b)
          for (int64_t i = 0; i < inner; ++i)
            o[(b * len + n) * inner + i] =
                static_cast<T>(o[(b * len + n) * inner + i] + u[(b * ni + j) * inner + i]);
      }
    });
    return out;
  };
  // Linear in x and in updates: vjp (dout, -, gather(dout)); jvp tx + scatter_add(0, tu).
  ad::set_rules(
      p,
      [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
         ad::Node* dout) -> ad::Nodes {
        if (!ad::diff(in[0])) return {nullptr, nullptr, nullptr};
        return {dout, nullptr, e.op("gather", {dout, in[1]}, node.attrs)};
      },
      [](ad::Emitter& e, const ad::Node& node, const ad::Nodes& in, ad::Node*,
         const ad::Nodes& ts) -> ad::Node* {
        if (!ad::diff(in[0]) || (!ts[0] && !ts[2])) return nullptr;
        if (!ts[2]) return ts[0];
        return e.op("scatter_add", {ad::tangent_or_zero(e, in, ts, 0), in[1], ts[2]}, node.attrs);
      });
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  r.add(std::move(p));
}

void add_one_hot(sem::Registry& r) {
  Primitive p = row(
      "one_hot", "one_hot(labels, num_classes, dtype=f32): append a one-hot class axis",
      {input("labels"), attr("num_classes", AK::Int), attr("dtype", AK::DType, Attr{DType::f32})});
  p.differentiable = false;
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "one_hot");
    const Type& t = tensor_input(in, 0, "one_hot");
    if (!is_integer(t.dtype)) user_error("one_hot labels must be i32 or i64, got " + t.str());
    int64_t c = attrs.get_int("num_classes");
    if (c < 0) user_error("one_hot num_classes must be non-negative, got " + std::to_string(c));
    Shape out = t.shape;
    out.push_back(c);
    return Type::tensor(attrs.get_dtype("dtype"), out);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& labels = in.at(0).tensor;
    int64_t c = attrs.get_int("num_classes");
    Shape out_shape = labels.shape();
    out_shape.push_back(c);
    Tensor out = Tensor::zeros(attrs.get_dtype("dtype"), out_shape);
    for (int64_t i = 0; i < labels.numel(); ++i) {
      int64_t k =
          labels.dtype() == DType::i64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
      if (k < 0 || k >= c)
        user_error("one_hot label " + std::to_string(k) + " is out of range for " +
                   std::to_string(c) + " classes");
      out.set(i * c + k, 1.0);
    }
    return out;
  };
  p.facets[passes::kFusionFacet] = passes::FusionKind::Injective;
  r.add(std::move(p));
}

// ---- tuples and records ---------------------------------------------------------------------

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(',', b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

void add_tuple_ops(sem::Registry& r) {
  Primitive mk = row("make_tuple", "make_tuple(xs...): build a tuple", {input_list("xs")});
  mk.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP { return Type::tuple(in); };
  mk.eval = [](const std::vector<Value>& in, const Attrs&) -> Value { return Value::tuple(in); };
  r.add(std::move(mk));

  auto tuple_index = [](const Type& t, int64_t i) {
    int64_t n = static_cast<int64_t>(t.elems.size());
    int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
      user_error("tuple index " + std::to_string(i) + " is out of range for " + t.str());
    return static_cast<size_t>(k);
  };
  Primitive get = row("tuple_get", "tuple_get(t, index): element of a tuple",
                      {input("t"), attr("index", AK::Int)});
  get.infer = [tuple_index](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "tuple_get");
    if (!in[0] || in[0]->kind != Type::Kind::Tuple)
      user_error("tuple_get expects a tuple, got " +
                 (in[0] ? in[0]->str() : std::string("nothing")));
    return in[0]->elems[tuple_index(*in[0], attrs.get_int("index"))];
  };
  get.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Value& t = in.at(0);
    if (t.kind != Value::Kind::Tuple) internal_error("tuple_get on a non-tuple value");
    int64_t n = static_cast<int64_t>(t.items().size()), i = attrs.get_int("index");
    int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n) user_error("tuple index " + std::to_string(i) + " is out of range");
    return t.items()[static_cast<size_t>(k)];
  };
  r.add(std::move(get));

  Primitive mr = row("make_record",
                     "make_record(fields..., name, names): build a record; names comma-separated",
                     {input_list("fields"), attr("name", AK::String, Attr{std::string()}),
                      attr("names", AK::String)});
  mr.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    std::vector<std::string> names = split_names(attrs.get_string("names"));
    if (names.size() != in.size())
      internal_error("make_record: " + std::to_string(names.size()) + " names for " +
                     std::to_string(in.size()) + " fields");
    return Type::record(attrs.has("name") ? attrs.get_string("name") : "", names, in);
  };
  mr.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    std::vector<TypeP> types;
    for (const Value& v : in) types.push_back(v.type());
    TypeP t = Type::record(attrs.has("name") ? attrs.get_string("name") : "",
                           split_names(attrs.get_string("names")), types);
    return Value::record(t, in);
  };
  r.add(std::move(mr));

  Primitive rg = row("record_get", "record_get(r, field): a field of a record",
                     {input("r"), attr("field", AK::String)});
  rg.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "record_get");
    if (!in[0] || in[0]->kind != Type::Kind::Record)
      user_error("record_get expects a record, got " +
                 (in[0] ? in[0]->str() : std::string("nothing")));
    int i = in[0]->field_index(attrs.get_string("field"));
    if (i < 0) user_error(in[0]->str() + " has no field '" + attrs.get_string("field") + "'");
    return in[0]->elems[static_cast<size_t>(i)];
  };
  rg.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Value& v = in.at(0);
    if (v.kind != Value::Kind::Record || !v.record_type)
      internal_error("record_get on a non-record value");
    int i = v.record_type->field_index(attrs.get_string("field"));
    if (i < 0) user_error(v.type()->str() + " has no field '" + attrs.get_string("field") + "'");
    return v.items()[static_cast<size_t>(i)];
  };
  r.add(std::move(rg));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void shape_costs(sem::Registry& r) {
  for (const char* name : {"reshape", "flatten", "squeeze", "unsqueeze", "expand_dims",
                           "make_tuple", "tuple_get", "make_record", "record_get"})
    set_cost(r, name, sem::view_cost());
  for (const char* name : {"broadcast_to", "concat", "stack", "slice", "gather"})
    set_cost(r, name, sem::copy_cost());
  // A permutation that moves the innermost axis (of those longer than 1) copies single elements
  // and is priced by a table of its own where the spec has one (`transpose`); one that keeps it
  // copies contiguous runs, as the copy class's other ops do.
  for (const char* name : {"transpose", "permute"})
    set_cost(r, name, [](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
      OpCost c = sem::copy_cost()(in, out, attrs);
      if (in.empty() || !in[0] || !in[0]->is_tensor()) return c;
      const Shape& shape = in[0]->shape;
      const auto axes = sem::permutation(attrs, in[0]->rank());
      if (!axes) return c;
      int64_t inner_in = -1, inner_out = -1;  // the innermost axes longer than 1
      for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] > 1) inner_in = static_cast<int64_t>(i);
        if (shape[static_cast<size_t>((*axes)[i])] > 1) inner_out = (*axes)[i];
      }
      if (inner_in != inner_out) c.table = "transpose";
      return c;
    });
  set_cost(r, "one_hot", sem::elementwise_cost(1));
  // Zeros of the input's shape written, g read into them.
  set_cost(r, "slice_grad", [](const CostTypes& in, const TypeP& out, const Attrs&) {
    return OpCost{0, input_bytes(in) + type_bytes(out), "copy"};
  });
  // x copied to the output, one addition per update.
  set_cost(r, "scatter_add", [](const CostTypes& in, const TypeP& out, const Attrs&) {
    return OpCost{in.size() > 2 ? elements(in[2]) : 0, input_bytes(in) + type_bytes(out), "copy"};
  });
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

}  // namespace facets

}  // namespace

void register_shape(sem::Registry& r) {
  add_transpose(r, "transpose", true);
  add_transpose(r, "permute", false);
  add_reshape(r);
  add_broadcast_to(r);
  add_reshape_like(r, "flatten", "flatten(x, start_axis=1): merge the axes from start_axis on",
                   {input("x"), attr("start_axis", AK::Int, int_attr(1))}, flatten_shape);
  add_reshape_like(r, "squeeze", "squeeze(x, axis=none): remove size-1 axes (none: all of them)",
                   {input("x"), attr("axis", AK::IntsOrNone, none())}, squeeze_shape);
  add_reshape_like(r, "unsqueeze", "unsqueeze(x, axis): insert a size-1 axis at axis",
                   {input("x"), attr("axis", AK::Int)}, expand_shape);
  add_reshape_like(r, "expand_dims", "expand_dims(x, axis): insert a size-1 axis (= unsqueeze)",
                   {input("x"), attr("axis", AK::Int)}, expand_shape);
  add_join(r, false);
  add_join(r, true);
  add_slice(r);
  add_slice_grad(r);
  add_gather(r);
  add_scatter_add(r);
  add_one_hot(r);
  add_tuple_ops(r);
  // Cost and sharding rules of the rows above.
  facets::shape_costs(r);
  facets::shape_rules(r);
}

}  // namespace spora::ops
