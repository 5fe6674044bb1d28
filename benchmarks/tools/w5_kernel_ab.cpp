// A/B timing of two compiled W5 kernels (the .so files bench_workloads leaves in
// $SPORA_CACHE_DIR, e.g. one built by main and one by a branch): both are loaded into one
// process and called alternately on the workload's 4M floats (16 MB in, 16 MB out), so the
// machine's drift (30% from minute to minute here) hits both alike. Reports each one's
// minimum, and the median and minimum of the per-round ratios A / B.
//
//   g++ -std=c++20 -O2 benchmarks/tools/w5_kernel_ab.cpp -o /tmp/w5kab -ldl
//   /tmp/w5kab A.so B.so [threads] [rounds]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using Kernel = int (*)(const void* const*, void* const*, int);

// The kernel's entry: the one exported symbol spora_k<hash>, found through `nm -D`.
static Kernel load(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    std::exit(1);
  }
  const std::string cmd =
      std::string("nm -D --defined-only ") + path + " | grep -o 'spora_k[0-9a-f]*$'";
  FILE* p = popen(cmd.c_str(), "r");
  char name[128] = {0};
  if (!p || !std::fgets(name, sizeof name, p)) {
    std::fprintf(stderr, "no spora_k symbol in %s\n", path);
    std::exit(1);
  }
  pclose(p);
  name[std::strcspn(name, "\n")] = 0;
  auto k = reinterpret_cast<Kernel>(dlsym(h, name));
  if (!k) {
    std::fprintf(stderr, "cannot find %s in %s\n", name, path);
    std::exit(1);
  }
  return k;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s A.so B.so [threads] [rounds]\n", argv[0]);
    return 2;
  }
  const Kernel a = load(argv[1]), b = load(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 30;
  const size_t n = 4194304;
  std::vector<float> in(n), oa(n), ob(n);
  for (size_t i = 0; i < n; ++i) in[i] = -6.0f + 12.0f * static_cast<float>(i % 100003) / 100003.0f;
  auto run = [&](Kernel k, std::vector<float>& out) {
    const void* ins[] = {in.data()};
    void* outs[] = {out.data()};
    const auto t0 = std::chrono::steady_clock::now();
    k(ins, outs, threads);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  run(a, oa);
  run(b, ob);
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, double(std::abs(oa[i] - ob[i])));
  double amin = 1e30, bmin = 1e30;
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    double ta = 1e30, tb = 1e30;
    for (int i = 0; i < 3; ++i) {
      ta = std::min(ta, run(a, oa));
      tb = std::min(tb, run(b, ob));
    }
    amin = std::min(amin, ta);
    bmin = std::min(bmin, tb);
    ratios.push_back(ta / tb);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "%d thread(s), %d rounds: A min %.3f ms, B min %.3f ms, A/B of minima %.3f, per round: "
      "median %.3f, min %.3f (max |A - B| %.2g)\n",
      threads, rounds, amin, bmin, amin / bmin, ratios[ratios.size() / 2], ratios.front(), worst);
}
