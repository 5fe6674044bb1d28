#include "tools/cmd_sim.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backends/runtime/data/files.h"
#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "parallel/collectives/text.h"
#include "sim/cluster_spec.h"
#include "sim/collectives.h"
#include "sim/isolation.h"
#include "tools/size_args.h"

namespace spora::tools {

namespace {

using parallel::Algorithm;
using parallel::Collective;
using parallel::CollectiveSpec;
using parallel::Schedule;

struct Options {
  std::string cluster, op = "all-reduce", algo = "ring", dtype = "f32", redop = "sum",
                       sizes = "8:64M", recv_reduce = "fused", log_file, schedule_file;
  int ranks = 0, root = 0, chunks = 1, ranks_per_node = 0, channels = 0;
  double factor = 2;
  bool json = false, unordered = false;
  std::vector<std::string> simgrid_args;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DType {
  const char* name;       // --dtype
  const char* nccl_name;  // the table's type column, as nccl-tests prints it
  int bytes;
};
constexpr DType kDTypes[] = {{"f64", "double", 8},    {"f32", "float", 4}, {"f16", "half", 2},
                             {"bf16", "bfloat16", 2}, {"i64", "int64", 8}, {"i32", "int32", 4},
                             {"i8", "int8", 1},       {"u8", "uint8", 1}};

// Sizes and bandwidths follow nccl-tests (and `spora coll`, tools/cmd_coll.cpp): `size` is the
// buffer for all-reduce, broadcast and reduce, all ranks' blocks together for the others.
using spora::tools::parse_size;
using spora::tools::parse_sizes;

std::string format_time(double us) {
  if (us >= 10000) return fmt::format("{:7.0f}", us);
  if (us >= 100) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

struct Row {
  std::int64_t bytes = 0, count = 0;
  double seconds = 0;
};

int run(const Options& o) {
  if (o.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  if (o.json && o.log_file == "-")
    throw UsageError("--log - and --json both write to stdout; give --log a file");
  // A log path in a directory that cannot be written stops the command before any work.
  if (!o.log_file.empty() && o.log_file != "-") {
    const std::filesystem::path dir = std::filesystem::path(o.log_file).parent_path();
    if (::access(dir.empty() ? "." : dir.c_str(), W_OK) != 0)
      throw UsageError(
          fmt::format("cannot write the log to '{}': {}", o.log_file, std::strerror(errno)));
  }
  const sim::ClusterSpec cluster = sim::load_cluster_spec(o.cluster);

  const auto redop = parallel::parse_reduce_op(o.redop);
  if (!redop) throw UsageError(fmt::format("unknown --redop '{}' (sum, max, min, prod)", o.redop));
  const DType* dtype = nullptr;
  for (const DType& t : kDTypes)
    if (o.dtype == t.name) dtype = &t;
  if (!dtype)
    throw UsageError(
        fmt::format("unknown --dtype '{}' (f64, f32, f16, bf16, i64, i32, i8, u8)", o.dtype));
  if (o.recv_reduce != "fused" && o.recv_reduce != "staged")
    throw UsageError(fmt::format("unknown --recv-reduce '{}' (fused, staged)", o.recv_reduce));

  std::vector<Schedule> schedules;
  std::vector<Row> rows;
  Collective c = Collective::AllReduce;
  int ranks = 0, chunks = o.chunks, channels = 1;
  std::string algo = o.algo, checked;
  if (!o.schedule_file.empty()) {
    // A schedule file fixes the collective, the ranks and the count: one row.
    const runtime::data::Bytes bytes = runtime::data::read_file(o.schedule_file);
    Schedule s = parallel::parse_schedule(std::string(bytes.begin(), bytes.end()), o.schedule_file);
    if (parallel::fits_symbolic_check(s)) {
      const parallel::CheckResult check = parallel::check_schedule(s);
      if (!check.ok())
        throw UsageError(o.schedule_file + ": the schedule is wrong: " + check.error);
      checked = "proven by the symbolic checker";
    } else {
      parallel::validate_schedule(s);
      checked = "validated (too large for the symbolic checker)";
    }
    if (s.spec.ranks > cluster.device_count())
      throw UsageError(fmt::format("the schedule is for {} ranks but {} has {} devices",
                                   s.spec.ranks, cluster.name, cluster.device_count()));
    s.spec.op = *redop;
    c = s.spec.collective;
    ranks = s.spec.ranks;
    algo = s.algorithm;
    chunks = s.options.chunks;
    channels = s.options.channels;
    Row row;
    row.count = s.spec.count;
    row.bytes = s.spec.count * dtype->bytes * (whole_buffer(c) ? 1 : ranks);
    rows.push_back(row);
    schedules.push_back(std::move(s));
  } else {
    c = spora::tools::collective_arg(o.op);
    const Algorithm algorithm = spora::tools::algorithm_arg(o.algo, c, false);
    ranks = o.ranks > 0 ? o.ranks : cluster.device_count();
    if (ranks > cluster.device_count())
      throw UsageError(fmt::format("--ranks {} but {} has {} devices", ranks, cluster.name,
                                   cluster.device_count()));
    if (o.root < 0 || o.root >= ranks)
      throw UsageError(fmt::format("--root {} is not a rank", o.root));
    const bool layered = algorithm == Algorithm::Hierarchical || algorithm == Algorithm::Ring;
    const int ranks_per_node =
        o.ranks_per_node > 0 || !layered
            ? o.ranks_per_node
            : (ranks % cluster.devices_per_node == 0 ? cluster.devices_per_node : 0);
    if (o.channels < 0) throw UsageError(fmt::format("--channels {} is negative", o.channels));
    if (o.channels > 1 && algorithm != Algorithm::Ring)
      throw UsageError(
          fmt::format("--channels {}: channels apply to --algo ring only", o.channels));
    channels = o.channels > 0                 ? o.channels
               : algorithm == Algorithm::Ring ? sim::default_ring_channels(cluster, ranks)
                                              : 1;
    for (std::int64_t bytes : parse_sizes(o.sizes, o.factor)) {
      CollectiveSpec spec{c, *redop, ranks, bytes / dtype->bytes, o.root};
      if (!whole_buffer(c)) spec.count /= ranks;
      schedules.push_back(
          parallel::build_schedule(algorithm, spec, {o.chunks, ranks_per_node, channels}));
      Row row;
      row.count = spec.count;
      row.bytes = spec.count * dtype->bytes * (whole_buffer(c) ? 1 : ranks);
      rows.push_back(row);
    }
  }

  sim::SimOptions options;
  options.element_bytes = dtype->bytes;
  options.ordered_pairs = !o.unordered;
  options.recv_reduce =
      o.recv_reduce == "fused" ? sim::RecvReduceModel::Fused : sim::RecvReduceModel::Staged;
  options.log = !o.log_file.empty();
  options.simgrid_args = o.simgrid_args;
  const std::vector<sim::SimResult> results =
      sim::simulate_collectives(cluster, schedules, options);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].seconds = results[i].seconds;

  if (options.log) {
    std::string text;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      text += fmt::format("# size {} B ({} elements)\n", rows[i].bytes, rows[i].count);
      for (const std::string& line : results[i].log) text += line + "\n";
    }
    if (o.log_file == "-")
      std::fputs(text.c_str(), stdout);
    else
      runtime::data::write_file_atomic(o.log_file, text);
  }

  auto algbw = [](const Row& r) { return r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0; };
  auto busbw = [&](const Row& r) { return algbw(r) * bus_factor(c, ranks); };
  double sum = 0;
  for (const Row& r : rows) sum += busbw(r);
  const double avg = rows.empty() ? 0 : sum / static_cast<double>(rows.size());
  const bool reducing = parallel::is_reducing(c), rooted = parallel::is_rooted(c);

  if (o.json) {
    std::string out = fmt::format(
        "{{\"collective\": \"{}\", \"algorithm\": \"{}\", \"backend\": \"sim\", \"cluster\": "
        "\"{}\", \"ranks\": {}, \"dtype\": \"{}\", \"redop\": \"{}\", \"root\": {}, \"chunks\": "
        "{}, \"channels\": {}, \"ranks_per_node\": {}, \"ordered_pairs\": {}, \"recv_reduce\": "
        "\"{}\", \"simulated\": true, \"results\": [",
        parallel::collective_name(c), algo, cluster.name, ranks, o.dtype, o.redop, o.root, chunks,
        channels, schedules.front().options.ranks_per_node, !o.unordered, o.recv_reduce);
    for (std::size_t i = 0; i < rows.size(); ++i)
      out += fmt::format(
          "{}\n  {{\"size_bytes\": {}, \"count\": {}, \"time_us\": {:.3f}, \"algbw_gbps\": {:.4f}, "
          "\"busbw_gbps\": {:.4f}}}",
          i ? "," : "", rows[i].bytes, rows[i].count, rows[i].seconds * 1e6, algbw(rows[i]),
          busbw(rows[i]));
    out += fmt::format("\n], \"avg_busbw_gbps\": {:.4f}}}\n", avg);
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  std::printf(
      "# spora sim-coll: %s, algorithm %s, %d ranks on %s, %s, %s, chunks %d, channels %d, "
      "simulated\n",
      std::string(parallel::collective_name(c)).c_str(), algo.c_str(), ranks,
      cluster.summary().c_str(), o.dtype.c_str(), o.redop.c_str(), chunks, channels);
  if (!checked.empty())
    std::printf("# schedule %s: %s\n", o.schedule_file.c_str(), checked.c_str());
  std::printf("# network model: SimGrid CM02, alpha-beta; pairs %s, receive-reduce %s\n",
              o.unordered ? "unordered" : "ordered", o.recv_reduce.c_str());
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "");
  for (const Row& r : rows)
    std::printf("  %10lld  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %6s\n",
                static_cast<long long>(r.bytes), static_cast<long long>(r.count), dtype->nccl_name,
                reducing ? o.redop.c_str() : "none", rooted ? o.root : -1,
                format_time(r.seconds * 1e6).c_str(), algbw(r), busbw(r), "-");
  std::printf("# Avg bus bandwidth    : %g GB/s\n", avg);
  return 0;
}

}  // namespace

int run_sim_coll_command(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::string(args[1]) == "sim-coll") args.erase(args.begin() + 1);

  Options o;
  CLI::App app{"Simulate a collective on a cluster spec (nccl-tests style table)",
               "spora sim-coll"};
  app.add_option("--cluster,-c", o.cluster,
                 "cluster spec (YAML), e.g. examples/clusters/dgx-a100.yaml");
  app.add_option("--op", o.op,
                 "collective: broadcast, scatter, gather, reduce, all-reduce, "
                 "all-gather, reduce-scatter, all-to-all")
      ->capture_default_str();
  app.add_option("--algo", o.algo,
                 "ring, tree, binomial, halving-doubling, recursive-doubling, bruck, pairwise, "
                 "hierarchical")
      ->capture_default_str();
  app.add_option("--ranks,-n", o.ranks, "number of ranks (default: every device)");
  app.add_option("--sizes", o.sizes,
                 "MIN:MAX bytes, or one size; K, M, G suffixes (powers of 1024)")
      ->capture_default_str();
  app.add_option("--factor,-f", o.factor, "size step factor")->capture_default_str();
  app.add_option("--dtype", o.dtype, "f64, f32, f16, bf16, i64, i32, i8, u8")
      ->capture_default_str();
  app.add_option("--redop", o.redop, "sum, max, min, prod")->capture_default_str();
  app.add_option("--root", o.root, "root rank of broadcast, scatter, gather, reduce")
      ->capture_default_str();
  app.add_option("--chunks", o.chunks, "pipelining: split every transfer into this many pieces")
      ->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node,
                 "hierarchical, ring channels: devices per node (default: the cluster's)");
  app.add_option("--channels", o.channels,
                 "ring: independent rings over parts of the data, one per NIC across nodes "
                 "(default: the NICs per node when the ranks span several nodes, else 1)");
  app.add_option("--recv-reduce", o.recv_reduce,
                 "fused (reduce as data arrives) or staged (receive, then reduce)")
      ->capture_default_str();
  app.add_flag("--unordered", o.unordered,
               "let a pair's messages share the link instead of travelling in order");
  app.add_option("--log", o.log_file, "write the per-step simulation log to FILE ('-': stdout)");
  app.add_option("--simgrid-arg", o.simgrid_args,
                 "pass an argument to SimGrid (e.g. --simgrid-arg=--cfg=network/model:LV08)");
  app.add_flag("--json", o.json, "print one JSON object instead of the table");
  app.add_option("--schedule", o.schedule_file,
                 "simulate a schedule file (text form, e.g. from spora synth): it fixes the "
                 "collective, ranks and count");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora sim-coll: error: %s\n", e.what());
    return 1;
  }
}

CLI::App* add_sim_coll_subcommand(CLI::App& app) {
  CLI::App* sim = app.add_subcommand(
      "sim-coll",
      "Simulate a collective on a cluster spec, nccl-tests style (spora sim-coll --help)");
  sim->prefix_command();
  sim->set_help_flag();  // --help goes through to run_sim_coll_command
  return sim;
}

int run_sim_coll_subcommand(CLI::App& sim_coll) {
  std::vector<std::string> rest = sim_coll.remaining();
  std::vector<char*> args{const_cast<char*>("spora sim-coll")};
  for (std::string& s : rest) args.push_back(s.data());
  return run_sim_coll_command(static_cast<int>(args.size()), args.data());
}

}  // namespace spora::tools
