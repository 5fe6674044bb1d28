// Shared helpers of ops/ (kernel_util.h) and register_all().
#include "ops/kernel_util.h"

#include <algorithm>
#include <iostream>
#include <mutex>
#include <set>

#include "ops/families.h"
#include "ops/ops.h"
#include "semantics/low_precision.h"

namespace spora::ops {

const Type& tensor_input(const std::vector<TypeP>& inputs, size_t i, const std::string& prim) {
  if (i >= inputs.size() || !inputs[i])
    internal_error(prim + ": missing input " + std::to_string(i));
  if (!inputs[i]->is_tensor()) user_error(prim + " expects a tensor, got " + inputs[i]->str());
  return *inputs[i];
}

void expect_inputs(const std::vector<TypeP>& inputs, size_t lo, size_t hi,
                   const std::string& prim) {
  if (inputs.size() < lo || inputs.size() > hi)
    internal_error(prim + ": expected " + std::to_string(lo) + ".." + std::to_string(hi) +
                   " inputs, got " + std::to_string(inputs.size()));
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& type_str, bool extra) {
  int64_t n = rank + (extra ? 1 : 0);
  int64_t a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n)
    user_error("axis " + std::to_string(axis) + " is out of range for " + type_str);
  return a;
}

int64_t normalize_axis(int64_t axis, const Type& t, bool extra) {
  return normalize_axis(axis, t.rank(), t.str(), extra);
}

std::vector<int64_t> reduction_axes(const Attrs& attrs, const std::string& name, const Type& t) {
  std::vector<int64_t> axes;
  if (attrs.is_none(name)) {
    for (int64_t i = 0; i < t.rank(); ++i) axes.push_back(i);
    return axes;
  }
  const Attr* a = attrs.find(name);
  if (auto* one = std::get_if<int64_t>(a)) {
    axes.push_back(normalize_axis(*one, t));
  } else {
    for (int64_t ax : attrs.get_ints(name)) axes.push_back(normalize_axis(ax, t));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    user_error("repeated axis in " + sem::attr_str(*a) + " for " + t.str());
  return axes;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> strides_of(const Shape& s) { return sem::row_major_strides(s); }

Shape binary_broadcast(const std::string& name, const Type& a, const Type& b) {
  if (a.dtype != b.dtype) {
    // Mixing f16/bf16 with another float is never implicit (the language keeps one dtype
    // per operation); say how to mix them.
    const bool low = a.dtype == DType::f16 || a.dtype == DType::bf16 || b.dtype == DType::f16 ||
                     b.dtype == DType::bf16;
    user_error(name + " operand types do not match: " + a.str() + " and " + b.str() +
               (low ? " (mixed precision is explicit: cast one of them, e.g. cast(x, f32), or let "
                      "set_amp insert the casts)"
                    : ""));
  }
  auto shape = broadcast_shapes(a.shape, b.shape);
  if (!shape) user_error("cannot broadcast " + a.str() + " and " + b.str());
  return *shape;
}

std::vector<int64_t> broadcast_index_map(const Shape& in, const Shape& out) {
  size_t r = out.size();
  if (in.size() > r) internal_error("broadcast_index_map: input has a larger rank");
  std::vector<int64_t> in_strides = strides_of(in);
  std::vector<int64_t> st(r, 0);  // input stride per output axis (0: broadcast)
  for (size_t i = 0; i < in.size(); ++i) {
    size_t o = i + (r - in.size());
    if (in[i] == out[o]) {
      st[o] = in_strides[i];
    } else if (in[i] != 1) {
      internal_error("broadcast_index_map: " + sem::shape_str(in) + " does not broadcast to " +
                     sem::shape_str(out));
    }
  }
  int64_t n = numel_of(out);
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(r, 0);
  int64_t offset = 0;
  for (int64_t f = 0; f < n; ++f) {
    map[static_cast<size_t>(f)] = offset;
    // Increment the multi-index (odometer), keeping the input offset in step.
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < out[k]) {
        offset += st[k];
        break;
      }
      offset -= st[k] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
  return map;
}

void unravel(int64_t flat, const Shape& s, std::vector<int64_t>& idx) {
  idx.resize(s.size());
  for (size_t i = s.size(); i-- > 0;) {
    idx[i] = s[i] ? flat % s[i] : 0;
    flat = s[i] ? flat / s[i] : 0;
  }
}

std::pair<int64_t, int64_t> int_pair(const Attrs& attrs, const std::string& name,
                                     const std::string& prim) {
  const Attr* a = attrs.find(name);
  if (!a) internal_error(prim + ": attribute " + name + " is missing");
  if (auto* one = std::get_if<int64_t>(a)) return {*one, *one};
  const auto& v = attrs.get_ints(name);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  user_error(prim + " " + name + " must be an int or a pair of ints, got " + sem::attr_str(*a));
}

// ---- register_all and the print stream ------------------------------------------------------

namespace {
std::ostream* g_print_stream = nullptr;
}

void set_print_stream(std::ostream* os) { g_print_stream = os; }
std::ostream& print_stream() { return g_print_stream ? *g_print_stream : std::cout; }

namespace {

// f16/bf16 for every computing row (semantics/low_precision.h): its reference kernel widens the
// low inputs to f32 and rounds the results once. Rows that only move values around whole
// (tuples, records, print, identities, collectives over raw bytes), cast (which converts
// itself) and the random rows (which round each double draw once, and keep uniform below high
// after rounding) keep their kernels.
void accept_low_precision(sem::Registry& r) {
  static const std::set<std::string, std::less<>> kFamilies = {
      "elementwise", "compare", "reduction", "matmul", "shape", "nn", "conv", "creation"};
  static const std::set<std::string, std::less<>> kSkip = {
      "cast", "make_tuple", "tuple_get", "make_record", "record_get", "normal", "uniform"};
  for (const Primitive* row : r.all()) {
    if (!row->eval || !kFamilies.count(row->family) || kSkip.count(row->name)) continue;
    Primitive& p = *r.find_mutable(row->name);
    p.eval = [k = p.eval](const std::vector<Value>& in, const Attrs& attrs) -> Value {
      return sem::run_widened(
          in, attrs, k, [](const Tensor& t) { return t.cast(DType::f32); },
          [](const Tensor& t, DType low) { return t.cast(low); });
    };
    p.facets[sem::kLowPrecisionFacet] = true;
  }
}

}  // namespace

void register_all() {
  static std::once_flag once;
  std::call_once(once, [] {
    sem::Registry& r = sem::Registry::instance();
    register_elementwise(r);
    register_compare(r);
    register_reduction(r);
    register_matmul(r);
    register_shape(r);
    register_nn(r);
    register_conv(r);
    register_creation(r);
    register_internal(r);
    register_tape(r);
    register_collective(r);
    register_annotation(r);
    accept_low_precision(r);
  });
}

}  // namespace spora::ops
