// Simulating a pipelined training step (pipeline.h): stage times from the stages' SPMD
// programs, the schedule's passes and p2p messages as SimGrid actors, the gradient sync.
#include "sim/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "sim/isolation.h"
#include "sim/platform.h"

namespace spora::sim {

namespace sg4 = simgrid::s4u;

namespace {

struct Pass {
  char kind = 'F';  // F or B
  int micro_batch = 0;
};

std::vector<Pass> schedule_of(PipelineSchedule s, int stage, int stages, int m) {
  std::vector<Pass> out;
  if (s == PipelineSchedule::GPipe) {
    for (int i = 0; i < m; ++i) out.push_back({'F', i});
    for (int i = 0; i < m; ++i) out.push_back({'B', i});
    return out;
  }
  const int warmup = std::min(stages - stage - 1, m);
  for (int i = 0; i < warmup; ++i) out.push_back({'F', i});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({'F', warmup + i});
    out.push_back({'B', i});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({'B', i});
  return out;
}

SpmdProgram sub_program(const SpmdProgram& whole, const std::vector<char>& keep) {
  SpmdProgram p;
  p.mesh = whole.mesh;
  std::vector<int> index(whole.ops.size(), -1);
  for (std::size_t i = 0; i < whole.ops.size(); ++i) {
    if (!keep[i]) continue;
    index[i] = static_cast<int>(p.ops.size());
    SpmdOp op = whole.ops[i];
    std::vector<int> waits;
    for (int w : op.waits)
      if (index[static_cast<std::size_t>(w)] >= 0)
        waits.push_back(index[static_cast<std::size_t>(w)]);
    op.waits = std::move(waits);
    p.ops.push_back(std::move(op));
  }
  for (std::size_t c = 0; c < whole.collectives.size(); ++c) {
    const int op = whole.collectives[c];
    if (index[static_cast<std::size_t>(op)] < 0) continue;
    p.collectives.push_back(index[static_cast<std::size_t>(op)]);
    const int after = whole.issue_after[c];
    // Issued by an op of the other part: it may start with this part.
    p.issue_after.push_back(after >= 0 ? index[static_cast<std::size_t>(after)] : -1);
  }
  p.param_bytes = whole.param_bytes;
  p.optimizer_state_bytes = whole.optimizer_state_bytes;
  p.activation_peak = whole.activation_peak;
  return p;
}

// Results between the processes, as text (doubles in hexadecimal: exact).
struct Recorded {
  std::vector<std::vector<PipelineEvent>> events;
  std::vector<int> peak;
  long sim_events = 0;
};

}  // namespace

std::string_view pipeline_schedule_name(PipelineSchedule s) {
  return s == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

std::string_view core_sharing_name(CoreSharing s) {
  return s == CoreSharing::Running ? "running" : "static";
}

CoreSharing parse_core_sharing(const std::string& name) {
  if (name == "static") return CoreSharing::Static;
  if (name == "running") return CoreSharing::Running;
  throw std::invalid_argument(
      fmt::format("unknown core sharing '{}' (expected static or running)", name));
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "1f1b") return PipelineSchedule::OneFOneB;
  if (name == "gpipe") return PipelineSchedule::GPipe;
  throw std::invalid_argument(
      fmt::format("unknown pipeline schedule '{}' (expected 1f1b or gpipe)", name));
}

std::pair<SpmdProgram, SpmdProgram> split_forward_backward(const ir::Graph& g,
                                                           const SpmdProgram& whole) {
  std::vector<const ir::Node*> applies;
  for (const ir::Node* n : g.nodes)
    if (n->is_apply()) applies.push_back(n);
  if (applies.size() != whole.ops.size())
    throw std::invalid_argument(
        fmt::format("split_forward_backward: the graph has {} applications but the program {} ops",
                    applies.size(), whole.ops.size()));
  const ir::Node* loss = g.output;
  if (loss && loss->is_prim("make_tuple") && !loss->inputs.empty()) loss = loss->inputs[0];
  std::unordered_set<const ir::Node*> forward;
  std::vector<const ir::Node*> stack;
  if (loss) stack.push_back(loss);
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    if (!forward.insert(n).second) continue;
    for (const ir::Node* i : n->inputs) stack.push_back(i);
  }
  std::vector<char> fwd(applies.size()), bwd(applies.size());
  for (std::size_t i = 0; i < applies.size(); ++i) {
    fwd[i] = forward.count(applies[i]) ? 1 : 0;
    bwd[i] = fwd[i] ? 0 : 1;
  }
  SpmdProgram f = sub_program(whole, fwd), b = sub_program(whole, bwd);
  for (SpmdOp& op : b.ops) op.op.phase = Phase::Backward;
  return {std::move(f), std::move(b)};
}

StageTimes stage_times(const ClusterSpec& cluster, const PipelineStage& stage,
                       const SpmdSimOptions& options, StagePassOps* ops) {
  if (stage.times) return *stage.times;
  StageTimes t;
  // A block's pass simulated once, its ops (rank 0's, where its compute intervals put them)
  // appended `repeat` times after `offset`.
  auto pass = [&](const SpmdProgram& p, int repeat, double offset, std::vector<PassOp>* out) {
    if (p.ops.empty()) return 0.0;
    const SpmdSimResult r = simulate_spmd_step(cluster, p, options);
    if (out && !r.compute_intervals.empty()) {
      const std::vector<PlacedOp> placed = placed_ops(r, 0);
      for (int rep = 0; rep < repeat; ++rep)
        for (const PlacedOp& po : placed) {
          const StepOp& op = p.ops[static_cast<std::size_t>(po.op)].op;
          const double base = offset + rep * r.step_seconds;
          out->push_back({std::string(op.name()), op.output ? op.output->str() : "",
                          base + po.start, base + po.end});
        }
    }
    return repeat * r.step_seconds;
  };
  for (const StageBlock& b : stage.blocks) {
    t.forward += pass(b.forward, b.repeat, t.forward, ops ? &ops->forward : nullptr);
    t.backward += pass(b.backward, b.repeat, t.backward, ops ? &ops->backward : nullptr);
  }
  return t;
}

double gradient_sync_seconds(const ClusterSpec& cluster, int64_t replicas, int64_t stage_devices,
                             double bytes, bool zero, const SpmdSimOptions& options) {
  if (replicas <= 1 || bytes <= 0) return 0;
  SpmdProgram p;
  p.mesh = {replicas, stage_devices};
  auto add = [&](CollectiveKind kind, double b) {
    SpmdOp op;
    op.collective = true;
    op.kind = kind;
    op.axes = {0};
    op.bytes = b;
    p.collectives.push_back(static_cast<int>(p.ops.size()));
    p.issue_after.push_back(-1);
    p.ops.push_back(std::move(op));
  };
  if (zero) {
    add(CollectiveKind::ReduceScatter, bytes);
    add(CollectiveKind::AllGather, bytes / static_cast<double>(replicas));
  } else {
    add(CollectiveKind::AllReduce, bytes);
  }
  return simulate_spmd_step(cluster, p, options).step_seconds;
}

namespace {

// Runs the stages' schedules in the simulator, in a forked process (run_isolated): each stage
// an actor that sleeps its passes and exchanges activations and cotangents with its neighbours.
// The answer is text: "events N", then per stage "stage PEAK COUNT END" and its events (kind,
// micro-batch, start, end; times in hexadecimal floating point).
std::string simulate_stages(const ClusterSpec& cluster, const PipelineProgram& program,
                            const SpmdSimOptions& options, const std::vector<StageTimes>& times,
                            const std::vector<double>& sync) {
  const int S = static_cast<int>(program.stages.size());
  const int M = program.micro_batches;
  return run_isolated([&] {
    SimEngine sim_engine(options.simgrid_args);
    sg4::Engine& engine = sim_engine.get();
    const Platform platform = build_platform(cluster);
    const int64_t stride = program.replicas * program.stage_devices;
    Recorded rec;
    rec.events.resize(static_cast<std::size_t>(S));
    rec.peak.assign(static_cast<std::size_t>(S), 0);
    std::vector<double> end(static_cast<std::size_t>(S), -1);
    int token = 0;
    // Mailboxes: activations of micro-batch i from stage k to k+1, cotangents from k+1 to k.
    auto act = [](int k, int i) {
      return sg4::Mailbox::by_name(fmt::format("a{}>{}#{}", k, k + 1, i));
    };
    auto cot = [](int k, int i) {
      return sg4::Mailbox::by_name(fmt::format("g{}>{}#{}", k, k - 1, i));
    };
    std::vector<sg4::ActorPtr> actors(static_cast<std::size_t>(S));
    for (int k = 0; k < S; ++k) {
      sg4::Host* host = platform.devices[static_cast<std::size_t>(k * stride)];
      actors[static_cast<std::size_t>(k)] =
          sg4::Actor::create(fmt::format("stage{}", k), host, [&, k] {
            const auto sk = static_cast<std::size_t>(k);
            const PipelineStage& st = program.stages[sk];
            const StageTimes& t = times[sk];
            std::vector<sg4::CommPtr> sends;
            int in_flight = 0;
            // Ranks sharing the node's cores: the stage's ranks there run the pass as that many
            // threads on the node's cores, sharing them with the other stages' running passes.
            const auto node = static_cast<std::size_t>(k * stride / cluster.devices_per_node);
            sg4::Host* cores =
                program.core_sharing == CoreSharing::Running && !platform.node_cores.empty()
                    ? platform.node_cores[node]
                    : nullptr;
            int threads = 0;
            for (int64_t i = 0; i < stride; ++i)
              if (static_cast<std::size_t>((k * stride + i) / cluster.devices_per_node) == node)
                ++threads;
            auto run = [&](char kind, int mb, double seconds) {
              const double t0 = sg4::Engine::get_clock();
              if (seconds > 0 && cores)
                sg4::this_actor::thread_execute(cores, platform.flops_for(cores, seconds), threads);
              else if (seconds > 0)
                sg4::this_actor::sleep_for(seconds);
              ++rec.sim_events;
              rec.events[sk].push_back({kind, mb, t0, sg4::Engine::get_clock()});
            };
            auto receive = [&](sg4::Mailbox* box) {
              box->get<int>();
              ++rec.sim_events;
            };
            for (const Pass& p : schedule_of(program.schedule, k, S, M)) {
              if (p.kind == 'F') {
                if (k > 0) receive(act(k - 1, p.micro_batch));
                run('F', p.micro_batch, t.forward);
                rec.peak[sk] = std::max(rec.peak[sk], ++in_flight);
                if (k + 1 < S)
                  sends.push_back(act(k, p.micro_batch)
                                      ->put_async(&token, static_cast<uint64_t>(st.send_bytes)));
              } else {
                if (k + 1 < S) receive(cot(k + 1, p.micro_batch));
                if (program.recompute) run('R', p.micro_batch, t.forward);
                run('B', p.micro_batch, t.backward);
                --in_flight;
                if (k > 0)
                  sends.push_back(
                      cot(k, p.micro_batch)
                          ->put_async(&token, static_cast<uint64_t>(st.cotangent_bytes)));
              }
            }
            run('S', -1, sync[sk]);
            run('U', -1, st.update_seconds);
            for (sg4::CommPtr& c : sends) c->wait();
            end[sk] = sg4::Engine::get_clock();
          });
    }
    // Eager messages: each mailbox's receiver is known before anything is sent.
    for (int k = 0; k + 1 < S; ++k)
      for (int i = 0; i < M; ++i) {
        act(k, i)->set_receiver(actors[static_cast<std::size_t>(k + 1)]);
        cot(k + 1, i)->set_receiver(actors[static_cast<std::size_t>(k)]);
      }
    engine.run();
    std::string out = fmt::format("events {}\n", rec.sim_events);
    for (int k = 0; k < S; ++k) {
      const auto sk = static_cast<std::size_t>(k);
      if (end[sk] < 0)
        throw SimulationError(fmt::format("the pipeline deadlocked: stage {} never finished", k));
      out += fmt::format("stage {} {} {}", rec.peak[sk], rec.events[sk].size(),
                         fmt::format("{:a}", end[sk]));
      for (const PipelineEvent& e : rec.events[sk])
        out += fmt::format(" {} {} {:a} {:a}", e.kind, e.micro_batch, e.start, e.end);
      out += "\n";
    }
    return out;
  });
}

// The result of simulate_stages' answer: every stage's events, busy time and memory, the step's
// time and peak memory.
void read_stages(const std::string& answer, const PipelineProgram& program,
                 const std::vector<StageTimes>& times, PipelineSimResult& r) {
  const int S = static_cast<int>(program.stages.size());
  std::istringstream in(answer);
  std::string tag;
  auto number = [&] { return read_number(in); };
  in >> tag >> r.sim_events;
  if (tag != "events") throw SimulationError("garbled answer from the simulation process");
  r.events.resize(static_cast<std::size_t>(S));
  for (int k = 0; k < S; ++k) {
    const auto sk = static_cast<std::size_t>(k);
    const PipelineStage& st = program.stages[sk];
    PipelineStageReport s;
    std::size_t n = 0;
    in >> tag >> s.peak_in_flight >> n;
    if (tag != "stage") throw SimulationError("garbled answer from the simulation process");
    s.end = number();
    for (std::size_t i = 0; i < n; ++i) {
      PipelineEvent e;
      in >> e.kind >> e.micro_batch;
      e.start = number();
      e.end = number();
      if (e.kind == 'F' || e.kind == 'R' || e.kind == 'B') {
        s.busy += e.end - e.start;
        r.pipeline_seconds = std::max(r.pipeline_seconds, e.end);
      }
      if (e.kind == 'S') s.sync_seconds = e.end - e.start;
      if (e.kind == 'U') s.update_seconds = e.end - e.start;
      r.events[sk].push_back(e);
    }
    s.times = times[sk];
    s.memory.parameters = st.param_bytes;
    s.memory.gradients = st.grad_bytes;
    s.memory.optimizer_state =
        program.zero ? st.optimizer_state_bytes / static_cast<double>(program.replicas)
                     : st.optimizer_state_bytes;
    s.memory.activations = s.peak_in_flight * st.activation_bytes + st.working_bytes;
    s.memory.compute = s.busy;
    r.step_seconds = std::max(r.step_seconds, s.end);
    r.peak_memory = std::max(r.peak_memory, s.memory.peak_memory());
    r.stages.push_back(s);
  }
}

}  // namespace

PipelineSimResult simulate_pipeline(const ClusterSpec& cluster, const PipelineProgram& program,
                                    const SpmdSimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const int S = static_cast<int>(program.stages.size());
  const int M = program.micro_batches;
  if (S < 1) throw std::invalid_argument("a pipeline needs at least one stage");
  if (M < 1)
    throw std::invalid_argument(fmt::format("micro_batches must be at least 1, got {}", M));
  if (program.stage_devices < 1 || program.replicas < 1)
    throw std::invalid_argument(fmt::format("stage devices ({}) and replicas ({}) must be positive",
                                            program.stage_devices, program.replicas));
  if (program.devices() > cluster.device_count())
    throw std::invalid_argument(
        fmt::format("{} stages x {} replicas x {} devices per stage = {} devices, but {} has {}", S,
                    program.replicas, program.stage_devices, program.devices(), cluster.name,
                    cluster.device_count()));

  PipelineSimResult r;
  std::vector<StageTimes> times;
  std::vector<StagePassOps> pass_ops;
  std::vector<double> sync;
  std::map<double, double> sync_cache;  // bytes -> seconds (every stage's groups are alike)
  // CoreSharing::Running: the passes are timed at one rank per core, and the schedule shares a
  // node's cores among the passes running at once (simulate_stages).
  SpmdSimOptions level1 = options;
  if (program.core_sharing == CoreSharing::Running) level1.ranks_on_node = 1;
  for (const PipelineStage& st : program.stages) {
    times.push_back(stage_times(cluster, st, level1, &pass_ops.emplace_back()));
    auto it = sync_cache.find(st.grad_sync_bytes);
    if (it == sync_cache.end())
      it = sync_cache
               .emplace(st.grad_sync_bytes,
                        gradient_sync_seconds(cluster, program.replicas, program.stage_devices,
                                              st.grad_sync_bytes, program.zero, level1))
               .first;
    sync.push_back(it->second);
  }

  const std::string answer = simulate_stages(cluster, program, options, times, sync);
  read_stages(answer, program, times, r);
  for (std::size_t k = 0; k < r.stages.size(); ++k) r.stages[k].ops = std::move(pass_ops[k]);
  double idle = 0;
  for (PipelineStageReport& s : r.stages) {
    s.idle = r.pipeline_seconds - s.busy;
    s.memory.idle = r.step_seconds - s.busy - s.sync_seconds - s.update_seconds;
    idle += s.idle;
  }
  r.bubble_fraction = r.pipeline_seconds > 0 ? idle / S / r.pipeline_seconds : 0;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

std::string pipeline_report(const PipelineProgram& program, const PipelineSimResult& r) {
  auto ms = [](double s) { return fmt::format("{:.3f} ms", s * 1e3); };
  auto gb = [](double b) { return fmt::format("{:.2f} GB", b / 1e9); };
  std::string out = fmt::format(
      "pipeline: {} stages x {} replicas x {} devices per stage ({} devices), {} micro-batches, "
      "{}{}{}\n",
      program.stages.size(), program.replicas, program.stage_devices, program.devices(),
      program.micro_batches, pipeline_schedule_name(program.schedule),
      program.recompute ? ", recomputation" : "", program.zero ? ", zero" : "");
  out += fmt::format("step time        {}\n", ms(r.step_seconds));
  out += fmt::format("pipeline phase   {} (bubble {:.1f}%)\n", ms(r.pipeline_seconds),
                     100 * r.bubble_fraction);
  out += fmt::format("peak memory      {} per device\n", gb(r.peak_memory));
  out += fmt::format("{:<6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>9} {:>10}\n", "stage",
                     "forward/mb", "backward/mb", "busy", "idle", "grad sync", "update",
                     "in flight", "memory");
  for (std::size_t k = 0; k < r.stages.size(); ++k) {
    const PipelineStageReport& s = r.stages[k];
    out += fmt::format("{:<6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>9} {:>10}\n", k,
                       ms(s.times.forward), ms(s.times.backward), ms(s.busy), ms(s.idle),
                       ms(s.sync_seconds), ms(s.update_seconds), s.peak_in_flight,
                       gb(s.memory.peak_memory()));
  }
  return out;
}

std::string pipeline_chrome_trace(const PipelineSimResult& r, int max_stages) {
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  std::size_t shown = r.events.size();
  if (max_stages > 0) shown = std::min(shown, static_cast<std::size_t>(max_stages));
  for (std::size_t k = 0; k < shown; ++k) {
    out += fmt::format(
        "{}{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":"
        "\"stage {}\"}}}}",
        first ? "" : ",\n", k, k);
    first = false;
    for (const PipelineEvent& e : r.events[k]) {
      const std::string name = e.micro_batch >= 0
                                   ? fmt::format("{}{}", e.kind, e.micro_batch)
                                   : std::string(e.kind == 'S' ? "gradient sync" : "update");
      out += fmt::format(
          ",\n{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f}}}",
          name, k, e.kind == 'S' ? 1 : 0, e.start * 1e6, (e.end - e.start) * 1e6);
      // The pass's ops, stretched with it (core sharing, a slower stage's pace).
      const bool forward = e.kind == 'F' || e.kind == 'R';
      if (!forward && e.kind != 'B') continue;
      if (k >= r.stages.size()) continue;
      const PipelineStageReport& s = r.stages[k];
      const double modelled = forward ? s.times.forward : s.times.backward;
      if (!(modelled > 0)) continue;
      const double scale = (e.end - e.start) / modelled;
      for (const PassOp& op : forward ? s.ops.forward : s.ops.backward)
        out += fmt::format(
            ",\n{{\"name\":\"{}\",\"cat\":\"op\",\"ph\":\"X\",\"pid\":{},\"tid\":0,\"ts\":{:.3f},"
            "\"dur\":{:.3f},\"args\":{{\"output\":\"{}\"}}}}",
            op.name, k, (e.start + op.start * scale) * 1e6, (op.end - op.start) * scale * 1e6,
            op.output);
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace spora::sim
