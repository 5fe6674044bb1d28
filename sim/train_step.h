// Simulating one data-parallel training step on a cluster (issue 6).
//
//   StepProgram p = build_step_program("model.sp", {.batch = 32});
//   TrainSimResult r = simulate_train_step(load_cluster_spec("dgx-a100.yaml"), p, {});
//   r.step_seconds, r.devices[i].compute, ..., r.log
//
// Every rank runs the same per-rank program (sim/step_program.h) on its slice of the batch.
// Each device runs two SimGrid actors on its host:
//
//   compute stream   the ops in program order, each taking its cost-model time
//                    (sim/cost_model.h); consecutive ops run as one sleep up to the next point
//                    where a gradient bucket becomes complete, which it signals to the
//                    communication stream. After the backward pass it waits for every
//                    bucket's all-reduce (DDP's backward() does) and runs the optimizer's
//                    update of every parameter.
//   comm stream      the buckets in order: waits until the bucket is complete, copies the
//                    gradients into the bucket buffer (2 x bytes at memory bandwidth, an Exec on
//                    the device), all-reduces it with the chosen algorithm, copies the result
//                    back, and signals the compute stream.
//
// Buckets follow PyTorch DDP: parameters in the order their gradients are produced, the first
// bucket closed at 1 MiB, the others at `bucket_bytes` (25 MiB by default); a bucket closes
// as soon as it reaches its cap. Gradient averaging is folded into the learning rate.
//
// The compute stream sleeps rather than executes, so the communication stream's copies and
// reductions never slow it down (a GPU's copy engines and NCCL kernels run beside it; on
// real hardware they take some SMs and memory bandwidth, which this model leaves out).
//
// Communication models:
//   steps   the schedule of parallel/collectives (every chunked send, receive and reduction
//           of every rank), exactly as `spora sim-coll` runs it;
//   bulk    each ring phase of the algorithm as one transfer per rank to its ring neighbour,
//           carrying the phase's whole traffic, plus the latencies of the steps it stands for
//           (as a sleep) and the reduction of what it received, overlapped as `fused` does: the
//           same time as `steps` on contention-free links, with ~100x fewer events (ring and
//           hierarchical only);
//   auto    steps up to 64 ranks, bulk beyond.
//
// Deterministic: the log, the times and the trace are the same bit for bit for the same input
// (SimGrid is deterministic; nothing depends on addresses or the clock).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"
#include "sim/cluster_spec.h"
#include "sim/collectives.h"
#include "sim/step_program.h"

namespace spora::sim {

enum class CommModel { Auto, Steps, Bulk };

struct TrainSimOptions {
  int ranks = 0;                             // 0: every device of the cluster
  double bucket_bytes = 25.0 * (1 << 20);    // DDP's bucket_cap_mb = 25
  double first_bucket_bytes = 1.0 * (1 << 20);
  std::string algorithm = "auto";  // ring | hierarchical | tree | halving-doubling |
                                   // synth (a schedule per bucket size from
                                   // schedule_for, else from synthesize(): sim/synth.h)
  CommModel comm_model = CommModel::Auto;
  bool bucket_copies = true;                 // copy gradients into and out of the buckets
  RecvReduceModel recv_reduce = RecvReduceModel::Fused;  // steps model (sim/collectives.h)
  std::string matmul_dtype;                  // CostModel's: run f32 matmul/conv at this rate
  bool log = false;
  bool log_collectives = false;              // also every step of every all-reduce (steps model)
  std::vector<std::string> simgrid_args;
  // With algorithm "synth": the schedule of an all-reduce (`spora sim` passes the cached
  // synthesizer of tools/synth_cache.h); empty: synthesize() with a 20 s limit per size.
  std::function<parallel::Schedule(const parallel::CollectiveSpec&, const SimOptions&)>
      schedule_for;
};

struct Bucket {
  std::vector<int> params;  // indices into StepProgram::params
  double bytes = 0;
  int ready_op = -1;        // the op after which all its gradients exist (-1: at the start)
};

// What happened on one device, in seconds since the step started.
struct Interval {
  double start = 0, end = 0;
};
struct DeviceTimeline {
  std::vector<double> segment_starts;  // one per compute segment (TrainSimResult::segments)
  std::vector<double> update_start;    // one value: when the update began
  std::vector<Interval> copy_in, all_reduce, copy_out;  // per bucket
  double end = 0;                      // the step is done on this device
};

struct DeviceReport {
  double compute = 0;        // the compute stream busy
  double communication = 0;  // the comm stream busy (copies and all-reduces)
  double idle = 0;           // neither busy, until the slowest device is done
  double exposed_communication = 0;  // communication while the compute stream is not busy
  double parameters = 0, gradients = 0, optimizer_state = 0, activations = 0;  // bytes
  double peak_memory() const { return parameters + gradients + optimizer_state + activations; }
};

struct Segment {
  int first_op = 0, last_op = -1;  // ops [first_op, last_op]
  double seconds = 0;
  std::vector<int> buckets_ready;  // buckets complete when this segment ends
};

struct TrainSimResult {
  int ranks = 0;
  int64_t global_batch = 0;
  std::string algorithm;  // as run
  CommModel comm_model = CommModel::Steps;
  double step_seconds = 0;
  double throughput = 0;   // samples per second
  std::vector<Bucket> buckets;
  std::vector<double> op_seconds;   // per op of the program (cost model)
  std::vector<Segment> segments;    // the compute stream's sleeps
  double update_seconds = 0;
  std::vector<DeviceTimeline> timelines;
  std::vector<DeviceReport> devices;
  std::vector<std::string> log;
  long events = 0;                  // SimGrid activities started (sleeps, execs, transfers)
  double wall_seconds = 0;          // how long the simulation itself took
  double cpu_seconds = 0;           // the CPU time it used (both processes)
};

// The measure of a union of intervals (the busy time of a stream).
double union_length(std::vector<Interval> v);

// DDP's bucket assignment (above).
std::vector<Bucket> assign_buckets(const StepProgram& program, double bucket_bytes,
                                   double first_bucket_bytes);

// Throws std::invalid_argument for options that do not fit (more ranks than devices, an
// algorithm the model does not have), SimulationError for a failed simulation.
TrainSimResult simulate_train_step(const ClusterSpec& cluster, const StepProgram& program,
                                   const TrainSimOptions& options);

std::string_view comm_model_name(CommModel m);  // "auto", "steps", "bulk"

// The text report `spora sim` prints (deterministic).
std::string format_report(const ClusterSpec& cluster, const StepProgram& program,
                          const TrainSimResult& result);

}  // namespace spora::sim
