#include "sim/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "sim/isolation.h"

namespace spora::sim {

using parallel::Algorithm;
using parallel::Collective;
using parallel::CollectiveSpec;
using parallel::Composition;
using parallel::Schedule;

std::string SynthCandidate::label() const {
  if (!builtin) return "composed " + parallel::describe_composition(composition);
  std::string out =
      fmt::format("{} chunks={}", parallel::algorithm_name(algorithm), options.chunks);
  if (options.channels > 1) out += fmt::format(" channels={}", options.channels);
  if (options.ranks_per_node > 0) out += fmt::format(" ranks-per-node={}", options.ranks_per_node);
  return out;
}

Schedule SynthCandidate::build(const CollectiveSpec& spec) const {
  if (!builtin) return parallel::build_composed(spec, composition);
  return parallel::build_schedule(algorithm, spec, options);
}

SynthCandidate parse_synth_candidate(const std::string& label) {
  SynthCandidate c;
  if (label.rfind("composed ", 0) == 0) {
    c.builtin = false;
    c.composition = parallel::parse_composition(label.substr(9));
    return c;
  }
  std::istringstream in(label);
  std::string name, field;
  in >> name;
  const auto algorithm = parallel::parse_algorithm(name);
  if (!algorithm || *algorithm == Algorithm::Native)
    throw std::invalid_argument("synthesized schedule label: unknown algorithm '" + name + "'");
  c.algorithm = *algorithm;
  while (in >> field) {
    const auto eq = field.find('=');
    const std::string key = field.substr(0, eq),
                      value = eq == std::string::npos ? "" : field.substr(eq + 1);
    if (value.empty() || value.size() > 6 || !std::all_of(value.begin(), value.end(), ::isdigit))
      throw std::invalid_argument("synthesized schedule label: bad field '" + field + "'");
    const int v = std::stoi(value);
    if (key == "chunks")
      c.options.chunks = v;
    else if (key == "channels")
      c.options.channels = v;
    else if (key == "ranks-per-node")
      c.options.ranks_per_node = v;
    else
      throw std::invalid_argument("synthesized schedule label: unknown field '" + key + "'");
  }
  return c;
}

namespace {

// Ordered factorisations used as grids, dimensions of size 1 dropped.
std::vector<int> without_ones(std::vector<int> dims) {
  std::erase(dims, 1);
  return dims;
}

// Ranks per node of a group on `devices` (node-major, the same number on every node it
// touches), or 0 when they are spread unevenly; the whole node's devices when there is no map.
int group_per_node(const ClusterSpec& cluster, int ranks, const std::vector<int>& devices) {
  if (devices.empty()) return cluster.devices_per_node;
  std::map<int, int> per_node;
  for (int d : devices) ++per_node[d / cluster.devices_per_node];
  const int c = per_node.begin()->second;
  for (const auto& [node, count] : per_node)
    if (count != c) return 0;
  return per_node.size() == 1 && ranks < cluster.devices_per_node ? ranks : c;
}

std::vector<std::vector<int>> grids(const ClusterSpec& cluster, int ranks,
                                    const std::vector<int>& devices) {
  std::vector<std::vector<int>> out;
  auto add = [&](std::vector<int> dims) {
    dims = without_ones(std::move(dims));
    if (dims.empty()) return;
    if (std::accumulate(dims.begin(), dims.end(), 1, std::multiplies<>()) != ranks) return;
    if (std::find(out.begin(), out.end(), dims) == out.end()) out.push_back(dims);
  };
  add({ranks});
  const int g = group_per_node(cluster, ranks, devices);
  // Mesh groups are the node's: only a group of whole nodes sees them.
  const int groups =
      cluster.interconnect.kind == InterconnectKind::Mesh && g == cluster.devices_per_node
          ? cluster.interconnect.groups
          : 1;
  if (g > 0 && ranks > g && ranks % g == 0) {
    add({g, ranks / g});
    if (groups > 1 && g % groups == 0) add({g / groups, groups, ranks / g});
  }
  if (ranks == g && groups > 1 && g % groups == 0) add({g / groups, groups});
  if (cluster.network && cluster.network->topology.kind == TopologyKind::Torus &&
      cluster.devices_per_node == 1 && ranks == cluster.nodes && devices.empty()) {
    std::vector<int> dims;
    for (unsigned long d : cluster.network->topology.dims) dims.push_back(static_cast<int>(d));
    add(dims);
  }
  // Two factors: all of them up to 16 ranks, the most balanced beyond; three: the most balanced.
  int best2 = 1;
  for (int a = 2; a * a <= ranks; ++a)
    if (ranks % a == 0) {
      best2 = a;
      if (ranks <= 16) add({a, ranks / a}), add({ranks / a, a});
    }
  if (best2 > 1) add({best2, ranks / best2});
  std::vector<int> best3;
  for (int a = 2; a * a * a <= ranks; ++a)
    for (int b = a; a * b * b <= ranks; ++b)
      if (ranks % (a * b) == 0) {
        const int c = ranks / (a * b);
        if (best3.empty() || c - a < best3[2] - best3[0]) best3 = {a, b, c};
      }
  if (!best3.empty()) add(best3);
  return out;
}

// Whether all of `mask`'s dimensions are direct (then a reversed lane repeats a forward one).
bool all_direct(const std::vector<bool>& direct) {
  return std::all_of(direct.begin(), direct.end(), [](bool d) { return d; });
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Counts that leave every lane, part and piece of `c` non-empty and the splits uneven.
std::vector<std::int64_t> proof_counts(const SynthCandidate& c, const CollectiveSpec& spec) {
  const std::int64_t lanes = c.builtin ? std::max(1, c.options.channels)
                                       : static_cast<std::int64_t>(c.composition.lanes.size());
  const std::int64_t chunks = c.builtin ? c.options.chunks : c.composition.chunks;
  // All-reduce cuts each lane into p parts; the others cut each rank's block into lanes.
  const std::int64_t unit =
      lanes * chunks * (spec.collective == Collective::AllReduce ? spec.ranks : 1);
  return {2 * unit + 1, 3 * unit + std::max<std::int64_t>(lanes, 2) - 1};
}

}  // namespace

std::vector<SynthCandidate> synth_candidates(const ClusterSpec& cluster, Collective collective,
                                             int ranks, const std::vector<int>& devices) {
  std::vector<SynthCandidate> out;
  const int g = group_per_node(cluster, ranks, devices);
  const int nics = cluster.network ? cluster.network->nics_per_node : 0;
  const int rpn = g > 0 && ranks > g && ranks % g == 0 ? g : 0;
  for (Algorithm a : parallel::all_algorithms()) {
    if (a == Algorithm::Native || !parallel::supports(a, collective)) continue;
    SynthCandidate c;
    c.algorithm = a;
    if (a == Algorithm::Ring) {
      std::set<int> channels{1};
      if (devices.empty()) channels.insert(default_ring_channels(cluster, ranks));
      if (rpn > 0 && nics > 0) channels.insert({nics, 2 * nics});
      for (int ch : channels) {
        c.options = {1, ch > 1 ? rpn : 0, ch};
        out.push_back(c);
      }
      continue;
    }
    c.options = {1, a == Algorithm::Hierarchical ? rpn : 0, 1};
    out.push_back(c);
  }
  if (!parallel::composable(collective) || ranks < 2) return out;
  if (collective == Collective::AllReduce)
    for (parallel::TreeShape shape : {parallel::TreeShape::Binary, parallel::TreeShape::Chain})
      for (int k : {1, 2, 4, 8})
        if (k <= ranks) {
          SynthCandidate c;
          c.builtin = false;
          c.composition = {{ranks}, {}, {}, 1, shape, k};
          out.push_back(c);
        }
  for (const std::vector<int>& dims : grids(cluster, ranks, devices)) {
    const int k = static_cast<int>(dims.size());
    std::vector<int> order(k);
    std::iota(order.begin(), order.end(), 0);
    if (collective == Collective::AllToAll) {
      // Dimension-wise exchanges (direct phases only): one lane from the first dimension or from
      // the last, or a lane starting at each dimension. One dimension is the built-ins' direct.
      if (k < 2) continue;
      const std::vector<bool> direct(k, true);
      const std::vector<int> backward(order.rbegin(), order.rend());
      for (const auto& lanes : {parallel::rotated_lanes(order, false, false, direct),
                                parallel::rotated_lanes(backward, false, false, direct),
                                parallel::rotated_lanes(order, true, false, direct)}) {
        SynthCandidate c;
        c.builtin = false;
        c.composition = {dims, {}, lanes, 1};
        out.push_back(c);
      }
      continue;
    }
    for (int rotate = 0; rotate < (k > 1 ? 2 : 1); ++rotate)
      for (int both = 0; both < 2; ++both)
        for (int mask = 0; mask < (1 << k); ++mask) {
          std::vector<bool> direct;
          for (int d = 0; d < k; ++d) direct.push_back(mask >> d & 1);
          if (both && all_direct(direct)) continue;
          SynthCandidate c;
          c.builtin = false;
          c.composition = {dims, {}, parallel::rotated_lanes(order, rotate, both, direct), 1};
          out.push_back(c);
        }
  }
  return out;
}

bool prove_candidate(const SynthCandidate& candidate, const CollectiveSpec& spec,
                     std::string* proof, std::string* error) {
  const Schedule own = candidate.build(spec);
  if (parallel::fits_symbolic_check(own)) {
    const parallel::CheckResult r = parallel::check_schedule(own);
    if (!r.ok()) {
      *error = r.error;
      return false;
    }
    *proof = fmt::format("proven by the symbolic checker at its count ({} elements)", spec.count);
    return true;
  }
  if (spec.ranks > 64) {
    parallel::validate_schedule(own);
    *proof = fmt::format(
        "validated (form, matching, races); the symbolic checker holds at most 64 ranks, not {}",
        spec.ranks);
    return true;
  }
  const std::vector<std::int64_t> counts = proof_counts(candidate, spec);
  for (std::int64_t count : counts) {
    CollectiveSpec small = spec;
    small.count = count;
    const parallel::CheckResult r = parallel::check_schedule(candidate.build(small));
    if (!r.ok()) {
      *error = fmt::format("at count {}: {}", count, r.error);
      return false;
    }
  }
  *proof = fmt::format(
      "proven by the symbolic checker at counts {} and {} (the same construction; the count "
      "itself, {}, exceeds the checker's 2^26 elements)",
      counts[0], counts[1], spec.count);
  return true;
}

SynthResult synthesize(const ClusterSpec& cluster, const CollectiveSpec& spec,
                       const SynthOptions& options) {
  if (options.time_limit <= 0) throw std::invalid_argument("synth: the time limit must be > 0");
  if (spec.ranks > cluster.device_count())
    throw std::invalid_argument(fmt::format("synth: {} ranks but {} has {} devices", spec.ranks,
                                            cluster.name, cluster.device_count()));
  if (!options.sim.devices.empty() && static_cast<int>(options.sim.devices.size()) != spec.ranks)
    throw std::invalid_argument(
        fmt::format("synth: {} devices for {} ranks", options.sim.devices.size(), spec.ranks));
  const double start = now_seconds();
  SynthResult result;
  std::vector<SynthCandidate> stage1 =
      synth_candidates(cluster, spec.collective, spec.ranks, options.sim.devices);
  if (stage1.empty())
    throw std::invalid_argument(
        fmt::format("synth: nothing implements {}", parallel::collective_name(spec.collective)));
  result.generated = static_cast<int>(stage1.size());
  std::set<std::string> seen;
  // Simulates one candidate within the time left; a candidate the clock stops is skipped.
  auto evaluate = [&](const SynthCandidate& c) {
    if (!seen.insert(c.label()).second) return;
    const double left = options.time_limit - (now_seconds() - start);
    if (left <= 0) {
      ++result.skipped;
      return;
    }
    SimOptions sim = options.sim;
    sim.timeout = left;
    try {
      const Schedule schedule = c.build(spec);
      if (now_seconds() - start >= options.time_limit) {
        ++result.skipped;
        return;
      }
      result.evaluated.push_back({c, simulate_collective(cluster, schedule, sim).seconds});
    } catch (const SimulationTimeout&) {
      ++result.skipped;
    }
  };
  for (const SynthCandidate& c : stage1) evaluate(c);

  auto ranked = [&] {
    std::vector<SynthEvaluation> v = result.evaluated;
    std::stable_sort(v.begin(), v.end(), [](const SynthEvaluation& a, const SynthEvaluation& b) {
      return a.seconds < b.seconds;
    });
    return v;
  };
  // Stage 2: the best few, and the best built-in (so the baseline is the built-ins' best
  // chunking too), with more chunks.
  const std::vector<SynthEvaluation> first = ranked();
  std::vector<SynthCandidate> refine;
  for (int i = 0; i < options.refine && i < static_cast<int>(first.size()); ++i)
    refine.push_back(first[i].candidate);
  for (const SynthEvaluation& e : first)
    if (e.candidate.builtin) {
      if (std::find(refine.begin(), refine.end(), e.candidate) == refine.end())
        refine.push_back(e.candidate);
      break;
    }
  for (const SynthCandidate& best : refine)
    for (int chunks : {2, 4, 8}) {
      SynthCandidate c = best;
      (c.builtin ? c.options.chunks : c.composition.chunks) = chunks;
      evaluate(c);
    }
  // Stage 3: while the winner has the most chunks tried, double them.
  for (int round = 0; round < 3 && !result.evaluated.empty(); ++round) {
    SynthCandidate c = ranked().front().candidate;
    int& chunks = c.builtin ? c.options.chunks : c.composition.chunks;
    if (chunks < 8 || chunks >= 64) break;
    chunks *= 2;
    if (seen.count(c.label())) break;
    evaluate(c);
  }
  if (result.evaluated.empty())
    throw std::invalid_argument(fmt::format(
        "synth: the time limit of {} s did not allow a single simulation", options.time_limit));

  for (const SynthEvaluation& e : result.evaluated)
    if (e.candidate.builtin &&
        (result.baseline_seconds == 0 || e.seconds < result.baseline_seconds)) {
      result.baseline_seconds = e.seconds;
      result.baseline_label = e.candidate.label();
    }
  const double proof_start = now_seconds();
  for (const SynthEvaluation& e : ranked()) {
    std::string proof, error;
    if (!prove_candidate(e.candidate, spec, &proof, &error)) continue;
    result.candidate = e.candidate;
    result.schedule = e.candidate.build(spec);
    result.label = e.candidate.label();
    result.seconds = e.seconds;
    result.proof = proof;
    break;
  }
  if (result.label.empty())
    throw std::invalid_argument("synth: no candidate passed the symbolic checker");
  result.search_seconds = now_seconds() - start;
  result.proof_seconds = now_seconds() - proof_start;
  return result;
}

}  // namespace spora::sim
