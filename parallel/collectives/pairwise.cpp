// Pairwise-exchange all-to-all.
//
// p - 1 rounds; in round k (1 <= k < p) rank r sends its block for r + k straight from its
// input and receives the block of r - k straight into its output (block r is a local copy):
//
//     round 1:  0 -> 1 -> 2 -> 3 -> 0        round 2:  0 -> 2, 1 -> 3, 2 -> 0, 3 -> 1
//
// Each rank talks to one peer in each direction per round. The rounds are ordered with
// explicit dependencies (round k starts when the rank's round k-1 transfers are done), which
// is what distinguishes this from posting all p - 1 messages at once: it bounds the number of
// messages in flight and spreads the traffic evenly over the network.
#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

Schedule pairwise_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options) {
  ScheduleBuilder b(spec, "pairwise", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  for (int r = 0; r < p; ++r) b.copy(r, input(r * n, n), output(r * n, n));
  std::vector<std::vector<int>> previous(p), current(p);
  for (int k = 1; k < p; ++k) {
    for (int r = 0; r < p; ++r) {
      const int to = (r + k) % p;
      for (const Piece& piece : pieces(n, b.chunks())) {
        current[r].push_back(b.send(r, to, input(to * n + piece.offset, piece.count), previous[r]));
        current[to].push_back(
            b.recv(to, r, output(r * n + piece.offset, piece.count), false, previous[to]));
      }
    }
    previous.swap(current);
    for (auto& ids : current) ids.clear();
  }
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
