// Ring algorithms: all-reduce, reduce-scatter, all-gather.
//
// The p ranks form a ring r -> r+1 (mod p). The data is cut into p blocks whose sizes differ
// by at most one (so any count works). In every hop each rank sends one block to its
// successor, so a phase of p-1 hops moves (p-1)/p of the data per rank: bandwidth-optimal,
// at the price of p-1 latencies.
//
//   reduce-scatter, p = 3: hop k, rank r sends block r-k-1 to r+1, who adds its own part
//
//            rank 0           rank 1           rank 2
//   hop 0    sends block 2    sends block 0    sends block 1     (one contribution)
//   hop 1    sends block 1    sends block 2    sends block 0     (two contributions)
//   end      owns block 0     owns block 1     owns block 2      (all three)
//
//   all-gather: hop k, rank r forwards block r-k (hop 0: its own block)
//
// 1. all-reduce = reduce-scatter + all-gather on the output buffer. Contributions are read
//    straight from the input: rank r's hop-0 send comes from its input, and each block it will
//    reduce into is first copied to the output. Block r-1 of rank r is never copied: the
//    all-gather overwrites it.
// 2. reduce-scatter (input p*n, output n): the running partial sum travels through two
//    scratch slots of n elements per rank (receive into one while the other is being sent);
//    in the last hop it lands in the output. Each received piece is combined with the rank's
//    own input block at once, so chunked pieces pipeline.
// 3. all-gather (input n, output p*n): rank r copies its input to output block r and, in hop
//    0, sends it straight from the input.
#include <numeric>

#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

namespace {

int mod(int a, int m) { return ((a % m) + m) % m; }

Schedule ring_reduce_scatter(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "ring", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  auto in_block = [&](int j) { return input(std::int64_t{mod(j, p)} * n, n); };
  if (p == 1) {
    b.copy(0, in_block(0), output(0, n));
    return std::move(b).finish();
  }
  std::vector<Region> slots[2];
  for (int r = 0; r < p; ++r)
    for (int s = 0; s < 2 && p > 2; ++s) slots[s].push_back(b.allocate_scratch(r, n));

  for (int k = 0; k <= p - 2; ++k) {
    for (int i = 0; i < p; ++i) {
      const int j = mod(i + 1, p);  // receiver; the block is (i - k - 1) = (j - k - 2)
      const Region src = k == 0 ? in_block(i - 1) : slots[(k - 1) % 2][i];
      const Region dst = k == p - 2 ? output(0, n) : slots[k % 2][j];
      const Region own = in_block(j - k - 2);
      for (const Piece& piece : pieces(n, b.chunks())) {
        b.send(i, j, sub(src, piece.offset, piece.count));
        b.recv(j, i, sub(dst, piece.offset, piece.count), false);
        b.reduce(j, sub(own, piece.offset, piece.count), sub(dst, piece.offset, piece.count));
      }
    }
  }
  return std::move(b).finish();
}

Schedule ring_all_gather(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "ring", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  auto out_block = [&](int j) { return output(std::int64_t{mod(j, p)} * n, n); };
  for (int r = 0; r < p; ++r) b.copy(r, input(0, n), out_block(r));
  for (int k = 0; k <= p - 2; ++k)
    for (int i = 0; i < p; ++i)
      b.transfer(i, k == 0 ? input(0, n) : out_block(i - k), mod(i + 1, p), out_block(i - k));
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
  if (from_input)
    for (int i = 0; i < g; ++i)
      for (int j = 0; j < g; ++j)
        if (g == 1 || j != mod(i - 1, g))
          b.copy(group[i], block(BufferKind::Input, j), block(BufferKind::Output, j));
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
  std::vector<int> everyone(spec.ranks);
  std::iota(everyone.begin(), everyone.end(), 0);
  ring_reduce_scatter_inplace(b, everyone, 0, spec.count, /*from_input=*/true);
  ring_all_gather_inplace(b, everyone, 0, spec.count);
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
