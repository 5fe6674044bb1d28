// Google Benchmark suite for the collective algorithms, over threads or over MPI.
//
//   build/bin/bench_collectives                                   # 4 rank threads
//   SPORA_BENCH_RANKS=8 build/bin/bench_collectives --benchmark_filter=all-reduce
//   mpirun --oversubscribe --allow-run-as-root -np 4 build/bin/bench_collectives
//
// Every benchmark is one (collective, algorithm, size), sizes 1 KB .. 64 MB of f32 in
// nccl-tests' convention (the buffer for all-reduce/broadcast/reduce, all blocks for the
// others). Per call it reports, as counters:
//   busbw_GBps / algbw_GBps   nccl-tests' bus and algorithm bandwidth
//   native_busbw_GBps         the backend's own collective (MPI_Allreduce, ... or the
//                             shared-memory one over threads), same size, same run
//   vs_native                 busbw / native busbw
//   mem_bw_GBps               the machine's memory bandwidth: SPORA_MEM_BW_GBPS (e.g. the
//                             STREAM triad that bench_workloads' Limit/Triad reports) or, by
//                             default, a STREAM copy measured at start-up on all cores
//   wrong                     wrong output elements after the timed calls (must be 0)
// Time is the slowest rank's average per call. Under MPI every rank runs every benchmark
// with a fixed iteration count (they are collective) and only rank 0 reports.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/comm/executor.h"
#include "backends/comm/mpi_comm.h"
#include "backends/comm/threads.h"
#include "backends/comm/verify.h"
#include "parallel/collectives/algorithms.h"

namespace {

using namespace spora;
using comm::Communicator;
using comm::DType;
using parallel::Algorithm;
using parallel::Collective;

struct Case {
  Collective collective;
  Algorithm algorithm;
  int chunks = 1;
};

const std::vector<Case> kCases = {
    {Collective::AllReduce, Algorithm::Native},
    {Collective::AllReduce, Algorithm::Ring},
    {Collective::AllReduce, Algorithm::Ring, 4},
    {Collective::AllReduce, Algorithm::Tree, 8},
    {Collective::AllReduce, Algorithm::Binomial},
    {Collective::AllReduce, Algorithm::HalvingDoubling},
    {Collective::AllReduce, Algorithm::Hierarchical},
    {Collective::ReduceScatter, Algorithm::Native},
    {Collective::ReduceScatter, Algorithm::Ring},
    {Collective::AllGather, Algorithm::Native},
    {Collective::AllGather, Algorithm::Ring},
    {Collective::AllGather, Algorithm::RecursiveDoubling},
    {Collective::AllGather, Algorithm::Bruck},
    {Collective::Broadcast, Algorithm::Native},
    {Collective::Broadcast, Algorithm::Tree, 8},
    {Collective::Broadcast, Algorithm::Binomial},
    {Collective::Reduce, Algorithm::Native},
    {Collective::Reduce, Algorithm::Tree, 8},
    {Collective::Reduce, Algorithm::Binomial},
    {Collective::Gather, Algorithm::Native},
    {Collective::Gather, Algorithm::Binomial},
    {Collective::Scatter, Algorithm::Native},
    {Collective::Scatter, Algorithm::Binomial},
    {Collective::AllToAll, Algorithm::Native},
    {Collective::AllToAll, Algorithm::Pairwise},
    {Collective::AllToAll, Algorithm::Bruck},
    {Collective::AllToAll, Algorithm::RecursiveDoubling},
};

constexpr DType kType = DType::F32;

// The world the benchmarks run in: a pool of rank threads, or this process's MPI rank.
struct World {
  std::unique_ptr<comm::ThreadWorld> threads;
  std::unique_ptr<Communicator> mpi;
  int ranks = 1;
  bool is_reporter = true;
  std::string backend;

  // Runs body on every rank; returns rank 0's result (bodies agree through collectives).
  template <typename Body>
  auto run(Body body) {
    using R = decltype(body(std::declval<Communicator&>()));
    if (mpi) return body(*mpi);
    std::vector<R> results(ranks);
    threads->run([&](Communicator& c) { results[c.rank()] = body(c); });
    return results[0];
  }
};

World* g_world = nullptr;
double g_mem_bw = 0;
std::map<std::pair<Collective, std::int64_t>, double> g_native_busbw;

template <typename T>
T all_reduce(Communicator& c, T value, parallel::ReduceOp op, DType t) {
  T out{};
  c.native({Collective::AllReduce, op, t, 1, 0, &value, &out});
  return out;
}

// STREAM copy (16 bytes per double element moved) on all hardware threads, best of 5.
double measure_memory_bandwidth() {
  if (const char* env = std::getenv("SPORA_MEM_BW_GBPS")) return std::atof(env);
  const std::size_t n = std::size_t{16} << 20;  // 128 MiB per array
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> a(n, 1.0), c(n, 0.0);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w)
      pool.emplace_back([&, w] {
        const std::size_t lo = n * w / workers, hi = n * (w + 1) / workers;
        for (std::size_t i = lo; i < hi; ++i) c[i] = a[i];
      });
    for (auto& t : pool) t.join();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  benchmark::DoNotOptimize(c.data());
  return 16.0 * n / best / 1e9;
}

double bus_factor(Collective c, int p) {
  if (c == Collective::AllReduce) return 2.0 * (p - 1) / p;
  if (c == Collective::Broadcast || c == Collective::Reduce) return 1.0;
  return (p - 1.0) / p;
}

struct Measurement {
  double seconds = 0;  // per call, slowest rank
  std::int64_t wrong = 0;
};

// Times `iters` calls after one warm-up call.
Measurement measure(const Case& k, std::int64_t bytes, int iters) {
  const int p = g_world->ranks;
  const bool per_buffer = k.collective == Collective::AllReduce ||
                          k.collective == Collective::Broadcast ||
                          k.collective == Collective::Reduce;
  const std::int64_t count = bytes / 4 / (per_buffer ? 1 : p);
  const parallel::CollectiveSpec spec{k.collective, parallel::ReduceOp::Sum, p, count, 0};
  std::optional<parallel::Schedule> schedule;
  if (k.algorithm != Algorithm::Native)
    schedule = parallel::build_schedule(k.algorithm, spec, {k.chunks, 0});
  return g_world->run([&](Communicator& c) {
    const int r = c.rank();
    std::vector<float> in(comm::input_count(spec, r)), out(comm::output_count(spec, r), -1.0f);
    comm::fill_input(spec, r, kType, in.data());
    std::optional<comm::Executor> ex;
    if (schedule) ex.emplace(*schedule, c, kType);
    auto once = [&] {
      if (ex)
        ex->run(in.data(), out.data());
      else
        c.native({k.collective, spec.op, kType, count, 0, in.data(), out.data()});
    };
    once();
    c.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) once();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
    Measurement m;
    m.seconds = all_reduce(c, s, parallel::ReduceOp::Max, DType::F64);
    m.wrong = all_reduce<std::int64_t>(c, comm::count_wrong(spec, r, kType, out.data()),
                                       parallel::ReduceOp::Sum, DType::I64);
    return m;
  });
}

int iterations_for(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>(
      (std::int64_t{256} << 20) / std::max<std::int64_t>(bytes, 1), 3, 200));
}

void register_benchmarks() {
  for (const Case& k : kCases)
    for (std::int64_t bytes = 1024; bytes <= (std::int64_t{64} << 20); bytes *= 4) {
      std::string name = g_world->backend + "/" +
                         std::string(parallel::collective_name(k.collective)) + "/" +
                         std::string(parallel::algorithm_name(k.algorithm));
      if (k.chunks > 1) name += "/chunks:" + std::to_string(k.chunks);
      name += "/bytes:" + std::to_string(bytes);
      const int iters = iterations_for(bytes);
      benchmark::RegisterBenchmark(
          name.c_str(),
          [k, bytes, iters](benchmark::State& state) {
            const Measurement m = measure(k, bytes, iters);
            for (auto _ : state) state.SetIterationTime(m.seconds);
            const double algbw = m.seconds > 0 ? bytes / m.seconds / 1e9 : 0;
            const double busbw = algbw * bus_factor(k.collective, g_world->ranks);
            const auto key = std::pair(k.collective, bytes);
            if (k.algorithm == Algorithm::Native) g_native_busbw[key] = busbw;
            if (!g_native_busbw.count(key)) {
              const Measurement native = measure({k.collective, Algorithm::Native}, bytes, iters);
              g_native_busbw[key] =
                  bytes / native.seconds / 1e9 * bus_factor(k.collective, g_world->ranks);
            }
            state.counters["busbw_GBps"] = busbw;
            state.counters["algbw_GBps"] = algbw;
            state.counters["native_busbw_GBps"] = g_native_busbw[key];
            state.counters["vs_native"] = g_native_busbw[key] > 0 ? busbw / g_native_busbw[key] : 0;
            state.counters["mem_bw_GBps"] = g_mem_bw;
            state.counters["wrong"] = static_cast<double>(m.wrong);
            if (m.wrong) state.SkipWithError("wrong results");
          })
          ->UseManualTime()
          ->Iterations(iters)
          ->Unit(benchmark::kMicrosecond);
    }
}

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  World world;
  const bool under_mpi = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
  if (under_mpi) {
    comm::mpi_initialize(&argc, &argv);
    world.mpi = comm::make_mpi_communicator();
    world.ranks = world.mpi->size();
    world.is_reporter = world.mpi->rank() == 0;
    world.backend = "mpi" + std::to_string(world.ranks);
  } else {
    const char* env = std::getenv("SPORA_BENCH_RANKS");
    world.ranks = env ? std::max(1, std::atoi(env)) : 4;
    world.threads = std::make_unique<comm::ThreadWorld>(world.ranks);
    world.backend = "threads" + std::to_string(world.ranks);
  }
  g_world = &world;
  // Memory bandwidth: measured once (by rank 0 alone under MPI), shared with every rank.
  g_mem_bw = world.run([](Communicator& c) {
    double bw = c.rank() == 0 ? measure_memory_bandwidth() : 0;
    return all_reduce(c, bw, parallel::ReduceOp::Max, DType::F64);
  });
  benchmark::Initialize(&argc, argv);
  register_benchmarks();
  benchmark::AddCustomContext("backend", world.backend);
  benchmark::AddCustomContext("memory_bandwidth_GBps", std::to_string(g_mem_bw));
  if (world.is_reporter) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  world.mpi.reset();
  if (under_mpi) comm::mpi_finalize();
  return 0;
}
