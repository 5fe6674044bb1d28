// Google Benchmark: how long `spora sim-gpt`'s model (sim/transformer/gpt_sim.h) takes as the
// model and the GPU count grow, micro-batch auto (every size that divides the batch per replica
// simulated). BM_SimGptSize: the Megatron-LM SC'21 table 1 configurations (1.7B on 32 GPUs to
// 1T on 3,072) and 1T on 4,096 GPUs; BM_SimGptGpus: 39.1B (tp 8, pp 2) on 512 to 4,096 GPUs at
// 48 sequences per replica.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "sim/transformer/gpt_sim.h"

namespace {

using namespace spora::sim;
using namespace spora::sim::transformer;

struct Config {
  const char* name;
  int64_t heads, hidden, layers, tp, pp, gpus, batch;
};

// Narayanan et al., SC'21, table 1 (V = 51,200, s = 2,048), and 1T on 4,096 GPUs.
const Config kSizes[] = {
    {"1.7B/32", 24, 2304, 24, 1, 1, 32, 512},
    {"18.4B/256", 48, 6144, 40, 8, 1, 256, 1024},
    {"145.6B/1536", 96, 12288, 80, 8, 8, 1536, 2304},
    {"529.6B/2520", 128, 20480, 105, 8, 35, 2520, 2520},
    {"1T/3072", 160, 25600, 128, 8, 64, 3072, 3072},
    {"1T/4096", 160, 25600, 128, 8, 64, 4096, 4096},
};

const ClusterSpec& base() {
  static const ClusterSpec c =
      load_cluster_spec(SPORA_SOURCE_DIR "/benchmarks/sim/gpt/dgx-a100-64.yaml");
  return c;
}

void run(benchmark::State& state, const Config& c) {
  const GptModel m{c.hidden, c.layers, c.heads, 51200, 2048};
  GptParallel p;
  p.global_batch = c.batch, p.tp = c.tp, p.pp = c.pp;
  resolve_parallel(m, p, c.gpus);
  const ClusterSpec cluster = scale_cluster(base(), c.gpus);
  for (auto _ : state) {
    GptSimResult r = simulate_gpt(cluster, m, p);
    benchmark::DoNotOptimize(r);
  }
  const double step = simulate_gpt(cluster, m, p).step_seconds;
  char label[96];
  std::snprintf(label, sizeof label, "%s: simulated step %.3f s", c.name, step);
  state.SetLabel(label);
}

void BM_SimGptSize(benchmark::State& state) { run(state, kSizes[state.range(0)]); }
BENCHMARK(BM_SimGptSize)->DenseRange(0, 5)->Unit(benchmark::kMillisecond);

void BM_SimGptGpus(benchmark::State& state) {
  const int64_t gpus = state.range(0);
  const Config c{"39.1B", 64, 8192, 48, 8, 2, gpus, gpus / 16 * 48};
  run(state, c);
}
BENCHMARK(BM_SimGptGpus)->RangeMultiplier(2)->Range(512, 4096)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
