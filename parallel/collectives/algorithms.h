// The built-in collective algorithms, as schedule generators.
//
//   algorithm            collectives                                        file
//   ring                 all-reduce, all-gather, reduce-scatter             ring.cpp
//   tree                 all-reduce, broadcast, reduce, gather, scatter     tree.cpp
//   binomial             all-reduce, broadcast, reduce, gather, scatter     tree.cpp
//   halving-doubling     all-reduce                                         halving_doubling.cpp
//   recursive-doubling   all-gather, all-to-all                             recursive_doubling.cpp
//   bruck                all-gather, all-to-all                             bruck.cpp
//   pairwise             all-to-all                                         pairwise.cpp
//   hierarchical         all-reduce (nodes x devices)                       hierarchical.cpp
//   native               all eight, by the backend itself (no schedule)     backends/comm/
//
// Every generator handles any rank count >= 1 (non-powers of two included), any count >= 0
// (not necessarily divisible by the rank count) and any root, and every schedule it returns
// passes the symbolic checker (checker.h) -- tests/collectives proves that for 1..64 ranks.
// AlgorithmOptions::chunks pipelines every transfer; ranks_per_node shapes `hierarchical`;
// channels runs `ring` as that many rings over parts of the data (ring.cpp).
#pragma once

#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::parallel {

bool supports(Algorithm algorithm, Collective collective);
std::vector<Collective> supported_collectives(Algorithm algorithm);

// Builds the schedule. Throws std::invalid_argument for an unsupported pair, for Native (which
// has no schedule), for invalid specs (ranks < 1, count < 0, root out of range), for a
// ranks_per_node that does not divide the rank count, and for channels < 1 or channels > 1
// with an algorithm other than ring.
Schedule build_schedule(Algorithm algorithm, const CollectiveSpec& spec,
                        const AlgorithmOptions& options = {});

// Devices per node used by `hierarchical` when options.ranks_per_node is 0: the smallest
// divisor d of ranks with d * d >= ranks (8 -> 4 x 2 nodes, 6 -> 3 x 2, a prime -> 1 node).
int default_ranks_per_node(int ranks);

// The ring of channel c of `channels` over `ranks` ranks in nodes of `ranks_per_node`
// (0: one node), as the ranks in ring order (ring.cpp draws it): in every node it visits
// x + 1, ..., x (local devices, mod g) and leaves from x = ceil((c+1) g / channels) - 1.
// Channel 0 of 1 is 0, 1, ..., ranks-1 (whatever ranks_per_node). Throws std::invalid_argument when
// ranks_per_node does not divide ranks (channels > 1) or c is not a channel.
std::vector<int> ring_channel_order(int ranks, int ranks_per_node, int channels, int c);

}  // namespace spora::parallel
