// Collective schedule synthesis: a search over built-in algorithms and composed schedules
// (parallel/collectives/composed.h) for one collective on one cluster, scored by the
// simulator (sim/collectives.h), within a time limit.
//
//   SynthResult r = synthesize(load_cluster_spec("examples/clusters/tpu-v4-4x4x4.yaml"),
//                              {Collective::AllReduce, ReduceOp::Sum, 64, 64 << 20}, {});
//   r.schedule, r.label, r.seconds      // the fastest schedule found, proven (r.proof)
//   r.baseline_label, r.baseline_seconds  // the fastest built-in algorithm among those tried
//
// The candidates, from the cluster's shape:
//   - every built-in algorithm that implements the collective; ring also with NCCL's channels
//     (1, the cluster's default, one and two per NIC), hierarchical with the node's devices;
//   - compositions over grids: the ranks as one dimension; devices x nodes (ranks that fill
//     whole nodes); mesh groups inside a node (devices per group x groups [x nodes]); the torus'
//     dimensions (one device per node); the factorisations of the rank count into two and
//     three near-equal factors. On each grid: one lane or one per starting dimension
//     (rotations), one or both ring directions, and every choice of ring or direct per
//     dimension;
//   - all-reduce: tree packings of 1, 2, 4 and 8 binary trees or chains over rotations of the
//     rank order (Blink-style spanning trees, pipelined by the chunks).
// The search runs in three stages: (1) every candidate unchunked, built-ins first; (2) the
// best few and the best built-in with 2, 4 and 8 chunks; (3) while the winner has the most
// chunks tried (8 or more), twice as many, up to 64.
// Each simulation runs with the time left as its timeout (SimOptions::timeout: the forked
// simulation is killed at the deadline), so the search ends within the limit; the winner's
// proof comes after it. What was not tried, or was stopped, is counted (SynthResult::skipped).
//
// The winner is proven by the symbolic checker before it is returned: at its own count when
// the checker can hold it (64 ranks, 2^26 buffer elements), else the same construction at two
// small counts that leave every lane, part and piece non-empty and uneven (a composition's
// structure does not depend on the count beyond the block arithmetic). A candidate whose proof
// fails is dropped and the next best taken.
#pragma once

#include <string>
#include <vector>

#include "parallel/collectives/composed.h"
#include "parallel/collectives/schedule.h"
#include "sim/cluster_spec.h"
#include "sim/collectives.h"

namespace spora::sim {

// One candidate: a built-in algorithm with options, or a composition.
struct SynthCandidate {
  bool builtin = true;
  parallel::Algorithm algorithm = parallel::Algorithm::Ring;
  parallel::AlgorithmOptions options;
  parallel::Composition composition;

  // "ring chunks=2 channels=4 ranks-per-node=8" or "composed dims 4x4x4 lanes ... chunks 2"
  std::string label() const;
  parallel::Schedule build(const parallel::CollectiveSpec& spec) const;
  friend bool operator==(const SynthCandidate&, const SynthCandidate&) = default;
};

// Reads a label back (the cache stores labels). Throws std::invalid_argument.
SynthCandidate parse_synth_candidate(const std::string& label);

struct SynthOptions {
  double time_limit = 50;  // seconds of wall clock for the search (the proof comes after)
  SimOptions sim;          // element size, network model and the ranks' devices (a group's)
  int refine = 3;          // candidates of stage 1 tried with more chunks in stage 2 (and the
                           // best built-in)
};

struct SynthEvaluation {
  SynthCandidate candidate;
  double seconds = 0;  // simulated
};

struct SynthResult {
  parallel::Schedule schedule;
  SynthCandidate candidate;
  std::string label;
  double seconds = 0;  // simulated time of the winner
  std::string baseline_label;
  double baseline_seconds = 0;             // the best built-in tried (0: none was tried)
  std::vector<SynthEvaluation> evaluated;  // in the order they were simulated
  int generated = 0;                       // candidates of stage 1
  int skipped = 0;                         // candidates left untried at the time limit
  double search_seconds = 0;               // wall clock of the whole call, proof included
  double proof_seconds = 0;                // of which the winner's proof
  std::string proof;                       // how the winner was proven
};

// The candidates of stage 1 for a collective on `ranks` ranks of `cluster` (on `devices`,
// node-major, when given: a mesh axis' group), built-ins first.
std::vector<SynthCandidate> synth_candidates(const ClusterSpec& cluster,
                                             parallel::Collective collective, int ranks,
                                             const std::vector<int>& devices = {});

// Throws std::invalid_argument (a collective neither built-ins nor compositions implement,
// more ranks than devices, a time limit <= 0) or SimulationError.
SynthResult synthesize(const ClusterSpec& cluster, const parallel::CollectiveSpec& spec,
                       const SynthOptions& options = {});

// Proves `candidate` for `spec` as described above; the result says how ("checked at count
// N" or "checked at counts A and B (the count itself exceeds the checker)"), or the error
// (empty proof). Returns true on success.
bool prove_candidate(const SynthCandidate& candidate, const parallel::CollectiveSpec& spec,
                     std::string* proof, std::string* error);

}  // namespace spora::sim
