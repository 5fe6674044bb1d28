// Simulated collectives: any schedule of parallel/collectives runs in SimGrid on a cluster.
//
//   CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 8, 256 << 20};
//   Schedule s = parallel::build_schedule(Algorithm::Ring, spec);
//   SimResult r = simulate_collective(load_cluster_spec("examples/clusters/dgx-a100.yaml"), s);
//   r.seconds                                 // simulated time of the slowest rank
//
// Rank r runs on device r (node-major; SimOptions::devices maps them otherwise) as one actor,
// "rank<r>", that executes its step DAG as
// a dataflow loop, like the host executors of backends/comm:
//   1. every step whose dependencies are done starts:
//        Send         put_async of count x element_bytes on mailbox "<run>:<src>><dst>#<k>" (the
//                     k-th message from src to dst, so sends and receives match as in
//                     schedule.h)
//        Recv         get_async on the same mailbox (rendezvous: the transfer starts once both
//                     sides are posted; a receive posted before its send is "parked" to keep
//                     the wait sets small, with the same timing: see collectives.cpp)
//        Copy         an Exec of 2 x bytes / memory bandwidth (read + write)
//        LocalReduce  an Exec of 3 x bytes / memory bandwidth (two reads, one write)
//        RecvReduce   the receive, and the reduction of what arrives (3 x bytes / memory
//                     bandwidth): `fused` overlaps the reduction with the transfer, so only the
//                     part longer than the transfer runs after it (NCCL reduces as data
//                     arrives); `staged` runs all of it after the receive (receive into a
//                     staging buffer, then reduce)
//   2. Activity::wait_any on everything in flight; a completion releases its dependents.
// With `ordered_pairs` (the default), messages from one rank to another whose receiver is
// already waiting travel one at a time, in the order the sender posts them, as over one
// connection or one NCCL channel: such a send waits until the pair's transfer in progress has
// completed. So the pieces of a chunked transfer follow each other and pipeline across hops.
// A message whose receiver is not waiting yet never waits in that line (it starts when the
// receiver posts, and may then share the link with one in progress), so the ordering cannot
// deadlock a schedule. Without `ordered_pairs`, all messages share the links fairly and the
// pieces of a chunked transfer arrive together (chunking cannot pipeline).
//
// Before simulating, the schedule is validated (form, matching, races) and checked to be free
// of deadlock under rendezvous semantics; both raise parallel::ScheduleError.
//
// The optional log has one line per completed step and one when a rank is done, ordered by
// time, then rank, then step id (what completes at the same instant is listed in program
// order, whatever order SimGrid handled it in); times in seconds since the start:
//   [0.000005064] rank1@node0-gpu1: recv-reduce 8 B from rank0 (step 5, from 0.000000048)
//   [0.000024096] rank1@node0-gpu1: done, 15 steps
// It is reproducible bit for bit: SimGrid is deterministic and nothing here depends on
// addresses, hashing or wall-clock time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"
#include "sim/cluster_spec.h"

namespace spora::sim {

struct Platform;

enum class RecvReduceModel { Fused, Staged };

struct SimOptions {
  int element_bytes = 4;  // message size = elements x element_bytes
  bool ordered_pairs = true;
  RecvReduceModel recv_reduce = RecvReduceModel::Fused;
  bool log = false;
  std::vector<std::string> simgrid_args;  // extra engine arguments: "--cfg=...", "--log=..."
  double timeout =
      0;  // simulate_collectives: seconds of wall clock before SimulationTimeout; 0: none
  // The device of each rank (indices into the platform's devices, node-major); empty: rank r
  // on device r. A group of a mesh axis runs where its ranks are.
  std::vector<int> devices;
};

struct SimResult {
  double seconds = 0;                // from the common start to the last rank's last step
  std::vector<double> rank_seconds;  // per rank
  std::vector<std::string> log;      // when SimOptions::log
};

// Simulates each schedule in turn on one platform (one SimGrid process for all of them).
// Throws std::invalid_argument (more ranks than devices), parallel::ScheduleError (an invalid
// or deadlocking schedule), ClusterSpecError or SimulationError (sim/isolation.h).
std::vector<SimResult> simulate_collectives(const ClusterSpec& cluster,
                                            const std::vector<parallel::Schedule>& schedules,
                                            const SimOptions& options = {});
SimResult simulate_collective(const ClusterSpec& cluster, const parallel::Schedule& schedule,
                              const SimOptions& options = {});

// In-process building blocks, for simulations that run collectives among other actors: the
// engine exists, the network model is configured and the platform built. check_for_simulation
// validates once; run_schedule creates the rank actors and runs the engine until they finish.
void check_for_simulation(const parallel::Schedule& schedule, int devices,
                          const SimOptions& options);
SimResult run_schedule(const Platform& platform, const parallel::Schedule& schedule,
                       const SimOptions& options);

// One schedule run by actors the caller creates (a training step's communication streams):
// construct it inside the simulation process once the platform is built, then each rank's
// actor, running on that rank's device, calls run_rank(rank), which returns when the rank's
// steps are done. Log times count from `start` (engine clock). Validate the schedule first
// (check_for_simulation). Mailboxes are private to each ScheduleRun.
namespace detail {
struct Run;
}
class ScheduleRun {
 public:
  ScheduleRun(const Platform& platform, parallel::Schedule schedule, const SimOptions& options,
              double start = 0);
  ~ScheduleRun();
  ScheduleRun(const ScheduleRun&) = delete;
  ScheduleRun& operator=(const ScheduleRun&) = delete;

  void run_rank(int rank);
  bool finished(int rank) const;
  std::vector<std::string> take_log();  // sorted as SimResult::log; empties it
  const parallel::Schedule& schedule() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string_view recv_reduce_model_name(RecvReduceModel m);  // "fused", "staged"

// The channels NCCL runs a ring on across nodes: one per NIC (nics_per_node) when the ranks
// fill two or more whole nodes, else 1 (parallel/collectives/ring.cpp: channel c leaves every
// node through NIC c).
int default_ring_channels(const ClusterSpec& cluster, int ranks);

}  // namespace spora::sim
