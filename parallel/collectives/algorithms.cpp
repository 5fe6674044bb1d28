#include "parallel/collectives/algorithms.h"

#include <stdexcept>
#include <string>

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
