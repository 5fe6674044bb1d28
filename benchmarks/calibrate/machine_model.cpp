// The parent of `spora calibrate`: runs the measuring children, fits the link, writes the spec
// (calibrate.h).
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "backends/runtime/data/files.h"
#include "benchmarks/calibrate/calibrate.h"
#include "benchmarks/calibrate/measure.h"
#include "lang/diagnostics.h"

namespace spora::calibrate {

namespace {

// The compute tables' lines of one reuse distance (compute.cpp).
struct TableLines {
  std::map<std::string, std::vector<std::array<double, 4>>> gemm;  // by the table's name
  std::map<std::string, std::vector<std::array<double, 2>>> bandwidth;
};

// The lines one child printed (compute.cpp, comm.cpp), by their first word.
struct ChildOutput {
  std::map<std::string, double> scalars;
  std::map<double, TableLines> tables;  // by the reuse distance of the `distance` line before
  std::vector<CollectivePoint> coll, coll_b2b;
  std::vector<SharePoint> share;
};

ChildOutput parse_child(FILE* pipe) {
  ChildOutput c;
  char line[512];
  double distance = -1;
  while (std::fgets(line, sizeof line, pipe)) {
    std::istringstream in(line);
    std::string kind, name;
    in >> kind;
    double a = 0, b = 0, k = 0, r = 0;
    if (kind == "scalar" && in >> name >> a) c.scalars[name] = a;
    if (kind == "distance") in >> distance;
    const auto& names = sim::ComputeTables::gemm_table_names();
    if (std::find(names.begin(), names.end(), kind) != names.end() && in >> a >> b >> k >> r)
      c.tables[distance].gemm[kind].push_back({a, b, k, r});
    if (kind == "bw" && in >> name >> a >> b) c.tables[distance].bandwidth[name].push_back({a, b});
    if (SharePoint p; kind == "share" && in >> p.ranks >> p.n >> p.bytes >> p.compute >> p.loop)
      c.share.push_back(p);
    if ((kind == "coll" || kind == "coll_b2b") && in >> name >> a >> b) {
      int ranks = 2;
      in >> ranks;
      (kind == "coll" ? c.coll : c.coll_b2b).push_back({name, a, b, ranks});
    }
  }
  return c;
}

// Runs `copies` instances of a shell command at once; the answer of the one with the median
// f32 peak (one process's figures belong together). Empty when an instance failed.
std::optional<ChildOutput> run_children(const std::string& command, int copies) {
  std::vector<FILE*> pipes;
  for (int i = 0; i < copies; ++i) {
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw lang::UserError(fmt::format("cannot run: {}", command));
    pipes.push_back(pipe);
  }
  std::vector<ChildOutput> answers;
  bool failed = false;
  for (FILE* pipe : pipes) {
    answers.push_back(parse_child(pipe));
    failed = pclose(pipe) != 0 || failed;
  }
  if (failed || answers.empty()) return std::nullopt;
  std::sort(answers.begin(), answers.end(), [](const ChildOutput& a, const ChildOutput& b) {
    const auto x = a.scalars.find("peak_f32"), y = b.scalars.find("peak_f32");
    return (x == a.scalars.end() ? 0 : x->second) < (y == b.scalars.end() ? 0 : y->second);
  });
  return answers[answers.size() / 2];
}

std::string gb(double bytes_per_s) { return fmt::format("{:.3g} GB/s", bytes_per_s / 1e9); }
std::string gflops(double f) { return fmt::format("{:.4g} GFLOP/s", f / 1e9); }
std::string usec(double s) { return fmt::format("{:.3g} us", s * 1e6); }

void write_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path out(path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  runtime::data::write_file_atomic(path, text);
}

}  // namespace

int ring_steps(const std::string& primitive) { return primitive == "all_reduce" ? 2 : 1; }

// The strided pieces' rows and all_reduce's: the ring model is fitted to these (the contiguous
// rows, measured beside them, are the same messages without the staging copies).
bool strided_or_whole(const CollectivePoint& p) { return !p.primitive.ends_with("_contiguous"); }

std::vector<std::pair<int, int64_t>> share_cases() {
  std::vector<std::pair<int, int64_t>> cases;
  for (const int n : {0, 1, 4, 16, 64, 256, 1024, 4096}) cases.push_back({n, int64_t{4} << 10});
  for (const int n : {0, 64}) cases.push_back({n, int64_t{1} << 20});
  return cases;
}

double simulated_all_reduce(double bytes, int ranks, double share, double latency,
                            const LinkFit& link) {
  if (ranks < 2) return 0;
  return share * link.overhead +
         2.0 * (ranks - 1) * (latency + share * bytes / ranks / link.bandwidth);
}

namespace {

const SharePoint* find_point(const std::vector<SharePoint>& v, int n, double bytes) {
  for (const SharePoint& p : v)
    if (p.n == n && p.bytes == bytes) return &p;
  return nullptr;
}

}  // namespace

std::map<std::string, std::map<int, sim::CollectiveTable>> collective_tables(
    const std::vector<CollectivePoint>& points) {
  std::map<std::string, std::map<int, std::vector<std::array<double, 2>>>> rows;
  for (const CollectivePoint& p : points)
    if (p.bytes > 0 && p.seconds > 0) rows[p.primitive][p.ranks].push_back({p.bytes, p.seconds});
  std::map<std::string, std::map<int, sim::CollectiveTable>> out;
  for (const auto& [name, by_ranks] : rows)
    for (const auto& [ranks, rs] : by_ranks) out[name][ranks] = sim::CollectiveTable::from_rows(rs);
  return out;
}

std::vector<std::array<double, 2>> oversubscribed_rows(const std::vector<SharePoint>& base,
                                                       const std::vector<SharePoint>& over,
                                                       int cores, double latency,
                                                       const LinkFit& link,
                                                       const sim::CollectiveTable* all_reduce) {
  std::vector<std::array<double, 2>> rows;
  for (const auto& [n, bytes] : share_cases()) {
    if (bytes != int64_t{4} << 10) continue;
    const SharePoint* b = find_point(base, n, static_cast<double>(bytes));
    const SharePoint* o = find_point(over, n, static_cast<double>(bytes));
    if (!b || !o || o->ranks <= cores) return {};
    const double share = static_cast<double>(o->ranks) / cores;
    const double grain = n == 0 ? 0 : b->compute;
    const double collective = all_reduce
                                  ? all_reduce->seconds_at(o->bytes)
                                  : simulated_all_reduce(o->bytes, o->ranks, share, latency, link);
    rows.push_back({grain, o->loop - share * grain - collective});
  }
  return rows;
}

LinkFit fit_collectives(const std::vector<CollectivePoint>& points, double latency) {
  // y = t - steps * latency = overhead + x / bandwidth, x = steps * bytes / 2.
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CollectivePoint& p : points) {
    const double steps = ring_steps(p.primitive);
    const double x = steps * p.bytes / 2, y = p.seconds - steps * latency;
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  LinkFit f;
  const double det = n * sxx - sx * sx;
  if (n < 2 || det <= 0) return f;
  const double slope = (n * sxy - sx * sy) / det;
  if (slope <= 0) return f;
  f.bandwidth = 1 / slope;
  f.overhead = std::max(0.0, (sy - slope * sx) / n);
  f.ok = true;
  return f;
}

std::string machine_model_yaml(const MachineModel& m) {
  std::string y =
      "# This machine, measured by `spora calibrate` (benchmarks/calibrate/) from\n"
      "# microbenchmarks only: no program that is later predicted is run or fitted.\n";
  for (const std::string& note : m.notes) y += "#   " + note + "\n";
  y += fmt::format("#   best f32 GEMM/conv {}, f64 matmul {}; add/mul of 4 MiB arrays {}\n",
                   gflops(m.peak_f32), gflops(m.peak_f64), gb(m.memory_bandwidth));
  y += fmt::format(
      "#   interpreter: {} per node (dispatch; the classes' launch_overhead adds their\n"
      "#   kernels' fixed cost)\n",
      usec(m.interpreter_overhead));
  if (!m.tables.at_reuse_distance.empty()) {
    std::string others;
    for (const auto& [d, t] : m.tables.at_reuse_distance)
      others += fmt::format("{}{:.3g} MiB", others.empty() ? "" : ", ", d / 1048576);
    y += fmt::format(
        "#   compute tables with the kernels' inputs at reuse distance {:.3g} MiB (twice the\n"
        "#   core's private cache), and at {} (at_reuse_distance)\n",
        m.tables.reuse_distance / 1048576, others);
  }
  if (m.have_mpi) {
    y += fmt::format("#   MPI (mpirun -np 2): latency {} (8 B ping-pong)\n", usec(m.latency));
    y += "#   collectives in place (after 2 ms of computation over 32 MiB), measured / ring model "
         "fit / back to back:\n";
    for (const CollectivePoint& p : m.collectives) {
      if (p.ranks != 2) continue;
      const double model =
          m.link.overhead + ring_steps(p.primitive) * (m.latency + p.bytes / 2 / m.link.bandwidth);
      double b2b = 0;
      for (const CollectivePoint& q : m.back_to_back)
        if (q.primitive == p.primitive && q.bytes == p.bytes) b2b = q.seconds;
      y += fmt::format("#     {:<15} {:>8} B  {:>9}  {:>9} ({:+.0f}%)  {:>9}\n", p.primitive,
                       p.bytes, usec(p.seconds), usec(model), (model / p.seconds - 1) * 100,
                       usec(b2b));
    }
    y += m.link.ok ? fmt::format("#   least-squares fit: bandwidth {}, overhead {} per call\n",
                                 gb(m.link.bandwidth), usec(m.link.overhead))
                   : "#   the fit failed (no positive slope): bandwidth = memory bandwidth / 2\n";
    y += "#   the simulator charges the measured points (device.measured.collectives) for groups\n"
         "#   of a measured size, the fitted ring model for others\n";
  } else {
    y += "#   no MPI measurement: transfers are taken to be memory copies\n";
  }
  if (!m.share_over.empty() && m.tables.cores > 0) {
    const SharePoint& any = m.share_over.front();
    const double share = static_cast<double>(any.ranks) / m.tables.cores;
    y += fmt::format(
        "#   {} ranks on {} cores (measure share): loops of n 64x64 matmuls + an all_reduce over\n"
        "#   the ranks; grain = the compute part at {} ranks; simulated = {} x grain + the\n"
        "#   measured all_reduce (else the ring with shared copies), corrected by the extra (>= "
        "0)\n",
        any.ranks, m.tables.cores, m.tables.cores, share);
    y += "#     n     bytes     grain   loop@cores  loop@ranks  simulated  (extra)\n";
    for (const SharePoint& o : m.share_over) {
      const SharePoint* b = find_point(m.share_base, o.n, o.bytes);
      if (!b) continue;
      const double grain = o.n == 0 ? 0 : b->compute;
      // As sim/spmd_step.cpp charges it: the extra corrects the per-call time, kept >= 0.
      const double extra = m.tables.oversubscribed.extra_at(grain);
      const sim::CollectiveTable* table = m.tables.collective("all_reduce", o.ranks);
      const double per_call = share * m.link.overhead;
      const double simulated =
          share * grain + (table
                               ? std::max(0.0, table->seconds_at(o.bytes) + extra)
                               : simulated_all_reduce(o.bytes, o.ranks, share, m.latency, m.link) -
                                     per_call + std::max(0.0, per_call + extra));
      y += fmt::format("#   {:>4} {:>8} {:>10} {:>10} {:>10} {:>10} ({})\n", o.n, o.bytes,
                       usec(grain), usec(b->loop), usec(o.loop), usec(simulated), usec(extra));
    }
  }
  y += "name: this-machine\nnodes: 1\n";
  y += fmt::format("devices_per_node: {}\n", m.devices);
  y += "device:\n  kind: cpu\n  model: x86-64 core (one thread of our CPU kernels)\n";
  y += fmt::format("  peak_flops:\n    f32: {}\n    f64: {}\n", gflops(m.peak_f32),
                   gflops(m.peak_f64));
  y += fmt::format("  memory: {:.3g} GB\n", m.memory_bytes / 1e9);
  y += fmt::format("  memory_bandwidth: {}\n", gb(m.memory_bandwidth));
  y += fmt::format("  launch_overhead: {}\n", usec(m.interpreter_overhead));
  if (!m.launch_overhead.empty()) y += "  op_classes:\n";
  for (const auto& [cls, h] : m.launch_overhead)
    y += fmt::format("    {}: {{launch_overhead: {}}}\n", cls, usec(h));
  y += sim::measured_tables_yaml(m.tables, 2);
  y += "collectives: inline   # spora run's MPI executor: no overlap with computation\n";
  // (measured.collectives, in the block above, holds every rank count measured.)
  const double bandwidth = m.have_mpi && m.link.ok ? m.link.bandwidth : m.memory_bandwidth / 2;
  if (m.have_mpi && m.link.ok)
    y += fmt::format("collective_overhead: {}   # per call, from the fit above\n",
                     usec(m.link.overhead));
  y += fmt::format("interconnect:\n  kind: switch\n  bandwidth: {}\n  latency: {}\n", gb(bandwidth),
                   usec(m.latency));
  return y;
}

int calibrate_machine(const CalibrateOptions& o) {
  const auto t0 = Clock::now();
  const int cores =
      o.cores > 0 ? o.cores : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::string env = "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1";
  std::fprintf(stderr, "calibrate: the CPU kernels, %d single-threaded processes at once...\n",
               cores);
  const auto c =
      run_children(fmt::format("{} '{}' calibrate --measure compute", env, o.self), cores);
  if (!c) throw lang::UserError("the compute measurement failed");
  MachineModel m;
  m.devices = o.devices > 0 ? o.devices : cores;
  m.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                   static_cast<double>(sysconf(_SC_PAGE_SIZE)) / m.devices;
  m.peak_f32 = c->scalars.at("peak_f32");
  m.peak_f64 = c->scalars.at("peak_f64");
  m.memory_bandwidth = c->scalars.at("memory_bandwidth");
  m.interpreter_overhead = c->scalars.at("launch_overhead");
  for (const auto& [key, value] : c->scalars)
    if (key.rfind("overhead.", 0) == 0) m.launch_overhead[key.substr(9)] = value;
  m.tables.cores = cores;
  // The tables at the base distance are the inherited ones; the others go by their distance.
  const auto base = c->scalars.find("reuse_distance");
  if (base == c->scalars.end() || !c->tables.count(base->second))
    throw lang::UserError("the compute measurement printed no tables at its reuse distance");
  m.tables.reuse_distance = base->second;
  for (const auto& [distance, lines] : c->tables) {
    sim::ComputeTables& t =
        distance == base->second ? m.tables : m.tables.at_reuse_distance[distance];
    for (const std::string& name : sim::ComputeTables::gemm_table_names()) {
      const auto rows = lines.gemm.find(name);
      if (rows == lines.gemm.end())
        throw lang::UserError(fmt::format("the compute measurement printed no {} table", name));
      *t.gemm_table(name) = sim::GemmTable::from_rows(rows->second);
    }
    for (const auto& [cls, rows] : lines.bandwidth)
      t.bandwidth[cls] = sim::RateTable::from_rows(rows);
  }

  if (!o.no_mpi) {
    std::fprintf(stderr, "calibrate: collectives between 2 MPI ranks...\n");
    const auto mpi = run_children(fmt::format("{} mpirun --oversubscribe --allow-run-as-root -np 2 "
                                              "'{}' calibrate --measure mpi 2>/dev/null",
                                              env, o.self),
                                  1);
    if (mpi && mpi->scalars.count("mpi_latency") && !mpi->coll.empty()) {
      m.have_mpi = true;
      m.latency = mpi->scalars.at("mpi_latency");
      m.collectives = mpi->coll;
      m.back_to_back = mpi->coll_b2b;
      std::vector<CollectivePoint> two;
      for (const CollectivePoint& p : m.collectives)
        if (p.ranks == 2 && strided_or_whole(p)) two.push_back(p);
      m.link = fit_collectives(two, m.latency);
    } else {
      std::fprintf(stderr, "calibrate: mpirun failed; transfers are taken to be memory copies\n");
    }
  }
  // More ranks than cores: a call's time is mostly the ranks taking turns (a 4 KiB all_reduce
  // of 4 ranks on 2 cores takes milliseconds, the scheduler's time slices), which the
  // oversubscription table below models as a function of the compute between calls; so the
  // tables hold rank counts up to the cores only.
  if (m.have_mpi && m.devices > 2 && m.devices <= cores) {
    std::fprintf(stderr, "calibrate: collectives between %d MPI ranks...\n", m.devices);
    const auto mpi =
        run_children(fmt::format("{} mpirun --oversubscribe --allow-run-as-root -np {} "
                                 "'{}' calibrate --measure mpi 2>/dev/null",
                                 env, m.devices, o.self),
                     1);
    if (mpi && !mpi->coll.empty()) {
      m.collectives.insert(m.collectives.end(), mpi->coll.begin(), mpi->coll.end());
      m.back_to_back.insert(m.back_to_back.end(), mpi->coll_b2b.begin(), mpi->coll_b2b.end());
    } else {
      std::fprintf(stderr, "calibrate: the collectives over %d ranks failed; ring model\n",
                   m.devices);
    }
  }
  if (m.have_mpi) {
    // The calls after computation, and the same calls back to back as `<primitive>_b2b`.
    std::vector<CollectivePoint> all = m.collectives;
    for (CollectivePoint p : m.back_to_back) {
      p.primitive += "_b2b";
      all.push_back(p);
    }
    m.tables.collectives = collective_tables(all);
  }
  if (m.have_mpi && m.link.ok && m.devices > cores) {
    auto loops = [&](int ranks) {
      std::fprintf(stderr, "calibrate: %d MPI ranks on %d cores...\n", ranks, cores);
      const auto out = run_children(fmt::format("{} mpirun --oversubscribe --allow-run-as-root "
                                                "-np {} '{}' calibrate --measure share 2>/dev/null",
                                                env, ranks, o.self),
                                    1);
      return out ? out->share : std::vector<SharePoint>{};
    };
    m.share_base = loops(cores);
    m.share_over = loops(m.devices);
    const auto rows = oversubscribed_rows(m.share_base, m.share_over, cores, m.latency, m.link,
                                          m.tables.collective("all_reduce", m.devices));
    if (rows.empty())
      std::fprintf(stderr, "calibrate: the loops of ranks sharing cores failed; not modelled\n");
    else
      m.tables.oversubscribed = sim::SyncTable::from_rows(m.devices, rows);
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  m.notes.push_back(
      fmt::format("on {}: {} cores, one device per core, each a single-threaded run of "
                  "our CPU kernels",
                  date, cores));
  m.notes.push_back(sched_getscheduler(0) == SCHED_FIFO
                        ? "(measured under SCHED_FIFO: ranks beyond the cores do not take turns as "
                          "under the default policy; `spora run` runs under the default)"
                        : "(measured under the default scheduling policy, as `spora run` runs)");
  const std::string y = machine_model_yaml(m);
  write_atomically(o.out, y);
  std::fprintf(stderr, "calibrate: wrote %s in %.1f s\n", o.out.c_str(), seconds_since(t0));
  return 0;
}

}  // namespace spora::calibrate
