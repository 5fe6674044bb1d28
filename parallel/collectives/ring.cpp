// Ring algorithms: all-reduce, reduce-scatter, all-gather, over one or several channels.
//
// The p ranks form a ring group[0] -> group[1] -> ... -> group[p-1] -> group[0]. The data is
// cut into p blocks whose sizes differ by at most one (so any count works). In every hop each
// rank sends one block to its successor, so a phase of p-1 hops moves (p-1)/p of the data per
// rank: bandwidth-optimal, at the price of p-1 latencies.
//
//   reduce-scatter, p = 3, ring 0 -> 1 -> 2: hop k, the rank at position i sends block i-k-1
//
//            rank 0           rank 1           rank 2
//   hop 0    sends block 2    sends block 0    sends block 1     (one contribution)
//   hop 1    sends block 1    sends block 2    sends block 0     (two contributions)
//   end      owns block 0     owns block 1     owns block 2      (all three)
//
//   all-gather: hop k, position i forwards block i-k (hop 0: its own block)
//
// Channels (AlgorithmOptions::channels = C, NCCL's channels): the data is cut into C parts
// and part c runs its own ring, all C at once. The rings differ where the ranks span several
// nodes of g = ranks_per_node devices (node-major): channel c leaves each node from the last
// device of the c-th of C equal blocks of local devices, x_c = ceil((c+1) g / C) - 1, and
// enters the next node at x_c + 1 (mod g); inside a node it visits x_c + 1, x_c + 2, ...,
// x_c (mod g). A cluster whose device d uses NIC floor(d nics / g) (sim/platform.h) with
// C = nics therefore sends channel c out of NIC c and receives it on NIC c + 1: every NIC
// carries one channel each way, where one ring would load one NIC per node. Channel 0 of C = 1
// is the ring 0 -> 1 -> ... -> p-1. On one node all channels are rotations of that cycle.
//
//   g = 8, C = 4, node n:   channel 0: 2 3 4 5 6 7 0 1 | node n+1   (out: device 1, NIC 0)
//                           channel 1: 4 5 6 7 0 1 2 3 | node n+1   (out: device 3, NIC 1)
//
// 1. all-reduce = reduce-scatter + all-gather on the output buffer, per channel. Contributions
//    are read straight from the input: a rank's hop-0 send comes from its input, and each block
//    it will reduce into is first copied to the output, the copies one after another in the
//    order the hops need them, so they overlap the transfers (NCCL reads the input inside its
//    first reduction and has no copy at all). Block i-1 of position i is never copied: the
//    all-gather overwrites it.
// 2. reduce-scatter (input p*n, output n): the running partial sum travels through two
//    scratch slots of n elements per rank (receive into one while the other is being sent);
//    in the last hop it lands in the output. Each received piece is combined with the rank's
//    own input block at once, so chunked pieces pipeline.
// 3. all-gather (input n, output p*n): rank r copies its input to output block r and, in hop
//    0, sends it straight from the input.
#include <algorithm>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

namespace {

int mod(int a, int m) { return ((a % m) + m) % m; }

// Channel c's part [lo, hi) of n elements, and its ring.
struct Channel {
  std::int64_t lo, count;
  std::vector<int> group;
};

std::vector<Channel> channels(const CollectiveSpec& spec, const AlgorithmOptions& options,
                              std::int64_t n) {
  std::vector<Channel> out;
  const int c_count = std::max(1, options.channels);
  for (int c = 0; c < c_count; ++c)
    out.push_back({block_offset(n, c_count, c), block_size(n, c_count, c),
                   ring_channel_order(spec.ranks, options.ranks_per_node, c_count, c)});
  return out;
}

Schedule ring_reduce_scatter(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "ring", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (p == 1) {
    b.copy(0, input(0, n), output(0, n));
    return std::move(b).finish();
  }
  std::vector<Region> slots[2];
  for (int r = 0; r < p; ++r)
    for (int s = 0; s < 2 && p > 2; ++s) slots[s].push_back(b.allocate_scratch(r, n));

  for (const Channel& ch : channels(spec, options, n)) {
    const std::vector<int>& g = ch.group;
    // Channel part of rank r's block of the input, of a slot, of the output.
    auto in_block = [&](int rank) { return input(std::int64_t{rank} * n + ch.lo, ch.count); };
    auto part = [&](const Region& r) { return sub(r, ch.lo, ch.count); };
    for (int k = 0; k <= p - 2; ++k) {
      for (int i = 0; i < p; ++i) {
        const int from = g[i], to = g[mod(i + 1, p)];
        const Region src = k == 0 ? in_block(g[mod(i - 1, p)]) : part(slots[(k - 1) % 2][from]);
        const Region dst = k == p - 2 ? output(ch.lo, ch.count) : part(slots[k % 2][to]);
        const Region own = in_block(g[mod(i - k - 1, p)]);
        for (const Piece& piece : pieces(ch.count, b.chunks())) {
          b.send(from, to, sub(src, piece.offset, piece.count));
          b.recv(to, from, sub(dst, piece.offset, piece.count), false);
          b.reduce(to, sub(own, piece.offset, piece.count), sub(dst, piece.offset, piece.count));
        }
      }
    }
  }
  return std::move(b).finish();
}

Schedule ring_all_gather(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "ring", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  for (int r = 0; r < p; ++r) b.copy(r, input(0, n), output(std::int64_t{r} * n, n));
  for (const Channel& ch : channels(spec, options, n)) {
    const std::vector<int>& g = ch.group;
    auto out_block = [&](int rank) { return output(std::int64_t{rank} * n + ch.lo, ch.count); };
    for (int k = 0; k <= p - 2; ++k)
      for (int i = 0; i < p; ++i)
        b.transfer(g[i], k == 0 ? input(ch.lo, ch.count) : out_block(g[mod(i - k, p)]),
                   g[mod(i + 1, p)], out_block(g[mod(i - k, p)]));
  }
  return std::move(b).finish();
}

}  // namespace

void ring_reduce_scatter_inplace(ScheduleBuilder& b, const std::vector<int>& group, std::int64_t lo,
                                 std::int64_t hi, bool from_input) {
  const int g = static_cast<int>(group.size());
  auto block = [&](BufferKind buffer, int j) {
    j = mod(j, g);
    return Region{buffer, lo + block_offset(hi - lo, g, j), block_size(hi - lo, g, j)};
  };
  // Position i reduces into block i-k-2 in hop k: copy the blocks in that order, each after
  // the one before.
  if (from_input)
    for (int i = 0; i < g; ++i) {
      int previous = -1;
      for (int k = 0; k < std::max(g - 1, 1); ++k) {
        const int j = g == 1 ? 0 : i - k - 2;
        const int id = b.copy(group[i], block(BufferKind::Input, j), block(BufferKind::Output, j),
                              previous >= 0 ? std::vector<int>{previous} : std::vector<int>{});
        if (id >= 0) previous = id;
      }
    }
  for (int k = 0; k <= g - 2; ++k)
    for (int i = 0; i < g; ++i) {
      const BufferKind from = k == 0 && from_input ? BufferKind::Input : BufferKind::Output;
      b.transfer(group[i], block(from, i - k - 1), group[mod(i + 1, g)],
                 block(BufferKind::Output, i - k - 1), /*reduce=*/true);
    }
}

void ring_all_gather_inplace(ScheduleBuilder& b, const std::vector<int>& group, std::int64_t lo,
                             std::int64_t hi) {
  const int g = static_cast<int>(group.size());
  auto block = [&](int j) {
    j = mod(j, g);
    return output(lo + block_offset(hi - lo, g, j), block_size(hi - lo, g, j));
  };
  for (int k = 0; k <= g - 2; ++k)
    for (int i = 0; i < g; ++i)
      b.transfer(group[i], block(i - k), group[mod(i + 1, g)], block(i - k));
}

Schedule ring_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  switch (spec.collective) {
    case Collective::ReduceScatter:
      return ring_reduce_scatter(spec, options);
    case Collective::AllGather:
      return ring_all_gather(spec, options);
    default:
      break;
  }
  ScheduleBuilder b(spec, "ring", options);
  for (const Channel& ch : channels(spec, options, spec.count)) {
    ring_reduce_scatter_inplace(b, ch.group, ch.lo, ch.lo + ch.count, /*from_input=*/true);
    ring_all_gather_inplace(b, ch.group, ch.lo, ch.lo + ch.count);
  }
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
