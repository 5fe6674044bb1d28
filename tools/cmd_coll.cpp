#include "tools/cmd_coll.h"
#include "tools/size_args.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backends/comm/communicator.h"
#include "backends/comm/executor.h"
#include "backends/comm/mpi_comm.h"
#include "backends/comm/nccl_comm.h"
#include "backends/comm/threads.h"
#include "backends/comm/verify.h"
#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "parallel/collectives/text.h"

namespace spora::tools {

namespace {

using comm::Communicator;
using comm::DType;
using parallel::Algorithm;
using parallel::Collective;
using parallel::CollectiveSpec;
using parallel::Schedule;

struct Options {
  std::string op = "all-reduce", algo = "ring", backend = "threads", dtype = "f32", redop = "sum",
              sizes = "8:64M", schedule_file;
  int ranks = 4, root = 0, chunks = 1, ranks_per_node = 0, channels = 1, iters = 20, warmup = 5;
  double factor = 2;
  bool check = true, json = false, print_schedule = false;
};

struct Row {
  std::int64_t bytes = 0, count = 0;
  double seconds = 0;
  std::int64_t wrong = 0;  // -1: not checked
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using spora::tools::parse_size;
using spora::tools::parse_sizes;

// nccl-tests' size conventions: per-rank element count for a size in bytes.
std::int64_t count_for(Collective c, std::int64_t bytes, int ranks, std::size_t element) {
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
      return bytes / static_cast<std::int64_t>(element);
    default:
      return bytes / static_cast<std::int64_t>(element) / ranks;
  }
}

std::int64_t bytes_for(Collective c, std::int64_t count, int ranks, std::size_t element) {
  const std::int64_t b = count * static_cast<std::int64_t>(element);
  switch (c) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce:
      return b;
    default:
      return b * ranks;
  }
}

std::string_view nccl_type_name(DType t) {
  switch (t) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::I32:
      return "int32";
    case DType::I64:
      return "int64";
  }
  return "?";
}

// All-reduce of one value over the communicator, in its own memory space.
template <typename T>
T all_reduce(Communicator& comm, T value, parallel::ReduceOp op, DType t) {
  comm::Buffer in(comm, sizeof(T)), out(comm, sizeof(T));
  comm.upload(in.data(), &value, sizeof(T));
  comm.native({Collective::AllReduce, op, t, 1, 0, in.data(), out.data()});
  comm.synchronize();
  comm.download(&value, out.data(), sizeof(T));
  return value;
}

// Times one size on this rank; every rank returns the same Row.
Row measure(Communicator& comm, const Options& o, const CollectiveSpec& spec, DType t,
            const Schedule* schedule) {
  const int r = comm.rank();
  const std::size_t es = comm::dtype_size(t);
  const std::int64_t in_n = comm::input_count(spec, r), out_n = comm::output_count(spec, r);
  std::vector<unsigned char> host_in(in_n * es), host_out(out_n * es, 0xff);
  comm::fill_input(spec, r, t, host_in.data());
  comm::Buffer in(comm, host_in.size()), out(comm, host_out.size());
  comm.upload(in.data(), host_in.data(), host_in.size());
  comm.upload(out.data(), host_out.data(), host_out.size());

  std::optional<comm::Executor> executor;
  if (schedule) executor.emplace(*schedule, comm, t);
  const comm::CollectiveCall call{spec.collective, spec.op,   t,         spec.count,
                                  spec.root,       in.data(), out.data()};
  auto once = [&] {
    if (executor) {
      executor->run(in.data(), out.data());
    } else {
      comm.native(call);
      comm.synchronize();
    }
  };
  for (int i = 0; i < o.warmup; ++i) once();
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) once();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      std::max(o.iters, 1);

  std::int64_t wrong = -1;
  if (o.check) {
    comm.download(host_out.data(), out.data(), host_out.size());
    wrong = comm::count_wrong(spec, r, t, host_out.data());
  }
  Row row;
  row.count = spec.count;
  row.bytes = bytes_for(spec.collective, spec.count, spec.ranks, es);
  row.seconds = all_reduce(comm, seconds, parallel::ReduceOp::Max, DType::F64);
  row.wrong =
      o.check ? all_reduce<std::int64_t>(comm, wrong, parallel::ReduceOp::Sum, DType::I64) : -1;
  return row;
}

std::string format_time(double us) {
  if (us >= 10000) return fmt::format("{:7.0f}", us);
  if (us >= 100) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

struct Report {
  const Options& o;
  Collective collective;
  std::string algorithm;
  int ranks;
  DType dtype;
  std::vector<Row> rows;

  double algbw(const Row& row) const { return row.seconds > 0 ? row.bytes / row.seconds / 1e9 : 0; }
  double busbw(const Row& row) const { return algbw(row) * bus_factor(collective, ranks); }

  void header() const {
    if (o.json) return;
    std::printf(
        "# spora coll: %s, algorithm %s, %d ranks over %s, %s, %s, chunks %d, channels %d, %d "
        "iterations after %d warm-up\n",
        std::string(parallel::collective_name(collective)).c_str(), algorithm.c_str(), ranks,
        o.backend.c_str(), std::string(comm::dtype_name(dtype)).c_str(), o.redop.c_str(), o.chunks,
        o.channels, o.iters, o.warmup);
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }
  void line(const Row& row) const {
    if (o.json) return;
    const bool reducing = parallel::is_reducing(collective);
    const bool rooted = parallel::is_rooted(collective);
    std::printf("  %10lld  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %6s\n",
                static_cast<long long>(row.bytes), static_cast<long long>(row.count),
                std::string(nccl_type_name(dtype)).c_str(), reducing ? o.redop.c_str() : "none",
                rooted ? o.root : -1, format_time(row.seconds * 1e6).c_str(), algbw(row),
                busbw(row), row.wrong < 0 ? "N/A" : std::to_string(row.wrong).c_str());
    std::fflush(stdout);
  }
  void footer() const {
    double sum = 0;
    std::int64_t wrong = 0;
    for (const Row& row : rows) {
      sum += busbw(row);
      wrong += std::max<std::int64_t>(row.wrong, 0);
    }
    const double avg = rows.empty() ? 0 : sum / static_cast<double>(rows.size());
    if (!o.json) {
      std::printf("# Wrong elements       : %lld %s\n", static_cast<long long>(wrong),
                  !o.check ? "(not checked)"
                  : wrong  ? "FAILED"
                           : "OK");
      std::printf("# Avg bus bandwidth    : %g GB/s\n", avg);
      return;
    }
    std::string out = fmt::format(
        "{{\"collective\": \"{}\", \"algorithm\": \"{}\", \"backend\": \"{}\", \"ranks\": {}, "
        "\"dtype\": \"{}\", \"redop\": \"{}\", \"root\": {}, \"chunks\": {}, \"channels\": {}, "
        "\"ranks_per_node\": {}, \"iters\": {}, \"warmup\": {}, \"checked\": {}, \"results\": [",
        parallel::collective_name(collective), algorithm, o.backend, ranks, comm::dtype_name(dtype),
        o.redop, o.root, o.chunks, o.channels, o.ranks_per_node, o.iters, o.warmup, o.check);
    for (std::size_t i = 0; i < rows.size(); ++i)
      out += fmt::format(
          "{}\n  {{\"size_bytes\": {}, \"count\": {}, \"time_us\": {:.3f}, \"algbw_gbps\": {:.4f}, "
          "\"busbw_gbps\": {:.4f}, \"wrong\": {}}}",
          i ? "," : "", rows[i].bytes, rows[i].count, rows[i].seconds * 1e6, algbw(rows[i]),
          busbw(rows[i]), rows[i].wrong);
    out += fmt::format("\n], \"avg_busbw_gbps\": {:.4f}, \"wrong_total\": {}}}\n", avg, wrong);
    std::fputs(out.c_str(), stdout);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("cannot read schedule file '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const Options& o, bool ranks_given) {
  const auto dtype = comm::parse_dtype(o.dtype);
  if (!dtype) throw UsageError(fmt::format("unknown --dtype '{}' (f32, f64, i32, i64)", o.dtype));
  const auto redop = parallel::parse_reduce_op(o.redop);
  if (!redop) throw UsageError(fmt::format("unknown --redop '{}' (sum, max, min, prod)", o.redop));

  // What to run: a schedule file, or a collective + algorithm over a range of sizes.
  std::optional<Schedule> loaded;
  Collective collective;
  std::string algorithm_label;
  std::optional<Algorithm> algorithm;
  if (!o.schedule_file.empty()) {
    loaded = parallel::parse_schedule(read_file(o.schedule_file), o.schedule_file);
    if (parallel::fits_symbolic_check(*loaded)) {
      const parallel::CheckResult check = parallel::check_schedule(*loaded);
      if (!check.ok())
        throw UsageError(o.schedule_file + ": the schedule is wrong: " + check.error);
    } else {
      parallel::validate_schedule(*loaded);
    }
    collective = loaded->spec.collective;
    algorithm_label = loaded->algorithm;
  } else {
    collective = spora::tools::collective_arg(o.op);
    algorithm = spora::tools::algorithm_arg(o.algo, collective, true);
    algorithm_label = o.algo;
  }

  const bool use_mpi = o.backend == "mpi";
  if (use_mpi) comm::mpi_initialize(nullptr, nullptr);
  struct Finalize {
    bool on;
    ~Finalize() {
      if (on) comm::mpi_finalize();
    }
  } finalize{use_mpi};
  int ranks = o.ranks;
  std::unique_ptr<Communicator> mpi;
  if (use_mpi) {
    mpi = comm::make_mpi_communicator();
    if (ranks_given && ranks != mpi->size())
      throw UsageError(
          fmt::format("--ranks {} but mpirun started {} processes", ranks, mpi->size()));
    ranks = mpi->size();
  } else if (o.backend != "threads" && o.backend != "nccl") {
    throw UsageError(fmt::format("unknown --backend '{}' (threads, mpi, nccl)", o.backend));
  }
  if (loaded) {
    if (ranks_given && ranks != loaded->spec.ranks)
      throw UsageError(
          fmt::format("--ranks {} but the schedule is for {} ranks", ranks, loaded->spec.ranks));
    ranks = loaded->spec.ranks;
  }
  if (ranks < 1) throw UsageError("--ranks must be at least 1");

  // The specs and schedules, per size.
  const std::size_t es = comm::dtype_size(*dtype);
  std::vector<CollectiveSpec> specs;
  if (loaded) {
    specs.push_back(loaded->spec);
    specs.back().op = *redop;
  } else {
    for (std::int64_t bytes : parse_sizes(o.sizes, o.factor))
      specs.push_back({collective, *redop, ranks, count_for(collective, bytes, ranks, es), o.root});
  }
  if (o.print_schedule) {
    if (!algorithm || *algorithm == Algorithm::Native)
      throw UsageError("--print-schedule needs a generated algorithm (not native)");
    std::fputs(
        parallel::print_schedule(parallel::build_schedule(*algorithm, specs.front(),
                                                          {o.chunks, o.ranks_per_node, o.channels}))
            .c_str(),
        stdout);
    return 0;
  }
  if (o.root < 0 || o.root >= ranks)
    throw UsageError(fmt::format("--root {} is not a rank", o.root));

  Report report{o, collective, algorithm_label, ranks, *dtype, {}};
  bool failed = false;
  auto body = [&](Communicator& comm) {
    if (comm.rank() == 0) report.header();
    for (CollectiveSpec spec : specs) {
      std::optional<Schedule> built;
      const Schedule* schedule = nullptr;
      if (loaded) {
        loaded->spec.op = spec.op;
        schedule = &*loaded;
      } else if (*algorithm != Algorithm::Native) {
        built =
            parallel::build_schedule(*algorithm, spec, {o.chunks, o.ranks_per_node, o.channels});
        schedule = &*built;
      }
      const Row row = measure(comm, o, spec, *dtype, schedule);
      if (comm.rank() == 0) {
        report.rows.push_back(row);
        report.line(row);
        if (row.wrong > 0) failed = true;
      }
    }
    if (comm.rank() == 0) report.footer();
  };
  if (use_mpi) {
    body(*mpi);
  } else if (o.backend == "nccl") {
    comm::run_nccl_threads(ranks, body);
  } else {
    comm::ThreadWorld world(ranks);
    world.run(body);
  }
  return failed ? 1 : 0;
}

}  // namespace

int run_coll_command(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::string(args[1]) == "coll") args.erase(args.begin() + 1);

  Options o;
  CLI::App app{"Run and time a collective (nccl-tests style table)", "spora coll"};
  app.add_option("--op", o.op,
                 "collective: broadcast, scatter, gather, reduce, all-reduce, "
                 "all-gather, reduce-scatter, all-to-all")
      ->capture_default_str();
  app.add_option("--algo", o.algo,
                 "ring, tree, binomial, halving-doubling, recursive-doubling, "
                 "bruck, pairwise, hierarchical, native")
      ->capture_default_str();
  auto* ranks =
      app.add_option("--ranks,-n", o.ranks, "number of ranks (threads/nccl; mpi: the world)")
          ->capture_default_str();
  app.add_option("--sizes", o.sizes,
                 "MIN:MAX bytes, or one size; K, M, G suffixes (powers of 1024)")
      ->capture_default_str();
  app.add_option("--factor,-f", o.factor, "size step factor")->capture_default_str();
  app.add_option("--backend", o.backend, "threads, mpi (run under mpirun) or nccl")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "f32, f64, i32, i64")->capture_default_str();
  app.add_option("--redop", o.redop, "sum, max, min, prod")->capture_default_str();
  app.add_option("--root", o.root, "root rank of broadcast, scatter, gather, reduce")
      ->capture_default_str();
  app.add_option("--chunks", o.chunks, "pipelining: split every transfer into this many pieces")
      ->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node,
                 "hierarchical, ring channels: devices per node (0: auto / one node)")
      ->capture_default_str();
  app.add_option("--channels", o.channels, "ring: independent rings over parts of the data")
      ->capture_default_str();
  app.add_option("--iters", o.iters, "timed calls per size")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls per size first")->capture_default_str();
  app.add_option("--check", o.check, "check every output element (0 to skip)")
      ->capture_default_str();
  app.add_flag("--json", o.json, "print one JSON object instead of the table");
  app.add_option("--schedule", o.schedule_file, "run a hand-written schedule file (text form)");
  app.add_flag("--print-schedule", o.print_schedule,
               "print the schedule of the first size and exit");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(o, ranks->count() > 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora coll: error: %s\n", e.what());
    return 1;
  }
}

CLI::App* add_coll_subcommand(CLI::App& app) {
  CLI::App* coll = app.add_subcommand(
      "coll", "Run and time a collective, nccl-tests style (spora coll --help for the options)");
  coll->prefix_command();
  coll->set_help_flag();  // --help goes through to run_coll_command
  return coll;
}

int run_coll_subcommand(CLI::App& coll) {
  std::vector<std::string> rest = coll.remaining();
  std::vector<char*> args{const_cast<char*>("spora coll")};
  for (std::string& s : rest) args.push_back(s.data());
  return run_coll_command(static_cast<int>(args.size()), args.data());
}

}  // namespace spora::tools
