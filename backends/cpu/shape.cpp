// CPU kernels of the shape family (ops/shape.cpp): transpose permute broadcast_to slice
// slice_grad concat stack gather scatter_add one_hot, the views reshape flatten squeeze
// unsqueeze expand_dims (which share the input's storage, like the reference), and
// identity / stop_gradient. All exact and dtype-agnostic (bytes are copied); scatter_add
// adds in the reference's order per destination.
//
// Copies go through one strided-copy engine: the output's axes collapsed to the fewest
// (size-1 axes dropped, neighbours merged where the input walks them contiguously), then runs
// along the last axis: memcpy at input stride 1, a fill at stride 0, a typed gather otherwise;
// a matrix transpose (the last two axes swapped) goes in 32 x 32 tiles. Rows run in parallel.
// Invalid attributes go to the reference kernel, which raises the reference's error.
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/kernels.h"
#include "semantics/shape_rules.h"

namespace spora::cpu {

namespace {

// ---- the strided copy engine ----------------------------------------------------------------

template <size_t Size>
struct Bytes {
  uint8_t b[Size];
};

// dst[run] = src[offset + i * stride] for i < len, elements of es bytes.
void gather_run(uint8_t* dst, const uint8_t* src, int64_t offset, int64_t stride, int64_t len,
                size_t es) {
  if (stride == 1) {
    std::memcpy(dst, src + offset * es, static_cast<size_t>(len) * es);
    return;
  }
  auto typed = [&](auto tag) {
    using E = decltype(tag);
    const E* s = reinterpret_cast<const E*>(src) + offset;
    E* d = reinterpret_cast<E*>(dst);
    if (stride == 0) {  // one element repeated (a broadcast): a fill the compiler vectorises
      std::fill_n(d, len, *s);
      return;
    }
    for (int64_t i = 0; i < len; ++i) d[i] = s[i * stride];
  };
  switch (es) {
    case 1:
      return typed(uint8_t{});
    case 2:
      return typed(uint16_t{});
    case 4:
      return typed(uint32_t{});
    case 8:
      return typed(uint64_t{});
    default:
      for (int64_t i = 0; i < len; ++i)
        std::memcpy(dst + i * es, src + (offset + i * stride) * es, es);
  }
}

// dst[r, c] = src[c * lds + r] for an 8 x 8 block of 4-byte elements, in registers: eight
// rows loaded, interleaved in three rounds (pairs, quads, 128-bit halves), eight rows stored.
SPORA_ISA_AVX2 inline void transpose8x8_avx2(float* d, int64_t ldd, const float* s, int64_t lds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(d + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(d + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// The tiled transpose below for 4-byte elements with AVX2: 16 x 16 tiles of 8 x 8 register
// blocks, the ragged edges element by element. A 512 x 512 f32 transpose takes about a quarter
// of the gathering loop's time (benchmarks/results/transpose_amd_epyc.txt; power-of-two strides
// put the loop's 32 source lines in two L1 sets).
SPORA_ISA_AVX2 void transpose_tiles_f32_avx2(float* dst, const float* src, int64_t rows,
                                             int64_t cols, int64_t ld) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      int64_t r = r0;
      for (; r + 8 <= r1; r += 8) {
        int64_t c = c0;
        for (; c + 8 <= c1; c += 8)
          transpose8x8_avx2(dst + r * cols + c, cols, src + c * ld + r, ld);
        for (int64_t i = r; i < r + 8; ++i)
          for (int64_t j = c; j < c1; ++j) dst[i * cols + j] = src[j * ld + i];
      }
      for (; r < r1; ++r)
        for (int64_t j = c0; j < c1; ++j) dst[r * cols + j] = src[j * ld + r];
    }
}

// A 32 x 32-tiled transpose of rows x cols elements: dst[r, c] = src[c * ld + r].
void transpose_tiles(uint8_t* dst, const uint8_t* src, int64_t rows, int64_t cols, int64_t ld,
                     size_t es) {
  if (es == 4 && isa() != Isa::base && rows >= 8 && cols >= 8)
    return transpose_tiles_f32_avx2(reinterpret_cast<float*>(dst),
                                    reinterpret_cast<const float*>(src), rows, cols, ld);
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        gather_run(dst + (r * cols + c0) * es, src, c0 * ld + r, ld, c1 - c0, es);
    }
}

// out[o] = x[base + sum_k idx_k(o) st[k]] for the output shape (strides may be 0 or negative).
void strided_copy_into(const uint8_t* src, int64_t base, const Shape& out_shape,
                       const std::vector<int64_t>& st, uint8_t* dst, size_t es) {
  BroadcastPlan plan;
  plan.st.assign(1, {});
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 1) continue;
    if (!plan.dims.empty() && plan.st[0].back() == st[i] * out_shape[i]) {
      plan.dims.back() *= out_shape[i];
      plan.st[0].back() = st[i];
    } else {
      plan.dims.push_back(out_shape[i]);
      plan.st[0].push_back(st[i]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    plan.st[0].push_back(0);
  }
  const size_t r = plan.dims.size();
  const int64_t inner = plan.dims.back(), sin = plan.st[0].back();
  if (r >= 2 && plan.st[0][r - 2] == 1 && sin != 1 && inner > 1) {
    // The last two axes swapped: tiles of [rows, inner] per leading index.
    const int64_t rows = plan.dims[r - 2], mat = rows * inner;
    Shape lead(plan.dims.begin(), plan.dims.end() - 2);
    std::vector<int64_t> lst(plan.st[0].begin(), plan.st[0].end() - 2);
    const int64_t nlead = numel_of(lead);
    parallel_tasks(nlead, mat, [&](int64_t j) {
      int64_t off = base, rem = j;
      for (size_t d = lead.size(); d-- > 0;) {
        off += (rem % lead[d]) * lst[d];
        rem /= lead[d];
      }
      transpose_tiles(dst + j * mat * static_cast<int64_t>(es),
                      src + off * static_cast<int64_t>(es), rows, inner, sin, es);
    });
    return;
  }
  for_each_run<1>(plan, 1, [&](const int64_t* offs, int64_t pos, int64_t len) {
    gather_run(dst + pos * static_cast<int64_t>(es), src, base + offs[0], sin, len, es);
  });
}

Tensor strided_copy(const Tensor& x, const Shape& out_shape, const std::vector<int64_t>& st,
                    int64_t base) {
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  if (out.numel() == 0) return out;
  strided_copy_into(static_cast<const uint8_t*>(x.raw()), base, out_shape, st,
                    static_cast<uint8_t*>(out.raw()), dtype_size(x.dtype()));
  return out;
}

// ---- transpose / permute / broadcast_to -----------------------------------------------------

bool perm_of(const Tensor& x, const Attrs& attrs, std::vector<int64_t>& perm) {
  const int64_t r = x.rank();
  perm.clear();
  if (attrs.is_none("axes")) {
    for (int64_t i = r; i-- > 0;) perm.push_back(i);
    return true;
  }
  const auto& axes = attrs.get_ints("axes");
  if (static_cast<int64_t>(axes.size()) != r) return false;
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + r : a;
    if (n < 0 || n >= r || seen[n]) return false;
    seen[n] = true;
    perm.push_back(n);
  }
  return true;
}

Value transpose_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  std::vector<int64_t> perm;
  if (!perm_of(x, attrs, perm)) return ref(in, attrs);
  return permute_copy(x, perm);
}

bool broadcast_to_ok(const Shape& s, const Shape& shape) {
  if (s.size() > shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t d = s[i], o = shape[i + shape.size() - s.size()];
    if (d != o && d != 1) return false;
  }
  for (int64_t d : shape)
    if (d < 0) return false;
  return true;
}

Value broadcast_to_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Shape& shape = attrs.get_ints("shape");
  if (!broadcast_to_ok(x.shape(), shape)) return ref(in, attrs);
  std::vector<int64_t> in_st = strides_of(x.shape()), st(shape.size(), 0);
  size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < x.shape().size(); ++i)
    st[lead + i] = x.shape()[i] == shape[lead + i] ? in_st[i] : 0;
  return strided_copy(x, shape, st, 0);
}

// ---- views ----------------------------------------------------------------------------------

// reshape, flatten, squeeze, unsqueeze, expand_dims: x itself (shared storage) in the shape
// the row's rule gives.
CpuKernel view_kernel(const std::string& name) {
  return [infer = row_shape_rule(name)](const RefKernel& ref, const std::vector<Value>& in,
                                        const Attrs& attrs) -> Value {
    const sem::TypeP t = row_result(infer, in, attrs);
    if (!t || !t->is_tensor()) return ref(in, attrs);
    return in.at(0).tensor.reshaped(t->shape);
  };
}

Value identity_kernel(const RefKernel&, const std::vector<Value>& in, const Attrs&) {
  return in.at(0);
}

// ---- concat / stack -------------------------------------------------------------------------

// The result's shape is the row's (its rule also checks the inputs agree).
CpuKernel join_kernel(bool stack) {
  return [stack, infer = row_shape_rule(stack ? "stack" : "concat")](
             const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) -> Value {
    if (in.empty()) return ref(in, attrs);
    const sem::TypeP type = row_result(infer, in, attrs);
    if (!type || !type->is_tensor()) return ref(in, attrs);
    const Tensor& first = in[0].tensor;
    const int64_t n = first.rank() + (stack ? 1 : 0);
    const int64_t ax = attrs.get_int("axis");
    const int64_t axis = ax < 0 ? ax + n : ax;
    const Shape& out = type->shape;
    Tensor result = Tensor::empty(type->dtype, out);
    if (result.numel() == 0) return result;
    const int64_t es = static_cast<int64_t>(dtype_size(first.dtype()));
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[d];
    const int64_t row = result.numel() / outer;  // elements of one outer slice of the result
    uint8_t* dst = static_cast<uint8_t*>(result.raw());
    // Per input: its chunk of each outer slice and where that chunk starts in the row.
    std::vector<int64_t> chunk(in.size()), col(in.size());
    int64_t c = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      chunk[i] = in[i].tensor.numel() / outer;
      col[i] = c;
      c += chunk[i];
    }
    parallel_for(
        outer, row,
        [&](int64_t lo, int64_t hi) {
          for (int64_t o = lo; o < hi; ++o)
            for (size_t i = 0; i < in.size(); ++i)
              std::memcpy(dst + (o * row + col[i]) * es,
                          static_cast<const uint8_t*>(in[i].tensor.raw()) + o * chunk[i] * es,
                          static_cast<size_t>(chunk[i] * es));
        },
        1);
    return result;
  };
}

// ---- slice / slice_grad ---------------------------------------------------------------------

using sem::SlicePlan;

// The slice of a tensor of shape s (semantics/shape_rules.h); false where the reference reports an
// error.
bool plan_slice(const Shape& s, const Attrs& attrs, SlicePlan& plan) {
  plan = sem::plan_slice(s, attrs, "");
  return plan.error == SlicePlan::Error::None;
}

Value slice_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  SlicePlan plan;
  if (!plan_slice(x.shape(), attrs, plan)) return ref(in, attrs);
  return strided_copy(x, plan.out, plan.st, plan.base);
}

Value slice_grad_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& g = in.at(0).tensor;
  const Shape& shape = attrs.get_ints("shape");
  SlicePlan plan;
  for (int64_t d : shape)
    if (d < 0) return ref(in, attrs);
  if (!plan_slice(shape, attrs, plan) || plan.out != g.shape()) return ref(in, attrs);
  Tensor out = Tensor::zeros(g.dtype(), shape);
  if (g.numel() == 0) return out;
  // The slots slice reads are distinct: scatter g into them, row by row.
  const size_t es = dtype_size(g.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(g.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  BroadcastPlan bp;
  bp.dims = plan.out.empty() ? Shape{1} : plan.out;
  bp.st = {plan.out.empty() ? std::vector<int64_t>{0} : plan.st};
  const int64_t sin = bp.st[0].back();
  for_each_run<1>(bp, 1, [&](const int64_t* offs, int64_t pos, int64_t len) {
    for (int64_t i = 0; i < len; ++i)
      std::memcpy(dst + (plan.base + offs[0] + i * sin) * es, src + (pos + i) * es, es);
  });
  return out;
}

// ---- gather / scatter_add / one_hot ---------------------------------------------------------

// Indices normalised along an axis of length len, checked in order (the reference's first
// error); false when an index is out of range (the reference then raises the error).
bool read_indices(const Tensor& idx, int64_t len, std::vector<int64_t>& out) {
  out.resize(static_cast<size_t>(idx.numel()));
  for (int64_t j = 0; j < idx.numel(); ++j) {
    int64_t k = idx.dtype() == DType::i64 ? idx.data<int64_t>()[j] : idx.data<int32_t>()[j];
    int64_t n = k < 0 ? k + len : k;
    if (n < 0 || n >= len) return false;
    out[j] = n;
  }
  return true;
}

bool int_indices(const Tensor& t) { return t.dtype() == DType::i32 || t.dtype() == DType::i64; }

Value gather_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& idx = in.at(1).tensor;
  int64_t ax = attrs.get_int("axis"), r = x.rank();
  int64_t axis = ax < 0 ? ax + r : ax;
  if (!int_indices(idx) || axis < 0 || axis >= r) return ref(in, attrs);
  const int64_t len = x.shape()[axis];
  std::vector<int64_t> ks;
  if (!read_indices(idx, len, ks)) return ref(in, attrs);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape()[d];
  static const sem::ShapeRule infer = row_shape_rule("gather");  // the result's type: the row's
  const sem::TypeP type = row_result(infer, in, attrs);
  if (!type || !type->is_tensor()) return ref(in, attrs);
  Tensor out = Tensor::empty(type->dtype, type->shape);
  if (out.numel() == 0) return out;
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype())), ni = idx.numel();
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  parallel_for(
      outer * ni, inner,
      [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) {
          int64_t o = t / ni, j = t % ni;
          std::memcpy(dst + t * inner * es, src + (o * len + ks[j]) * inner * es,
                      static_cast<size_t>(inner * es));
        }
      },
      1);
  return out;
}

Value scatter_add_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& x = in.at(0).tensor;
  const Tensor& idx = in.at(1).tensor;
  const Tensor& upd = in.at(2).tensor;
  int64_t ax = attrs.get_int("axis"), r = x.rank();
  int64_t axis = ax < 0 ? ax + r : ax;
  const DType dt = x.dtype();
  bool numeric = dt == DType::f32 || dt == DType::f64 || dt == DType::i32 || dt == DType::i64;
  if (!numeric || !int_indices(idx) || axis < 0 || axis >= r || upd.dtype() != dt)
    return ref(in, attrs);
  Shape want(x.shape().begin(), x.shape().begin() + axis);
  want.insert(want.end(), idx.shape().begin(), idx.shape().end());
  want.insert(want.end(), x.shape().begin() + axis + 1, x.shape().end());
  const int64_t len = x.shape()[axis];
  std::vector<int64_t> ks;
  if (upd.shape() != want || !read_indices(idx, len, ks)) return ref(in, attrs);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape()[d];
  Tensor out = reuse_or_empty(in, {0}, dt, x.shape());
  if (out.raw() != x.raw() && x.numel() > 0) std::memcpy(out.raw(), x.raw(), x.nbytes());
  const int64_t ni = idx.numel();
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, uint8_t>) {
      T* o = out.data<T>();
      const T* u = upd.data<T>();
      // Each outer slice is its own set of destinations: slices in parallel, indices in order.
      parallel_for(
          outer, ni * inner,
          [&](int64_t lo, int64_t hi) {
            for (int64_t b = lo; b < hi; ++b)
              for (int64_t j = 0; j < ni; ++j) {
                T* d = o + (b * len + ks[j]) * inner;
                const T* s = u + (b * ni + j) * inner;
                for (int64_t i = 0; i < inner; ++i) {
                  if constexpr (kIsInt<T>) {
                    using U = std::make_unsigned_t<T>;
                    d[i] = static_cast<T>(static_cast<U>(d[i]) + static_cast<U>(s[i]));
                  } else {
                    d[i] = static_cast<T>(d[i] + s[i]);
                  }
                }
              }
          },
          1);
    }
  });
  return out;
}

Value one_hot_kernel(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs) {
  const Tensor& labels = in.at(0).tensor;
  const int64_t c = attrs.get_int("num_classes");
  const DType dt = attrs.get_dtype("dtype");
  if (!int_indices(labels) || c < 0 || dt == DType::f16 || dt == DType::bf16) return ref(in, attrs);
  std::vector<int64_t> ks(static_cast<size_t>(labels.numel()));
  for (int64_t i = 0; i < labels.numel(); ++i) {
    int64_t k =
        labels.dtype() == DType::i64 ? labels.data<int64_t>()[i] : labels.data<int32_t>()[i];
    if (k < 0 || k >= c) return ref(in, attrs);
    ks[i] = k;
  }
  static const sem::ShapeRule infer = row_shape_rule("one_hot");  // the result's type: the row's
  const sem::TypeP type = row_result(infer, in, attrs);
  if (!type || !type->is_tensor() || type->dtype != dt) return ref(in, attrs);
  Tensor out = Tensor::empty(dt, type->shape);
  dispatch(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T one = from_double<T>(1.0);
    parallel_for(
        labels.numel(), c,
        [&](int64_t lo, int64_t hi) {
          std::fill(o + lo * c, o + hi * c, T(0));
          for (int64_t i = lo; i < hi; ++i) o[i * c + ks[i]] = one;
        },
        1);
  });
  return out;
}

}  // namespace

Tensor permute_copy(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> in_st = strides_of(x.shape());
  Shape out;
  std::vector<int64_t> st;
  for (int64_t a : perm) {
    out.push_back(x.shape()[a]);
    st.push_back(in_st[a]);
  }
  return strided_copy(x, out, st, 0);
}

void register_shape() {
  set_kernel("transpose", transpose_kernel);
  set_kernel("permute", transpose_kernel);
  set_kernel("broadcast_to", broadcast_to_kernel);
  for (const char* name : {"reshape", "flatten", "squeeze", "unsqueeze", "expand_dims"})
    set_kernel(name, view_kernel(name));
  set_kernel("identity", identity_kernel);
  set_kernel("stop_gradient", identity_kernel);
  set_kernel("shard_hint", identity_kernel);  // ops/annotation.cpp: identities on values
  set_kernel("stage_boundary", identity_kernel);
  set_kernel("concat", join_kernel(false));
  set_kernel("stack", join_kernel(true));
  set_kernel("slice", slice_kernel);
  set_kernel("slice_grad", slice_grad_kernel);
  set_kernel("gather", gather_kernel);
  set_kernel("scatter_add", scatter_add_kernel);
  set_kernel("one_hot", one_hot_kernel);
}

}  // namespace spora::cpu
