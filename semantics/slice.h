// The slice encoding of the `slice` row (ops/shape.cpp: starts, stops, steps per indexed axis,
// squeeze = the integer-indexed ones; an omitted bound is INT64_MAX or INT64_MIN) turned into
// offsets: one definition for the shape rule and reference kernel, the CPU kernel and the
// fusion planner.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "semantics/registry.h"
#include "semantics/types.h"

namespace spora::sem {

// Python's PySlice_AdjustIndices for one axis of length len: (start, count).
std::pair<int64_t, int64_t> adjust_slice(int64_t start, int64_t stop, int64_t step, int64_t len);

// A slice as a strided view: result axis i reads input offset base + k * st[i].
struct SlicePlan {
  Shape out;                // result shape (a dynamic input dim gives a dynamic result dim)
  std::vector<int64_t> st;  // input stride per result axis
  int64_t base = 0;         // flat offset of the first element
  enum class Error { None, User, Internal } error = Error::None;
  std::string message;  // the error's message, e.g. "slice step cannot be zero"
};

// The slice of a tensor of shape s (type_str names it in messages, e.g. "f32[3,4]").
SlicePlan plan_slice(const Shape& s, const Attrs& attrs, const std::string& type_str);

}  // namespace spora::sem
