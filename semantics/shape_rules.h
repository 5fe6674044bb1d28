// Shape rules that the rows (ops/) and the backends and passes share, each written once:
// NumPy broadcasting, matmul's operand promotion, and the `slice` row's encoding (ops/shape.cpp:
// starts, stops, steps per indexed axis, squeeze = the integer-indexed ones; an omitted bound
// is INT64_MAX or INT64_MIN) as a strided view. The rows turn a failure into the user's error
// message; a backend kernel hands the case to the reference kernel, which reports it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "semantics/registry.h"
#include "semantics/types.h"

namespace spora::sem {

// The output length of a convolution or pooling window along one axis: input length `in`,
// window `k`, stride `s`, padding `p` on both sides, dilation `d` (0 when the window does not
// fit; a dynamic input length gives a dynamic output length).
int64_t window_out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d);

// The NumPy broadcast of two shapes; nullopt when they do not broadcast. A dynamic dim against
// a known one is assumed equal (checked at run time).
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// matmul's shapes with 1-D operands promoted: a as [batch..., m, k], b as [batch..., k, n].
struct MatmulShape {
  Shape a3, b3;  // the promoted operand shapes
  Shape batch;   // the broadcast batch shape
  int64_t m = 0, k = 0, n = 0;
  Shape out;  // the result shape (promoted axes removed)
};
// nullopt when a scalar is an operand or the shapes do not match.
std::optional<MatmulShape> matmul_shape(const Shape& a, const Shape& b);

// matmul's transpose_a / transpose_b attributes (absent: false). The row computes op(a) @ op(b)
// where op swaps a flagged operand's last two axes (MindSpore's MatMul, BLAS's transa/transb):
// reverse mode emits them instead of a transposed copy of an operand.
struct MatmulFlags {
  bool a = false, b = false;
};
MatmulFlags matmul_flags(const Attrs& attrs);
// x's shape with its last two axes swapped (x of rank 2 or more).
Shape swap_last2(Shape x);
// The shapes of op(a) @ op(b): a3 and b3 are op(a)'s and op(b)'s promoted shapes. nullopt also
// when a flagged operand has rank < 2.
std::optional<MatmulShape> matmul_shape(const Shape& a, const Shape& b, MatmulFlags t);

// The permutation transpose / permute apply to a tensor of rank `rank` (result axis i is input
// axis perm[i]): `axes` with negative axes counted from the end, or the axes reversed where it is
// none; nullopt when `axes` has another length than rank.
std::optional<std::vector<int64_t>> permutation(const Attrs& attrs, int64_t rank);

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
