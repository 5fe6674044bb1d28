// Simulating one pipelined training step: S stages, M micro-batches, a 1F1B or GPipe schedule,
// optional activation recomputation, D data-parallel replicas of the whole pipeline.
//
//   PipelineProgram p;                       // stages: per micro-batch forward and backward
//   p.stages = ...; p.micro_batches = 8;     // SPMD programs over the intra-stage mesh
//   PipelineSimResult r = simulate_pipeline(load_cluster_spec("dgx-a100-cluster-32.yaml"), p);
//
// Placement: the mesh (pp, dp, t) row-major over the devices, node-major (sim/platform.h):
// stage k of replica d runs on devices (k D + d) t .. (k D + d) t + t - 1. The pipeline axis is
// outermost, so with t = 8 every stage is one DGX node and its p2p crosses the network.
//
// Two levels, so that 512 GPUs x 48 layers stay tractable:
//   1. Stage times. Each stage is a list of blocks (an SPMD program of one micro-batch over the
//      stage's t devices, split into its forward and backward ops, run `repeat` times in a
//      row: L identical layers are one block with repeat L). Each block's forward and its
//      backward are simulated once on devices 0 .. t-1 (sim/spmd_step.h: every rank's compute
//      stream and the ring collectives of its tensor / data parallelism over the mesh groups),
//      and the stage's time per micro-batch is the sum over blocks of repeat x that time. A
//      stage may give its times instead (`times`), as the tests and cost sweeps do.
//      With recomputation the backward of a micro-batch first re-runs its forward.
//   2. The schedule. One SimGrid actor per stage (replica 0, the stage's first device; the
//      stage's t devices and the D replicas run the same schedule) runs its forward and
//      backward passes as the schedule orders them, each its stage time; the activations of a
//      micro-batch go to the next stage and its cotangents to the previous one as messages of
//      `send_bytes` / `cotangent_bytes` between the stages' first devices, sent eagerly (the
//      receiver is a permanent receiver of its mailbox, as NCCL's isend with a posted irecv):
//      a message of s bytes arrives latency + s / bandwidth after the pass that made it; the
//      receiving pass waits for it. After its last backward pass a stage synchronises its
//      gradients over the D replicas (a ring all-reduce of `grad_sync_bytes` over the mesh
//      group of the replicas, or with `zero` a reduce-scatter, then the update of its shard,
//      then an all-gather of the parameters: ZeRO-1), simulated once on the devices of stage 0
//      (all t rings at once, as they run), then runs its optimizer update. Other stages are
//      still in their backward passes meanwhile (the overlap of spmd_step's gradient
//      all-reduces with the rest of the backward pass, at stage granularity). With
//      CoreSharing::Running on a node of fewer cores than devices, the passes, the sync and
//      the update run as the stage's ranks' threads on the node's cores instead of as sleeps.
//
// Schedules (per stage k of S, micro-batches 0 .. M-1):
//   gpipe   F0 .. F(M-1), then B0 .. B(M-1): M micro-batches of activations in flight
//   1f1b    PipeDream-flush / Megatron's non-interleaved schedule: w = min(S-k-1, M) forwards,
//           then F(w+i) B(i) pairs, then the last w backwards: at most min(S-k, M) in flight
// With uniform stages (forward F, backward B) and free links both take (M + S - 1)(F + B), and
// the bubble (idle share of the pipeline phase) is (S - 1) / (M + S - 1).
//
// Not modelled: contention between p2p, tensor-parallel collectives and the gradient sync
// (they are simulated apart); interleaved (virtual-stage) schedules; the scatter / gather of
// Megatron's p2p optimisation inside the node (the caller chooses `send_bytes`).
// Deterministic: the same input gives the same result bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"
#include "sim/cluster_spec.h"
#include "sim/spmd_step.h"

namespace spora::sim {

enum class PipelineSchedule { OneFOneB, GPipe };
std::string_view pipeline_schedule_name(PipelineSchedule s);  // "1f1b", "gpipe"
// Throws std::invalid_argument for anything but "1f1b" and "gpipe".
PipelineSchedule parse_pipeline_schedule(const std::string& name);

// Where a node's devices share fewer cores than they are (device.measured.cores <
// devices_per_node, sim/platform.h shares_cores: MPI ranks on a smaller CPU machine):
//   static   every pass and update takes (ranks on the node) / cores times as long as alone, all
//            ranks competing all the time (sim/cost_model.h's time sharing);
//   running  passes and updates are timed at one rank per core, and run as the stage's ranks'
//            threads on the node's cores (Platform::node_cores): only the passes running at a
//            moment share the cores, so a stage waiting for its neighbour leaves them to the
//            others. Waiting ranks take no core, and a hand-off costs no scheduler delay.
// On a cluster whose devices have cores of their own (GPUs) the two are the same.
enum class CoreSharing { Static, Running };
std::string_view core_sharing_name(CoreSharing s);  // "static", "running"
// Throws std::invalid_argument for anything but "static" and "running".
CoreSharing parse_core_sharing(const std::string& name);

// One block of a stage: one micro-batch's forward and backward SPMD programs over the stage's
// t devices (their mesh has t devices), run `repeat` times in a row.
struct StageBlock {
  std::string name;
  SpmdProgram forward, backward;
  int repeat = 1;
};

// Seconds per micro-batch on one stage (backward: without recomputation).
struct StageTimes {
  double forward = 0, backward = 0;
};

// One op of a stage's pass as its simulation placed it: its name and result type, and its
// start and end in seconds from the pass's start (rank 0 of the stage's mesh; collectives and
// the waits for them are the gaps between ops).
struct PassOp {
  std::string name, output;
  double start = 0, end = 0;
};
struct StagePassOps {
  std::vector<PassOp> forward, backward;
};

struct PipelineStage {
  std::vector<StageBlock> blocks;
  std::optional<StageTimes> times;  // given: the blocks are not simulated
  double send_bytes = 0;            // per micro-batch, to the next stage (per device pair)
  double cotangent_bytes = 0;       // per micro-batch, to the previous stage
  // Memory per device, bytes.
  double param_bytes = 0, grad_bytes = 0, optimizer_state_bytes = 0;
  double activation_bytes = 0;  // kept per micro-batch in flight (with recomputation: inputs)
  double working_bytes = 0;     // transient peak of one pass (with recomputation: one block's)
  double grad_sync_bytes = 0;   // gradients synchronised over the replicas, per device
  double update_seconds = 0;    // the optimizer update of the stage's (local) parameters
};

struct PipelineProgram {
  std::vector<PipelineStage> stages;
  int64_t stage_devices = 1;  // t: devices of every stage's mesh
  int64_t replicas = 1;       // D: data-parallel copies of the pipeline
  int micro_batches = 1;      // M
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  bool recompute = false;
  bool zero = false;  // reduce-scatter + all-gather instead of the all-reduce (ZeRO-1)
  // How ranks share a node's cores; with `running`, `update_seconds` and given `times` are at
  // one rank per core.
  CoreSharing core_sharing = CoreSharing::Static;
  int64_t devices() const { return static_cast<int64_t>(stages.size()) * stage_devices * replicas; }
};

// One forward ('F'), recomputation ('R') or backward ('B') pass, or the gradient sync ('S')
// and update ('U') at the end.
struct PipelineEvent {
  char kind = 'F';
  int micro_batch = -1;
  double start = 0, end = 0;
};

struct PipelineStageReport {
  StageTimes times;         // per micro-batch
  double busy = 0;          // forward + recomputation + backward seconds of the step
  double idle = 0;          // of the pipeline phase (until the last backward of any stage)
  double sync_seconds = 0;  // gradient sync over the replicas
  double update_seconds = 0;
  double end = 0;          // this stage's step is done
  int peak_in_flight = 0;  // micro-batches whose activations it holds at once
  DeviceReport memory;     // parameters, gradients, optimizer state, activations
  StagePassOps ops;        // the ops of a pass (empty where the stage's times were given)
};

struct PipelineSimResult {
  double step_seconds = 0;      // the slowest stage, sync and update included
  double pipeline_seconds = 0;  // the last backward pass of any stage
  double bubble_fraction = 0;   // mean over stages of idle / pipeline_seconds
  double peak_memory = 0;       // the largest per-device memory of any stage
  std::vector<PipelineStageReport> stages;
  std::vector<std::vector<PipelineEvent>> events;  // per stage, in time order
  long sim_events = 0;
  double wall_seconds = 0;
};

// The forward and backward op lists of a training step's SPMD program (sim/spmd_step.h's
// spmd_program of the same graph `g`): the forward ops are the applications the loss (the
// first output) depends on, the backward ops the rest. Collectives that start in one part and
// are read in the other are waited for where they are issued. The update is left out (the
// pipeline runs it once per step).
std::pair<SpmdProgram, SpmdProgram> split_forward_backward(const ir::Graph& g,
                                                           const SpmdProgram& whole);

// Level 1: a stage's seconds per micro-batch (its `times`, or its blocks simulated); `ops`,
// when given, receives the ops of each pass where the blocks were simulated.
StageTimes stage_times(const ClusterSpec& cluster, const PipelineStage& stage,
                       const SpmdSimOptions& options = {}, StagePassOps* ops = nullptr);

// The seconds of the gradient sync of `bytes` per device over `replicas` replicas of a stage of
// `stage_devices` devices (all-reduce; with zero, reduce-scatter + all-gather), simulated.
double gradient_sync_seconds(const ClusterSpec& cluster, int64_t replicas, int64_t stage_devices,
                             double bytes, bool zero, const SpmdSimOptions& options = {});

// Throws std::invalid_argument for an empty pipeline, M < 1, or more devices than the cluster
// has; SimulationError when the simulation fails.
PipelineSimResult simulate_pipeline(const ClusterSpec& cluster, const PipelineProgram& program,
                                    const SpmdSimOptions& options = {});

// A readable report: step time, bubble, per stage times, busy / idle, sync, memory.
std::string pipeline_report(const PipelineProgram& program, const PipelineSimResult& r);
// Chrome trace JSON: one process per stage, thread 0 the passes, thread 1 sync and update.
// Chrome trace of the first max_stages stages (0: all): per stage its passes (F, R, B with the
// micro-batch), the gradient sync and the update, each pass holding its ops (PassOp) stretched
// to the pass's simulated time.
std::string pipeline_chrome_trace(const PipelineSimResult& r, int max_stages = 0);

}  // namespace spora::sim
