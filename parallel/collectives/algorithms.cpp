#include "parallel/collectives/algorithms.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/collectives/generators.h"

namespace spora::parallel {

bool supports(Algorithm algorithm, Collective c) {
  using C = Collective;
  switch (algorithm) {
    case Algorithm::Ring:
      return c == C::AllReduce || c == C::AllGather || c == C::ReduceScatter;
    case Algorithm::Tree:
    case Algorithm::Binomial:
      return c == C::AllReduce || c == C::Broadcast || c == C::Reduce || c == C::Gather ||
             c == C::Scatter;
    case Algorithm::HalvingDoubling:
      return c == C::AllReduce;
    case Algorithm::RecursiveDoubling:
    case Algorithm::Bruck:
      return c == C::AllGather || c == C::AllToAll;
    case Algorithm::Pairwise:
      return c == C::AllToAll;
    case Algorithm::Hierarchical:
      return c == C::AllReduce;
    case Algorithm::Native:
      return true;
  }
  return false;
}

std::vector<Collective> supported_collectives(Algorithm algorithm) {
  std::vector<Collective> out;
  for (Collective c : all_collectives())
    if (supports(algorithm, c)) out.push_back(c);
  return out;
}

int default_ranks_per_node(int ranks) {
  for (int d = 1; d <= ranks; ++d)
    if (ranks % d == 0 && d * d >= ranks) return d;
  return ranks;
}

std::vector<int> ring_channel_order(int ranks, int ranks_per_node, int channels, int c) {
  if (channels == 1 && c == 0) {
    std::vector<int> order(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) order[static_cast<std::size_t>(r)] = r;
    return order;
  }
  const int g = ranks_per_node > 0 ? ranks_per_node : ranks;
  if (ranks % g != 0)
    throw std::invalid_argument("ring: ranks_per_node " + std::to_string(g) + " does not divide " +
                                std::to_string(ranks) + " ranks");
  if (channels < 1 || c < 0 || c >= channels)
    throw std::invalid_argument("ring: channel " + std::to_string(c) + " of " +
                                std::to_string(channels));
  const int exit =
      static_cast<int>((static_cast<long long>(c + 1) * g + channels - 1) / channels) - 1;
  std::vector<int> order;
  for (int node = 0; node < ranks / g; ++node)
    for (int k = 1; k <= g; ++k) order.push_back(node * g + (exit + k) % g);
  return order;
}

Schedule build_schedule(Algorithm algorithm, const CollectiveSpec& spec,
                        const AlgorithmOptions& options) {
  const std::string what =
      std::string(algorithm_name(algorithm)) + " " + std::string(collective_name(spec.collective));
  if (algorithm == Algorithm::Native)
    throw std::invalid_argument("native collectives have no schedule: the backend runs them");
  if (!supports(algorithm, spec.collective))
    throw std::invalid_argument("algorithm " + std::string(algorithm_name(algorithm)) +
                                " does not implement " +
                                std::string(collective_name(spec.collective)));
  if (spec.ranks < 1) throw std::invalid_argument(what + ": ranks must be >= 1");
  if (spec.count < 0) throw std::invalid_argument(what + ": count must be >= 0");
  if (spec.root < 0 || spec.root >= spec.ranks)
    throw std::invalid_argument(what + ": root " + std::to_string(spec.root) + " is not a rank");
  if (options.chunks < 1) throw std::invalid_argument(what + ": chunks must be >= 1");
  if (options.channels < 1) throw std::invalid_argument(what + ": channels must be >= 1");
  if (options.channels > 1 && algorithm != Algorithm::Ring)
    throw std::invalid_argument(what + ": channels apply to ring only");
  switch (algorithm) {
    case Algorithm::Ring:
      return detail::ring_schedule(spec, options);
    case Algorithm::Tree:
      return detail::tree_schedule(spec, options, /*double_binary=*/true);
    case Algorithm::Binomial:
      return detail::tree_schedule(spec, options, /*double_binary=*/false);
    case Algorithm::HalvingDoubling:
      return detail::halving_doubling_schedule(spec, options);
    case Algorithm::RecursiveDoubling:
      return detail::recursive_doubling_schedule(spec, options);
    case Algorithm::Bruck:
      return detail::bruck_schedule(spec, options);
    case Algorithm::Pairwise:
      return detail::pairwise_schedule(spec, options);
    case Algorithm::Hierarchical:
      return detail::hierarchical_schedule(spec, options);
    case Algorithm::Native:
      break;
  }
  throw std::logic_error("unreachable");
}

}  // namespace spora::parallel
