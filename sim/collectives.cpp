// Simulated collectives: the rank actors (see collectives.h for the model).
#include "sim/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "parallel/collectives/checker.h"
#include "sim/isolation.h"
#include "sim/platform.h"

namespace spora::sim {

namespace sg4 = simgrid::s4u;
using parallel::Schedule;
using parallel::Step;
using parallel::StepKind;

namespace {

struct LogEntry {
  double time;
  int rank, order;
  std::string text;
};

// Everything the rank actors of one schedule share. Actors run one at a time (SimGrid
// contexts), so plain containers need no locking.
struct Run {
  const Schedule& schedule;
  const Platform& platform;
  const SimOptions& options;
  double start = 0;                         // engine clock when the collective started
  std::vector<std::vector<int>> sequence;   // k of every communication step (message tag)
  std::vector<std::vector<int>> peer_send;  // receive steps: the id of the matching send
  std::vector<std::vector<double>> posted;  // when each activity was posted (since start)
  std::vector<double> finished;             // per rank, -1 while unfinished
  std::vector<int> steps_done;
  std::vector<LogEntry> log;

  Run(const Schedule& s, const Platform& p, const SimOptions& o)
      : schedule(s), platform(p), options(o) {
    sequence = parallel::message_sequence(schedule);
    const int ranks = schedule.spec.ranks;
    std::map<std::tuple<int, int, int>, int> sends;  // (src, dst, k) -> step id
    for (int r = 0; r < ranks; ++r)
      for (const Step& step : schedule.ranks[r].steps)
        if (step.kind == StepKind::Send) sends[{r, step.peer, sequence[r][step.id]}] = step.id;
    peer_send.resize(ranks);
    posted.resize(ranks);
    for (int r = 0; r < ranks; ++r) {
      const auto& steps = schedule.ranks[r].steps;
      peer_send[r].assign(steps.size(), -1);
      posted[r].assign(steps.size(), 0);
      for (const Step& step : steps)
        if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce)
          peer_send[r][step.id] = sends.at({step.peer, r, sequence[r][step.id]});
    }
    finished.assign(ranks, -1);
    steps_done.assign(ranks, 0);
  }

  double now() const { return sg4::Engine::get_clock() - start; }
  double bytes(const Step& step) const {
    return static_cast<double>(step.count()) * options.element_bytes;
  }
  sg4::Mailbox* mailbox(int src, int dst, int k) const {
    return sg4::Mailbox::by_name(fmt::format("{}>{}#{}", src, dst, k));
  }
};

// One rank: its step DAG as a dataflow loop over SimGrid activities.
class RankActor {
 public:
  RankActor(Run& run, int rank)
      : run_(run),
        rank_(rank),
        steps_(run.schedule.ranks[rank].steps),
        host_(sg4::this_actor::get_host()) {}

  void operator()() {
    const std::size_t n = steps_.size();
    std::vector<std::size_t> waiting(n);
    std::vector<std::vector<int>> dependents(n);
    for (const Step& step : steps_) {
      waiting[step.id] = step.deps.size();
      for (int d : step.deps) dependents[d].push_back(step.id);
    }
    std::set<int> ready;  // started in id order: deterministic and close to program order
    for (const Step& step : steps_)
      if (step.deps.empty()) ready.insert(step.id);
    payloads_.assign(n, nullptr);
    ready_at_.assign(n, 0);

    std::size_t done = 0;
    while (done < n) {
      for (int id : ready) start(id);
      ready.clear();
      if (flight_.empty()) return;  // stuck: reported after the run
      const auto index = static_cast<std::ptrdiff_t>(sg4::Activity::wait_any(activities_));
      const InFlight f = flight_[static_cast<std::size_t>(index)];
      flight_.erase(flight_.begin() + index);
      activities_.erase(activities_.begin() + index);
      if (steps_[f.step].kind == StepKind::Send && run_.options.ordered_pairs)
        next_to(steps_[f.step].peer);
      if (!finish_phase(f)) continue;  // a receive-reduce moves on to its reduction
      ++done;
      ++run_.steps_done[rank_];
      for (int d : dependents[f.step])
        if (--waiting[d] == 0) ready.insert(d);
    }
    run_.finished[rank_] = run_.now();
    log(fmt::format("done, {} steps", n));
  }

 private:
  struct InFlight {
    int step;
    bool reducing;  // a receive-reduce past its receive
  };

  void start(int id) {
    const Step& step = steps_[id];
    const double bytes = run_.bytes(step);
    ready_at_[id] = run_.now();
    switch (step.kind) {
      case StepKind::Send:
        if (run_.options.ordered_pairs) {
          std::deque<int>& queue = outbox_[step.peer];
          queue.push_back(id);
          if (queue.size() == 1) post_send(id);  // otherwise it waits for those ahead of it
        } else {
          post_send(id);
        }
        return;
      case StepKind::Recv:
      case StepKind::RecvReduce:
        post(id,
             run_.mailbox(step.peer, rank_, run_.sequence[rank_][id])->get_async(&payloads_[id]));
        return;
      case StepKind::Copy:
        post(id, memory_pass(2 * bytes));
        return;
      case StepKind::LocalReduce:
        post(id, memory_pass(3 * bytes));
        return;
    }
  }

  void post(int id, sg4::ActivityPtr activity) {
    run_.posted[rank_][id] = run_.now();
    activities_.push_back(std::move(activity));
    flight_.push_back({id, false});
  }
  void post_send(int id) {
    const Step& step = steps_[id];
    post(id, run_.mailbox(rank_, step.peer, run_.sequence[rank_][id])
                 ->put_async(&token_, static_cast<std::uint64_t>(run_.bytes(step))));
  }
  // A send to `peer` completed: the next one queued for that peer goes.
  void next_to(int peer) {
    std::deque<int>& queue = outbox_[peer];
    queue.pop_front();
    if (!queue.empty()) post_send(queue.front());
  }

  // An Exec as long as moving `bytes` through the device memory.
  sg4::ActivityPtr memory_pass(double bytes) const {
    return sg4::this_actor::exec_async(
        run_.platform.flops_for(host_, bytes / run_.platform.memory_bandwidth));
  }

  // Returns true when the step is complete.
  bool finish_phase(const InFlight& f) {
    const Step& step = steps_[f.step];
    if (step.kind == StepKind::RecvReduce && !f.reducing) {
      double reduce = 3 * run_.bytes(step) / run_.platform.memory_bandwidth;
      if (run_.options.recv_reduce == RecvReduceModel::Fused) {
        // The reduction ran alongside the transfer, which began once both sides were posted.
        const double began = std::max(run_.posted[rank_][f.step],
                                      run_.posted[step.peer][run_.peer_send[rank_][f.step]]);
        reduce -= run_.now() - began;
      }
      if (reduce > 0) {
        activities_.push_back(sg4::this_actor::exec_async(run_.platform.flops_for(host_, reduce)));
        flight_.push_back({f.step, true});
        return false;
      }
    }
    if (run_.options.log) log_step(step);
    return true;
  }

  void log_step(const Step& step) {
    const auto bytes = static_cast<long long>(run_.bytes(step));
    std::string what;
    switch (step.kind) {
      case StepKind::Send:
        what = fmt::format("send {} B to rank{}", bytes, step.peer);
        break;
      case StepKind::Recv:
      case StepKind::RecvReduce:
        what = fmt::format("{} {} B from rank{}", parallel::step_kind_name(step.kind), bytes,
                           step.peer);
        break;
      case StepKind::Copy:
      case StepKind::LocalReduce:
        what = fmt::format("{} {} B", parallel::step_kind_name(step.kind), bytes);
        break;
    }
    log(fmt::format("{} (step {}, from {:.9f})", what, step.id, ready_at_[step.id]));
  }

  void log(std::string text) {
    if (!run_.options.log) return;
    run_.log.push_back(
        {run_.now(), rank_, order_++,
         fmt::format("[{:.9f}] rank{}@{}: {}", run_.now(), rank_, host_->get_name(), text)});
  }

  Run& run_;
  const int rank_;
  const std::vector<Step>& steps_;
  const sg4::Host* host_;
  std::vector<sg4::ActivityPtr> activities_;  // in flight, and what each one is for
  std::vector<InFlight> flight_;
  std::vector<void*> payloads_;            // where receives put the (meaningless) payload pointer
  std::vector<double> ready_at_;           // when each step's dependencies were done
  std::map<int, std::deque<int>> outbox_;  // ordered_pairs: per peer, sends in posting order
  int token_ = 0;                          // what sends carry: only the simulated size matters
  int order_ = 0;
};

// Results travel from the simulation process as text; doubles in hexadecimal, exactly.
std::string serialize(const std::vector<SimResult>& results) {
  std::string out;
  for (const SimResult& r : results) {
    out += fmt::format("result {:a} {} {}\n", r.seconds, r.rank_seconds.size(), r.log.size());
    for (double t : r.rank_seconds) out += fmt::format("{:a}\n", t);
    for (const std::string& line : r.log) out += line + "\n";
  }
  return out;
}

std::vector<SimResult> deserialize(const std::string& text) {
  std::vector<SimResult> results;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream header(line);
    std::string tag, seconds;
    std::size_t ranks = 0, lines = 0;
    header >> tag >> seconds >> ranks >> lines;
    if (tag != "result") throw SimulationError("garbled answer from the simulation process");
    SimResult r;
    r.seconds = std::strtod(seconds.c_str(), nullptr);
    for (std::size_t i = 0; i < ranks && std::getline(in, line); ++i)
      r.rank_seconds.push_back(std::strtod(line.c_str(), nullptr));
    for (std::size_t i = 0; i < lines && std::getline(in, line); ++i) r.log.push_back(line);
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

std::string_view recv_reduce_model_name(RecvReduceModel m) {
  return m == RecvReduceModel::Fused ? "fused" : "staged";
}

void check_for_simulation(const Schedule& schedule, int devices, const SimOptions& options) {
  if (schedule.spec.ranks > devices)
    throw std::invalid_argument(fmt::format(
        "the schedule has {} ranks but the cluster has {} devices", schedule.spec.ranks, devices));
  if (options.element_bytes <= 0) throw std::invalid_argument("element size must be positive");
  parallel::validate_schedule(schedule);
  parallel::lockstep_rounds(schedule);  // throws on a deadlock under rendezvous semantics
}

SimResult run_schedule(const Platform& platform, const Schedule& schedule,
                       const SimOptions& options) {
  Run run(schedule, platform, options);
  run.start = sg4::Engine::get_clock();
  for (int r = 0; r < schedule.spec.ranks; ++r)
    sg4::Actor::create(fmt::format("rank{}", r), platform.devices[static_cast<std::size_t>(r)],
                       [&run, r] { RankActor(run, r)(); });
  sg4::Engine::get_instance()->run();

  SimResult result;
  for (int r = 0; r < schedule.spec.ranks; ++r) {
    if (run.finished[r] < 0)
      throw SimulationError(fmt::format(
          "the simulation deadlocked: rank {} stopped after {} of its {} steps{}", r,
          run.steps_done[r], schedule.ranks[r].steps.size(),
          options.ordered_pairs ? " (a pair's messages go in the order they are posted; a "
                                  "schedule may need them unordered)"
                                : ""));
    result.rank_seconds.push_back(run.finished[r]);
    result.seconds = std::max(result.seconds, run.finished[r]);
  }
  std::stable_sort(run.log.begin(), run.log.end(), [](const LogEntry& a, const LogEntry& b) {
    return std::tie(a.time, a.rank, a.order) < std::tie(b.time, b.rank, b.order);
  });
  for (LogEntry& e : run.log) result.log.push_back(std::move(e.text));
  return result;
}

std::vector<SimResult> simulate_collectives(const ClusterSpec& cluster,
                                            const std::vector<Schedule>& schedules,
                                            const SimOptions& options) {
  for (const Schedule& s : schedules) check_for_simulation(s, cluster.device_count(), options);
  const std::string answer = run_isolated([&] {
    std::vector<std::string> args{"spora-sim", "--log=root.thres:critical"};
    for (const std::string& setting : network_model_config()) args.push_back("--cfg=" + setting);
    args.insert(args.end(), options.simgrid_args.begin(), options.simgrid_args.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    sg4::Engine engine(&argc, argv.data());
    const Platform platform = build_platform(cluster);
    std::vector<SimResult> results;
    for (const Schedule& s : schedules) results.push_back(run_schedule(platform, s, options));
    return serialize(results);
  });
  return deserialize(answer);
}

SimResult simulate_collective(const ClusterSpec& cluster, const Schedule& schedule,
                              const SimOptions& options) {
  return simulate_collectives(cluster, {schedule}, options).front();
}

}  // namespace spora::sim
