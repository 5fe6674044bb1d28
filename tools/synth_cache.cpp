#include "tools/synth_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "backends/codegen/cache.h"
#include "backends/runtime/data/files.h"

namespace spora::tools {

namespace {

// FNV-1a: a digest of the key that is the same on every run and machine.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::string cache_dir() {
  if (const char* d = std::getenv("SPORA_SYNTH_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/spora/synth";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/spora/synth";
  return codegen::fallback_cache_dir() + "/synth";
}

}  // namespace

SynthCache::SynthCache(const std::string& cluster_path) {
  const runtime::data::Bytes bytes = runtime::data::read_file(cluster_path);
  cluster_text_.assign(bytes.begin(), bytes.end());
  dir_ = cache_dir();
  if (!codegen::private_cache_dir(dir_, &error_) && error_.empty())
    error_ = "the cache directory '" + dir_ + "' cannot be used";
}

SynthCache::Answer SynthCache::get(const sim::ClusterSpec& cluster,
                                   const parallel::CollectiveSpec& spec,
                                   const sim::SynthOptions& options, bool search_anyway) {
  const std::int64_t bytes = spec.count * options.sim.element_bytes *
                             (spec.collective == parallel::Collective::AllReduce ? 1 : spec.ranks);
  const int size_class = bytes > 0 ? static_cast<int>(std::floor(std::log2(double(bytes)))) : -1;
  std::string key =
      fmt::format("{}\n{} {} {} {}", cluster_text_, parallel::collective_name(spec.collective),
                  spec.ranks, options.sim.element_bytes, size_class);
  if (!options.sim.devices.empty())
    key += fmt::format(" on {}", fmt::join(options.sim.devices, ","));
  const std::filesystem::path entry =
      std::filesystem::path(dir_) / fmt::format("{:016x}.txt", fnv1a(key));
  Answer out;
  if (enabled() && !search_anyway) {
    const codegen::CacheEntry hit(entry);
    if (hit.valid) {
      try {
        const sim::SynthCandidate c =
            sim::parse_synth_candidate(hit.bytes.substr(0, hit.bytes.find('\n')));
        std::string proof, error;
        if (sim::prove_candidate(c, spec, &proof, &error)) {
          sim::SynthResult& r = out.result;
          r.candidate = c;
          r.schedule = c.build(spec);
          r.label = c.label();
          r.seconds = sim::simulate_collective(cluster, r.schedule, options.sim).seconds;
          r.proof = proof;
          out.cached = true;
          return out;
        }
      } catch (const std::invalid_argument&) {
        // An entry that does not read back is searched again and replaced.
      }
    }
  }
  out.result = sim::synthesize(cluster, spec, options);
  if (enabled()) {
    const std::string text = out.result.label + "\n";
    if (codegen::write_file_atomic(entry, text)) codegen::record_digest(entry, text);
  }
  return out;
}

std::function<double(sim::CollectiveKind, const std::vector<int>&, double)>
synthesized_collective_seconds(SynthCache& cache, const sim::ClusterSpec& cluster,
                               double time_limit) {
  return [&cache, &cluster, time_limit](sim::CollectiveKind kind, const std::vector<int>& group,
                                        double whole_bytes) {
    constexpr int kElement = 4;
    const int p = static_cast<int>(group.size());
    parallel::CollectiveSpec spec{parallel::Collective::AllReduce, parallel::ReduceOp::Sum, p, 0};
    const auto elements = static_cast<std::int64_t>(whole_bytes / kElement);
    switch (kind) {
      case sim::CollectiveKind::AllReduce:
        spec.count = elements;
        break;
      case sim::CollectiveKind::AllGather:
        spec.collective = parallel::Collective::AllGather;
        spec.count = elements / p;
        break;
      case sim::CollectiveKind::ReduceScatter:
        spec.collective = parallel::Collective::ReduceScatter;
        spec.count = elements / p;
        break;
      case sim::CollectiveKind::AllToAll:
        spec.collective = parallel::Collective::AllToAll;
        spec.count = elements / p;
        break;
    }
    sim::SynthOptions options;
    options.time_limit = time_limit;
    options.sim.element_bytes = kElement;
    options.sim.devices = group;
    return cache.get(cluster, spec, options).result.seconds;
  };
}

}  // namespace spora::tools
