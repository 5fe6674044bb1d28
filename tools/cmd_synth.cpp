// `spora synth`: search a collective schedule for a cluster (sim/synth.h), prove it, write it.
//
//   spora synth --cluster examples/clusters/tpu-v4-4x4x4.yaml --op all-reduce --sizes 64M
//               -o allreduce.sched [--time-limit 60] [--no-cache] [--json]
//
// Per size: the best built-in algorithm tried and the schedule found, their simulated times
// and bus bandwidths (nccl-tests' factors), the speed-up, and the search's own time. With -o
// the schedule is written in the text form (parallel/collectives/text.h) behind comment lines
// that say what it is; with several sizes each gets its own file, FILE with ".<bytes>B"
// before the extension. `spora sim-coll --schedule` and `spora coll --schedule` run it.
//
// Results are cached (tools/synth_cache.h): a hit rebuilds the winner for the exact size,
// proves and simulates it again, and skips the search. --no-cache searches anyway (and
// refreshes the entry).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/runtime/data/files.h"
#include "parallel/collectives/text.h"
#include "sim/cluster_spec.h"
#include "sim/synth.h"
#include "tools/cmd_sim.h"
#include "tools/size_args.h"
#include "tools/synth_cache.h"

namespace spora::tools {

namespace {

using parallel::Collective;
using parallel::CollectiveSpec;

struct SynthArgs {
  std::string cluster, op = "all-reduce", sizes = "64M", dtype = "f32", out;
  int ranks = 0;
  double factor = 2, time_limit = 50;
  bool no_cache = false, json = false;
};
SynthArgs g_args;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int dtype_bytes(const std::string& name) {
  if (name == "f64" || name == "i64") return 8;
  if (name == "f32" || name == "i32") return 4;
  if (name == "f16" || name == "bf16") return 2;
  if (name == "i8" || name == "u8") return 1;
  throw UsageError(
      fmt::format("unknown --dtype '{}' (f64, f32, f16, bf16, i64, i32, i8, u8)", name));
}

std::string with_size(const std::string& path, std::int64_t bytes) {
  const std::filesystem::path p(path);
  return (p.parent_path() /
          (p.stem().string() + fmt::format(".{}B", bytes) + p.extension().string()))
      .string();
}

struct Outcome {
  std::int64_t bytes = 0;
  sim::SynthResult result;
  bool cached = false;
};

int run(const SynthArgs& a) {
  if (a.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  const sim::ClusterSpec cluster = sim::load_cluster_spec(a.cluster);
  const Collective collective = collective_arg(a.op);
  const int esize = dtype_bytes(a.dtype);
  const int ranks = a.ranks > 0 ? a.ranks : cluster.device_count();
  if (ranks > cluster.device_count())
    throw UsageError(fmt::format("--ranks {} but {} has {} devices", ranks, cluster.name,
                                 cluster.device_count()));
  if (a.time_limit <= 0)
    throw UsageError(fmt::format("--time-limit {} must be positive", a.time_limit));
  const std::vector<std::int64_t> sizes = parse_sizes(a.sizes, a.factor);

  SynthCache cache(a.cluster);
  if (!cache.enabled() && !a.no_cache)
    std::fprintf(stderr, "spora synth: not caching: %s\n", cache.error().c_str());

  sim::SynthOptions options;
  options.time_limit = a.time_limit;
  options.sim.element_bytes = esize;
  std::vector<Outcome> outcomes;
  for (std::int64_t bytes : sizes) {
    CollectiveSpec spec{collective, parallel::ReduceOp::Sum, ranks, bytes / esize, 0};
    if (!whole_buffer(collective)) spec.count /= ranks;
    Outcome out;
    out.bytes = spec.count * esize * (whole_buffer(collective) ? 1 : ranks);
    SynthCache::Answer answer = cache.get(cluster, spec, options, a.no_cache);
    out.result = std::move(answer.result);
    out.cached = answer.cached;
    outcomes.push_back(std::move(out));
  }

  auto busbw = [&](std::int64_t bytes, double seconds) {
    return seconds > 0 ? bytes / seconds / 1e9 * bus_factor(collective, ranks) : 0.0;
  };
  if (!a.out.empty())
    for (const Outcome& o : outcomes) {
      const sim::SynthResult& r = o.result;
      std::string text = fmt::format(
          "# spora synth: {}, {} ranks on {}, {} B ({} x {} B elements)\n"
          "# schedule: {}\n"
          "# simulated: {:.2f} us, busbw {:.2f} GB/s{}\n",
          parallel::collective_name(collective), ranks, cluster.summary(), o.bytes,
          r.schedule.spec.count, esize, r.label, r.seconds * 1e6, busbw(o.bytes, r.seconds),
          o.cached ? " (from the cache)" : "");
      if (!o.cached)
        text += fmt::format("# best built-in tried: {} ({:.2f} us, busbw {:.2f} GB/s)\n",
                            r.baseline_label, r.baseline_seconds * 1e6,
                            busbw(o.bytes, r.baseline_seconds));
      text += "# " + r.proof + "\n" + parallel::print_schedule(r.schedule);
      const std::string path = outcomes.size() == 1 ? a.out : with_size(a.out, o.bytes);
      runtime::data::write_file_atomic(path, text);
    }

  if (a.json) {
    std::string s = fmt::format(
        "{{\"collective\": \"{}\", \"cluster\": \"{}\", \"ranks\": {}, \"dtype\": \"{}\", "
        "\"time_limit_s\": {}, \"results\": [",
        parallel::collective_name(collective), cluster.name, ranks, a.dtype, a.time_limit);
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      const sim::SynthResult& r = outcomes[i].result;
      const std::int64_t b = outcomes[i].bytes;
      s += fmt::format(
          "{}\n  {{\"size_bytes\": {}, \"schedule\": \"{}\", \"time_us\": {:.3f}, \"busbw_gbps\": "
          "{:.4f}, "
          "\"builtin\": \"{}\", \"builtin_time_us\": {:.3f}, \"builtin_busbw_gbps\": {:.4f}, "
          "\"cached\": {}, \"evaluated\": {}, \"generated\": {}, \"skipped\": {}, \"search_s\": "
          "{:.3f}, "
          "\"proof_s\": {:.3f}, \"proof\": \"{}\"}}",
          i ? "," : "", b, r.label, r.seconds * 1e6, busbw(b, r.seconds), r.baseline_label,
          r.baseline_seconds * 1e6, busbw(b, r.baseline_seconds), outcomes[i].cached,
          r.evaluated.size(), r.generated, r.skipped, r.search_seconds, r.proof_seconds, r.proof);
    }
    s += "\n]}\n";
    std::fputs(s.c_str(), stdout);
    return 0;
  }
  std::printf("# spora synth: %s, %d ranks on %s, %s, time limit %g s per size\n",
              std::string(parallel::collective_name(collective)).c_str(), ranks,
              cluster.summary().c_str(), a.dtype.c_str(), a.time_limit);
  std::printf("# %10s  %9s  %7s  %9s  %7s  %7s  %8s  %s\n", "size", "built-in", "busbw", "synth",
              "busbw", "speedup", "search", "tried");
  std::printf("# %10s  %9s  %7s  %9s  %7s  %7s  %8s\n", "(B)", "(us)", "(GB/s)", "(us)", "(GB/s)",
              "", "(s)");
  for (const Outcome& o : outcomes) {
    const sim::SynthResult& r = o.result;
    if (o.cached) {
      std::printf("  %10lld  %9s  %7s  %9.2f  %7.2f  %7s  %8s  cached\n",
                  static_cast<long long>(o.bytes), "-", "-", r.seconds * 1e6,
                  busbw(o.bytes, r.seconds), "-", "-");
    } else {
      std::printf("  %10lld  %9.2f  %7.2f  %9.2f  %7.2f  %7.2f  %8.1f  %zu (%d + refined)%s\n",
                  static_cast<long long>(o.bytes), r.baseline_seconds * 1e6,
                  busbw(o.bytes, r.baseline_seconds), r.seconds * 1e6, busbw(o.bytes, r.seconds),
                  r.seconds > 0 ? r.baseline_seconds / r.seconds : 0.0, r.search_seconds,
                  r.evaluated.size(), r.generated,
                  r.skipped ? fmt::format(", {} skipped at the limit", r.skipped).c_str() : "");
    }
    std::printf("#   %s: %s\n", r.label.c_str(),
                o.cached ? "from the cache" : ("built-in: " + r.baseline_label).c_str());
  }
  return 0;
}

}  // namespace

CLI::App* add_synth_subcommand(CLI::App& app) {
  CLI::App* s =
      app.add_subcommand("synth", "Search a collective schedule for a cluster with the simulator");
  s->add_option("--cluster,-c", g_args.cluster, "cluster spec (YAML)");
  s->add_option("--op", g_args.op, "all-reduce, all-gather, reduce-scatter, all-to-all, ...")
      ->capture_default_str();
  s->add_option("--ranks,-n", g_args.ranks, "number of ranks (default: every device)");
  s->add_option("--sizes", g_args.sizes, "MIN:MAX bytes, or one size; K, M, G suffixes")
      ->capture_default_str();
  s->add_option("--factor,-f", g_args.factor, "size step factor")->capture_default_str();
  s->add_option("--dtype", g_args.dtype, "element type (its size sets the bytes)")
      ->capture_default_str();
  s->add_option("--time-limit", g_args.time_limit, "seconds of search per size")
      ->capture_default_str();
  s->add_option("-o,--output", g_args.out, "write the schedule (text form) to FILE");
  s->add_flag("--no-cache", g_args.no_cache, "search even when the cache has an answer");
  s->add_flag("--json", g_args.json, "print one JSON object instead of the table");
  return s;
}

int run_synth_subcommand() {
  try {
    return run(g_args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora synth: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
