// `spora calibrate --measure mpi` under `mpirun -np K` (K >= 2): the communication side of the
// machine model (calibrate.h). Rank 0 prints lines for the parent process (machine_model.cpp):
//
//   scalar mpi_latency <s>                  K = 2: half the round trip of 8-byte ping-pongs
//   scalar mpi_pingpong_bandwidth <B/s>     K = 2: 1 MiB ping-pongs (recorded, not used)
//   coll <primitive> <bytes> <s> <K>        the primitive as `spora run --strategy` runs it over
//                                           the K ranks, each call after 2 ms of computation
//   coll_b2b <primitive> <bytes> <s> <K>    the same calls back to back (the spec's <primitive>_b2b
//                                           rows, for collectives with no computation between)
//
// The collectives: the all_reduce, reduce_scatter and all_gather primitives (ops/collective.cpp:
// their piece copies, the ring schedule over MPI, the result tensor) on f32 [64, n] tensors of
// 512 B to 4 MiB (the whole tensor; an all_gather's input is 1/K of it), split along dimension 1:
// strided pieces, copied through a staging buffer. `reduce_scatter_contiguous` and
// `all_gather_contiguous` are the same primitives on [n, 64] tensors split along dimension 0, as
// ZeRO-1 splits parameters: each piece is a block of the tensor and nothing is staged. Each call
// comes after 2 ms of computation on every rank that sweeps 32 MiB (more than this machine's
// caches) and then multiplies matrices, as a training step's kernels do between two collectives:
// the transport's buffers and the executor's code and data are evicted, which costs far more than
// calls back to back. The cost of a call is the time from the last rank's start to the last rank's
// end (the earlier ranks' wait is rank skew, not the collective's cost); the median over 40 calls.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/comm/mpi_comm.h"
#include "benchmarks/calibrate/calibrate.h"
#include "benchmarks/calibrate/measure.h"
#include "lang/diagnostics.h"

namespace spora::calibrate {

namespace {

constexpr double kGap = 2e-3;
constexpr std::size_t kGapBytes = std::size_t{32} << 20;

void wait_all(comm::Communicator& world, std::vector<comm::Request> rs) {
  while (!rs.empty()) {
    const std::vector<std::size_t> done = world.wait_some(rs);
    std::vector<comm::Request> left;
    for (std::size_t i = 0; i < rs.size(); ++i)
      if (std::find(done.begin(), done.end(), i) == done.end()) left.push_back(rs[i]);
    rs = left;
  }
}

// Half a round trip of `bytes` between ranks 0 and 1, the median of `reps`.
double ping_pong(comm::Communicator& world, std::size_t bytes, int reps) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  const int peer = 1 - world.rank();
  std::vector<double> times;
  for (int i = 0; i < reps + 3; ++i) {
    world.barrier();
    const auto t0 = Clock::now();
    if (world.rank() == 0) {
      wait_all(world, {world.isend(a.data(), bytes, peer, i)});
      wait_all(world, {world.irecv(b.data(), bytes, peer, i)});
    } else {
      wait_all(world, {world.irecv(b.data(), bytes, peer, i)});
      wait_all(world, {world.isend(a.data(), bytes, peer, i)});
    }
    if (i >= 3) times.push_back(seconds_since(t0) / 2);
  }
  return median(times);
}

// Rank 0's table: "<prefix> <primitive> <bytes>" -> seconds.
void measure_primitives(comm::Communicator& world) {
  const sem::Registry& reg = sem::Registry::instance();
  const int64_t ranks = world.size();
  comm::CollectiveScope scope(&world, {ranks});
  const sem::Tensor a = sem::Tensor::full(DType::f32, {64, 256}, 0.5);
  const sem::Tensor b = sem::Tensor::full(DType::f32, {256, 256}, 0.25);
  std::vector<float> sweep(kGapBytes / sizeof(float), 0.0f);
  const sem::RefKernel& matmul = sem::kernel_for(*reg.find("matmul"));
  const sem::Attrs none;
  for (const std::string name : {"all_reduce", "reduce_scatter", "all_gather",
                                 "reduce_scatter_contiguous", "all_gather_contiguous"}) {
    const std::string_view suffix = "_contiguous";
    const bool contiguous = name.ends_with(suffix);
    const std::string prim = contiguous ? name.substr(0, name.size() - suffix.size()) : name;
    const sem::RefKernel& k = sem::kernel_for(*reg.find(prim));
    sem::Attrs attrs;
    attrs.set("mesh", std::vector<int64_t>{ranks});
    if (prim == "all_reduce") {
      attrs.set("axes", std::vector<int64_t>{0});
    } else {
      attrs.set("dim", int64_t{contiguous ? 0 : 1});
      attrs.set("axis", int64_t{0});
    }
    for (const int64_t bytes : {int64_t{512}, int64_t{4} << 10, int64_t{32} << 10,
                                int64_t{256} << 10, int64_t{1} << 20, int64_t{4} << 20}) {
      const int64_t cols = bytes / 4 / 64;  // the full tensor is [64, cols]
      if (cols % ranks != 0) continue;
      const int64_t split = prim == "all_gather" ? cols / ranks : cols;
      const sem::Tensor x = contiguous ? sem::Tensor::full(DType::f32, {split, 64}, 1.0)
                                       : sem::Tensor::full(DType::f32, {64, split}, 1.0);
      for (const bool gap : {true, false}) {
        const int calls = 40;
        std::vector<double> mine(2 * calls);  // starts, then ends
        world.barrier();
        for (int i = 0; i < calls + 3; ++i) {
          if (gap) {
            const auto g0 = Clock::now();
            for (float& f : sweep) f += 1.0f;
            while (seconds_since(g0) < kGap) matmul({sem::Value(a), sem::Value(b)}, none);
          }
          const auto t0 = Clock::now();
          k({sem::Value(x)}, attrs);
          if (i >= 3) {
            mine[i - 3] = std::chrono::duration<double>(t0.time_since_epoch()).count();
            mine[calls + i - 3] =
                std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
          }
        }
        // steady_clock is one clock for the processes of a machine.
        const std::size_t n = mine.size() * sizeof(double);
        if (world.rank() != 0) {
          wait_all(world, {world.isend(mine.data(), n, 0, 7000)});
          continue;
        }
        std::vector<double> last = mine;  // per call: the last start, then the last end
        for (int from = 1; from < world.size(); ++from) {
          std::vector<double> theirs(2 * calls);
          wait_all(world, {world.irecv(theirs.data(), n, from, 7000)});
          for (std::size_t i = 0; i < last.size(); ++i) last[i] = std::max(last[i], theirs[i]);
        }
        std::vector<double> cost;
        for (int i = 0; i < calls; ++i) cost.push_back(last[calls + i] - last[i]);
        std::printf("%s %s %lld %.9g %lld\n", gap ? "coll" : "coll_b2b", name.c_str(),
                    static_cast<long long>(bytes), median(cost), static_cast<long long>(ranks));
      }
    }
  }
}

}  // namespace

int measure_mpi() {
  comm::MpiWorld mpi;
  const auto& world = mpi.world;
  if (world->size() < 2) throw lang::UserError("calibrate --measure mpi needs at least 2 ranks");
  if (world->size() > 2) {
    measure_primitives(*world);
    return 0;
  }
  const double latency = ping_pong(*world, 8, 2000);
  const double one_mib = ping_pong(*world, std::size_t{1} << 20, 60);
  measure_primitives(*world);
  if (world->rank() == 0) {
    std::printf("scalar mpi_latency %.9g\n", latency);
    std::printf("scalar mpi_pingpong_bandwidth %.9g\n",
                (1 << 20) / std::max(one_mib - latency, 1e-9));
  }
  return 0;
}

}  // namespace spora::calibrate
