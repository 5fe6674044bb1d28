// Internal: one entry point per algorithm family (see algorithms.h for the table), plus the
// ring and tree building blocks that `hierarchical` composes. Each generator may assume the
// spec was validated and that the algorithm supports the collective.
#pragma once

#include <vector>

#include "parallel/collectives/builder.h"

namespace spora::parallel::detail {

Schedule ring_schedule(const CollectiveSpec&, const AlgorithmOptions&);
Schedule tree_schedule(const CollectiveSpec&, const AlgorithmOptions&, bool double_binary);
Schedule halving_doubling_schedule(const CollectiveSpec&, const AlgorithmOptions&);
Schedule recursive_doubling_schedule(const CollectiveSpec&, const AlgorithmOptions&);
Schedule bruck_schedule(const CollectiveSpec&, const AlgorithmOptions&);
Schedule pairwise_schedule(const CollectiveSpec&, const AlgorithmOptions&);
Schedule hierarchical_schedule(const CollectiveSpec&, const AlgorithmOptions&);

// Ring building blocks over the output buffer's elements [lo, hi), on the ring
// group[0] -> group[1] -> ... -> group[g-1] -> group[0]. The range is cut into g blocks;
// block i belongs to group[i].
//   reduce-scatter: afterwards group[i]'s output block i holds the reduction over the group.
//     from_input: each rank's contribution is still in its input buffer (same offsets); the
//     output is filled on the way. Otherwise the output already holds the contributions.
//   all-gather: group[i]'s block i is final; afterwards every member has every block.
void ring_reduce_scatter_inplace(ScheduleBuilder& b, const std::vector<int>& group, std::int64_t lo,
                                 std::int64_t hi, bool from_input);
void ring_all_gather_inplace(ScheduleBuilder& b, const std::vector<int>& group, std::int64_t lo,
                             std::int64_t hi);

// All-reduce of output elements [lo, hi) over one rooted spanning tree (`parent[r]` is r's
// parent, -1 at the root): reduce to the root, then broadcast back (tree.cpp). Several trees
// on disjoint ranges run side by side (a tree packing).
void tree_all_reduce_range(ScheduleBuilder& b, const std::vector<int>& parent, std::int64_t lo,
                           std::int64_t hi);
// NCCL's binary tree over positions 0..p-1 rooted at 0: the parent of position r, -1 at 0.
int binary_tree_parent(int p, int r);

// All-to-all by store-and-forward of (source, destination) blocks; shared by bruck and
// recursive-doubling (bruck.cpp).
class BlockRouter {
 public:
  struct Block {
    int src = 0, dst = 0;
  };
  BlockRouter(ScheduleBuilder& b);
  // One round: every rank r with to[r] >= 0 sends to to[r], in one message, the blocks it
  // holds for which pick(r, block) is true (packing them into scratch when not contiguous).
  template <typename Pick>
  void round(const std::vector<int>& to, Pick pick) {
    std::vector<std::vector<bool>> chosen(held_.size());
    for (std::size_t r = 0; r < held_.size(); ++r)
      for (const Held& h : held_[r])
        chosen[r].push_back(to[r] >= 0 && pick(static_cast<int>(r), h.block));
    move(to, chosen);
  }
  // Copies every block (s, r) that rank r holds into its output block s.
  void finish();

 private:
  struct Held {
    Block block;
    Region where;
  };
  void move(const std::vector<int>& to, const std::vector<std::vector<bool>>& chosen);
  ScheduleBuilder& b_;
  std::vector<std::vector<Held>> held_;  // per rank, sorted by (src, dst)
};

}  // namespace spora::parallel::detail
