// How every kernel computes on f16 / bf16 tensors (PyTorch's CPU semantics): it reads its
// low-precision inputs widened to f32, runs its f32 code (so matmul, sums, softmax and
// normalisation accumulate in f32 or wider) and rounds each floating result once to the low
// dtype. One wrapper does it for every row marked with kLowPrecisionFacet, so no kernel is
// written twice: ops/ wraps the reference kernels (register_all), backends/cpu its kernels
// (with faster vectorised conversions), and eager and graph mode agree because both call them.
#pragma once

#include <vector>

#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::sem {

// A row's facet (value: true) saying its kernels take f16/bf16 through run_widened.
inline constexpr const char* kLowPrecisionFacet = "low_precision";

inline bool is_low_float(DType d) { return d == DType::f16 || d == DType::bf16; }

// Every f32 tensor of v (recursively through tuples and records) narrowed with `down`.
template <class Down>
Value narrow_value(const Value& v, DType low, Down&& down) {
  if (v.is_tensor()) return v.tensor.dtype() == DType::f32 ? Value(down(v.tensor, low)) : v;
  if (v.kind != Value::Kind::Tuple && v.kind != Value::Kind::Record) return v;
  std::vector<Value> items;
  items.reserve(v.items().size());
  for (const Value& e : v.items()) items.push_back(narrow_value(e, low, down));
  return v.kind == Value::Kind::Tuple ? Value::tuple(std::move(items))
                                      : Value::record(v.record_type, std::move(items));
}

// Runs k(in, attrs) directly when no input tensor and no `dtype` attribute is f16/bf16; else
// on the inputs widened by `up` (low tensor -> f32 tensor), with a low `dtype` attribute
// replaced by f32, and narrows every f32 tensor of the result by `down` (f32 tensor, low ->
// low tensor). The low dtype is the first low input's (the shape rules reject mixing f16 with
// bf16 or f32), else the attribute's.
template <class K, class Up, class Down>
Value run_widened(const std::vector<Value>& in, const Attrs& attrs, const K& k, Up&& up,
                  Down&& down) {
  bool low_input = false, low_attr = false;
  DType low = DType::f32;
  for (const Value& v : in) {
    if (v.is_tensor() && is_low_float(v.tensor.dtype())) {
      low = v.tensor.dtype();
      low_input = true;
      break;
    }
  }
  const Attr* dt = attrs.find("dtype");
  if (dt && std::holds_alternative<DType>(*dt) && is_low_float(std::get<DType>(*dt))) {
    low_attr = true;
    if (!low_input) low = std::get<DType>(*dt);
  }
  if (!low_input && !low_attr) return k(in, attrs);
  std::vector<Value> wide;
  wide.reserve(in.size());
  for (const Value& v : in)
    wide.push_back(v.is_tensor() && is_low_float(v.tensor.dtype()) ? Value(up(v.tensor)) : v);
  if (!low_attr) return narrow_value(k(wide, attrs), low, down);
  Attrs f32_attrs = attrs;
  f32_attrs.set("dtype", Attr{DType::f32});
  return narrow_value(k(wide, f32_attrs), low, down);
}

}  // namespace spora::sem
