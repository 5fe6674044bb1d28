// Bruck's algorithms: all-gather and all-to-all in ceil(log2 p) rounds, for any rank count;
// and BlockRouter, the store-and-forward engine that Bruck's and the hypercube all-to-all
// (recursive_doubling.cpp) share.
//
// all-gather. In round k (s = 2^k), rank r sends the blocks it has, r .. r+s-1 (at most p-s
// of them), to r - s and receives r+s .. r+2s-1 from r + s. The blocks are kept directly in
// the output; a run of blocks that wraps past p - 1 travels as two messages.
//
//     p = 5, blocks held    start   s=1     s=2       s=4
//     r0                    0       0 1     0 1 2 3   all
//     r3                    3       3 4     3 4 0 1   all
//
// all-to-all. Block (s, d) must travel distance (d - s) mod p. In round k every rank sends to
// r + 2^k, in one message, all blocks it holds whose distance has bit k set, so a block hops
// along the binary digits of its distance and arrives after ceil(log2 p) rounds.
//
// BlockRouter keeps, for every rank, where each (source, destination) block currently lies
// (input, or a scratch area it was received into). A round packs the chosen blocks into one
// scratch message (unless they already lie back to back), sends it, and records the arrivals;
// finish() copies the blocks for the rank itself into output block `source`, merging runs.
#include <algorithm>
#include <stdexcept>

#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

BlockRouter::BlockRouter(ScheduleBuilder& b) : b_(b), held_(b.ranks()) {
  const std::int64_t n = b.count();
  for (int r = 0; r < b.ranks(); ++r)
    for (int d = 0; d < b.ranks(); ++d) held_[r].push_back({{r, d}, input(d * n, n)});
}

void BlockRouter::move(const std::vector<int>& to, const std::vector<std::vector<bool>>& chosen) {
  const int p = b_.ranks();
  const std::int64_t n = b_.count();
  std::vector<std::vector<Held>> outgoing(p), kept(p);
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < held_[r].size(); ++i)
      (chosen[r][i] ? outgoing[r] : kept[r]).push_back(held_[r][i]);

  for (int r = 0; r < p; ++r) {
    const std::vector<Held>& out = outgoing[r];
    if (out.empty()) continue;
    const std::int64_t size = static_cast<std::int64_t>(out.size()) * n;
    bool contiguous = true;
    for (std::size_t i = 1; i < out.size(); ++i)
      contiguous = contiguous && out[i].where.buffer == out[0].where.buffer &&
                   out[i].where.offset == out[0].where.offset + static_cast<std::int64_t>(i) * n;
    Region message = sub(out[0].where, 0, size);
    if (!contiguous) {
      message = b_.allocate_scratch(r, size);
      for (std::size_t i = 0; i < out.size(); ++i)
        b_.copy(r, out[i].where, sub(message, static_cast<std::int64_t>(i) * n, n));
    }
    const Region arrival = b_.allocate_scratch(to[r], size);
    b_.transfer(r, message, to[r], arrival);
    for (std::size_t i = 0; i < out.size(); ++i)
      kept[to[r]].push_back({out[i].block, sub(arrival, static_cast<std::int64_t>(i) * n, n)});
  }
  for (auto& list : kept)
    std::sort(list.begin(), list.end(), [](const Held& a, const Held& b) {
      return std::pair(a.block.src, a.block.dst) < std::pair(b.block.src, b.block.dst);
    });
  held_ = std::move(kept);
}

void BlockRouter::finish() {
  const std::int64_t n = b_.count();
  for (int r = 0; r < b_.ranks(); ++r) {
    const std::vector<Held>& list = held_[r];  // sorted by source
    for (std::size_t i = 0; i < list.size();) {
      if (list[i].block.dst != r) throw std::logic_error("block router: block left undelivered");
      std::size_t j = i + 1;  // extend a run that is contiguous on both sides
      while (j < list.size() && list[j].block.src == list[i].block.src + static_cast<int>(j - i) &&
             list[j].where.buffer == list[i].where.buffer &&
             list[j].where.offset == list[i].where.offset + static_cast<std::int64_t>(j - i) * n)
        ++j;
      const std::int64_t size = static_cast<std::int64_t>(j - i) * n;
      b_.copy(r, sub(list[i].where, 0, size), output(list[i].block.src * n, size));
      i = j;
    }
  }
}

namespace {

Schedule bruck_all_gather(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "bruck", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  for (int r = 0; r < p; ++r) b.copy(r, input(0, n), output(r * n, n));
  for (int s = 1; s < p; s *= 2) {
    const int cnt = std::min(s, p - s);
    for (int r = 0; r < p; ++r) {
      const int dst = (r - s + p) % p;
      if (s == 1) {  // only its own block: straight from the input
        b.transfer(r, input(0, n), dst, output(r * n, n));
        continue;
      }
      const int first = r, wrap = std::max(0, first + cnt - p);  // blocks past p - 1
      const Region head = output(first * n, (cnt - wrap) * n);
      b.transfer(r, head, dst, head);
      b.transfer(r, output(0, wrap * n), dst, output(0, wrap * n));
    }
  }
  return std::move(b).finish();
}

Schedule bruck_all_to_all(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "bruck", options);
  const int p = spec.ranks;
  BlockRouter router(b);
  std::vector<int> to(p);
  for (int k = 0; (1 << k) < p; ++k) {
    for (int r = 0; r < p; ++r) to[r] = (r + (1 << k)) % p;
    router.round(to, [&](int, BlockRouter::Block blk) {
      return ((((blk.dst - blk.src) % p + p) % p) >> k & 1) != 0;
    });
  }
  router.finish();
  return std::move(b).finish();
}

}  // namespace

Schedule bruck_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  return spec.collective == Collective::AllGather ? bruck_all_gather(spec, options)
                                                  : bruck_all_to_all(spec, options);
}

}  // namespace spora::parallel::detail
