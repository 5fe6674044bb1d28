// Recursive doubling: all-gather and all-to-all in log2 rounds, for any rank count.
//
// Let q be the largest power of two <= p and rem = p - q. When p is not a power of two, the
// first 2*rem ranks fold in pairs: the even rank hands its data to the odd rank above it, the
// q remaining ranks (new ids v = 0..q-1) run the power-of-two algorithm, and at the end each
// odd rank hands the even one its result. Virtual rank v stands for real ranks {2v, 2v+1}
// when v < rem and for rank v + rem otherwise -- always a run of consecutive real ranks.
//
// all-gather (hypercube exchange): in round d = 1, 2, 4, ..., q/2, v swaps everything it has
// with v ^ d, doubling its run of blocks; the run is contiguous in the output, so each round is
// one message each way.
//
//     q = 4, blocks held       start   d=1     d=2
//     v0                       0       0 1     0 1 2 3
//     v1                       1       0 1     0 1 2 3
//     v2                       2       2 3     0 1 2 3
//     v3                       3       2 3     0 1 2 3
//
// all-to-all (hypercube routing): block (s, d) travels from s to d by fixing one bit of the
// virtual destination per round: in round bit, v sends v ^ bit every block it holds whose
// destination differs from v in that bit. Each round moves about half of the held blocks,
// packed into one message (BlockRouter, bruck.cpp); log2 q rounds instead of p-1, at the
// price of sending each block up to log2 q times.
#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

namespace {

struct Fold {
  int p, q = 1, rem = 0;
  explicit Fold(int ranks) : p(ranks) {
    while (q * 2 <= p) q *= 2;
    rem = p - q;
  }
  int real(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  int virt(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  bool folded_away(int r) const { return r < 2 * rem && r % 2 == 0; }
  int first_block(int v) const { return v < rem ? 2 * v : v + rem; }  // first_block(q) == p
};

Schedule rd_all_gather(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "recursive-doubling", options);
  const Fold f(spec.ranks);
  const std::int64_t n = spec.count;
  auto run = [&](int first_v, int last_v) {  // output elements of virtual ranks [first, last)
    const std::int64_t lo = f.first_block(first_v) * n;
    return output(lo, f.first_block(last_v) * n - lo);
  };
  for (int r = 0; r < f.p; ++r) b.copy(r, input(0, n), output(r * n, n));
  for (int r = 0; r < 2 * f.rem; r += 2) b.transfer(r, input(0, n), r + 1, output(r * n, n));
  for (int d = 1; d < f.q; d *= 2)
    for (int v = 0; v < f.q; ++v) {
      const int base = v & ~(d - 1);
      b.transfer(f.real(v), run(base, base + d), f.real(v ^ d), run(base, base + d));
    }
  for (int e = 0; e < 2 * f.rem; e += 2) {  // everything but e's own block
    b.transfer(e + 1, output(0, e * n), e, output(0, e * n));
    b.transfer(e + 1, output((e + 1) * n, (f.p - e - 1) * n), e,
               output((e + 1) * n, (f.p - e - 1) * n));
  }
  return std::move(b).finish();
}

Schedule rd_all_to_all(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "recursive-doubling", options);
  const Fold f(spec.ranks);
  BlockRouter router(b);
  std::vector<int> to(f.p, -1);
  for (int r = 0; r < 2 * f.rem; r += 2) to[r] = r + 1;
  router.round(to, [](int, BlockRouter::Block) { return true; });
  for (int bit = 1; bit < f.q; bit *= 2) {
    for (int r = 0; r < f.p; ++r) to[r] = f.folded_away(r) ? -1 : f.real(f.virt(r) ^ bit);
    router.round(to, [&](int r, BlockRouter::Block blk) {
      return ((f.virt(blk.dst) ^ f.virt(r)) & bit) != 0;
    });
  }
  for (int r = 0; r < f.p; ++r) to[r] = r < 2 * f.rem && r % 2 == 1 ? r - 1 : -1;
  router.round(to, [](int r, BlockRouter::Block blk) { return blk.dst == r - 1; });
  router.finish();
  return std::move(b).finish();
}

}  // namespace

Schedule recursive_doubling_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  return spec.collective == Collective::AllGather ? rd_all_gather(spec, options)
                                                  : rd_all_to_all(spec, options);
}

}  // namespace spora::parallel::detail
