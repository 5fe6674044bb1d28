// The collective commands' arguments, shared by `spora coll`, `spora sim-coll` and `spora
// synth`: message sizes nccl-tests style (`8`, `1K`, `64M`, `1G`, ranges `8:64M` stepped by a
// factor), `--op` and `--algo`, and nccl-tests' size and bus-bandwidth conventions. Errors
// throw std::invalid_argument with a message for the user.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/schedule.h"

namespace spora::tools {

inline std::int64_t parse_size(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("'{}' is not a size (e.g. 8, 1K, 64M, 1G)", text));
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024;
  else if (unit == "M" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (!unit.empty() && unit != "B")
    throw std::invalid_argument(fmt::format("unknown size unit in '{}'", text));
  if (value < 0) throw std::invalid_argument(fmt::format("size '{}' is negative", text));
  return static_cast<std::int64_t>(value * scale);
}

// "lo:hi" -> lo, lo*factor, ... up to hi; "n" -> {n}.
inline std::vector<std::int64_t> parse_sizes(const std::string& text, double factor) {
  const auto colon = text.find(':');
  const std::int64_t lo = parse_size(text.substr(0, colon));
  const std::int64_t hi = colon == std::string::npos ? lo : parse_size(text.substr(colon + 1));
  if (hi < lo) throw std::invalid_argument(fmt::format("--sizes {}: the maximum is below the minimum", text));
  if (factor <= 1 && hi > lo) throw std::invalid_argument("--factor must be greater than 1");
  std::vector<std::int64_t> out;
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * 1.0000001; s *= factor) {
    out.push_back(static_cast<std::int64_t>(s));
    if (lo == 0 || hi == lo) break;
  }
  return out;
}

// --op NAME.
inline parallel::Collective collective_arg(const std::string& op) {
  const auto c = parallel::parse_collective(op);
  if (!c)
    throw std::invalid_argument(fmt::format(
        "unknown --op '{}' (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast, reduce, "
        "gather, scatter)",
        op));
  return *c;
}

// --algo NAME for collective c; `native` (the backend's own implementation) only where allowed.
inline parallel::Algorithm algorithm_arg(const std::string& algo, parallel::Collective c,
                                         bool allow_native) {
  const auto a = parallel::parse_algorithm(algo);
  if (!a || (*a == parallel::Algorithm::Native && !allow_native))
    throw std::invalid_argument(fmt::format(
        "unknown --algo '{}' (ring, tree, binomial, halving-doubling, recursive-doubling, bruck, "
        "pairwise, hierarchical{})",
        algo, allow_native ? ", native" : ""));
  if (!parallel::supports(*a, c)) {
    std::string list;
    for (parallel::Collective s : parallel::supported_collectives(*a))
      list += (list.empty() ? "" : ", ") + std::string(parallel::collective_name(s));
    throw std::invalid_argument(fmt::format("--algo {} does not implement {} (it implements: {})",
                                            algo, parallel::collective_name(c), list));
  }
  return *a;
}

// nccl-tests' sizes: the whole buffer for all-reduce, broadcast and reduce, all ranks' blocks
// together for the others.
inline bool whole_buffer(parallel::Collective c) {
  return c == parallel::Collective::AllReduce || c == parallel::Collective::Broadcast ||
         c == parallel::Collective::Reduce;
}

// nccl-tests' bus bandwidth = algorithm bandwidth x this factor.
inline double bus_factor(parallel::Collective c, int ranks) {
  const double n = ranks;
  if (c == parallel::Collective::AllReduce) return 2 * (n - 1) / n;
  if (c == parallel::Collective::Broadcast || c == parallel::Collective::Reduce) return 1;
  return (n - 1) / n;
}

}  // namespace spora::tools
