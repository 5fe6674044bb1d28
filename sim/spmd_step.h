// Simulating one training step of an SPMD program: the per-rank program the partitioner
// (parallel/partition/partition.h) makes from a training step and a strategy, with its
// collectives (all_reduce, all_gather, reduce_scatter, all_to_all over mesh axes) inline.
//
//   SpmdProgram p = spmd_program(*partitioned.graph, mesh, params, "sgd");
//   SpmdSimResult r = simulate_spmd_step(load_cluster_spec("dgx-a100.yaml"), p, {});
//
// Rank r runs on device r (node-major, sim/platform.h) and has the mesh coordinates of r in
// row-major order (the last mesh axis varies fastest, so the last axis stays inside a node).
// Every rank runs the same op list with two SimGrid actors on its device:
//
//   compute stream   the compute ops in program order, each its cost-model time
//                    (sim/cost_model.h); consecutive ops run as one sleep. As soon as the op
//                    producing a collective's input is done, it hands the collective to the
//                    communication stream and goes on (so a gradient's all-reduce starts when
//                    the gradient exists, wherever the partitioner placed it in the text);
//                    before an op that reads a collective's result, it waits for it.
//                    At the end it waits for every collective, then runs the optimizer's
//                    update of its local parameter shards (with ZeRO-1, the strategy's
//                    "optimizer_shard": of the reduce-scattered pieces of the sharded ones),
//                    then hands the comm stream the all_gathers of the updated pieces and
//                    waits for them: the step ends when the parameters are whole again.
//   comm stream      the collectives in the order they are handed over (program order among
//                    those handed over at once), each with its group: the ranks whose mesh
//                    coordinates equal this rank's outside the collective's axes.
//
// So a tensor-parallel all-reduce in the forward pass blocks the next op, and the gradient
// all-reduces of data parallelism overlap with the rest of the backward pass, as PyTorch DDP's
// do (one collective per gradient: the partitioner emits no buckets).
// With `collectives: inline` in the cluster spec (ClusterSpec::overlap_collectives false: the
// runtime `spora train-step --strategy` has, which runs each collective where the program reaches it,
// and so the spec `spora calibrate` writes) the compute stream waits for each collective as
// soon as it hands it over: nothing overlaps.
//
// Collectives over a group of p ranks, ring algorithms, as one message per step to the ring
// neighbour (the `bulk` granularity of sim/train_step.h: same time as the chunked schedule on
// links without contention), B = the local input's bytes:
//   all_reduce       2 (p - 1) steps of B / p (reduce-scatter then all-gather), the first p - 1
//                    followed by a reduction of B / p (3 passes through memory) where it is
//                    longer than the transfer (reduction as data arrives, as NCCL does)
//   all_gather       p - 1 steps of B
//   reduce_scatter   p - 1 steps of B / p, each with its reduction
//   all_to_all       p - 1 pairwise exchanges of B / p (rank i sends to i + s, receives from
//                    i - s at step s)
// shard_slice (taking this rank's piece) is a local copy: a compute op of its cost row.
//
// Deterministic: the same input gives the same result bit for bit (SimGrid is deterministic).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parallel/partition/partition.h"
#include "semantics/ir/ir.h"
#include "sim/cluster_spec.h"
#include "sim/step_program.h"
#include "sim/train_step.h"

namespace spora::sim {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll };
std::string_view collective_kind_name(CollectiveKind k);  // "all_reduce", ...

struct SpmdOp {
  bool collective = false;
  StepOp op;                          // the application (compute ops: its cost)
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::vector<int64_t> axes;          // mesh axes of the group
  double bytes = 0;                   // the local input's bytes
  // all_gather / reduce_scatter split along a leading dimension (every dimension before it has
  // extent 1): each piece is one block of the tensor, and the runtime copies none through a
  // staging buffer (ops/collective.cpp), so the measured contiguous table prices it.
  bool contiguous = false;
  std::vector<int> waits;             // compute ops: collectives (op indices) whose results it reads
};

// Whether the pieces of `t` split along `dim` are blocks of its bytes (every dimension before
// `dim` has extent 1).
bool pieces_are_blocks(const sem::Type& t, int64_t dim);

struct SpmdProgram {
  std::vector<int64_t> mesh;
  std::vector<SpmdOp> ops;            // in program order
  std::vector<int> collectives;       // indices into ops, in the comm stream's order
  std::vector<int> issue_after;       // per collective: the compute op after which it may
                                      // start (-1: at the start of the step)
  std::vector<int> output_waits;      // collectives the outputs are (waited for at the end)
  std::vector<StepOp> update;         // the optimizer's update of the local parameter shards
  // ZeRO-1: the all_gathers (indices into ops, collective ops appended after the program's)
  // of the updated pieces, run after the update; the mesh axis (-1: no optimizer_shard).
  std::vector<int> gathers;
  int optimizer_shard = -1;
  double param_bytes = 0;             // local, per device
  double optimizer_state_bytes = 0;   // local, per device (with ZeRO-1: of the pieces)
  double optimizer_state_unsharded_bytes = 0;  // what it would be without ZeRO-1
  double activation_peak = 0;         // local live intermediates (sim/step_program.h's measure)
  // At the step's memory peak (sim/step_program.h live_peak, gradients kept until the update,
  // as the runtime keeps them: no DDP buckets): the live intermediates plus the local batch,
  // and the gradients made so far. The device reports' activations and gradients.
  double step_intermediates = 0;
  double step_gradients = 0;
  int64_t ranks() const;
};

// The op list of a partitioned, straight-line per-rank graph whose first `params` parameters
// are the (local shards of the) trainable parameters and whose output is (loss, gradients...).
// The update applies `optimizer` (sgd | momentum | adam) to each local gradient's shape (the
// parameter's shard, or with ZeRO-1 the gradient's reduce-scattered piece), and so does the
// optimizer state. With UpdateKernel::Fused, the update of a whole shard is one fused op and
// the update of a ZeRO-1 piece stays the primitives' list: that is how `spora run` runs them
// (backends/distributed/spmd_runtime.cpp runs a fusion group whose arguments are neither whole
// nor cut as its nodes would run them, the gradient's reduce-scattered piece, node by node).
SpmdProgram spmd_program(const ir::Graph& g, std::vector<int64_t> mesh, std::size_t params,
                         const std::string& optimizer, UpdateKernel update = UpdateKernel::Ops);

// A training step (sim/step_program.h, built with the global batch) partitioned by a strategy
// (parallel::partition_training_step), and its op list; with the strategy's optimizer_shard,
// the all_gathers of the updated pieces (`gathers`).
SpmdProgram spmd_program(const StepProgram& step, const parallel::Strategy& strategy,
                         const std::string& optimizer, UpdateKernel update = UpdateKernel::Ops);

struct SpmdCollectiveRecord {
  int op = 0;  // index into SpmdProgram::ops
  CollectiveKind kind = CollectiveKind::AllReduce;
  int group = 1;
  double bytes = 0;
  double seconds = 0;  // on rank 0: from its start on the comm stream to its end
};

struct SpmdSimOptions {
  std::string matmul_dtype;  // as TrainSimOptions
  int ranks_on_node = 0;     // CostModel's time sharing (sim/cost_model.h); 0: the step's ranks
  bool log = false;
  std::vector<std::string> simgrid_args;
  // A collective's time from elsewhere than the ring model and the measured tables (`spora
  // search` / `spora sim --collectives synth`: the synthesizer's schedule for the group,
  // simulated on its devices). Called before the simulation, once per collective of the step
  // with rank 0's group (its devices in rank order) and the bytes of the whole tensor (an
  // all_gather's gathered one); every group of that collective then takes that time, after
  // waiting for its last rank (the groups of one mesh axis are alike on a homogeneous cluster).
  std::function<double(CollectiveKind, const std::vector<int>& group, double whole_bytes)>
      collective_seconds;
};

struct SpmdSimResult {
  int ranks = 0;
  double step_seconds = 0;
  double compute_seconds = 0;  // of one rank's compute ops and update (cost model)
  std::vector<double> op_seconds;
  double update_seconds = 0;
  std::vector<DeviceReport> devices;  // sim/train_step.h's per-device breakdown and memory
  std::vector<SpmdCollectiveRecord> collectives;  // rank 0's
  std::vector<std::vector<Interval>> compute_intervals, comm_intervals;  // per device
  // Per device and compute interval: the program ops it ran, [first, end) indices into
  // SpmdProgram::ops ({-1, -1}: the optimizer's update).
  std::vector<std::vector<std::array<int, 2>>> compute_ops;
  std::vector<std::string> log;
  long events = 0;
  double wall_seconds = 0;
};

// Throws std::invalid_argument when the mesh has more devices than the cluster, SimulationError
// when the simulation fails or deadlocks.
SpmdSimResult simulate_spmd_step(const ClusterSpec& cluster, const SpmdProgram& program,
                                 const SpmdSimOptions& options = {});

// A readable report (step time, per-device compute / communication / exposed / idle, memory,
// the collectives with their groups and times).
std::string spmd_report(const SpmdProgram& program, const SpmdSimResult& r);
// A compute op of one device where its simulation placed it: each compute interval holds its ops
// (SpmdSimResult::compute_ops) one after another, each its modelled share of the interval
// (contention stretches an interval as a whole). Ops of no modelled time are left out.
struct PlacedOp {
  int op = 0;  // index into SpmdProgram::ops
  double start = 0, end = 0;
};
std::vector<PlacedOp> placed_ops(const SpmdSimResult& r, std::size_t device);

// Chrome trace JSON of the first max_ranks devices (0: every device), for Perfetto: per device
// a compute stream (tid 0: each compute interval, category "segment", with its ops inside it,
// category "op", named by primitive, args op index, output type, FLOPs, bytes and modelled time,
// as chrome_trace (report.h) shows a data-parallel step; then the update) and a
// communication stream (tid 1: each collective by kind, with its bytes, group and mesh axes).
std::string spmd_chrome_trace(const SpmdProgram& program, const SpmdSimResult& r,
                              int max_ranks = 0);

}  // namespace spora::sim
