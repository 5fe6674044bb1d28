// Recursive halving-doubling all-reduce (Rabenseifner), for any rank count.
//
// Let q be the largest power of two <= p and rem = p - q.
//
// 1. Fold (only when p is not a power of two). Of the first 2*rem ranks, each even rank sends
//    its whole input to the odd rank above it, which adds it in and stands for both from now
//    on; the even ranks wait. The q remaining ranks get new ids v = 0..q-1.
// 2. Reduce-scatter by recursive halving. The buffer is cut into q blocks. In round d = q/2,
//    q/4, ..., 1, rank v exchanges with v ^ d: it keeps the half of its current block range on
//    its side of bit d, sends the other half, and adds the partner's copy of the kept half.
//        q = 4:   [0 1 2 3]  -d=2->  v0,v1 keep [0 1]  v2,v3 keep [2 3]
//                            -d=1->  v0: [0]  v1: [1]  v2: [2]  v3: [3]   (fully reduced)
// 3. All-gather by recursive doubling: the same rounds in reverse order; each rank sends the
//    range it holds and receives its partner's, doubling its range every round.
// 4. Unfold: each odd rank of the first 2*rem sends the result to the even rank below it.
//
// Every rank sends and receives about 2n(q-1)/q elements in 2 log2 q rounds (plus n twice for
// the fold): bandwidth-optimal like the ring, with logarithmic latency.
#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

Schedule halving_doubling_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "halving-doubling", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  int q = 1;
  while (q * 2 <= p) q *= 2;
  const int rem = p - q;
  auto real = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
  // Elements of blocks [first, last) when n is cut into q blocks.
  auto blocks = [&](int first, int last) {
    const std::int64_t lo = block_offset(n, q, first);
    return output(lo, block_offset(n, q, last) - lo);
  };

  // 1. Fold.
  for (int r = 0; r < p; ++r)
    if (!(r < 2 * rem && r % 2 == 0)) b.copy(r, input(0, n), output(0, n));
  for (int r = 0; r < 2 * rem; r += 2) b.transfer(r, input(0, n), r + 1, output(0, n), true);

  // 2. Reduce-scatter by recursive halving; remember each round's (kept, sent) ranges.
  struct Range {
    int first, last;
  };
  std::vector<Range> current(q, Range{0, q});
  std::vector<std::vector<std::pair<Range, Range>>> rounds(q);
  for (int d = q / 2; d >= 1; d /= 2) {
    for (int v = 0; v < q; ++v) {
      const Range cur = current[v];
      const int mid = (cur.first + cur.last) / 2;
      const Range lower{cur.first, mid}, upper{mid, cur.last};
      const bool low_side = (v & d) == 0;
      rounds[v].emplace_back(low_side ? lower : upper, low_side ? upper : lower);
    }
    for (int v = 0; v < q; ++v) {
      const int w = v ^ d;
      const Range sent = rounds[v].back().second;  // == what w keeps
      b.transfer(real(v), blocks(sent.first, sent.last), real(w), blocks(sent.first, sent.last),
                 true);
    }
    for (int v = 0; v < q; ++v) current[v] = rounds[v].back().first;
  }

  // 3. All-gather by recursive doubling: undo the rounds.
  for (std::size_t i = rounds.empty() ? 0 : rounds[0].size(); i-- > 0;) {
    const int d = q >> (i + 1);
    for (int v = 0; v < q; ++v) {
      const Range kept = rounds[v][i].first;
      b.transfer(real(v), blocks(kept.first, kept.last), real(v ^ d),
                 blocks(kept.first, kept.last));
    }
  }

  // 4. Unfold.
  for (int r = 0; r < 2 * rem; r += 2) b.transfer(r + 1, output(0, n), r, output(0, n));
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
