// Shared machinery of the CPU kernels (backends/cpu/*.cpp): registration, OpenMP work
// splitting with a size threshold, instruction-set dispatch of the hot loops, output
// allocation with in-place reuse, and NumPy broadcasting reduced to the fewest axes.
//
// Every kernel has the reference kernel's signature (sem::RefKernel) and semantics; for
// dtypes or cases it does not handle itself it calls the row's reference kernel (`ref`).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::cpu {

using sem::Attrs;
using sem::Primitive;
using sem::RefKernel;
using sem::Shape;
using sem::Tensor;
using sem::Value;

// ---- registration ---------------------------------------------------------------------------

// A CPU kernel: like a RefKernel, plus the row's reference kernel for fallbacks.
using CpuKernel =
    std::function<Value(const RefKernel& ref, const std::vector<Value>& in, const Attrs& attrs)>;
// Installs `k` as the "kernel.cpu" facet of row `name` (internal error if there is no row).
void set_kernel(const std::string& name, CpuKernel k);
// The shape rule of row `name`, and the result type it gives these inputs: what a kernel
// allocates, asked of the row instead of derived again. Null where the rule rejects them (the
// kernel then hands the case to the reference kernel, which reports it).
const sem::ShapeRule& row_shape_rule(const std::string& name);
sem::TypeP row_result(const sem::ShapeRule& infer, const std::vector<Value>& in,
                      const Attrs& attrs);

// The per-family registrations register_kernels() calls (one per backends/cpu/*.cpp).
void register_elementwise();
void register_compare();
void register_reduction();
void register_matmul();
void register_nn();
void register_conv();
void register_shape();
void register_creation();

[[noreturn]] inline void user_error(const std::string& m) { throw lang::UserError(m); }
[[noreturn]] inline void internal_error(const std::string& m) { throw lang::InternalError(m); }

// ---- instruction sets -----------------------------------------------------------------------

// The hot loops are compiled three times (plain x86-64, AVX2+FMA, AVX-512) and picked at run
// time from the CPU's features: results are deterministic on one machine; FMA contraction may
// make the last bit of a transcendental differ between machines.
enum class Isa { base, avx2, avx512 };
Isa isa();
// Tests: run the following kernels through another compiled path (clamped to what the CPU
// supports); returns the previous one.
Isa force_isa(Isa want);

#define SPORA_ISA_AVX2 __attribute__((target("avx2,fma")))
#define SPORA_ISA_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")))
#define SPORA_INLINE inline __attribute__((always_inline))

// Defines NAME_base, NAME_avx2 and NAME_avx512 from one body (TEMPLATE: `(template <...>)`
// or `()`), and NAME dispatching between them. PARAMS and ARGS are parenthesised lists.
#define SPORA_STRIP_(...) __VA_ARGS__
#define SPORA_STRIP(x) SPORA_STRIP_ x
#define SPORA_MULTIVERSION(TEMPLATE, NAME, TARGS, PARAMS, ARGS, ...)              \
  SPORA_STRIP(TEMPLATE) void NAME##_base PARAMS __VA_ARGS__ SPORA_STRIP(TEMPLATE) \
  SPORA_ISA_AVX2 void NAME##_avx2 PARAMS __VA_ARGS__ SPORA_STRIP(TEMPLATE)        \
  SPORA_ISA_AVX512 void NAME##_avx512 PARAMS __VA_ARGS__ SPORA_STRIP(             \
      TEMPLATE) inline void NAME PARAMS {                                         \
    switch (::spora::cpu::isa()) {                                                \
      case ::spora::cpu::Isa::avx512:                                             \
        return NAME##_avx512 SPORA_STRIP(TARGS) ARGS;                             \
      case ::spora::cpu::Isa::avx2:                                               \
        return NAME##_avx2 SPORA_STRIP(TARGS) ARGS;                               \
      default:                                                                    \
        return NAME##_base SPORA_STRIP(TARGS) ARGS;                               \
    }                                                                             \
  }

// ---- threads --------------------------------------------------------------------------------

// Work (elements x relative cost; 1 = a float add, about 0.3 ns) below which a loop runs on
// the calling thread: 512K by default, about 150 us of one thread. Starting and joining the
// OpenMP team costs a few microseconds on an idle machine; where the cores are shared with other
// busy processes a parallel region costs milliseconds (a thread of the team waits for its time
// slice, and the barrier waits for it), and team_size() then runs every loop on one thread.
// SPORA_CPU_PARALLEL_WORK overrides it (read once).
int64_t parallel_work();
// Tests: another threshold (to run the parallel paths on small inputs); returns the previous.
int64_t set_parallel_work(int64_t work);

int max_threads();
// The number of threads a parallel loop uses now: max_threads(), or 1 while other processes
// want the processors (more tasks runnable than processors, or a 1-minute load average of
// processors + 1): a thread of the team would then wait for a time slice, 4 ms, and the whole
// loop with it, so a parallel region costs milliseconds instead of microseconds. Sampled at
// most twice a second. Results never depend on it.
int team_size();
// Whether other processes want the processors now (team_size's test, read afresh).
bool machine_oversubscribed();
// One read of the machine's load: the 1-minute load average and the tasks runnable at that
// instant (/proc/loadavg); ok is false where neither could be read.
struct LoadRead {
  double load1 = 0;
  int running = 0;
  bool ok = false;
};
// team_size's test on reads of the load: a 1-minute load average of processors + 1, or more
// tasks runnable than processors (this thread and a spinning team member are two of them) in
// four reads 100 us apart. The runnable count is an instant: a task that runs for microseconds
// (a kernel worker, the reader of a pipe) lands in one read now and then, and one read alone
// would make the next half second single-threaded.
bool oversubscribed_from(double procs, const std::function<LoadRead()>& read);
// Tests: whether team_size() follows the load (true) or is always max_threads(). The
// environment's SPORA_CPU_LOAD_ADAPTIVE=0 starts it off.
void set_load_adaptive(bool on);

// Runs body(begin, end) over [0, n), split into one contiguous chunk per OpenMP thread (chunk
// bounds multiples of `align`, never more threads than chunks) when n * cost reaches
// `threshold`, else on the calling thread.
// The split never changes results: bodies write disjoint outputs. An exception thrown by a
// body is rethrown on the calling thread.
template <class F>
void parallel_for_from(int64_t threshold, int64_t n, int64_t cost, F&& body, int64_t align = 16) {
  if (n <= 0) return;
  int nt = n * cost < threshold || omp_in_parallel() ? 1 : team_size();
  // No more threads than chunks: a thread without one would only wake and wait at the barrier
  // (a product of one block, a loop of one aligned chunk).
  nt = static_cast<int>(std::min<int64_t>(nt, (n + align - 1) / align));
  if (nt <= 1) {
    body(int64_t{0}, n);
    return;
  }
  int64_t chunk = (n + nt - 1) / nt;
  chunk = (chunk + align - 1) / align * align;
  nt = static_cast<int>((n + chunk - 1) / chunk);  // the chunks' rounding can leave one empty
  std::exception_ptr error;
#pragma omp parallel num_threads(nt)
  {
    int64_t t = omp_get_thread_num();
    int64_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) {
      try {
        body(b, e);
      } catch (...) {
#pragma omp critical(spora_cpu_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// parallel_for_from with parallel_work() as the threshold.
template <class F>
void parallel_for(int64_t n, int64_t cost, F&& body, int64_t align = 16) {
  parallel_for_from(parallel_work(), n, cost, std::forward<F>(body), align);
}

// Runs body(i) for each task i in [0, n) in parallel (dynamic schedule: tasks of uneven size;
// never more threads than tasks) when total work n * cost reaches parallel_work().
template <class F>
void parallel_tasks(int64_t n, int64_t cost, F&& body) {
  if (n <= 0) return;
  const int nt = n <= 1 || n * cost < parallel_work() || omp_in_parallel()
                     ? 1
                     : static_cast<int>(std::min<int64_t>(team_size(), n));
  if (nt <= 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int64_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(spora_cpu_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// ---- outputs --------------------------------------------------------------------------------

// The output tensor of an elementwise kernel: the storage of input `in[i]` (the first of
// `candidates` that is a tensor of this dtype and shape and is uniquely owned: the caller gave
// it up, so the kernel may overwrite it), else a new tensor. Element i of the output is only
// written after element i of every input was read.
Tensor reuse_or_empty(const std::vector<Value>& in, std::initializer_list<size_t> candidates,
                      DType dtype, const Shape& shape);

// ---- dtypes ---------------------------------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};
// Calls f(Tag<T>{}) for f32 f64 i32 i64 and bool (uint8_t); returns false for f16/bf16 (the
// caller falls back to the reference kernel).
template <class F>
bool dispatch(DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(Tag<float>{});
      return true;
    case DType::f64:
      f(Tag<double>{});
      return true;
    case DType::i32:
      f(Tag<int32_t>{});
      return true;
    case DType::i64:
      f(Tag<int64_t>{});
      return true;
    case DType::boolean:
      f(Tag<uint8_t>{});
      return true;
    default:
      return false;
  }
}

template <class T>
constexpr bool kIsInt = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

// A double stored into an element of T exactly as sem::Tensor::set does (float rounding;
// integers truncated toward zero with nan as 0 and out-of-range values clamped; bool v != 0).
template <class T>
SPORA_INLINE T from_double(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return v != 0.0 ? 1 : 0;
  } else {
    if (v != v) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double hi = sizeof(T) == 4 ? 2147483647.0 : 9223372036854774784.0;
    v = v < lo ? lo : (v > hi ? hi : v);
    return static_cast<T>(v);  // truncates toward zero
  }
}
// An element as double, as sem::Tensor::get does.
template <class T>
SPORA_INLINE double to_double(T v) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return v ? 1.0 : 0.0;
  else
    return static_cast<double>(v);
}

// x converted to dtype `to` exactly as sem::Tensor::cast does (compare.cpp); x itself when it
// already has that dtype.
Tensor cast_tensor(const Tensor& x, DType to);

// x with its axes permuted (result axis i is input axis perm[i]), a new contiguous tensor
// (shape.cpp).
Tensor permute_copy(const Tensor& x, const std::vector<int64_t>& perm);

// ---- shapes ---------------------------------------------------------------------------------

int64_t numel_of(const Shape& s);
std::vector<int64_t> strides_of(const Shape& s);
// NumPy broadcast of two shapes; false when they do not broadcast.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);
// A possibly negative axis of a rank-r tensor, or the reference's user error.
int64_t normalize_axis(int64_t axis, int64_t rank, const Tensor& t, bool extra = false);

// Operands broadcast over an output, with the output's axes reduced to the fewest: size-1
// axes dropped and neighbours merged where every operand is contiguous across them. The last
// axis (`inner`) is walked by the inner loops; an operand's stride there is 0 or 1.
struct BroadcastPlan {
  Shape dims;                            // collapsed output dims, at least one
  std::vector<std::vector<int64_t>> st;  // per operand, its stride along each collapsed dim
  int64_t inner() const { return dims.back(); }
};
BroadcastPlan plan_broadcast(const std::vector<const Shape*>& ins, const Shape& out);

// Visits the output elements [0, n) of a plan in parallel runs along the inner axis:
// seg(offsets, pos, len) with offsets[k] the element offset of operand k at output element
// pos, and len elements to do (all on one inner row).
template <size_t K, class Seg>
void for_each_run(const BroadcastPlan& plan, int64_t cost, Seg&& seg) {
  const int64_t n = numel_of(plan.dims), inner = plan.inner();
  const size_t r = plan.dims.size();
  parallel_for(n, cost, [&](int64_t b, int64_t e) {
    // Unravel the row of element b over the outer dims.
    std::vector<int64_t> idx(r, 0);
    int64_t offs[K] = {};
    int64_t row = b / inner, col = b % inner;
    for (size_t d = r - 1; d-- > 0;) {
      idx[d] = row % plan.dims[d];
      row /= plan.dims[d];
      for (size_t k = 0; k < K; ++k) offs[k] += idx[d] * plan.st[k][d];
    }
    int64_t pos = b;
    while (pos < e) {
      int64_t len = std::min(inner - col, e - pos);
      int64_t o[K];
      for (size_t k = 0; k < K; ++k) o[k] = offs[k] + col * plan.st[k][r - 1];
      seg(o, pos, len);
      pos += len;
      col = 0;
      for (size_t d = r - 1; d-- > 0;) {  // next row (odometer over the outer dims)
        for (size_t k = 0; k < K; ++k) offs[k] += plan.st[k][d];
        if (++idx[d] < plan.dims[d]) break;
        for (size_t k = 0; k < K; ++k) offs[k] -= plan.st[k][d] * plan.dims[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace spora::cpu
