// Composed schedules: the space `spora synth` searches (sim/synth.h), as a generator.
//
// A Composition views the p ranks as a grid of dimensions (dims[0] varies fastest; the product
// is p), optionally through a permutation: virtual rank v is physical rank perm[v]. The data
// is cut into lanes that run at once, each over its share; a lane is a list of phases, one per
// dimension of size > 1, and each phase runs inside the groups of ranks that differ only in
// that dimension's coordinate:
//
//   reduce-scatter   the lane's phases in order: a group's members end with 1/g of what they
//                    held, reduced over the group
//   all-gather       the lane's phases in reverse order: each member ends with what the whole
//                    group held
//   all-reduce       the reduce-scatter phases, then the all-gather phases
//   all-to-all       the lane's phases in order, each direct: a member sends each other
//                    member, in one message, what it holds for ranks of that member's
//                    coordinate (a dimension-wise all-to-all: g - 1 messages per phase instead
//                    of p - 1 in all, each item moved once per phase, repacked in scratch
//                    between phases)
//
// A phase is a ring (g - 1 hops to the next member by coordinate, or to the previous one when
// `reversed`) or direct (every member sends each other member its part at once: g - 1
// messages, received into scratch and then reduced, which uses every link of a full mesh).
//
//   dims 4x4x4, lanes (x, y, z), (y, z, x), (z, x, y), each also reversed: six lanes, and in
//   each lane's first phase the six directions of a 3-D torus' links carry one lane each.
//   dims 4x2, lanes (x direct, y ring): a mesh of 4 inside each group, a ring across groups.
//   dims 16, perm = ring_channel_order(16, 8, 2, c) for c = 0, 1: NCCL's two channels.
//
// The lanes' shares and the phases' parts are contiguous where the collective allows it. For
// all-reduce a lane takes a contiguous range of the n elements, cut into p equal parts in the
// order of its phases (the first phase's coordinate most significant), so every transfer is one
// region. For reduce-scatter and all-gather the blocks belong to ranks, so a lane takes the
// same sub-range of each rank's block, and a part is the blocks whose ranks share the
// coordinates of the phases done: one region per run of adjacent blocks. Reduce-scatter
// reduces in scratch laid out as its input (p * n per rank) and copies the rank's block out.
//
// Every transfer is cut into `chunks` pieces (ScheduleBuilder), which pipelines ring hops.
#pragma once

#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::parallel {

struct ComposedPhase {
  int dim = 0;
  bool direct = false;    // all-to-all exchange in the group instead of a ring
  bool reversed = false;  // ring: to the member of the previous coordinate
  friend bool operator==(const ComposedPhase&, const ComposedPhase&) = default;
};

struct ComposedLane {
  std::vector<ComposedPhase> phases;  // reduce-scatter order; one per dimension of size > 1
  friend bool operator==(const ComposedLane&, const ComposedLane&) = default;
};

// A tree packing (all-reduce only), Blink's idea with trees of one shape: `count` spanning
// trees over rotations of the (virtual) rank order, tree t starting at position t p / count;
// each reduces its share of the data to its root and broadcasts it back, every transfer cut
// into `chunks` pieces so the trees stream. Binary: NCCL's binary tree over the rotated order
// (count 2 with p even is close to its double binary tree); chain: a pipeline through the
// rotated order, rooted at its first rank.
enum class TreeShape : std::uint8_t { None, Binary, Chain };

struct Composition {
  std::vector<int> dims;            // product = ranks; dims[0] fastest
  std::vector<int> perm;            // virtual -> physical rank; empty = identity
  std::vector<ComposedLane> lanes;  // the data is split evenly among them
  int chunks = 1;
  TreeShape tree_shape = TreeShape::None;  // a tree packing instead of lanes (dims: {ranks})
  int trees = 0;
  friend bool operator==(const Composition&, const Composition&) = default;
};

// The collectives a Composition implements: all-reduce, reduce-scatter, all-gather, and
// all-to-all with direct phases only.
bool composable(Collective collective);

// Builds the schedule (algorithm name "composed"). Throws std::invalid_argument when the
// composition does not fit the spec (dims' product != ranks, perm not a permutation, a lane
// that misses a dimension of size > 1 or repeats one, no lane, chunks < 1) or the collective
// is not composable.
Schedule build_composed(const CollectiveSpec& spec, const Composition& composition);

// One line: "dims 4x4x4 lanes 0.1.2,1r.2r.0r chunks 2": a lane is its phases' dimensions in
// order, each followed by 'd' when direct and 'r' when a reversed ring; a tree packing is
// "dims 16 trees binary 4 chunks 8"; " perm 3,0,1,2" follows when there is a permutation.
// parse_composition reads it back (throws std::invalid_argument with the reason).
std::string describe_composition(const Composition& composition);
Composition parse_composition(const std::string& text);

// Lanes that start at each dimension in turn (rotations of `order`), each once per
// direction when `both_directions`; `direct[d]` picks the phase kind of dimension d.
std::vector<ComposedLane> rotated_lanes(const std::vector<int>& order, bool rotate,
                                        bool both_directions, const std::vector<bool>& direct);

}  // namespace spora::parallel
