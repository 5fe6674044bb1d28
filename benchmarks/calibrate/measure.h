// Timing one kernel of our CPU backend: the primitive's kernel (sem::kernel_for, Backend::Cpu)
// on given inputs, and its cost facet (semantics/cost.h), so that a measured time and the FLOPs and
// bytes the simulator will charge for the same application sit side by side.
//
//   Measured m = measure({"matmul", {f32({64, 512}), f32({512, 10})}, {}});
//   m.cost.flops / m.seconds            // FLOP/s of that GEMM
//
// Every time is the median of repeated calls after one warm-up call (time_it).
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "semantics/cost.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::calibrate {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);
double median(std::vector<double> v);

// The median time of f() over repetitions adding up to about `budget` seconds (3 to 2000).
double time_it(const std::function<void()>& f, double budget = 0.02);

// Floats uniform in [-1, 1]; bools a random mask (kernels that branch pay for it as in
// training); integers zero (valid indices and labels).
sem::Tensor random_tensor(DType dtype, sem::Shape shape, std::mt19937& rng);

// One primitive application.
struct Case {
  std::string prim;
  std::vector<sem::Value> inputs;
  sem::Attrs attrs;
};

struct Measured {
  double seconds = 0;
  sem::OpCost cost;
};

// Runs the CPU kernel of c (the row's attribute defaults filled in) and evaluates its cost rule.
// The kernel takes its inputs in turn from copies of them (copies_for) so that, between two uses
// of one copy, the others touched about `distance` bytes (their reuse distance, sim/reuse.h):
// 0 takes the same inputs every call, from the core's own caches; the default, twice the core's
// private caches (L1 and L2: private_cache_bytes), has them come from the shared cache or memory,
// as an op's do in a training step after the ops between its inputs' producers and itself.
Measured measure(const Case& c, double budget = 0.02, double distance = -1);
// The copies of inputs of `input_bytes` that put them at reuse distance `distance` (< 0: twice
// the private caches): distance / input_bytes rounded, 1 to kMaxCopies.
size_t copies_for(double distance, size_t input_bytes);
constexpr size_t kMaxCopies = 8192;
// The largest data cache of level 1 or 2 of the first CPU (sysfs, else the C library's
// _SC_LEVEL2_CACHE_SIZE, which reads CPUID; 2 MiB where neither knows).
size_t private_cache_bytes();
// The largest cache of the first CPU in sysfs (the last level: an L3 shared by its cores); 0
// where sysfs has no cache folders (virtual machines often have none, and CPUID's answer there
// is not to be trusted: one reports 256 MiB of L3).
size_t last_level_cache_bytes();

sem::Attrs attrs_of(std::initializer_list<std::pair<const char*, sem::Attr>> items);

// The interpreter's time per node: a chain of 2,000 scalar adds run as a graph (dispatch, the
// value bookkeeping and a tiny add kernel).
double interpreter_overhead();

}  // namespace spora::calibrate
