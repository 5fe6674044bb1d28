// Collective schedules as data.
//
// A collective algorithm (ring all-reduce, Bruck all-to-all, ...) is written down once, as a
// Schedule: for every rank, a small DAG of steps over three flat buffers. The same object is
//   - proved correct by the symbolic checker (checker.h), with no execution,
//   - executed for real by the comm runtime (backends/comm/executor.h) over threads, MPI, NCCL,
//   - simulated by the SimGrid cluster simulator (sim/), step by step,
//   - printed and parsed back (text.h), so researchers can write their own.
//
// Buffers. Every rank owns an input buffer, an output buffer and a scratch buffer, addressed
// in *elements* (schedules are dtype-agnostic; bytes = elements x the element size chosen at
// execution). Their sizes follow from the collective (MPI / NCCL conventions, n = count):
//
//   collective       input (per rank)          output (per rank)
//   broadcast        n on root, 0 elsewhere    n
//   scatter          p*n on root, 0 elsewhere  n          (block r of root's input -> rank r)
//   gather           n                         p*n on root, 0 elsewhere
//   reduce           n                         n on root, 0 elsewhere
//   all-reduce       n                         n
//   all-gather       n                         p*n
//   reduce-scatter   p*n                       n          (block r of the reduction -> rank r)
//   all-to-all       p*n                       p*n        (block d of rank s -> block s of rank d)
//
// The scratch buffer has RankProgram::scratch_count elements. The input is read-only.
//
// Steps. Each rank runs a list of steps; `deps` are ids of earlier steps of the same rank
// (so list order is a topological order) that must complete before the step may start.
// Steps without a path between them may run concurrently, so every data hazard (read after
// write, write after read, write after write on overlapping regions) must be ordered by deps.
//
//   kind          peer   src           dst           effect
//   Send          yes    read          -             send src's elements to peer
//   Recv          yes    -             written       dst = message from peer
//   RecvReduce    yes    -             read+written  dst = dst (op) message from peer
//   Copy          -      read          written       dst = src
//   LocalReduce   -      read          read+written  dst = dst (op) src
//
// Matching. The k-th Send from rank a to rank b (in a's list order) matches the k-th Recv or
// RecvReduce on rank b whose peer is a (in b's list order); both have the same element count.
// Executors may implement either side as rendezvous (a Send completes only once its Recv
// was posted); the checker proves schedules deadlock-free under that strictest semantics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spora::parallel {

enum class Collective {
  Broadcast,
  Scatter,
  Gather,
  Reduce,
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
};

enum class ReduceOp { Sum, Max, Min, Prod };

// The built-in generators; `Native` means "the backend's own collective" and has no schedule.
enum class Algorithm {
  Ring,               // "ring"
  Tree,               // "tree": double binary tree (two complementary trees, half the data each)
  Binomial,           // "binomial"
  HalvingDoubling,    // "halving-doubling": Rabenseifner
  RecursiveDoubling,  // "recursive-doubling"
  Bruck,              // "bruck"
  Pairwise,           // "pairwise"
  Hierarchical,       // "hierarchical": nodes x devices, two levels
  Native,             // "native"
};

enum class BufferKind : std::uint8_t { Input, Output, Scratch };

// A contiguous range of one of the rank's three buffers, in elements.
struct Region {
  BufferKind buffer = BufferKind::Output;
  std::int64_t offset = 0;
  std::int64_t count = 0;

  std::int64_t end() const { return offset + count; }
  friend bool operator==(const Region&, const Region&) = default;
};

enum class StepKind : std::uint8_t { Send, Recv, RecvReduce, Copy, LocalReduce };

struct Step {
  int id = 0;  // == index in RankProgram::steps
  StepKind kind = StepKind::Copy;
  int peer = -1;          // Send, Recv, RecvReduce; -1 otherwise
  Region src;             // Send, Copy, LocalReduce (see the table above)
  Region dst;             // Recv, RecvReduce, Copy, LocalReduce
  std::vector<int> deps;  // ids of earlier steps on the same rank

  // The region the step transfers: src for Send, dst otherwise.
  const Region& data() const { return kind == StepKind::Send ? src : dst; }
  std::int64_t count() const { return data().count; }
  bool is_communication() const {
    return kind == StepKind::Send || kind == StepKind::Recv || kind == StepKind::RecvReduce;
  }
  friend bool operator==(const Step&, const Step&) = default;
};

struct RankProgram {
  std::int64_t scratch_count = 0;  // elements of scratch this rank needs
  std::vector<Step> steps;
  friend bool operator==(const RankProgram&, const RankProgram&) = default;
};

// What to compute, independent of how. `count` is n in the table above.
struct CollectiveSpec {
  Collective collective = Collective::AllReduce;
  ReduceOp op = ReduceOp::Sum;  // ignored by collectives that do not reduce
  int ranks = 1;
  std::int64_t count = 0;
  int root = 0;  // broadcast, scatter, gather, reduce
  friend bool operator==(const CollectiveSpec&, const CollectiveSpec&) = default;
};

// How a generator builds it.
struct AlgorithmOptions {
  int chunks = 1;          // pipelining: every transfer is split into this many pieces
  int ranks_per_node = 0;  // hierarchical: devices per node (0 = pick a divisor of ranks);
                           // ring with channels: devices per node (0 = all ranks on one node)
  int channels = 1;        // ring: independent rings, each over 1/channels of the data (NCCL's
                           // channels); see ring_channel_order in algorithms.h
  friend bool operator==(const AlgorithmOptions&, const AlgorithmOptions&) = default;
};

struct Schedule {
  CollectiveSpec spec;
  std::string algorithm;     // "ring", ..., or any name for a hand-written schedule
  AlgorithmOptions options;  // as given to the generator (informational for hand-written ones)
  std::vector<RankProgram> ranks;  // ranks.size() == spec.ranks

  std::int64_t input_count(int rank) const;  // buffer sizes, from the table above
  std::int64_t output_count(int rank) const;
  std::int64_t buffer_count(int rank, BufferKind buffer) const;
  std::size_t step_count() const;  // over all ranks
  friend bool operator==(const Schedule&, const Schedule&) = default;
};

// --- names, as used on the command line and in the text format ------------------------------

std::string_view collective_name(Collective c);  // "all-reduce", ...
std::string_view reduce_op_name(ReduceOp op);    // "sum", "max", "min", "prod"
std::string_view algorithm_name(Algorithm a);    // "ring", ..., "native"
std::string_view step_kind_name(StepKind k);     // "send", "recv", "recv-reduce", "copy", "reduce"
std::string_view buffer_name(BufferKind b);      // "input", "output", "scratch"
std::optional<Collective> parse_collective(std::string_view name);
std::optional<ReduceOp> parse_reduce_op(std::string_view name);
std::optional<Algorithm> parse_algorithm(std::string_view name);

bool is_reducing(Collective c);  // reduce, all-reduce, reduce-scatter
bool is_rooted(Collective c);    // broadcast, scatter, gather, reduce
std::vector<Collective> all_collectives();
std::vector<Algorithm> all_algorithms();  // Native included

}  // namespace spora::parallel
