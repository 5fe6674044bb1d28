#include "semantics/shape_rules.h"

#include <algorithm>
#include <limits>

namespace spora::sem {

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
}  // namespace

int64_t window_out_dim(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  if (in == kDynamicDim) return kDynamicDim;
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else if (da == kDynamicDim)
      out[i] = db;
    else if (db == kDynamicDim)
      out[i] = da;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<MatmulShape> matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) return std::nullopt;
  MatmulShape s;
  s.a3 = a;
  s.b3 = b;
  if (a.size() == 1) s.a3.insert(s.a3.begin(), 1);
  if (b.size() == 1) s.b3.push_back(1);
  s.m = s.a3[s.a3.size() - 2];
  s.k = s.a3.back();
  s.n = s.b3.back();
  const int64_t kb = s.b3[s.b3.size() - 2];
  if (s.k != kb && s.k != kDynamicDim && kb != kDynamicDim) return std::nullopt;
  if (s.k == kDynamicDim) s.k = kb;
  const Shape ba(s.a3.begin(), s.a3.end() - 2), bb(s.b3.begin(), s.b3.end() - 2);
  std::optional<Shape> batch = broadcast_shapes(ba, bb);
  if (!batch) return std::nullopt;
  s.batch = *batch;
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.m);
  if (b.size() > 1) s.out.push_back(s.n);
  return s;
}

MatmulFlags matmul_flags(const Attrs& attrs) {
  auto flag = [&](const char* name) { return attrs.has(name) && attrs.get_bool(name); };
  return {flag("transpose_a"), flag("transpose_b")};
}

std::optional<std::vector<int64_t>> permutation(const Attrs& attrs, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  if (attrs.is_none("axes")) {
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
    return perm;
  }
  const std::vector<int64_t>& axes = attrs.get_ints("axes");
  if (static_cast<int64_t>(axes.size()) != rank) return std::nullopt;
  for (int64_t i = 0; i < rank; ++i)
    perm[static_cast<size_t>(i)] = axes[static_cast<size_t>(i)] < 0
                                       ? axes[static_cast<size_t>(i)] + rank
                                       : axes[static_cast<size_t>(i)];
  return perm;
}

Shape swap_last2(Shape x) {
  std::swap(x[x.size() - 1], x[x.size() - 2]);
  return x;
}

std::optional<MatmulShape> matmul_shape(const Shape& a, const Shape& b, MatmulFlags t) {
  if ((t.a && a.size() < 2) || (t.b && b.size() < 2)) return std::nullopt;
  return matmul_shape(t.a ? swap_last2(a) : a, t.b ? swap_last2(b) : b);
}

std::pair<int64_t, int64_t> adjust_slice(int64_t start, int64_t stop, int64_t step, int64_t len) {
  const bool omit_start = start == kMax || start == kMin;
  const bool omit_stop = stop == kMax || stop == kMin;
  if (omit_start)
    start = step > 0 ? 0 : len - 1;
  else if (start < 0)
    start = std::max<int64_t>(start + len, step < 0 ? -1 : 0);
  else if (start >= len)
    start = step < 0 ? len - 1 : len;
  if (omit_stop)
    stop = step > 0 ? len : -1;
  else if (stop < 0)
    stop = std::max<int64_t>(stop + len, step < 0 ? -1 : 0);
  else if (stop >= len)
    stop = step < 0 ? len - 1 : len;
  int64_t count = 0;
  if (step < 0) {
    if (stop < start) count = (start - stop - 1) / (-step) + 1;
  } else if (start < stop) {
    count = (stop - start - 1) / step + 1;
  }
  return {count ? start : 0, count};
}

SlicePlan plan_slice(const Shape& s, const Attrs& attrs, const std::string& type_str) {
  const auto& starts = attrs.get_ints("starts");
  const auto& stops = attrs.get_ints("stops");
  const auto& steps = attrs.get_ints("steps");
  const auto& squeeze = attrs.get_ints("squeeze");
  SlicePlan plan;
  auto fail = [&](SlicePlan::Error e, std::string message) {
    plan.error = e;
    plan.message = std::move(message);
    return plan;
  };
  const int64_t rank = static_cast<int64_t>(s.size());
  if (static_cast<int64_t>(starts.size()) > rank)
    return fail(SlicePlan::Error::User,
                "too many indices for " + type_str + ": " + std::to_string(starts.size()));
  for (int64_t q : squeeze)
    if (q < 0 || q >= static_cast<int64_t>(starts.size()))
      return fail(SlicePlan::Error::Internal,
                  "slice: squeezed axis " + std::to_string(q) + " has no index");
  const std::vector<int64_t> in_st = row_major_strides(s);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t len = s[static_cast<size_t>(i)];
    const size_t ui = static_cast<size_t>(i);
    if (ui >= starts.size()) {
      plan.out.push_back(len);
      plan.st.push_back(in_st[ui]);
      continue;
    }
    if (std::find(squeeze.begin(), squeeze.end(), i) != squeeze.end()) {
      const int64_t idx = starts[ui];
      if (len == kDynamicDim) continue;
      const int64_t n = idx < 0 ? idx + len : idx;
      if (n < 0 || n >= len)
        return fail(SlicePlan::Error::User, "index " + std::to_string(idx) +
                                                " is out of range for axis " + std::to_string(i) +
                                                " of size " + std::to_string(len));
      plan.base += n * in_st[ui];
      continue;
    }
    const int64_t step = ui < steps.size() ? steps[ui] : 1;
    const int64_t stop = ui < stops.size() ? stops[ui] : kMax;
    if (step == 0) return fail(SlicePlan::Error::User, "slice step cannot be zero");
    if (len == kDynamicDim) {
      plan.out.push_back(kDynamicDim);
      plan.st.push_back(0);
      continue;
    }
    const auto [start, count] = adjust_slice(starts[ui], stop, step, len);
    plan.out.push_back(count);
    plan.st.push_back(in_st[ui] * step);
    plan.base += start * in_st[ui];
  }
  return plan;
}

}  // namespace spora::sem
