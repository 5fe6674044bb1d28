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

namespace detail {

struct LogEntry {
  double time;
  int rank, step;  // the rank's "done" line sorts after its steps
  std::string text;
};

// Everything the rank actors of one schedule share. Actors run one at a time (SimGrid
// contexts), so plain containers need no locking.
struct Run {
  const Schedule& schedule;
  const Platform& platform;
  const SimOptions& options;
  int id = 0;                               // mailbox names are unique per run
  double start = 0;                         // engine clock when the collective started
  std::vector<std::vector<int>> sequence;   // k of every communication step (message tag)
  std::vector<std::vector<int>> match;      // communication steps: the peer's matching step
  std::vector<std::vector<double>> posted;  // when each activity was posted (since start)
  std::vector<std::vector<char>> send_posted;
  std::vector<std::vector<char>> parked;   // receives posted before their send (see RankActor)
  std::vector<std::vector<char>> flowing;  // sends whose transfer has started
  std::vector<std::vector<int>> unparked;  // per rank: parked receives whose send came since
  std::vector<double> finished;            // per rank, -1 while unfinished
  std::vector<int> steps_done;
  std::vector<LogEntry> log;

  Run(const Schedule& s, const Platform& p, const SimOptions& o, int run_id)
      : schedule(s), platform(p), options(o), id(run_id) {
    sequence = parallel::message_sequence(schedule);
    const int ranks = schedule.spec.ranks;
    std::map<std::tuple<int, int, int>, int> sends;  // (src, dst, k) -> step id
    for (int r = 0; r < ranks; ++r)
      for (const Step& step : schedule.ranks[r].steps)
        if (step.kind == StepKind::Send) sends[{r, step.peer, sequence[r][step.id]}] = step.id;
    for (int r = 0; r < ranks; ++r) {
      const std::size_t n = schedule.ranks[r].steps.size();
      match.emplace_back(n, -1);
      posted.emplace_back(n, 0);
      send_posted.emplace_back(n, 0);
      parked.emplace_back(n, 0);
      flowing.emplace_back(n, 0);
    }
    for (int r = 0; r < ranks; ++r)
      for (const Step& step : schedule.ranks[r].steps)
        if (step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce) {
          const int send = sends.at({step.peer, r, sequence[r][step.id]});
          match[r][step.id] = send;
          match[step.peer][send] = step.id;
        }
    unparked.resize(ranks);
    finished.assign(ranks, -1);
    steps_done.assign(ranks, 0);
  }

  double now() const { return sg4::Engine::get_clock() - start; }
  double bytes(const Step& step) const {
    return static_cast<double>(step.count()) * options.element_bytes;
  }
  // The k-th message from src to dst.
  sg4::Mailbox* mailbox(int src, int dst, int k) const {
    return sg4::Mailbox::by_name(fmt::format("{}:{}>{}#{}", id, src, dst, k));
  }
  // Doorbells from src to dst (see RankActor).
  sg4::Mailbox* doorbell(int src, int dst) const {
    return sg4::Mailbox::by_name(fmt::format("{}:{}>{}:bell", id, src, dst));
  }
};

// One rank: its step DAG as a dataflow loop over SimGrid activities.
//
// SimGrid's cost per completion grows with the activities an actor has pending, and schedules
// post receives early (a flat ring over p ranks pre-posts ~p per rank). So a receive posted
// before its send is *parked*: instead of a pending get, its mailbox gets this actor as
// permanent receiver, which makes the send start flowing the moment it is posted -- exactly
// when the rendezvous would have started it. The sender, seeing the receive parked, rings a
// zero-byte doorbell from itself to the receiver along the same route: it costs no bandwidth
// and arrives after the route latency, no later than the message. The receiver, woken by any
// doorbell, gets every message unparked so far (finished or still flowing). Each sender has
// its own doorbell, so the one in flight always has the latency of the messages it announces.
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
      if (waits_.empty()) return;  // stuck: reported after the run
      const auto index = static_cast<std::ptrdiff_t>(sg4::Activity::wait_any(activities_));
      const Wait w = waits_[static_cast<std::size_t>(index)];
      waits_.erase(waits_.begin() + index);
      activities_.erase(activities_.begin() + index);
      if (w.what == Wait::Doorbell) {
        answer_doorbell(w.peer);
        continue;
      }
      if (steps_[w.step].kind == StepKind::Send) sent(w.step);
      if (!finish_phase(w)) continue;  // a receive-reduce moves on to its reduction
      ++done;
      ++run_.steps_done[rank_];
      for (int d : dependents[w.step])
        if (--waiting[d] == 0) ready.insert(d);
    }
    run_.finished[rank_] = run_.now();
    log(static_cast<int>(n), fmt::format("done, {} steps", n));
  }

 private:
  struct Wait {
    enum What { Step, Reduce, Doorbell } what;  // Reduce: a receive-reduce past its receive
    int step, peer;
  };

  void start(int id) {
    const Step& step = steps_[id];
    const double bytes = run_.bytes(step);
    ready_at_[id] = run_.now();
    switch (step.kind) {
      case StepKind::Send: {
        // A message whose receiver is waiting goes behind the pair's transfers in progress;
        // one whose receiver is not is posted at once and starts when the receiver posts.
        const bool receiver_waits = run_.parked[step.peer][run_.match[rank_][id]];
        if (run_.options.ordered_pairs && receiver_waits && busy(step.peer))
          outbox_[step.peer].push_back(id);
        else
          post_send(id);
        return;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        run_.posted[rank_][id] = run_.now();
        sg4::Mailbox* box = run_.mailbox(step.peer, rank_, run_.sequence[rank_][id]);
        const int send = run_.match[rank_][id];
        const bool park = !run_.send_posted[step.peer][send];
        if (park) {
          // Registering is a simcall, during which other actors run (no simulated time
          // passes): if the sender posted meanwhile, it did not see us parked, so get now.
          box->set_receiver(sg4::Actor::self());
          if (!run_.send_posted[step.peer][send]) {
            run_.parked[rank_][id] = 1;
            if (parked_from_[step.peer]++ == 0 && !bell_waiting_[step.peer]) listen(step.peer);
            return;
          }
        }
        run_.flowing[step.peer][send] = 1;  // the rendezvous starts the transfer now
        wait_for(box->get_async(&payloads_[id]), {Wait::Step, id, step.peer});
        if (park) box->set_receiver(nullptr);  // after the get, which finds a message gone ahead
        return;
      }
      case StepKind::Copy:
        run_.posted[rank_][id] = run_.now();
        wait_for(memory_pass(2 * bytes), {Wait::Step, id, -1});
        return;
      case StepKind::LocalReduce:
        run_.posted[rank_][id] = run_.now();
        wait_for(memory_pass(3 * bytes), {Wait::Step, id, -1});
        return;
    }
  }

  void wait_for(sg4::ActivityPtr activity, Wait w) {
    activities_.push_back(std::move(activity));
    waits_.push_back(w);
  }

  // Shared flags are set before each simcall and read after it: other actors run during one.
  void post_send(int id) {
    const Step& step = steps_[id];
    run_.posted[rank_][id] = run_.now();
    run_.send_posted[rank_][id] = 1;
    sending_[step.peer].push_back(id);
    wait_for(run_.mailbox(rank_, step.peer, run_.sequence[rank_][id])
                 ->put_async(&token_, static_cast<std::uint64_t>(run_.bytes(step))),
             {Wait::Step, id, step.peer});
    const int recv = run_.match[rank_][id];
    if (run_.parked[step.peer][recv]) {  // the message flows already: tell the receiver
      run_.flowing[rank_][id] = 1;
      run_.parked[step.peer][recv] = 0;
      run_.unparked[step.peer].push_back(recv);
      run_.doorbell(rank_, step.peer)->put_init(&token_, 0)->detach();
    }
  }

  void listen(int peer) {
    bell_waiting_[peer] = true;
    wait_for(run_.doorbell(peer, rank_)->get_async(&bell_payload_), {Wait::Doorbell, -1, peer});
  }

  void answer_doorbell(int peer) {
    bell_waiting_[peer] = false;
    std::vector<int> unparked;  // taken first: senders add to the list during the gets below
    unparked.swap(run_.unparked[rank_]);
    for (int id : unparked) {
      const int from = steps_[id].peer;
      --parked_from_[from];
      sg4::Mailbox* box = run_.mailbox(from, rank_, run_.sequence[rank_][id]);
      wait_for(box->get_async(&payloads_[id]), {Wait::Step, id, from});
      box->set_receiver(nullptr);
    }
    if (parked_from_[peer] > 0) listen(peer);
  }

  // Whether a message to `peer` is being transferred.
  bool busy(int peer) const {
    const auto it = sending_.find(peer);
    if (it == sending_.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](int id) { return run_.flowing[rank_][id] != 0; });
  }

  // Send `id` completed: the next message queued for that peer may go.
  void sent(int id) {
    const int peer = steps_[id].peer;
    std::erase(sending_[peer], id);
    std::deque<int>& queue = outbox_[peer];
    if (!queue.empty() && !busy(peer)) {
      const int next = queue.front();
      queue.pop_front();
      post_send(next);
    }
  }

  // An Exec as long as moving `bytes` through the device memory.
  sg4::ActivityPtr memory_pass(double bytes) const {
    return sg4::this_actor::exec_async(
        run_.platform.flops_for(host_, bytes / run_.platform.memory_bandwidth));
  }

  // Returns true when the step is complete.
  bool finish_phase(const Wait& w) {
    const Step& step = steps_[w.step];
    if (step.kind == StepKind::RecvReduce && w.what == Wait::Step) {
      double reduce = 3 * run_.bytes(step) / run_.platform.memory_bandwidth;
      if (run_.options.recv_reduce == RecvReduceModel::Fused) {
        // The reduction ran alongside the transfer, which began once both sides were posted.
        const double began =
            std::max(run_.posted[rank_][w.step], run_.posted[step.peer][run_.match[rank_][w.step]]);
        reduce -= run_.now() - began;
      }
      if (reduce > 0) {
        wait_for(sg4::this_actor::exec_async(run_.platform.flops_for(host_, reduce)),
                 {Wait::Reduce, w.step, -1});
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
    log(step.id, fmt::format("{} (step {}, from {:.9f})", what, step.id, ready_at_[step.id]));
  }

  void log(int step, std::string text) {
    if (!run_.options.log) return;
    run_.log.push_back(
        {run_.now(), rank_, step,
         fmt::format("[{:.9f}] rank{}@{}: {}", run_.now(), rank_, host_->get_name(), text)});
  }

  Run& run_;
  const int rank_;
  const std::vector<Step>& steps_;
  const sg4::Host* host_;
  std::vector<sg4::ActivityPtr> activities_;  // the wait set, and what each one is for
  std::vector<Wait> waits_;
  std::map<int, int> parked_from_;    // per peer: how many receives are parked
  std::map<int, bool> bell_waiting_;  // per peer: listening to its doorbell
  std::vector<void*> payloads_;       // where receives put the (meaningless) payload pointer
  void* bell_payload_ = nullptr;
  std::vector<double> ready_at_;             // when each step's dependencies were done
  std::map<int, std::deque<int>> outbox_;    // per peer: sends waiting for the pair's link
  std::map<int, std::vector<int>> sending_;  // per peer: sends posted, not complete
  int token_ = 0;                            // what sends carry: only the simulated size matters
};

}  // namespace detail

namespace {

using detail::LogEntry;
using detail::RankActor;
using detail::Run;

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

int default_ring_channels(const ClusterSpec& cluster, int ranks) {
  const int g = cluster.devices_per_node;
  if (!cluster.network || ranks <= g || ranks % g != 0) return 1;
  return std::max(1, cluster.network->nics_per_node);
}

void check_for_simulation(const Schedule& schedule, int devices, const SimOptions& options) {
  if (schedule.spec.ranks > devices)
    throw std::invalid_argument(fmt::format(
        "the schedule has {} ranks but the cluster has {} devices", schedule.spec.ranks, devices));
  if (options.element_bytes <= 0) throw std::invalid_argument("element size must be positive");
  if (!options.devices.empty()) {
    if (static_cast<int>(options.devices.size()) != schedule.spec.ranks)
      throw std::invalid_argument(fmt::format("{} devices for a schedule of {} ranks",
                                              options.devices.size(), schedule.spec.ranks));
    std::vector<int> sorted = options.devices;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() || sorted.front() < 0 ||
        sorted.back() >= devices)
      throw std::invalid_argument("the ranks' devices must be distinct devices of the cluster");
  }
  parallel::validate_schedule(schedule);
  parallel::lockstep_rounds(schedule);  // throws on a deadlock under rendezvous semantics
}

SimResult run_schedule(const Platform& platform, const Schedule& schedule,
                       const SimOptions& options) {
  static int runs = 0;  // per simulation process
  Run run(schedule, platform, options, runs++);
  run.start = sg4::Engine::get_clock();
  for (int r = 0; r < schedule.spec.ranks; ++r)
    sg4::Actor::create(
        fmt::format("rank{}", r),
        platform.devices[static_cast<std::size_t>(
            options.devices.empty() ? r : options.devices[static_cast<std::size_t>(r)])],
        [&run, r] { RankActor(run, r)(); });
  sg4::Engine::get_instance()->run();

  SimResult result;
  for (int r = 0; r < schedule.spec.ranks; ++r) {
    if (run.finished[r] < 0)
      throw SimulationError(
          fmt::format("the simulation deadlocked: rank {} stopped after {} of its {} steps", r,
                      run.steps_done[r], schedule.ranks[r].steps.size()));
    result.rank_seconds.push_back(run.finished[r]);
    result.seconds = std::max(result.seconds, run.finished[r]);
  }
  std::stable_sort(run.log.begin(), run.log.end(), [](const LogEntry& a, const LogEntry& b) {
    return std::tie(a.time, a.rank, a.step) < std::tie(b.time, b.rank, b.step);
  });
  for (LogEntry& e : run.log) result.log.push_back(std::move(e.text));
  return result;
}

// ScheduleRun: the schedule and options live here, the Run refers to them.
struct ScheduleRun::State {
  parallel::Schedule schedule;
  SimOptions options;
  std::unique_ptr<Run> run;
};

ScheduleRun::ScheduleRun(const Platform& platform, parallel::Schedule schedule,
                         const SimOptions& options, double start)
    : state_(std::make_unique<State>()) {
  static int runs = 1000000;  // apart from run_schedule's ids
  state_->schedule = std::move(schedule);
  state_->options = options;
  state_->run = std::make_unique<Run>(state_->schedule, platform, state_->options, runs++);
  state_->run->start = start;
}

ScheduleRun::~ScheduleRun() = default;

void ScheduleRun::run_rank(int rank) { RankActor(*state_->run, rank)(); }

bool ScheduleRun::finished(int rank) const { return state_->run->finished[rank] >= 0; }

std::vector<std::string> ScheduleRun::take_log() {
  std::vector<LogEntry>& log = state_->run->log;
  std::stable_sort(log.begin(), log.end(), [](const LogEntry& a, const LogEntry& b) {
    return std::tie(a.time, a.rank, a.step) < std::tie(b.time, b.rank, b.step);
  });
  std::vector<std::string> lines;
  for (LogEntry& e : log) lines.push_back(std::move(e.text));
  log.clear();
  return lines;
}

const parallel::Schedule& ScheduleRun::schedule() const { return state_->schedule; }

std::vector<SimResult> simulate_collectives(const ClusterSpec& cluster,
                                            const std::vector<Schedule>& schedules,
                                            const SimOptions& options) {
  for (const Schedule& s : schedules) check_for_simulation(s, cluster.device_count(), options);
  const std::string answer = run_isolated(
      [&] {
        SimEngine engine(options.simgrid_args);  // run_schedule runs it
        const Platform platform = build_platform(cluster);
        std::vector<SimResult> results;
        for (const Schedule& s : schedules) results.push_back(run_schedule(platform, s, options));
        return serialize(results);
      },
      options.timeout);
  return deserialize(answer);
}

SimResult simulate_collective(const ClusterSpec& cluster, const Schedule& schedule,
                              const SimOptions& options) {
  return simulate_collectives(cluster, {schedule}, options).front();
}

}  // namespace spora::sim
