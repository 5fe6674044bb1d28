// A/B timing of two versions of backends/cpu/vmath.h on W5's chain, gelu(x * 1.5 + 0.25) *
// 0.75 + tanh(x), and on gelu and tanh alone: single thread, 4096 floats (L1-resident), the
// loops as the fused kernel's (`#pragma omp simd`, -O3 -march=native). The two versions run
// alternately in one process (this machine's speed drifts by 30% from minute to minute), and
// the report gives each one's minimum and the minimum and median of the per-round ratios.
//
//   git show main:backends/cpu/vmath.h > /tmp/vmath_a.h
//   g++ -std=c++20 -O3 -march=native -fopenmp-simd -I. -DVMATH_A='"/tmp/vmath_a.h"'
//       -DVMATH_B='"backends/cpu/vmath.h"' benchmarks/tools/w5_vmath_ab.cpp -o /tmp/w5ab
//       (one line)
//   /tmp/w5ab [rounds]
//
// It also checks that both are within the backend's tolerance of the double-precision formula.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/kernels.h"  // before the namespaces: the headers' own includes are no-ops

namespace va {
#include VMATH_A
}
namespace vb {
#include VMATH_B
}

namespace {

#define W5_KERNELS(ns)                                                                           \
  __attribute__((noinline)) void ns##_chain(const float* __restrict in, float* __restrict out,   \
                                            long n) {                                            \
    _Pragma("omp simd") for (long j = 0; j < n; ++j) {                                           \
      const float v = in[j];                                                                     \
      out[j] = ns::spora::cpu::vm::gelu(v * 1.5f + 0.25f) * 0.75f + ns::spora::cpu::vm::tanh(v); \
    }                                                                                            \
  }                                                                                              \
  __attribute__((noinline)) void ns##_gelu(const float* __restrict in, float* __restrict out,    \
                                           long n) {                                             \
    _Pragma("omp simd") for (long j = 0; j < n; ++j) out[j] =                                    \
        ns::spora::cpu::vm::gelu(in[j] * 1.5f + 0.25f);                                          \
  }                                                                                              \
  __attribute__((noinline)) void ns##_tanh(const float* __restrict in, float* __restrict out,    \
                                           long n) {                                             \
    _Pragma("omp simd") for (long j = 0; j < n; ++j) out[j] = ns::spora::cpu::vm::tanh(in[j]);   \
  }

W5_KERNELS(va)
W5_KERNELS(vb)

using Kernel = void (*)(const float*, float*, long);

// ns per element, best of `reps` timings of 50 calls.
double time_ns(Kernel k, const float* in, float* out, long n, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i) k(in, out, n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, t / (50.0 * static_cast<double>(n)) * 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  const long n = 4096;
  std::vector<float> in(n), oa(n), ob(n);
  std::mt19937 g(1);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (float& v : in) v = d(g);
  struct Pair {
    const char* name;
    Kernel a, b;
  } pairs[] = {
      {"chain", va_chain, vb_chain}, {"gelu", va_gelu, vb_gelu}, {"tanh", va_tanh, vb_tanh}};
  auto gelu_ref = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  auto ref = [&](int which, double x) {
    return which == 0   ? gelu_ref(x * 1.5 + 0.25) * 0.75 + std::tanh(x)
           : which == 1 ? gelu_ref(x * 1.5 + 0.25)
                        : std::tanh(x);
  };
  for (int w = 0; w < 3; ++w) {
    const Pair& p = pairs[w];
    p.a(in.data(), oa.data(), n);
    p.b(in.data(), ob.data(), n);
    for (long j = 0; j < n; ++j) {
      const double want = ref(w, in[j]), tol = 1e-6 + 1e-5 * std::abs(want);
      if (std::abs(oa[j] - want) > tol || std::abs(ob[j] - want) > tol) {
        std::printf("%s at x = %g: A %g, B %g, want %g\n", p.name, in[j], oa[j], ob[j], want);
        return 1;
      }
    }
  }
  std::printf("ns/element, single thread, %ld floats, %d alternating rounds\n", n, rounds);
  for (const Pair& p : pairs) {
    double amin = 1e30, bmin = 1e30;
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) {
      const double ta = time_ns(p.a, in.data(), oa.data(), n, 5);
      const double tb = time_ns(p.b, in.data(), ob.data(), n, 5);
      amin = std::min(amin, ta);
      bmin = std::min(bmin, tb);
      ratios.push_back(ta / tb);
    }
    std::sort(ratios.begin(), ratios.end());
    std::printf("%-6s A %.3f  B %.3f  A/B of minima %.3f, per round: median %.3f, min %.3f\n",
                p.name, amin, bmin, amin / bmin, ratios[ratios.size() / 2], ratios.front());
  }
}
