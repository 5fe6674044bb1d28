// The vectorised inner loops of the elementwise kernels (elementwise.cpp, compare.cpp) and
// their drivers over a BroadcastPlan.
//
// An op is a struct with `static T f(T)` (unary) or `static U f(T, T)` (binary), inlined into
// each compiled instruction-set version of the loops. Loops carry `#pragma omp simd`: an
// output may be the very buffer of an input (in-place reuse), which is safe because element i
// is written after element i is read and never read again.
#pragma once

#include "backends/cpu/kernels.h"

namespace spora::cpu {

SPORA_MULTIVERSION((template <class Op, class T, class U>), map_unary, (<Op, T, U>),
                   (const T* a, U* o, int64_t n), (a, o, n),
                   { _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i]); })

SPORA_MULTIVERSION((template <class Op, class T, class U>), map_vv, (<Op, T, U>),
                   (const T* a, const T* b, U* o, int64_t n), (a, b, o, n), {
                     _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i], b[i]);
                   })

SPORA_MULTIVERSION((template <class Op, class T, class U>), map_vs, (<Op, T, U>),
                   (const T* a, T b, U* o, int64_t n), (a, b, o, n),
                   { _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i], b); })

SPORA_MULTIVERSION((template <class Op, class T, class U>), map_sv, (<Op, T, U>),
                   (T a, const T* b, U* o, int64_t n), (a, b, o, n),
                   { _Pragma("omp simd") for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a, b[i]); })

// o[i] = Op::f(a[i]) over n elements, in parallel chunks. An op with an f32 array form for
// AVX-512 (`Op::map_f32_avx512(x, y, n)`, vmath's table functions) uses it on that path.
template <class Op, class T, class U>
void unary_apply(const T* a, U* o, int64_t n, int64_t cost) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float> &&
                requires { Op::map_f32_avx512(a, o, n); }) {
    if (isa() == Isa::avx512) {
      parallel_for(n, cost, [&](int64_t b, int64_t e) { Op::map_f32_avx512(a + b, o + b, e - b); });
      return;
    }
  }
  parallel_for(n, cost, [&](int64_t b, int64_t e) { map_unary<Op, T, U>(a + b, o + b, e - b); });
}

// o = Op::f(a, b) over a broadcast plan of (a, b).
template <class Op, class T, class U>
void binary_apply(const BroadcastPlan& plan, const T* a, const T* b, U* o, int64_t cost) {
  const bool va = plan.st[0].back() != 0, vb = plan.st[1].back() != 0;
  for_each_run<2>(plan, cost, [&](const int64_t* offs, int64_t pos, int64_t len) {
    const T* pa = a + offs[0];
    const T* pb = b + offs[1];
    U* po = o + pos;
    if (va && vb)
      map_vv<Op, T, U>(pa, pb, po, len);
    else if (va)
      map_vs<Op, T, U>(pa, *pb, po, len);
    else if (vb)
      map_sv<Op, T, U>(*pa, pb, po, len);
    else
      std::fill(po, po + len, Op::f(*pa, *pb));
  });
}

}  // namespace spora::cpu
