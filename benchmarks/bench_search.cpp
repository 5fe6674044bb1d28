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
// Arguments: L = log2(devices). BM_DpTransformer24Uncapped is dp without its candidate cap
// (SearchOptions::dp_max_candidates = 0): at L = 12 (91 candidates) the cap bites.
//
// And real training steps, as `spora search --algo dp --top 1` prices them (the cluster's
// search_device_model, the program's batch): BM_DpStep/<model>_<mesh> on the W4 block
// (benchmarks/sim/w4_block.sp, dgx-a100) and the GPT block (benchmarks/sim/gpt/gpt_block.sp,
// dgx-a100-64, adam) on 2-D and 3-D meshes. The step's cost graph is built once, outside the
// timed loop (graph_build_ms); counters: nodes, the most candidates a node has
// (max_candidates), dp's peak bytes (search_MB), the process's peak resident set so far
// (peak_rss_MB, getrusage: it includes the program and everything before), the predicted step
// (step_us) and whether dp's result is exact.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <string>
#include <vector>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/search/cost_graph.h"
#include "parallel/search/from_ir.h"
#include "parallel/search/generators.h"
#include "parallel/search/rec.h"
#include "sim/cluster_spec.h"
#include "sim/step_program.h"
#include "tools/cmd_search.h"

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

void BM_DpTransformer24Uncapped(benchmark::State& state) {
  const search::CostGraph g = search::transformer_graph(1, 24, candidates(state.range(0)));
  search::SearchOptions o;
  o.dp_max_candidates = 0;
  search::SearchResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = search::search_dp(g, o));
  set_labels(state);
  state.counters["exact"] = r.exact;
  state.counters["search_MB"] = static_cast<double>(r.search_bytes) / 1e6;
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
  state.counters["exact"] = r.exact;
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

void BM_DpStep(benchmark::State& state, const std::string& file, const std::string& cluster_file,
               const std::string& mesh_text, const std::string& optimizer) {
  spora::ops::register_all();
  static bool installed = false;
  if (!installed) spora::autodiff::install(), installed = true;
  const auto start = std::chrono::steady_clock::now();
  const spora::sim::ClusterSpec cluster =
      spora::sim::load_cluster_spec(SPORA_SOURCE_DIR "/" + cluster_file);
  const spora::parallel::Mesh mesh = spora::parallel::Mesh::parse(mesh_text);
  spora::parallel::StepOptions so;
  so.optimizer = optimizer;
  const spora::sim::StepProgram program =
      spora::sim::build_step_program(SPORA_SOURCE_DIR "/" + file, so);
  std::vector<std::string> names;
  int states = 0;
  for (const spora::sim::StepParam& p : program.params) {
    names.push_back(p.name);
    states = p.state_tensors;
  }
  const search::StepCostGraph g = search::build_step_cost_graph(
      *program.step, names, static_cast<int>(program.params.size()), states, mesh,
      spora::tools::search_device_model(cluster, mesh, optimizer));
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  search::SearchOptions o;
  o.memory_limit = cluster.device.memory_bytes > 0 ? cluster.device.memory_bytes
                                                   : search::kNoMemoryLimit;
  search::SearchResult r;
  for (auto _ : state) benchmark::DoNotOptimize(r = search::search_dp(g.graph, o));
  int most = 0;
  for (const search::CostGraph::Node& n : g.graph.nodes)
    most = std::max(most, static_cast<int>(n.cost.size()));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  state.counters["graph_build_ms"] = build_ms;
  state.counters["nodes"] = static_cast<double>(g.graph.nodes.size());
  state.counters["max_candidates"] = most;
  state.counters["search_MB"] = static_cast<double>(r.search_bytes) / 1e6;
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1e3;  // kB on Linux
  state.counters["step_us"] = r.top.empty() ? 0 : r.top[0].cost * 1e6;
  state.counters["exact"] = r.exact;
}

}  // namespace

const std::string kW4 = "benchmarks/sim/w4_block.sp", kDgx = "examples/clusters/dgx-a100.yaml";
const std::string kGpt = "benchmarks/sim/gpt/gpt_block.sp",
                  kDgx64 = "benchmarks/sim/gpt/dgx-a100-64.yaml";
BENCHMARK_CAPTURE(BM_DpStep, w4_2x2, kW4, kDgx, "2x2", "sgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DpStep, w4_2x4, kW4, kDgx, "2x4", "sgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DpStep, w4_2x2x2, kW4, kDgx, "2x2x2", "sgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DpStep, gpt_2x4, kGpt, kDgx64, "2x4", "adam")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DpStep, gpt_4x2, kGpt, kDgx64, "4x2", "adam")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DpStep, gpt_2x2x2, kGpt, kDgx64, "2x2x2", "adam")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpTransformer24Uncapped)->DenseRange(12, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PropagateTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DpSmall)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExhaustiveSmall)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecTransformer24)->DenseRange(3, 12, 3)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
