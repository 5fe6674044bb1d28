// `spora calibrate --measure share` under `mpirun -np K`: ranks taking turns on the cores
// (calibrate.h). Every rank loops over
//
//   compute: n matmuls f32 [64, 64] x [64, 64] (the CPU kernel a step's matmul runs)
//   sync:    the all_reduce primitive over all K ranks (ops/collective.cpp, as `spora train-step
//            --strategy` runs it) of `bytes`
//
// for n in kGrains (0: collectives back to back), each for at least kIterations loops and
// kSeconds. Rank 0 prints, per (n, bytes):
//
//   share <K> <n> <bytes> <compute s per loop> <loop s>
//
// <loop s> is the mean loop over the timed loops, the largest over the ranks (they synchronise
// every loop); <compute s per loop> is rank 0's mean wall time in the compute part. With K = the
// cores, each rank has a core and the compute part is the grain as one rank per core takes it;
// the parent (machine_model.cpp) runs K = cores and K = devices and makes the spec's
// `measured.oversubscribed` table from the two.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/comm/mpi_comm.h"
#include "benchmarks/calibrate/calibrate.h"
#include "benchmarks/calibrate/measure.h"
#include "lang/diagnostics.h"

namespace spora::calibrate {

namespace {

constexpr int kIterations = 20;
constexpr double kSeconds = 0.4;

void wait_all(comm::Communicator& world, std::vector<comm::Request> rs) {
  while (!rs.empty()) {
    const std::vector<std::size_t> done = world.wait_some(rs);
    std::vector<comm::Request> left;
    for (std::size_t i = 0; i < rs.size(); ++i)
      if (std::find(done.begin(), done.end(), i) == done.end()) left.push_back(rs[i]);
    rs = left;
  }
}

// The largest of every rank's v, on every rank (through rank 0).
double max_over_ranks(comm::Communicator& world, double v, int tag) {
  const std::size_t n = sizeof(double);
  if (world.rank() != 0) {
    wait_all(world, {world.isend(&v, n, 0, tag)});
    wait_all(world, {world.irecv(&v, n, 0, tag + 1)});
    return v;
  }
  for (int k = 1; k < world.size(); ++k) {
    double theirs = 0;
    wait_all(world, {world.irecv(&theirs, n, k, tag)});
    v = std::max(v, theirs);
  }
  for (int k = 1; k < world.size(); ++k) wait_all(world, {world.isend(&v, n, k, tag + 1)});
  return v;
}

struct Loop {
  double compute = 0, total = 0;
};

Loop run_loop(comm::Communicator& world, int n, int64_t bytes, int iterations) {
  const sem::Registry& reg = sem::Registry::instance();
  const sem::RefKernel& matmul = sem::kernel_for(*reg.find("matmul"));
  const sem::RefKernel& all_reduce = sem::kernel_for(*reg.find("all_reduce"));
  const sem::Tensor a = sem::Tensor::full(DType::f32, {64, 64}, 0.5);
  const sem::Tensor x = sem::Tensor::full(DType::f32, {bytes / 4 / 16, 16}, 1.0);
  sem::Attrs attrs;
  attrs.set("mesh", std::vector<int64_t>{world.size()});
  attrs.set("axes", std::vector<int64_t>{0});
  const sem::Attrs none;
  auto once = [&](double& compute) {
    const auto c0 = Clock::now();
    for (int i = 0; i < n; ++i) (void)matmul({sem::Value(a), sem::Value(a)}, none);
    compute += seconds_since(c0);
    (void)all_reduce({sem::Value(x)}, attrs);
  };
  double ignored = 0;
  for (int i = 0; i < 3; ++i) once(ignored);  // warm-up
  world.barrier();
  Loop l;
  const auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) once(l.compute);
  l.total = seconds_since(t0) / iterations;
  l.compute /= iterations;
  return l;
}

}  // namespace

int measure_share() {
  comm::MpiWorld mpi;
  const auto& world = mpi.world;
  if (world->size() < 2) throw lang::UserError("calibrate --measure share needs 2 or more ranks");
  comm::CollectiveScope scope(world.get(), {world->size()});
  for (const auto& [n, bytes] : share_cases()) {
    // A short probe sizes the timed run; every rank takes the largest count (they must agree).
    const Loop probe = run_loop(*world, n, bytes, 3);
    const double wanted = std::max<double>(kIterations, kSeconds / std::max(probe.total, 1e-6));
    const int iterations = static_cast<int>(max_over_ranks(*world, wanted, 9000));
    const Loop l = run_loop(*world, n, bytes, iterations);
    const double total = max_over_ranks(*world, l.total, 9002);
    if (world->rank() == 0)
      std::printf("share %d %d %lld %.9g %.9g\n", world->size(), n, static_cast<long long>(bytes),
                  l.compute, total);
  }
  return 0;
}

}  // namespace spora::calibrate
