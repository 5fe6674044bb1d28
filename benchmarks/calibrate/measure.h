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
// The kernel takes its inputs from copies of them that together fill twice the core's private
// caches (L1 and L2: private_cache_bytes), one copy after another, so that its operands come
// from the shared cache or memory, as an op's do in a training step, where the ops between its
// inputs' producers and itself have evicted them (a few small inputs stay cached, there too).
Measured measure(const Case& c, double budget = 0.02);
// The largest data cache of level 1 or 2 of the first CPU (sysfs; 2 MiB where unknown).
size_t private_cache_bytes();

sem::Attrs attrs_of(std::initializer_list<std::pair<const char*, sem::Attr>> items);

// The interpreter's time per node: a chain of 2,000 scalar adds run as a graph (dispatch, the
// value bookkeeping and a tiny add kernel).
double interpreter_overhead();

}  // namespace spora::calibrate
