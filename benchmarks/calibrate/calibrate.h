// `spora calibrate`: a machine model of this computer from microbenchmarks only, written as a
// cluster spec (sim/cluster_spec.h) whose `device.measured` tables the simulator's cost model
// interpolates (sim/measured_tables.h). No program that will later be predicted is run or fitted.
//
//   1. compute (`spora calibrate --measure compute`, in `cores` single-threaded processes at
//      once, so they share the memory system as MPI ranks do; one process's answer is kept
//      whole, the one with the median f32 peak): compute.cpp
//        gemm        FLOP/s of f32 matmul over a grid m, n in {4, 16, 64, 128, 256, 512, 1024},
//                    k in {4, 16, 64, 256, 1024}
//        conv        FLOP/s of conv2d (3x3, padding 1, 4 images) over out channels {4, 16, 64},
//                    image sides {8, 16, 32}, in channels {1, 4, 16}, keyed by its per-image
//                    GEMM; conv2d_input_grad and conv2d_weight_grad on the same geometries,
//                    each keyed by its own GEMM, as tables of their own
//        bandwidth   bytes/s per op class (elementwise, reduction, norm, copy, pool, creation),
//                    of max_pool2d_grad (pool_grad: the gradient helpers' own table), and of the
//                    transposes that move the innermost axis (transpose)
//                    over sizes from 1 KiB to 16 MiB moved
//        overheads   the interpreter's time per node (dispatch) plus each class's fixed kernel
//                    cost beyond a tiny add: launch_overhead per class
//        peaks       the best GEMM/conv rate (f32), a 512^3 f64 matmul; the bandwidth of
//                    4 MiB adds (the roofline's memory side where no table applies)
//        distances   the gemm, conv and bandwidth tables three times, with the kernels' inputs
//                    at reuse distance 2P (P: private_cache_bytes; the inherited tables), 0 (the
//                    same inputs every call) and 32P (at_reuse_distance; sim/reuse.h), and a
//                    fourth time at 2L (L: last_level_cache_bytes) where that exceeds 32P
//   2. communication (`mpirun -np K spora calibrate --measure mpi`, K = 2, then K = --devices
//      when that is more and at most the cores): comm.cpp
//        latency     half the round trip of 8-byte ping-pongs (K = 2)
//        collectives all_reduce, reduce_scatter, all_gather of 512 B to 4 MiB as `spora run`
//                    runs them inside a step, over K ranks: the spec's `measured.collectives`
//                    tables, which the simulator charges for groups of a measured size
//                    (reduce_scatter and all_gather also on blocks: `*_contiguous`; every one
//                    also back to back: `*_b2b`); the strided and all_reduce
//                    K = 2 points fitted by least squares to the ring model
//                    (collective_overhead + steps x (latency + bytes/2 / bw)), which gives
//                    interconnect.bandwidth and collective_overhead for every other group;
//                    every measured point and the fit's error on it are in the spec's header
//   3. ranks taking turns on the cores (`mpirun -np K spora calibrate --measure share`, K = the
//      cores, then K = --devices when that is more): share.cpp
//        loops of (n 64x64 matmuls, an all_reduce over the K ranks) for the grains of
//        share_cases(); the spec's `measured.oversubscribed` table is, per grain g (the compute
//        part at K = cores), what a loop of K = devices took beyond the simulator's charge
//        without it: devices / cores x g plus the ring with its copies sharing the cores
//        (oversubscribed_rows below; sim/measured_tables.h, SyncTable)
//   4. the spec, written atomically (a temporary file, renamed): machine_model.cpp
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/measured_tables.h"

namespace spora::calibrate {

struct CalibrateOptions {
  std::string out = "examples/clusters/this-machine.yaml";
  int devices = 0;  // devices (MPI ranks) the spec offers; 0: the cores
  int cores = 0;    // compute processes run at once; 0: the hardware's cores
  bool no_mpi = false;
  std::string self;  // this executable (children are `self calibrate --measure ...`)
};

// The children's `--measure` entry points: print their lines on stdout.
int measure_compute();
int measure_mpi();
int measure_share();

// The (matmuls per loop, all_reduce bytes) that measure_share times, in order: the grain sweep
// at 4 KiB, then two 1 MiB cases that check the copies' share (recorded, not used).
std::vector<std::pair<int, int64_t>> share_cases();

// One line of measure_share: K ranks, n matmuls, bytes, rank 0's compute per loop, the loop.
struct SharePoint {
  int ranks = 0, n = 0;
  double bytes = 0, compute = 0, loop = 0;
};

// One collective primitive measured in place: bytes of the full tensor, seconds per call.
struct CollectivePoint {
  std::string primitive;  // all_reduce | reduce_scatter | all_gather
  double bytes = 0, seconds = 0;
  int ranks = 2;
};

// The spec's `measured.collectives` tables from the in-place points (every rank count measured).
std::map<std::string, std::map<int, sim::CollectiveTable>> collective_tables(
    const std::vector<CollectivePoint>& points);

// The ring model on 2 ranks fitted to the points: each call takes
//   overhead + steps x (latency + bytes / 2 / bandwidth)
// (all_reduce 2 steps, reduce_scatter and all_gather 1), least squares in `overhead` and
// 1/bandwidth with `latency` given (ping-pong). ok = false when the slope is not positive.
struct LinkFit {
  double bandwidth = 0, overhead = 0;
  bool ok = false;
};
LinkFit fit_collectives(const std::vector<CollectivePoint>& points, double latency);
int ring_steps(const std::string& primitive);  // on 2 ranks

// What the simulator charges for one all_reduce of `bytes` over `ranks` ranks on a node with
// `share` = ranks / cores (>= 1): the ring with its copies and per-call overhead taking turns
// (sim/spmd_step.cpp): share x overhead + 2 (ranks - 1) (latency + share x bytes / ranks / bw).
double simulated_all_reduce(double bytes, int ranks, double share, double latency,
                            const LinkFit& link);

// The `measured.oversubscribed` rows from the loops at K = cores (`base`) and K = devices
// (`over`), matched by (n, bytes) at the sweep's 4 KiB: [grain, extra], grain = base's compute,
// extra = over's loop - (devices / cores x grain + simulated_all_reduce). Empty when a case is
// missing from either.
// With `all_reduce` (the measured table of the all_reduce over `over`'s ranks) the collective's
// charge is that table's time, as the simulator then charges it, instead of the ring model.
std::vector<std::array<double, 2>> oversubscribed_rows(const std::vector<SharePoint>& base,
                                                       const std::vector<SharePoint>& over,
                                                       int cores, double latency,
                                                       const LinkFit& link,
                                                       const sim::CollectiveTable* all_reduce =
                                                           nullptr);

// Everything the spec is made of.
struct MachineModel {
  int devices = 2;
  double memory_bytes = 0;
  double peak_f32 = 0, peak_f64 = 0, memory_bandwidth = 0, interpreter_overhead = 0;
  std::map<std::string, double> launch_overhead;  // per op class
  sim::MeasuredTables tables;
  bool have_mpi = false;
  double latency = 1e-6;
  LinkFit link;
  std::vector<CollectivePoint> collectives, back_to_back;
  std::vector<SharePoint> share_base, share_over;  // the loops at K = cores and K = devices
  std::vector<std::string> notes;  // extra header lines (machine, date, scheduling)
};

// The cluster spec's YAML text (parse_cluster_spec reads it back).
std::string machine_model_yaml(const MachineModel& m);

// Measures this machine (the children above) and writes the spec to o.out atomically.
int calibrate_machine(const CalibrateOptions& o);

}  // namespace spora::calibrate
