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
// AlgorithmOptions::chunks pipelines every transfer; ranks_per_node shapes `hierarchical`.
#pragma once

#include <vector>

#include "parallel/collectives/schedule.h"

namespace spora::parallel {

bool supports(Algorithm algorithm, Collective collective);
std::vector<Collective> supported_collectives(Algorithm algorithm);

// Builds the schedule. Throws std::invalid_argument for an unsupported pair, for Native (which
// has no schedule), for invalid specs (ranks < 1, count < 0, root out of range) and for a
// ranks_per_node that does not divide the rank count.
Schedule build_schedule(Algorithm algorithm, const CollectiveSpec& spec,
                        const AlgorithmOptions& options = {});

// Devices per node used by `hierarchical` when options.ranks_per_node is 0: the smallest
// divisor d of ranks with d * d >= ranks (8 -> 4 x 2 nodes, 6 -> 3 x 2, a prime -> 1 node).
int default_ranks_per_node(int ranks);

}  // namespace spora::parallel
