// ScheduleBuilder: what every generator in this folder writes schedules with.
//
// Generators think in *transfers* ("rank a sends this region to rank b, who reduces it into
// that region") and local copies/reductions; the builder turns them into per-rank steps and
// takes care of three things no generator should repeat:
//
//   1. Matching. transfer() emits the Send on the sender and the Recv on the receiver at the
//      same time, so the k-th send a->b always meets the k-th receive on b from a.
//   2. Dependencies. Each rank keeps, per buffer, an interval map of who last wrote and who
//      has read each element range since. A new step depends on the last writer of what it
//      reads (RAW) and on the last writer and readers of what it writes (WAW, WAR). So a
//      generator lists steps in program order and never writes a dependency by hand; steps
//      that touch disjoint data stay independent and may run concurrently.
//   3. Chunking. Every transfer is split into AlgorithmOptions::chunks nearly equal pieces;
//      with per-piece dependencies (2.), piece j of hop k+1 waits only for piece j of hop k,
//      which is pipelining.
//
// Empty regions produce no step (the call returns -1), so generators need no special case
// for count 0 or for blocks that round down to nothing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::parallel::detail {

// [offset, offset + count) of block i when `total` elements are cut into `parts` blocks whose
// sizes differ by at most one (the first total % parts blocks get the extra element).
std::int64_t block_offset(std::int64_t total, int parts, int i);
std::int64_t block_size(std::int64_t total, int parts, int i);

// The pieces [offset, offset + count) that a transfer of `count` elements is chunked into.
struct Piece {
  std::int64_t offset, count;
};
std::vector<Piece> pieces(std::int64_t count, int chunks);

inline Region input(std::int64_t offset, std::int64_t count) {
  return {BufferKind::Input, offset, count};
}
inline Region output(std::int64_t offset, std::int64_t count) {
  return {BufferKind::Output, offset, count};
}
inline Region scratch(std::int64_t offset, std::int64_t count) {
  return {BufferKind::Scratch, offset, count};
}
// The sub-region [from, from + count) of r, relative to r's start.
inline Region sub(const Region& r, std::int64_t from, std::int64_t count) {
  return {r.buffer, r.offset + from, count};
}

class ScheduleBuilder {
 public:
  ScheduleBuilder(const CollectiveSpec& spec, std::string algorithm,
                  const AlgorithmOptions& options);

  int ranks() const { return spec_.ranks; }
  int chunks() const { return chunks_; }
  std::int64_t count() const { return spec_.count; }
  const CollectiveSpec& spec() const { return spec_; }

  // Moves src (on rank `from`) to dst (on rank `to`), overwriting dst or, with reduce, combining
  // into it; split into `chunks` pieces. from == to becomes a local copy/reduce.
  void transfer(int from, const Region& src, int to, const Region& dst, bool reduce = false);

  // Local steps; return the step id, or -1 for an empty region.
  int copy(int rank, const Region& src, const Region& dst, const std::vector<int>& deps = {});
  int reduce(int rank, const Region& src, const Region& dst, const std::vector<int>& deps = {});

  // Single (unchunked) communication steps, for generators that order them explicitly.
  int send(int rank, int peer, const Region& src, const std::vector<int>& deps = {});
  int recv(int rank, int peer, const Region& dst, bool reduce, const std::vector<int>& deps = {});

  // Reserves `count` fresh scratch elements on `rank` and returns their region.
  Region allocate_scratch(int rank, std::int64_t count);

  Schedule finish() &&;

 private:
  struct Segment {
    std::int64_t end = 0;
    int writer = -1;
    std::vector<int> readers;
  };
  using Segments = std::map<std::int64_t, Segment>;  // start -> segment; covers [0, inf)

  int add_step(int rank, Step step, const std::vector<int>& extra_deps);
  void access(int rank, const Region& region, bool reads, bool writes, int step,
              std::vector<int>& deps);
  static Segments::iterator split(Segments& segs, std::int64_t at);

  CollectiveSpec spec_;
  Schedule schedule_;
  int chunks_ = 1;
  // hazards_[rank][buffer]; the input is read-only and needs no tracking.
  std::vector<std::array<Segments, 2>> hazards_;
};

}  // namespace spora::parallel::detail
