// The synthesizer's on-disk cache (`spora synth`, `spora sim --algo synth`, `--collectives
// synth` of `spora sim` and `spora search`): one entry per (cluster file, collective, ranks,
// element size, size class = floor(log2(bytes)), the ranks' devices when given), holding the
// winner's label (sim/synth.h). The directory is $SPORA_SYNTH_CACHE, else
// $XDG_CACHE_HOME/spora/synth, else ~/.cache/spora/synth, private to its user and every entry
// checked against its digest (backends/codegen/cache.h). A hit rebuilds the winner for the
// exact count, proves it and simulates it again; no search runs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parallel/collectives/schedule.h"
#include "sim/cluster_spec.h"
#include "sim/spmd_step.h"
#include "sim/synth.h"

namespace spora::tools {

class SynthCache {
 public:
  // Reads the cluster file (its bytes are part of every key) and opens the directory; when
  // the directory cannot be used, error() says why and get() always searches.
  explicit SynthCache(const std::string& cluster_path);

  struct Answer {
    sim::SynthResult result;
    bool cached = false;
  };
  // The entry's schedule when there is a valid one (and !search_anyway), else a search, whose
  // winner is then recorded.
  Answer get(const sim::ClusterSpec& cluster, const parallel::CollectiveSpec& spec,
             const sim::SynthOptions& options, bool search_anyway = false);

  bool enabled() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::string cluster_text_, dir_, error_;
};

// SpmdSimOptions::collective_seconds (sim/spmd_step.h) from the synthesizer: each collective of
// a partitioned step is searched (or taken from the cache) for its group's devices and size
// (f32 elements), and takes the winner's simulated time. `cache` and `cluster` must outlive it.
std::function<double(sim::CollectiveKind, const std::vector<int>&, double)>
synthesized_collective_seconds(SynthCache& cache, const sim::ClusterSpec& cluster,
                               double time_limit);

}  // namespace spora::tools
