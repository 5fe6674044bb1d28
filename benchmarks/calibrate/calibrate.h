// `spora calibrate`: a machine model of this computer from microbenchmarks only, written as a
// cluster spec (sim/cluster_spec.h) whose `device.measured` tables the simulator's cost model
// interpolates (sim/measured_tables.h). No program that will later be predicted is run or fitted.
//
//   1. compute (`spora calibrate --measure compute`, in `cores` single-threaded processes at
//      once, so they share the memory system as MPI ranks do; one process's answer is kept
//      whole, the one with the median f32 peak): compute.cpp
//        gemm        FLOP/s of f32 matmul over a grid m, n, k in {4, 16, 64, 256, 1024}
//        conv        FLOP/s of conv2d (3x3, 4 images) over out channels {4, 16, 64}, image sides
//                    {8, 16, 32}, in channels {1, 4, 16}, keyed by its per-image GEMM
//        bandwidth   bytes/s per op class (elementwise, reduction, norm, copy, pool, creation)
//                    over sizes from 1 KiB to 16 MiB moved
//        overheads   the interpreter's time per node (dispatch) plus each class's fixed kernel
//                    cost beyond a tiny add: launch_overhead per class
//        peaks       the best GEMM/conv rate (f32), a 512^3 f64 matmul; the bandwidth of
//                    4 MiB adds (the roofline's memory side where no table applies)
//   2. communication (`mpirun -np 2 spora calibrate --measure mpi`): comm.cpp
//        latency     half the round trip of 8-byte ping-pongs
//        collectives all_reduce, reduce_scatter, all_gather of 512 B to 1 MiB as `spora run`
//                    runs them inside a step; fitted by least squares to the ring model the
//                    simulator charges (collective_overhead + steps x (latency + bytes/2 / bw)),
//                    which gives interconnect.bandwidth and collective_overhead; every
//                    measured point and the fit's error on it are in the spec's header
//   3. the spec, written atomically (a temporary file, renamed): machine_model.cpp
#pragma once

#include <array>
#include <map>
#include <string>
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

// One collective primitive measured in place: bytes of the full tensor, seconds per call.
struct CollectivePoint {
  std::string primitive;  // all_reduce | reduce_scatter | all_gather
  double bytes = 0, seconds = 0;
};

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
  std::vector<std::string> notes;  // extra header lines (machine, date, scheduling)
};

// The cluster spec's YAML text (parse_cluster_spec reads it back).
std::string machine_model_yaml(const MachineModel& m);

// Measures this machine (the children above) and writes the spec to o.out atomically.
int calibrate_machine(const CalibrateOptions& o);

}  // namespace spora::calibrate
