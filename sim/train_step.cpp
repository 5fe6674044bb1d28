// Simulating a data-parallel training step (train_step.h): buckets, the compute and
// communication actors of every device, the bulk collective model, and the metrics.
#include "sim/train_step.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "parallel/collectives/algorithms.h"
#include "sim/collectives.h"
#include "sim/cost_model.h"
#include "sim/interference.h"
#include "sim/isolation.h"
#include "sim/platform.h"
#include "sim/reuse.h"
#include "sim/synth.h"

namespace spora::sim {

namespace sg4 = simgrid::s4u;

namespace {

// CPU seconds used so far by this process and its waited-for children.
double cpu_time() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    total += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  }
  return total;
}

struct LogEntry {
  double time;
  int rank;
  long seq;
  std::string text;
};

// One ring phase of the bulk model, for one rank.
struct BulkPhase {
  int next = -1, prev = -1;
  double send_bytes = 0;    // the phase's whole traffic to `next` (as much comes from `prev`)
  double reduce_bytes = 0;  // what this rank reduces (3 memory passes each)
  int extra_steps = 0;      // ring steps beyond the one the transfer's own latency covers
  double latency = 0;       // of the route to `next` (filled in the simulation)
};

// Ring phases of a rank in `group` (in ring order): position, neighbours.
BulkPhase ring_phase(const std::vector<int>& group, int rank) {
  const int q = static_cast<int>(group.size());
  const int i = static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
  BulkPhase p;
  p.next = group[static_cast<std::size_t>((i + 1) % q)];
  p.prev = group[static_cast<std::size_t>((i + q - 1) % q)];
  return p;
}

// The bulk phases of an all-reduce of `bytes` for `rank` (train_step.h, "bulk").
std::vector<BulkPhase> bulk_phases(parallel::Algorithm algorithm, int ranks, int per_node,
                                   double bytes, int rank) {
  std::vector<BulkPhase> phases;
  auto add = [&](const std::vector<int>& group, double send, double reduce, int steps) {
    if (group.size() < 2) return;
    BulkPhase p = ring_phase(group, rank);
    p.send_bytes = send;
    p.reduce_bytes = reduce;
    p.extra_steps = std::max(0, steps - 1);
    phases.push_back(p);
  };
  if (algorithm == parallel::Algorithm::Ring) {
    std::vector<int> all(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
    const double q = ranks;
    add(all, 2 * (q - 1) / q * bytes, (q - 1) / q * bytes, 2 * (ranks - 1));
    return phases;
  }
  // Hierarchical: reduce-scatter in the node, all-reduce of 1/g across nodes, all-gather.
  const int g = per_node, m = ranks / per_node;
  const int node = rank / g, local = rank % g;
  std::vector<int> in_node, across;
  for (int l = 0; l < g; ++l) in_node.push_back(node * g + l);
  for (int n = 0; n < m; ++n) across.push_back(n * g + local);
  const double gd = g, md = m, block = bytes / gd;
  add(in_node, (gd - 1) / gd * bytes, (gd - 1) / gd * bytes, g - 1);
  add(across, 2 * (md - 1) / md * block, (md - 1) / md * block, 2 * (m - 1));
  add(in_node, (gd - 1) / gd * bytes, 0, g - 1);
  return phases;
}

// Everything the actors share (they run one at a time: no locking).
struct Sim {
  const ClusterSpec& cluster;
  const Platform& platform;
  const StepProgram& program;
  const TrainSimResult& plan;  // buckets, segments, times
  const TrainSimOptions& options;
  int ranks = 0, per_node = 1;
  parallel::Algorithm algorithm = parallel::Algorithm::Ring;
  std::vector<std::vector<sg4::SemaphorePtr>> ready, done;  // [rank][bucket]
  std::vector<std::unique_ptr<ScheduleRun>> runs;           // steps model: per bucket
  std::vector<DeviceTimeline> timelines;
  std::vector<LogEntry> log;
  long seq = 0;
  long events = 0;
  int token = 0;
  double share = 0;  // of a device a running all-reduce holds (interference.h)

  Sim(const ClusterSpec& c, const Platform& p, const StepProgram& prog, const TrainSimResult& pl,
      const TrainSimOptions& o)
      : cluster(c),
        platform(p),
        program(prog),
        plan(pl),
        options(o),
        share(c.device.comm_sm_share) {}

  double now() const { return sg4::Engine::get_clock(); }
  // Call as `if (sim.options.log) sim.note(...)`: the text is not worth formatting otherwise.
  void note(int rank, const std::string& stream, const std::string& text) {
    log.push_back(
        {now(), rank, seq++,
         fmt::format("[{:.9f}] rank{}@{} {}: {}", now(), rank,
                     platform.devices[static_cast<std::size_t>(rank)]->get_name(), stream, text)});
  }
  // An Exec as long as moving `bytes` through the device memory.
  void memory_pass(double bytes) {
    if (bytes <= 0) return;
    const sg4::Host* host = sg4::this_actor::get_host();
    sg4::this_actor::execute(platform.flops_for(host, bytes / platform.memory_bandwidth));
    ++events;
  }
  // A rank's bulk phases for an all-reduce of one byte (they scale with the size), with the
  // latencies of their routes; made once per rank.
  std::vector<std::vector<BulkPhase>> unit_phases;
  const std::vector<BulkPhase>& phases_of(int rank) {
    if (unit_phases.empty()) unit_phases.resize(static_cast<std::size_t>(ranks));
    std::vector<BulkPhase>& p = unit_phases[static_cast<std::size_t>(rank)];
    if (p.empty()) {
      p = bulk_phases(algorithm, ranks, per_node, 1.0, rank);
      for (BulkPhase& phase : p) phase.latency = route_latency(rank, phase.next);
    }
    return p;
  }
  double route_latency(int from, int to) {
    std::vector<sg4::Link*> links;
    double latency = 0;
    platform.devices[static_cast<std::size_t>(from)]->route_to(
        platform.devices[static_cast<std::size_t>(to)], links, &latency);
    return latency;
  }
};

std::string bytes_text(double b) { return fmt::format("{} B", static_cast<long long>(b)); }

void compute_actor(Sim& sim, int rank) {
  DeviceTimeline& tl = sim.timelines[static_cast<std::size_t>(rank)];
  const auto& buckets = sim.plan.buckets;
  for (std::size_t b = 0; b < buckets.size(); ++b)
    if (buckets[b].ready_op < 0) sim.ready[static_cast<std::size_t>(rank)][b]->release();
  for (const Segment& s : sim.plan.segments) {
    tl.segment_starts.push_back(sim.now());
    if (s.seconds > 0) {
      run_compute(sim.platform, s.seconds, sim.share);
      ++sim.events;
    }
    std::string ready;
    for (int b : s.buckets_ready) {
      sim.ready[static_cast<std::size_t>(rank)][static_cast<std::size_t>(b)]->release();
      if (sim.options.log) ready += fmt::format(", bucket {} complete", b);
    }
    if (sim.options.log && s.last_op >= s.first_op)
      sim.note(rank, "compute", fmt::format("ops {}-{} done{}", s.first_op, s.last_op, ready));
  }
  for (std::size_t b = 0; b < buckets.size(); ++b)
    sim.done[static_cast<std::size_t>(rank)][b]->acquire();
  tl.update_start.push_back(sim.now());
  if (sim.plan.update_seconds > 0) {
    run_compute(sim.platform, sim.plan.update_seconds, sim.share);
    ++sim.events;
  }
  tl.end = sim.now();
  if (sim.options.log)
    sim.note(rank, "compute",
             fmt::format("update of {} parameters done; step done", sim.program.params.size()));
}

void bulk_all_reduce(Sim& sim, int rank, int bucket, double bytes) {
  const std::vector<BulkPhase>& phases = sim.phases_of(rank);
  for (std::size_t k = 0; k < phases.size(); ++k) {
    BulkPhase p = phases[k];
    p.send_bytes *= bytes;
    p.reduce_bytes *= bytes;
    const double t0 = sim.now();
    sg4::Mailbox* out = sg4::Mailbox::by_name(fmt::format("b{}.{}:{}>{}", bucket, k, rank, p.next));
    sg4::Mailbox* in = sg4::Mailbox::by_name(fmt::format("b{}.{}:{}>{}", bucket, k, p.prev, rank));
    void* payload = nullptr;
    sg4::CommPtr put = out->put_async(&sim.token, static_cast<std::uint64_t>(p.send_bytes));
    sg4::CommPtr get = in->get_async(&payload);
    get->wait();
    put->wait();
    sim.events += 2;
    const double reduce = 3 * p.reduce_bytes / sim.platform.memory_bandwidth - (sim.now() - t0);
    if (reduce > 0) {
      sg4::this_actor::execute(sim.platform.flops_for(sg4::this_actor::get_host(), reduce));
      ++sim.events;
    }
    if (p.extra_steps > 0) {
      sg4::this_actor::sleep_for(p.extra_steps * p.latency);
      ++sim.events;
    }
  }
}

void comm_actor(Sim& sim, int rank) {
  DeviceTimeline& tl = sim.timelines[static_cast<std::size_t>(rank)];
  const auto& buckets = sim.plan.buckets;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const double bytes = buckets[b].bytes;
    sim.ready[static_cast<std::size_t>(rank)][b]->acquire();
    const CommShare held(sim.share);  // interference.h
    const double t0 = sim.now();
    if (sim.options.bucket_copies) sim.memory_pass(2 * bytes);
    tl.copy_in.push_back({t0, sim.now()});
    if (sim.options.log)
      sim.note(rank, "comm",
               fmt::format("bucket {} all-reduce of {} ({}) started", b, bytes_text(bytes),
                           sim.plan.algorithm));
    const double t1 = sim.now();
    if (sim.runs.empty()) {
      bulk_all_reduce(sim, rank, static_cast<int>(b), bytes);
    } else {
      sim.runs[b]->run_rank(rank);
      sim.events += static_cast<long>(
          sim.runs[b]->schedule().ranks[static_cast<std::size_t>(rank)].steps.size());
    }
    tl.all_reduce.push_back({t1, sim.now()});
    if (sim.options.log) sim.note(rank, "comm", fmt::format("bucket {} all-reduced", b));
    const double t2 = sim.now();
    if (sim.options.bucket_copies) sim.memory_pass(2 * bytes);
    tl.copy_out.push_back({t2, sim.now()});
    sim.done[static_cast<std::size_t>(rank)][b]->release();
  }
}

// ---- results between the processes, as text (doubles in hexadecimal, exactly) ---------------

void put_intervals(std::string& out, const std::vector<Interval>& v) {
  for (const Interval& i : v) out += fmt::format(" {:a} {:a}", i.start, i.end);
}

std::string serialize(const Sim& sim) {
  std::string out = fmt::format("events {}\n", sim.events);
  for (const DeviceTimeline& t : sim.timelines) {
    out += fmt::format("device {:a} {} {}", t.end, t.segment_starts.size(), t.copy_in.size());
    for (double s : t.segment_starts) out += fmt::format(" {:a}", s);
    out += fmt::format(" {:a}", t.update_start.empty() ? 0.0 : t.update_start[0]);
    put_intervals(out, t.copy_in);
    put_intervals(out, t.all_reduce);
    put_intervals(out, t.copy_out);
    out += "\n";
  }
  out += fmt::format("log {}\n", sim.log.size());
  for (const LogEntry& e : sim.log) out += e.text + "\n";
  return out;
}

void deserialize(const std::string& text, TrainSimResult& r) {
  std::istringstream in(text);
  std::string tag;
  auto number = [&] { return read_number(in); };
  in >> tag >> r.events;
  if (tag != "events") throw SimulationError("garbled answer from the simulation process");
  for (std::size_t d = 0; d < r.timelines.size(); ++d) {
    DeviceTimeline& t = r.timelines[d];
    std::size_t segments = 0, buckets = 0;
    in >> tag;
    if (tag != "device") throw SimulationError("garbled answer from the simulation process");
    t.end = number();
    in >> segments >> buckets;
    for (std::size_t i = 0; i < segments; ++i) t.segment_starts.push_back(number());
    t.update_start.push_back(number());
    for (auto* v : {&t.copy_in, &t.all_reduce, &t.copy_out})
      for (std::size_t i = 0; i < buckets; ++i) {
        const double a = number();
        v->push_back({a, number()});
      }
  }
  std::size_t lines = 0;
  in >> tag >> lines;
  std::string line;
  std::getline(in, line);
  for (std::size_t i = 0; i < lines && std::getline(in, line); ++i) r.log.push_back(line);
}

}  // namespace

// The measure of a union of intervals.
double union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.start, a.end) < std::tie(b.start, b.end);
  });
  double total = 0, lo = 0, hi = -1;
  for (const Interval& i : v) {
    if (i.end <= i.start) continue;
    if (i.start > hi) {
      if (hi > lo) total += hi - lo;
      lo = i.start;
      hi = i.end;
    } else {
      hi = std::max(hi, i.end);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

std::string_view comm_model_name(CommModel m) {
  switch (m) {
    case CommModel::Auto:
      return "auto";
    case CommModel::Steps:
      return "steps";
    case CommModel::Bulk:
      return "bulk";
  }
  return "?";
}

std::vector<Bucket> assign_buckets(const StepProgram& program, double bucket_bytes,
                                   double first_bucket_bytes) {
  std::vector<int> order(program.params.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  // Production order; ties (gradients completed by the same op) in reverse parameter order,
  // like DDP's reversed model.parameters().
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int ga = program.params[static_cast<std::size_t>(a)].grad_op;
    const int gb = program.params[static_cast<std::size_t>(b)].grad_op;
    return ga != gb ? ga < gb : a > b;
  });
  std::vector<Bucket> buckets;
  Bucket current;
  for (int i : order) {
    const StepParam& p = program.params[static_cast<std::size_t>(i)];
    current.params.push_back(i);
    current.bytes += p.bytes;
    current.ready_op = std::max(current.ready_op, p.grad_op);
    const double cap = buckets.empty() ? first_bucket_bytes : bucket_bytes;
    if (current.bytes >= cap) {
      buckets.push_back(std::move(current));
      current = Bucket{};
    }
  }
  if (!current.params.empty()) buckets.push_back(std::move(current));
  return buckets;
}

namespace {

// The compute stream's segments: the ops between two points where buckets become ready.
void add_segments(TrainSimResult& r, const StepProgram& program) {
  std::map<int, std::vector<int>> ready_after;  // op -> buckets complete after it
  for (std::size_t b = 0; b < r.buckets.size(); ++b)
    if (r.buckets[b].ready_op >= 0)
      ready_after[r.buckets[b].ready_op].push_back(static_cast<int>(b));
  const int n = static_cast<int>(program.ops.size());
  int first = 0;
  for (const auto& [op, buckets] : ready_after) {
    Segment s;
    s.first_op = first;
    s.last_op = op;
    s.buckets_ready = buckets;
    for (int i = first; i <= op; ++i) s.seconds += r.op_seconds[static_cast<std::size_t>(i)];
    r.segments.push_back(std::move(s));
    first = op + 1;
  }
  if (first < n || r.segments.empty()) {
    Segment s;
    s.first_op = first;
    s.last_op = n - 1;
    for (int i = first; i < n; ++i) s.seconds += r.op_seconds[static_cast<std::size_t>(i)];
    r.segments.push_back(std::move(s));
  }
}

// Each device's step time, compute, communication (exposed or hidden), idle time and memory.
void add_device_reports(TrainSimResult& r, const StepProgram& program,
                        const TrainSimOptions& options) {
  for (const DeviceTimeline& t : r.timelines) r.step_seconds = std::max(r.step_seconds, t.end);
  double param_bytes = 0, state_bytes = 0;
  for (const StepParam& p : program.params) {
    param_bytes += p.bytes;
    state_bytes += p.state_tensors * p.bytes;
  }
  for (const DeviceTimeline& t : r.timelines) {
    DeviceReport d;
    std::vector<Interval> compute, comm;
    for (std::size_t s = 0; s < r.segments.size(); ++s)
      compute.push_back({t.segment_starts[s], t.segment_starts[s] + r.segments[s].seconds});
    compute.push_back({t.update_start[0], t.update_start[0] + r.update_seconds});
    for (std::size_t b = 0; b < t.copy_in.size(); ++b)
      comm.push_back({t.copy_in[b].start, t.copy_out[b].end});
    d.compute = union_length(compute);
    d.communication = union_length(comm);
    std::vector<Interval> both = compute;
    both.insert(both.end(), comm.begin(), comm.end());
    const double busy = union_length(both);
    d.exposed_communication = busy - d.compute;
    d.idle = r.step_seconds - busy;
    d.parameters = param_bytes;
    d.gradients = param_bytes * (options.bucket_copies ? 2 : 1);
    d.optimizer_state = state_bytes;
    d.activations = program.activation_peak;
    r.devices.push_back(d);
  }
}

}  // namespace

TrainSimResult simulate_train_step(const ClusterSpec& cluster, const StepProgram& program,
                                   const TrainSimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_time();
  TrainSimResult r;
  r.ranks = options.ranks > 0 ? options.ranks : cluster.device_count();
  if (r.ranks > cluster.device_count())
    throw std::invalid_argument(fmt::format("{} ranks but {} has {} devices", r.ranks, cluster.name,
                                            cluster.device_count()));
  r.global_batch = program.batch * r.ranks;

  // The algorithm: hierarchical when the ranks fill several whole nodes, else a ring.
  const int per_node = cluster.devices_per_node;
  std::string algo = options.algorithm;
  if (algo == "auto")
    algo = r.ranks > per_node && r.ranks % per_node == 0 && per_node > 1 ? "hierarchical" : "ring";
  // Synthesized schedules run in the steps model; `algorithm` is then only the log's name.
  const bool synthesized = algo == "synth";
  if (synthesized && options.comm_model == CommModel::Bulk)
    throw std::invalid_argument("the bulk communication model has no synthesized schedules");
  const auto algorithm = parallel::parse_algorithm(synthesized ? "ring" : algo);
  if (!algorithm || !parallel::supports(*algorithm, parallel::Collective::AllReduce) ||
      *algorithm == parallel::Algorithm::Native)
    throw std::invalid_argument(fmt::format(
        "unknown all-reduce algorithm '{}' (ring, hierarchical, tree, halving-doubling, "
        "binomial)",
        algo));
  if (*algorithm == parallel::Algorithm::Hierarchical && r.ranks % per_node != 0)
    throw std::invalid_argument(fmt::format(
        "hierarchical all-reduce needs whole nodes: {} ranks on nodes of {}", r.ranks, per_node));
  r.algorithm = algo;
  r.comm_model = options.comm_model == CommModel::Auto
                     ? (r.ranks <= 64 || synthesized ? CommModel::Steps : CommModel::Bulk)
                     : options.comm_model;
  if (r.comm_model == CommModel::Bulk && *algorithm != parallel::Algorithm::Ring &&
      *algorithm != parallel::Algorithm::Hierarchical)
    throw std::invalid_argument(fmt::format(
        "the bulk communication model has ring and hierarchical all-reduce, not {}", algo));

  // Op times, buckets, and the compute stream's segments.
  const CostModel model(cluster.device, options.matmul_dtype, ranks_on_node(cluster, r.ranks));
  {
    // The step's ops, then every parameter's update, each read at its reuse distance.
    std::vector<const StepOp*> sequence;
    for (const StepOp& op : program.ops) sequence.push_back(&op);
    for (const StepParam& p : program.params)
      for (const StepOp& op : p.update) sequence.push_back(&op);
    const std::vector<double> seconds = op_seconds(model, sequence);
    r.op_seconds.assign(seconds.begin(), seconds.begin() + program.ops.size());
    for (std::size_t i = program.ops.size(); i < seconds.size(); ++i)
      r.update_seconds += seconds[i];
  }
  r.buckets = assign_buckets(program, options.bucket_bytes, options.first_bucket_bytes);
  add_segments(r, program);

  // Schedules for the steps model (validated here, in the parent, once per size).
  const int element_bytes =
      program.params.empty() ? 4 : static_cast<int>(dtype_size(program.params[0].type->dtype));
  std::vector<parallel::Schedule> schedules;
  SimOptions sim_options;
  sim_options.element_bytes = element_bytes;
  sim_options.log = options.log_collectives;
  sim_options.recv_reduce = options.recv_reduce;
  if (r.comm_model == CommModel::Steps) {
    std::map<std::int64_t, bool> checked;
    for (const Bucket& b : r.buckets) {
      parallel::CollectiveSpec spec{parallel::Collective::AllReduce, parallel::ReduceOp::Sum,
                                    r.ranks, static_cast<std::int64_t>(b.bytes / element_bytes)};
      parallel::AlgorithmOptions ao;
      if (*algorithm == parallel::Algorithm::Hierarchical) ao.ranks_per_node = per_node;
      if (*algorithm == parallel::Algorithm::Ring && r.ranks % per_node == 0) {
        ao.ranks_per_node = per_node;  // across nodes: one channel per NIC, as NCCL
        ao.channels = default_ring_channels(cluster, r.ranks);
      }
      if (!synthesized)
        schedules.push_back(parallel::build_schedule(*algorithm, spec, ao));
      else if (options.schedule_for)
        schedules.push_back(options.schedule_for(spec, sim_options));
      else
        schedules.push_back(synthesize(cluster, spec, {20, sim_options, 3}).schedule);
      if (!checked[spec.count]) {
        check_for_simulation(schedules.back(), cluster.device_count(), sim_options);
        checked[spec.count] = true;
      }
    }
  }

  r.timelines.resize(static_cast<std::size_t>(r.ranks));
  const std::string answer = run_isolated([&] {
    SimEngine sim_engine(options.simgrid_args);
    sg4::Engine& engine = sim_engine.get();
    const Platform platform = build_platform(cluster);
    Sim sim(cluster, platform, program, r, options);
    sim.ranks = r.ranks;
    sim.per_node = per_node;
    sim.algorithm = *algorithm;
    sim.timelines.resize(static_cast<std::size_t>(r.ranks));
    for (int k = 0; k < r.ranks; ++k) {
      sim.ready.emplace_back();
      sim.done.emplace_back();
      for (std::size_t b = 0; b < r.buckets.size(); ++b) {
        sim.ready.back().push_back(sg4::Semaphore::create(0));
        sim.done.back().push_back(sg4::Semaphore::create(0));
      }
    }
    for (parallel::Schedule& s : schedules)
      sim.runs.push_back(std::make_unique<ScheduleRun>(platform, std::move(s), sim_options));
    for (int k = 0; k < r.ranks; ++k) {
      sg4::Host* host = platform.devices[static_cast<std::size_t>(k)];
      sg4::Actor::create(fmt::format("compute{}", k), host, [&sim, k] { compute_actor(sim, k); });
      sg4::Actor::create(fmt::format("comm{}", k), host, [&sim, k] { comm_actor(sim, k); });
    }
    engine.run();
    for (int k = 0; k < r.ranks; ++k)
      if (sim.timelines[static_cast<std::size_t>(k)].update_start.empty())
        throw SimulationError(fmt::format("the simulation deadlocked: rank {} never finished", k));
    std::stable_sort(sim.log.begin(), sim.log.end(), [](const LogEntry& a, const LogEntry& b) {
      return std::tie(a.time, a.rank, a.seq) < std::tie(b.time, b.rank, b.seq);
    });
    if (options.log_collectives)
      for (std::size_t b = 0; b < sim.runs.size(); ++b)
        for (std::string& line : sim.runs[b]->take_log())
          sim.log.push_back({0, 0, 0, fmt::format("bucket {}: {}", b, line)});
    return serialize(sim);
  });
  deserialize(answer, r);

  add_device_reports(r, program, options);
  r.throughput = r.step_seconds > 0 ? static_cast<double>(r.global_batch) / r.step_seconds : 0;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.cpu_seconds = cpu_time() - cpu0;
  return r;
}

}  // namespace spora::sim
