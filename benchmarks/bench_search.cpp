// Strategy search time as the device count grows (issue 9, "exhaustive vs DP vs recursive").
//
// The candidate count of an operator grows with log2(devices): an operator with three
// splittable dimensions has (L+1)(L+2)/2 ways to spread 2^L devices over them (8 devices: 10,
// 64: 28, 512: 55, 4096: 91). The cost graphs are random-cost stand-ins of that size:
//   - a 24-layer transformer (12 operators a layer, 290 nodes, series-parallel) for dp and
//     propagate;
//   - a 6-operator series-parallel graph for exhaustive vs dp (exhaustive stops after 5e7
//     search-tree nodes; the counters say whether it finished);
//   - rec works on shapes, not candidate lists: the same 24-layer transformer as a RecGraph
//     (batch 64, sequence 2048, hidden 4096) over 2^L devices.
// Arguments: L = log2(devices).
#include <benchmark/benchmark.h>

#include "parallel/search/cost_graph.h"
#include "parallel/search/generators.h"
#include "parallel/search/rec.h"

namespace search = spora::parallel::search;

namespace {

int candidates(int64_t log2_devices) {
  return static_cast<int>((log2_devices + 1) * (log2_devices + 2) / 2);
}

void set_labels(benchmark::State& state) {
  state.counters["devices"] = static_cast<double>(int64_t{1} << state.range(0));
  state.counters["candidates"] = candidates(state.range(0));
}

void BM_DpTransformer24(benchmark::State& state) {
  const search::CostGraph g = search::transformer_graph(1, 24, candidates(state.range(0)));
  search::SearchResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = search::search_dp(g, {}));
  set_labels(state);
  state.counters["exact"] = r.exact;
  state.counters["nodes"] = static_cast<double>(g.nodes.size());
  state.counters["search_MB"] = static_cast<double>(r.search_bytes) / 1e6;  // dp's peak tables
}

void BM_PropagateTransformer24(benchmark::State& state) {
  const search::CostGraph g = search::transformer_graph(1, 24, candidates(state.range(0)));
  search::SearchOptions o;
  o.fixed = {{0, 0}};
  for (auto _ : state) benchmark::DoNotOptimize(search::search_propagate(g, o));
  set_labels(state);
}

void BM_DpSmall(benchmark::State& state) {
  const search::CostGraph g = search::random_series_parallel(
      3, 6, {candidates(state.range(0)), candidates(state.range(0))});
  search::SearchResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = search::search_dp(g, {}));
  set_labels(state);
  state.counters["search_MB"] = static_cast<double>(r.search_bytes) / 1e6;
}

void BM_ExhaustiveSmall(benchmark::State& state) {
  const search::CostGraph g = search::random_series_parallel(
      3, 6, {candidates(state.range(0)), candidates(state.range(0))});
  search::SearchOptions o;
  o.max_visits = 50'000'000;
  search::SearchResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = search::search_exhaustive(g, o));
  set_labels(state);
  state.counters["visits"] = static_cast<double>(r.work);
  state.counters["complete"] = r.complete;
}

void BM_RecTransformer24(benchmark::State& state) {
  const search::RecGraph g = search::transformer_rec_graph(24, 64, 2048, 4096);
  search::RecOptions o;
  o.devices = int64_t{1} << state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(search::search_rec(g, o));
  set_labels(state);
}

}  // namespace

BENCHMARK(BM_DpTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PropagateTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpSmall)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExhaustiveSmall)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
