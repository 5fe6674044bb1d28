// Shared machinery of the CPU kernels (kernels.h).
#include "backends/cpu/kernels.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "backends/cpu/half.h"
#include "semantics/low_precision.h"
#include "semantics/shape_rules.h"

namespace spora::cpu {

void set_kernel(const std::string& name, CpuKernel k) {
  Primitive* p = sem::Registry::instance().find_mutable(name);
  if (!p || !p->eval)
    internal_error("cpu kernel for '" + name + "', which has no reference kernel");
  RefKernel ref = p->eval;
  // Rows that take f16/bf16 by widening to f32 (semantics/low_precision.h) do so here too.
  if (p->facet<bool>(sem::kLowPrecisionFacet)) k = with_low_precision(std::move(k));
  p->facets[sem::kCpuKernelFacet] =
      RefKernel([ref, k](const std::vector<Value>& in, const Attrs& attrs) -> Value {
        return k(ref, in, attrs);
      });
}

const sem::ShapeRule& row_shape_rule(const std::string& name) {
  const Primitive* p = sem::Registry::instance().find(name);
  if (!p || !p->infer) internal_error("cpu kernel for '" + name + "', which has no shape rule");
  return p->infer;
}

sem::TypeP row_result(const sem::ShapeRule& infer, const std::vector<Value>& in,
                      const Attrs& attrs) {
  std::vector<sem::TypeP> types;
  for (const Value& v : in) {
    if (!v.is_tensor()) return nullptr;
    types.push_back(v.tensor.type());
  }
  try {
    return infer(types, attrs);
  } catch (const lang::UserError&) {
    return nullptr;
  }
}

namespace {

Isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
  return Isa::base;
}

const Isa g_best = detect_isa();
std::atomic<Isa> g_isa{g_best};

}  // namespace

Isa isa() { return g_isa.load(std::memory_order_relaxed); }

Isa force_isa(Isa want) {
  if (static_cast<int>(want) > static_cast<int>(g_best)) want = g_best;
  return g_isa.exchange(want);
}

int max_threads() { return omp_get_max_threads(); }

namespace {

// SPORA_CPU_LOAD_ADAPTIVE=0: every parallel loop uses max_threads() (tests of thread counts).
std::atomic<bool> g_load_adaptive{[] {
  const char* env = std::getenv("SPORA_CPU_LOAD_ADAPTIVE");
  return !(env && std::string(env) == "0");
}()};

// One read of /proc/loadavg ("0.52 0.58 0.59 3/412 1234"), else of getloadavg (no running
// count).
LoadRead read_load() {
  LoadRead r;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    double load5, load15;
    int total;
    r.ok = std::fscanf(f, "%lf %lf %lf %d/%d", &r.load1, &load5, &load15, &r.running, &total) == 5;
    std::fclose(f);
    if (r.ok) return r;
  }
  double load[1];
  r = LoadRead{};
  if (getloadavg(load, 1) == 1) r = LoadRead{load[0], 0, true};
  return r;
}

bool oversubscribed() { return oversubscribed_from(omp_get_num_procs(), read_load); }

}  // namespace

void set_load_adaptive(bool on) { g_load_adaptive.store(on); }

bool oversubscribed_from(double procs, const std::function<LoadRead()>& read) {
  for (int k = 0; k < 4; ++k) {
    if (k > 0) {
      const timespec pause{0, 100000};  // 100 us
      nanosleep(&pause, nullptr);
    }
    const LoadRead r = read();
    if (!r.ok) return false;
    if (r.load1 >= procs + 1.0) return true;
    if (!(r.running > procs)) return false;
  }
  return true;
}

bool machine_oversubscribed() { return oversubscribed(); }

int team_size() {
  if (!g_load_adaptive.load(std::memory_order_relaxed)) return max_threads();
  static std::atomic<int64_t> next_check{0};
  static std::atomic<bool> busy{false};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now >= next_check.load(std::memory_order_relaxed)) {
    next_check.store(now + 500, std::memory_order_relaxed);
    busy.store(oversubscribed(), std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed) ? 1 : max_threads();
}

namespace {
std::atomic<int64_t> g_parallel_work{[] {
  const char* env = std::getenv("SPORA_CPU_PARALLEL_WORK");
  return env ? std::max<int64_t>(1, std::atoll(env)) : int64_t{1} << 19;
}()};
}  // namespace

int64_t parallel_work() { return g_parallel_work.load(std::memory_order_relaxed); }
int64_t set_parallel_work(int64_t work) {
  return g_parallel_work.exchange(std::max<int64_t>(1, work));
}

Tensor reuse_or_empty(const std::vector<Value>& in, std::initializer_list<size_t> candidates,
                      DType dtype, const Shape& shape) {
  for (size_t i : candidates) {
    if (i >= in.size() || !in[i].is_tensor()) continue;
    const Tensor& t = in[i].tensor;
    if (t.dtype() == dtype && t.shape() == shape && t.unique()) return t;
  }
  return Tensor::empty(dtype, shape);
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> strides_of(const Shape& s) { return sem::row_major_strides(s); }

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  std::optional<Shape> s = sem::broadcast_shapes(a, b);
  if (s) out = std::move(*s);
  return s.has_value();
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Tensor& t, bool extra) {
  int64_t n = rank + (extra ? 1 : 0);
  int64_t a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n)
    user_error("axis " + std::to_string(axis) + " is out of range for " + t.type()->str());
  return a;
}

BroadcastPlan plan_broadcast(const std::vector<const Shape*>& ins, const Shape& out) {
  const size_t r = out.size(), k = ins.size();
  // Strides of every operand along every output axis (0 where broadcast).
  std::vector<std::vector<int64_t>> full(k, std::vector<int64_t>(r, 0));
  for (size_t j = 0; j < k; ++j) {
    const Shape& s = *ins[j];
    std::vector<int64_t> st = strides_of(s);
    for (size_t i = 0; i < s.size(); ++i) {
      size_t o = i + (r - s.size());
      if (s[i] == out[o] && s[i] != 1) full[j][o] = st[i];
    }
  }
  BroadcastPlan plan;
  plan.st.assign(k, {});
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    bool merge = !plan.dims.empty();
    for (size_t j = 0; merge && j < k; ++j) merge = plan.st[j].back() == full[j][i] * out[i];
    if (merge) {
      // The previous axis and this one walk every operand contiguously: one axis.
      plan.dims.back() *= out[i];
      for (size_t j = 0; j < k; ++j) plan.st[j].back() = full[j][i];
    } else {
      plan.dims.push_back(out[i]);
      for (size_t j = 0; j < k; ++j) plan.st[j].push_back(full[j][i]);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (size_t j = 0; j < k; ++j) plan.st[j].push_back(0);
  }
  return plan;
}

}  // namespace spora::cpu
