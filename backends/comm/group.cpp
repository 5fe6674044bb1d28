// GroupView (group.h): peers translated to world ranks, everything else forwarded.
#include "backends/comm/group.h"

#include <fmt/format.h>

#include <algorithm>

namespace spora::comm {

GroupView::GroupView(Communicator& world, std::vector<std::int64_t> group)
    : world_(world), group_(std::move(group)) {
  std::vector<std::int64_t> sorted = group_;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.empty() || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
      sorted.front() < 0 || sorted.back() >= world.size())
    throw CommError(fmt::format("a group of {} ranks that are not distinct ranks of a world of {}",
                                group_.size(), world.size()));
  for (std::size_t i = 0; i < group_.size(); ++i)
    if (group_[i] == world.rank()) me_ = static_cast<int>(i);
  if (me_ < 0)
    throw CommError(fmt::format("world rank {} is not in the group it communicates in",
                                world.rank()));
}

int GroupView::world_rank(int peer) const {
  if (peer < 0 || peer >= size())
    throw CommError(fmt::format("peer {} is outside a group of {} ranks", peer, size()));
  return static_cast<int>(group_[static_cast<std::size_t>(peer)]);
}

Request GroupView::isend(const void* data, std::size_t bytes, int peer, int tag) {
  return world_.isend(data, bytes, world_rank(peer), tag);
}

Request GroupView::irecv(void* data, std::size_t bytes, int peer, int tag) {
  return world_.irecv(data, bytes, world_rank(peer), tag);
}

Request GroupView::irecv_reduce(void* data, std::size_t count, DType t, ReduceOp op, int peer,
                                int tag) {
  return world_.irecv_reduce(data, count, t, op, world_rank(peer), tag);
}

void GroupView::native(const CollectiveCall&) {
  throw CommError("a group view has no native collectives (run a schedule with the Executor)");
}

void GroupView::barrier() { throw CommError("a group view has no barrier"); }

}  // namespace spora::comm
