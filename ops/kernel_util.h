// Shared helpers of the reference kernels and shape rules in ops/: parameter specs, dtype
// dispatch, axis normalisation, NumPy broadcasting and row-major index arithmetic.
//
// Reference kernels are plain loops over contiguous row-major tensors. Broadcasting is done
// with an index map: for each output element, the flat index of the input element it reads
// (broadcast_index_map), so each kernel body stays a single obvious loop.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/registry.h"
#include "semantics/shape_rules.h"
#include "semantics/types.h"
#include "semantics/value.h"

namespace spora::ops {

using sem::Attr;
using sem::Attrs;
using sem::ParamSpec;
using sem::Primitive;
using sem::Shape;
using sem::Tensor;
using sem::Type;
using sem::TypeP;
using sem::Value;

// ---- parameter specs ------------------------------------------------------------------------

inline ParamSpec input(std::string name) {
  return {std::move(name), ParamSpec::Kind::Input, ParamSpec::AttrKind::Int, std::nullopt};
}
inline ParamSpec optional_input(std::string name) {
  return {std::move(name), ParamSpec::Kind::OptionalInput, ParamSpec::AttrKind::Int, std::nullopt};
}
inline ParamSpec input_list(std::string name) {
  return {std::move(name), ParamSpec::Kind::InputList, ParamSpec::AttrKind::Int, std::nullopt};
}
// An attribute; without a default it is required.
inline ParamSpec attr(std::string name, ParamSpec::AttrKind kind,
                      std::optional<Attr> default_value = std::nullopt) {
  return {std::move(name), ParamSpec::Kind::Attr, kind, std::move(default_value)};
}
// A bool attribute, false when absent: the front end does not write it into calls that leave
// it out (ParamSpec::default_written).
inline ParamSpec flag_attr(std::string name) {
  ParamSpec p = attr(std::move(name), ParamSpec::AttrKind::Bool, Attr{false});
  p.default_written = false;
  return p;
}
inline Attr none() { return Attr{std::monostate{}}; }
inline Attr ints(std::vector<int64_t> v) { return Attr{std::move(v)}; }
inline Attr int_attr(int64_t v) { return Attr{v}; }
inline Attr float_attr(double v) { return Attr{v}; }

// ---- errors ---------------------------------------------------------------------------------

[[noreturn]] inline void user_error(const std::string& message) { throw lang::UserError(message); }
[[noreturn]] inline void internal_error(const std::string& message) {
  throw lang::InternalError(message);
}

// The tensor type of input i, or a user error naming the primitive.
const Type& tensor_input(const std::vector<TypeP>& inputs, size_t i, const std::string& prim);
// An optional input is absent when the list is shorter, or the entry is null / a None value.
inline bool has_input(const std::vector<TypeP>& inputs, size_t i) {
  return i < inputs.size() && inputs[i] != nullptr;
}
inline bool has_input(const std::vector<Value>& inputs, size_t i) {
  return i < inputs.size() && inputs[i].kind != Value::Kind::None;
}
// Checks the number of inputs (internal error: the front end binds by the params).
void expect_inputs(const std::vector<TypeP>& inputs, size_t lo, size_t hi, const std::string& prim);

// ---- dtype dispatch -------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with T the C++ element type of dtype (bool is uint8_t). f16/bf16 never
// reach it: register_all wraps the computing rows so they see f32 (semantics/low_precision.h);
// elsewhere they are a user error.
template <class F>
decltype(auto) dispatch(DType dtype, const std::string& prim, F&& f) {
  switch (dtype) {
    case DType::f32:
      return f(Tag<float>{});
    case DType::f64:
      return f(Tag<double>{});
    case DType::i32:
      return f(Tag<int32_t>{});
    case DType::i64:
      return f(Tag<int64_t>{});
    case DType::boolean:
      return f(Tag<uint8_t>{});
    default:
      break;
  }
  user_error(prim + " has no reference kernel for " + std::string(dtype_name(dtype)));
}

// ---- axes and shapes ------------------------------------------------------------------------

// Normalises a possibly negative axis of a rank-r tensor; UserError
// "axis 2 is out of range for f32[3,4]" otherwise. `extra` allows axis == rank (insertion).
int64_t normalize_axis(int64_t axis, const Type& t, bool extra = false);
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& type_str, bool extra = false);
// Axes of a reduction: none (every axis) or a list; sorted, unique, normalised.
std::vector<int64_t> reduction_axes(const Attrs& attrs, const std::string& name, const Type& t);

int64_t numel_of(const Shape& s);
std::vector<int64_t> strides_of(const Shape& s);
// x with its axes permuted (result axis i is x's axis perm[i]), copied: the permute row's
// reference kernel (ops/shape.cpp), for every dtype.
Tensor permuted(const Tensor& x, const std::vector<int64_t>& perm);
// The broadcast shape of two shapes (NumPy rules); nullopt when incompatible.
using sem::broadcast_shapes;
// The type rule shared by binary elementwise ops: equal dtypes (`add operand types do not
// match: f32[2] and f64[2]`) and broadcastable shapes (`cannot broadcast f32[2,3] and f32[4]`).
Shape binary_broadcast(const std::string& name, const Type& a, const Type& b);
// For each flat index of `out`, the flat index of the (broadcast) input element of shape `in`.
std::vector<int64_t> broadcast_index_map(const Shape& in, const Shape& out);
// Unravels a flat index into a multi-index of shape s.
void unravel(int64_t flat, const Shape& s, std::vector<int64_t>& idx);

// Reads an int / float attribute that may be a single value or a one- or two-element list
// (conv2d stride=1 or stride=[1,2]) as a pair.
std::pair<int64_t, int64_t> int_pair(const Attrs& attrs, const std::string& name,
                                     const std::string& prim);

// A unit (empty tuple) value, the result of effectful primitives.
inline Value unit_value() { return Value::tuple({}); }

}  // namespace spora::ops
