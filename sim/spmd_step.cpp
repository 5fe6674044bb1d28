// Simulating one step of an SPMD per-rank program (spmd_step.h): the op list, the compute and
// communication actors of every device, the ring collectives over mesh groups, the metrics.
#include "sim/spmd_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "lang/diagnostics.h"
#include "parallel/layout/layout.h"
#include "semantics/registry.h"
#include "sim/cost_model.h"
#include "sim/interference.h"
#include "sim/isolation.h"
#include "sim/platform.h"
#include "sim/reuse.h"

namespace spora::sim {

namespace sg4 = simgrid::s4u;

namespace {

// The ranks that agree with `rank` outside `axes`, ordered by rank (parallel/layout's Mesh:
// row-major, the last axis varies fastest).
std::vector<int> group_of(const std::vector<int64_t>& mesh, int64_t rank,
                          const std::vector<int64_t>& axes) {
  parallel::Mesh m;
  m.shape = mesh;
  const std::vector<int64_t> g = m.group(rank, std::vector<int>(axes.begin(), axes.end()));
  return std::vector<int>(g.begin(), g.end());
}

std::optional<CollectiveKind> collective_kind(const sem::Primitive* p) {
  if (!p) return std::nullopt;
  if (p->name == "all_reduce") return CollectiveKind::AllReduce;
  if (p->name == "all_gather") return CollectiveKind::AllGather;
  if (p->name == "reduce_scatter") return CollectiveKind::ReduceScatter;
  if (p->name == "all_to_all") return CollectiveKind::AllToAll;
  return std::nullopt;
}

std::vector<int64_t> group_axes(const sem::Attrs& attrs) {
  if (attrs.has("axes")) return attrs.get_ints("axes");
  return {attrs.get_int("axis")};
}

struct LogEntry {
  double time = 0;
  int rank = 0;
  long seq = 0;
  std::string text;
};

struct Sim {
  const Platform& platform;
  const SpmdProgram& program;
  const SpmdSimResult& plan;
  bool log_on = false;
  bool inline_collectives = false;  // ClusterSpec::overlap_collectives false
  double call_overhead = 0;         // ClusterSpec::collective_overhead, per collective and rank
  double share = 0;                 // of a device a running collective holds (interference.h)
  // More ranks than cores (cost_model.h): the collectives' copies take turns on the cores too
  // (oversub = ranks / cores scales their bytes, the per-call overhead and the measured
  // collectives' times), and each synchronisation costs sync->extra_at(the rank's compute
  // since its last one, unshared).
  double oversub = 1;
  const SyncTable* sync = nullptr;
  // Measured collectives (measured_tables.h): a group of a measured size waits for its last
  // rank, then takes the table's time; barriers by (collective #, the group's first rank).
  const MeasuredTables* tables = nullptr;
  // SpmdSimOptions::collective_seconds' answers by collective # (-1: none), used as the tables.
  std::vector<double> given;
  std::map<std::pair<int, int>, sg4::BarrierPtr> barriers;
  std::vector<double> work, work_at_sync;  // [rank]: compute seconds so far, at the last sync
  std::vector<char> synced;                // [rank]: a collective has run on it
  std::vector<std::vector<sg4::SemaphorePtr>> ready, done;  // [rank][collective #]
  std::vector<sg4::SemaphorePtr> updated, gathered;         // [rank]: ZeRO-1's all_gathers
  std::vector<std::vector<Interval>> compute, comm;
  std::vector<std::vector<std::array<int, 2>>> compute_ops;  // [rank][compute interval]
  std::vector<std::vector<double>> coll_seconds;  // [rank][collective #]
  std::vector<double> end;
  std::vector<LogEntry> log;
  std::unordered_map<int, int> coll_index;  // op -> collective #
  std::map<int, std::vector<int>> issue;    // compute op (-1: start) -> collectives # to hand over
  long seq = 0, events = 0;
  int token = 0;

  Sim(const Platform& pl, const SpmdProgram& prog, const SpmdSimResult& pn)
      : platform(pl), program(prog), plan(pn) {}
  double now() const { return sg4::Engine::get_clock(); }
  void note(int rank, const char* stream, const std::string& text) {
    log.push_back(
        {now(), rank, seq++,
         fmt::format("[{:.9f}] rank{}@{} {}: {}", now(), rank,
                     platform.devices[static_cast<std::size_t>(rank)]->get_name(), stream, text)});
  }
  // One ring step: send `bytes` to `to`, receive as much from `from`; then the reduction of
  // `reduce` bytes where it outlasts the transfer.
  void exchange(int k, int step, int rank, int to, int from, double bytes, double reduce) {
    const double t0 = now();
    sg4::Mailbox* out = sg4::Mailbox::by_name(fmt::format("c{}.{}:{}>{}", k, step, rank, to));
    sg4::Mailbox* in = sg4::Mailbox::by_name(fmt::format("c{}.{}:{}>{}", k, step, from, rank));
    void* payload = nullptr;
    sg4::CommPtr put =
        out->put_async(&token, static_cast<std::uint64_t>(std::max(bytes * oversub, 1.0)));
    sg4::CommPtr get = in->get_async(&payload);
    get->wait();
    put->wait();
    events += 2;
    const double rest = 3 * reduce * oversub / platform.memory_bandwidth - (now() - t0);
    if (rest > 0) {
      sg4::this_actor::execute(platform.flops_for(sg4::this_actor::get_host(), rest));
      ++events;
    }
  }
  void collective(int k, int rank, const SpmdOp& op) {
    const std::vector<int> group = group_of(program.mesh, rank, op.axes);
    const int p = static_cast<int>(group.size());
    if (p <= 1) return;
    const auto r = static_cast<std::size_t>(rank);
    const double extra =
        sync && oversub > 1 ? sync->extra_at((work[r] - work_at_sync[r]) / oversub) : 0;
    // No computation on this rank since its previous collective: the back-to-back tables.
    const bool back_to_back = synced[r] && work[r] == work_at_sync[r];
    work_at_sync[r] = work[r];
    synced[r] = 1;
    const CollectiveTable* t = tables
                                   ? tables->collective(std::string(collective_kind_name(op.kind)),
                                                        p, op.contiguous, back_to_back)
                                   : nullptr;
    const double given_seconds = given.empty() ? -1 : given[static_cast<std::size_t>(k)];
    if (t || given_seconds >= 0) {
      auto& barrier = barriers[{k, group.front()}];
      if (!barrier) barrier = sg4::Barrier::create(static_cast<unsigned>(p));
      barrier->wait();
      // The table's bytes are the whole tensor's: an all_gather's input is one piece of it.
      // It was measured with a core per rank; beyond the cores its copies take turns on them
      // like the ring's below (oversub), and the synchronisation adds the measured extra.
      const double whole = op.kind == CollectiveKind::AllGather ? op.bytes * p : op.bytes;
      const double base = given_seconds >= 0 ? given_seconds : t->seconds_at(whole);
      const double seconds = base * oversub + extra;  // with the extra, >= 0
      if (seconds > 0) sg4::this_actor::sleep_for(seconds);
      ++events;
      return;
    }
    const double fixed = call_overhead * oversub + extra;  // per call; kept >= 0
    if (fixed > 0) sg4::this_actor::sleep_for(fixed);
    const int me = static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
    const int next = group[static_cast<std::size_t>((me + 1) % p)];
    const int prev = group[static_cast<std::size_t>((me + p - 1) % p)];
    const double piece = op.bytes / p;
    switch (op.kind) {
      case CollectiveKind::AllReduce:
        for (int s = 0; s < 2 * (p - 1); ++s)
          exchange(k, s, rank, next, prev, piece, s < p - 1 ? piece : 0);
        break;
      case CollectiveKind::AllGather:
        for (int s = 0; s < p - 1; ++s) exchange(k, s, rank, next, prev, op.bytes, 0);
        break;
      case CollectiveKind::ReduceScatter:
        for (int s = 0; s < p - 1; ++s) exchange(k, s, rank, next, prev, piece, piece);
        break;
      case CollectiveKind::AllToAll:
        for (int s = 1; s < p; ++s)
          exchange(k, s, rank, group[static_cast<std::size_t>((me + s) % p)],
                   group[static_cast<std::size_t>((me + p - s) % p)], piece, 0);
        break;
    }
  }
};

}  // namespace

bool pieces_are_blocks(const sem::Type& t, int64_t dim) {
  for (int64_t d = 0; d < dim && d < t.rank(); ++d)
    if (t.shape[static_cast<std::size_t>(d)] != 1) return false;
  return true;
}

namespace {

void compute_actor(Sim& sim, int rank) {
  const auto r = static_cast<std::size_t>(rank);
  std::vector<char> waited(sim.program.collectives.size(), 0);
  double pending = 0;
  std::array<int, 2> ops{-1, -1};  // the program ops in `pending`: [first, end); -1: the update
  auto flush = [&] {
    if (pending <= 0) {
      ops = {-1, -1};  // ops of no time: in no interval
      return;
    }
    const double t0 = sim.now();
    run_compute(sim.platform, pending, sim.share);
    sim.work[r] += pending;
    ++sim.events;
    sim.compute[r].push_back({t0, sim.now()});
    sim.compute_ops[r].push_back(ops);
    pending = 0;
    ops = {-1, -1};
  };
  auto wait = [&](int op) {
    const int c = sim.coll_index.at(op);
    if (waited[static_cast<std::size_t>(c)]) return;
    flush();
    sim.done[r][static_cast<std::size_t>(c)]->acquire();
    waited[static_cast<std::size_t>(c)] = 1;
  };
  auto issue = [&](int after) {
    auto it = sim.issue.find(after);
    if (it == sim.issue.end()) return;
    flush();
    for (int c : it->second) sim.ready[r][static_cast<std::size_t>(c)]->release();
  };
  // Inline collectives (ClusterSpec::overlap_collectives false): each is waited for as soon as
  // it is handed over, so the computation stops while it runs.
  auto issue_and_wait = [&](int after) {
    issue(after);
    if (sim.inline_collectives)
      if (auto it = sim.issue.find(after); it != sim.issue.end())
        for (int c : it->second) wait(sim.program.collectives[static_cast<std::size_t>(c)]);
  };
  issue_and_wait(-1);
  for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
    const SpmdOp& op = sim.program.ops[i];
    if (op.collective) continue;
    for (int w : op.waits) wait(w);
    pending += sim.plan.op_seconds[i];
    if (ops[0] < 0) ops[0] = static_cast<int>(i);
    ops[1] = static_cast<int>(i) + 1;
    issue_and_wait(static_cast<int>(i));
  }
  for (int w : sim.program.output_waits) wait(w);
  flush();
  for (int c : sim.program.collectives) wait(c);
  pending = sim.plan.update_seconds;
  flush();
  if (!sim.program.gathers.empty()) {
    sim.updated[r]->release();
    sim.gathered[r]->acquire();
  }
  sim.end[r] = sim.now();
  if (sim.log_on) sim.note(rank, "compute", "step done");
}

void comm_actor(Sim& sim, int rank) {
  const auto r = static_cast<std::size_t>(rank);
  for (std::size_t c = 0; c < sim.program.collectives.size(); ++c) {
    const int i = sim.program.collectives[c];
    const SpmdOp& op = sim.program.ops[static_cast<std::size_t>(i)];
    sim.ready[r][c]->acquire();
    const double t0 = sim.now();
    {
      const CommShare held(sim.share);  // interference.h
      sim.collective(static_cast<int>(c), rank, op);
    }
    sim.comm[r].push_back({t0, sim.now()});
    sim.coll_seconds[r][c] = sim.now() - t0;
    if (sim.log_on)
      sim.note(rank, "comm",
               fmt::format("{} of {} B over mesh axes [{}] done", collective_kind_name(op.kind),
                           static_cast<long long>(op.bytes), fmt::join(op.axes, ",")));
    sim.done[r][c]->release();
  }
  if (sim.program.gathers.empty()) return;
  // ZeRO-1: the updated pieces, once the update is done.
  sim.updated[r]->acquire();
  const std::size_t n = sim.program.collectives.size();
  for (std::size_t j = 0; j < sim.program.gathers.size(); ++j) {
    const SpmdOp& op = sim.program.ops[static_cast<std::size_t>(sim.program.gathers[j])];
    const double t0 = sim.now();
    sim.collective(static_cast<int>(n + j), rank, op);
    sim.comm[r].push_back({t0, sim.now()});
    sim.coll_seconds[r][n + j] = sim.now() - t0;
    if (sim.log_on)
      sim.note(rank, "comm",
               fmt::format("all_gather of the updated piece of {} B over mesh axes [{}] done",
                           static_cast<long long>(op.bytes), fmt::join(op.axes, ",")));
  }
  sim.gathered[r]->release();
}

// Results between the processes, as text (doubles in hexadecimal: exact).
void put(std::string& out, const std::vector<Interval>& v) {
  out += fmt::format(" {}", v.size());
  for (const Interval& i : v) out += fmt::format(" {:a} {:a}", i.start, i.end);
}
void put(std::string& out, const std::vector<std::array<int, 2>>& v) {
  out += fmt::format(" {}", v.size());
  for (const auto& [first, end] : v) out += fmt::format(" {} {}", first, end);
}

// The devices of a collective's group: the product of its mesh axes' extents.
int group_size(const SpmdProgram& program, const SpmdOp& op) {
  int group = 1;
  for (int64_t a : op.axes) group *= static_cast<int>(program.mesh[static_cast<std::size_t>(a)]);
  return group;
}

}  // namespace

std::string_view collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "all_reduce";
    case CollectiveKind::AllGather:
      return "all_gather";
    case CollectiveKind::ReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::AllToAll:
      return "all_to_all";
  }
  return "?";
}

int64_t SpmdProgram::ranks() const {
  int64_t n = 1;
  for (int64_t m : mesh) n *= m;
  return n;
}

SpmdProgram spmd_program(const ir::Graph& g, std::vector<int64_t> mesh, std::size_t params,
                         const std::string& optimizer, UpdateKernel update) {
  SpmdProgram p;
  p.mesh = std::move(mesh);
  std::unordered_map<const ir::Node*, int> collective_of;         // node -> op index
  std::unordered_map<const ir::Node*, int> op_of;                 // node -> op index
  std::vector<int> issue_of_op;                                   // collective op -> issue point
  std::unordered_map<const ir::Node*, std::vector<int>> carries;  // tuples holding collectives
  Dataflow flow;  // the tensors each op reads and writes (sim/reuse.h)
  for (const ir::Node* prm : g.params) flow.bind(prm, {flow.fresh(prm->type)});
  auto waits_of = [&](const ir::Node* n, std::vector<int>& out) {
    if (auto it = collective_of.find(n); it != collective_of.end()) out.push_back(it->second);
    if (auto it = carries.find(n); it != carries.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
  };
  for (const ir::Node* n : g.nodes) {
    if (!n->is_apply()) continue;
    if (!n->prim)
      throw lang::UserError(fmt::format(
          "the SPMD simulation needs a straight-line program; @{} calls a graph", g.name));
    std::vector<sem::TypeP> in;
    for (const ir::Node* i : n->inputs) in.push_back(i->type);
    SpmdOp op;
    op.op = make_step_op(*n->prim, in, n->type, n->attrs, Phase::Forward);
    flow.apply(*n, op.op);
    if (auto kind = collective_kind(n->prim)) {
      op.collective = true;
      op.kind = *kind;
      op.axes = group_axes(n->attrs);
      op.bytes = in.empty() ? 0 : sem::type_bytes(in[0]);
      if ((op.kind == CollectiveKind::AllGather || op.kind == CollectiveKind::ReduceScatter) &&
          !in.empty() && in[0] && in[0]->is_tensor() && n->attrs.has("dim"))
        op.contiguous = pieces_are_blocks(*in[0], n->attrs.get_int("dim"));
      collective_of[n] = static_cast<int>(p.ops.size());
      p.collectives.push_back(static_cast<int>(p.ops.size()));
      // It may start once its input exists: after the compute op that made it, or with the
      // collective that made it (the comm stream keeps their order), or at the start.
      int after = -1;
      if (!n->inputs.empty()) {
        const ir::Node* src = n->inputs[0];
        if (auto it = collective_of.find(src); it != collective_of.end())
          after = issue_of_op[static_cast<std::size_t>(it->second)];
        else if (auto jt = op_of.find(src); jt != op_of.end())
          after = jt->second;
      }
      issue_of_op.resize(p.ops.size() + 1, -1);
      issue_of_op[p.ops.size()] = after;
    } else {
      std::vector<int> w;
      for (const ir::Node* i : n->inputs) waits_of(i, w);
      if (n->is_prim("make_tuple") || n->is_prim("tuple_get")) {
        // Plumbing moves no data: the collectives it carries are waited for by its readers.
        if (!w.empty()) carries[n] = w;
        w.clear();
      }
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
      op.waits = std::move(w);
    }
    op_of[n] = static_cast<int>(p.ops.size());
    p.ops.push_back(std::move(op));
  }
  if (g.output) waits_of(g.output, p.output_waits);
  // The comm stream's order: by issue point, program order among equals.
  std::stable_sort(p.collectives.begin(), p.collectives.end(), [&](int a, int b) {
    return issue_of_op[static_cast<std::size_t>(a)] < issue_of_op[static_cast<std::size_t>(b)];
  });
  for (int c : p.collectives) p.issue_after.push_back(issue_of_op[static_cast<std::size_t>(c)]);
  std::unordered_set<const ir::Node*> gradients;
  if (g.output && g.output->is_prim("make_tuple"))
    for (std::size_t k = 1; k < g.output->inputs.size(); ++k) gradients.insert(g.output->inputs[k]);
  // The runtime keeps each gradient where it is made until the update (no DDP buckets), and
  // holds its shard of the batch for the whole step.
  const LivePeak live = live_peak(g, gradients, /*keep_gradients=*/true);
  double inputs = 0;
  for (std::size_t k = params; k < g.params.size(); ++k)
    inputs += sem::type_bytes(g.params[k]->type);
  p.activation_peak = activation_peak(g, gradients);
  p.step_intermediates = live.intermediates + inputs;
  p.step_gradients = live.gradients;
  for (std::size_t k = 0; k < params && k < g.params.size(); ++k) {
    const sem::TypeP& t = g.params[k]->type;
    // The update runs on the gradient as it comes back (ZeRO-1: a piece of the parameter).
    sem::TypeP u_type = t;
    if (g.output && g.output->is_prim("make_tuple") && k + 1 < g.output->inputs.size() &&
        g.output->inputs[k + 1]->type && g.output->inputs[k + 1]->type->is_tensor())
      u_type = g.output->inputs[k + 1]->type;
    int state = 0;
    // A ZeRO-1 piece: the runtime runs its update node by node (spmd_step.h).
    const bool piece = !(*u_type == *t);
    std::vector<StepOp> u =
        update_ops(optimizer, u_type, state, piece ? UpdateKernel::Ops : update);
    const auto& param = flow.refs(g.params[k]);
    const std::vector<TensorRef> gradient =
        g.output && g.output->is_prim("make_tuple") && k + 1 < g.output->inputs.size()
            ? flow.refs(g.output->inputs[k + 1])
            : std::vector<TensorRef>{};
    if (!param.empty())
      connect_update(u, param[0], gradient.size() == 1 ? gradient[0] : TensorRef{}, flow);
    p.update.insert(p.update.end(), u.begin(), u.end());
    p.param_bytes += sem::type_bytes(t);
    p.optimizer_state_bytes += state * sem::type_bytes(u_type);
    p.optimizer_state_unsharded_bytes += state * sem::type_bytes(t);
  }
  return p;
}

SpmdProgram spmd_program(const StepProgram& step, const parallel::Strategy& strategy,
                         const std::string& optimizer, UpdateKernel update) {
  const parallel::Partitioned part =
      parallel::partition_training_step(*step.step, step.params.size(), strategy);
  SpmdProgram p =
      spmd_program(*part.graph, strategy.mesh.shape, step.params.size(), optimizer, update);
  // ZeRO-1: each updated piece is all-gathered over the axis back into its parameter shard.
  static const sem::Primitive* all_gather = sem::Registry::instance().find("all_gather");
  if (!all_gather) throw lang::InternalError("no primitive all_gather (ops::register_all)");
  p.optimizer_shard = strategy.optimizer_shard;
  for (std::size_t k = 0; k < part.optimizer_shards.size(); ++k) {
    const int dim = part.optimizer_shards[k].dim;
    if (dim < 0) continue;
    const sem::TypeP piece = part.graph->output->inputs.at(k + 1)->type;
    sem::Attrs a;
    a.set("dim", int64_t{dim});
    a.set("axis", int64_t{strategy.optimizer_shard});
    a.set("mesh", strategy.mesh.shape);
    SpmdOp op;
    op.op = make_step_op(*all_gather, {piece}, part.graph->params.at(k)->type, a, Phase::Update);
    op.collective = true;
    op.kind = CollectiveKind::AllGather;
    op.axes = {strategy.optimizer_shard};
    op.bytes = sem::type_bytes(piece);
    p.gathers.push_back(static_cast<int>(p.ops.size()));
    p.ops.push_back(std::move(op));
  }
  return p;
}

SpmdSimResult simulate_spmd_step(const ClusterSpec& cluster, const SpmdProgram& program,
                                 const SpmdSimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  SpmdSimResult r;
  r.ranks = static_cast<int>(program.ranks());
  if (r.ranks > cluster.device_count())
    throw std::invalid_argument(fmt::format("a mesh of {} devices but {} has {}", r.ranks,
                                            cluster.name, cluster.device_count()));
  const CostModel model(cluster.device, options.matmul_dtype,
                        options.ranks_on_node > 0 ? options.ranks_on_node
                                                  : ranks_on_node(cluster, r.ranks));
  {
    // The step's ops (the collectives touch their buffers too), then the updates, each read at
    // its reuse distance.
    std::vector<const StepOp*> sequence;
    for (const SpmdOp& op : program.ops) sequence.push_back(&op.op);
    for (const StepOp& op : program.update) sequence.push_back(&op);
    const std::vector<double> seconds = op_seconds(model, sequence);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const double t = program.ops[i].collective ? 0 : seconds[i];
      r.op_seconds.push_back(t);
      r.compute_seconds += t;
    }
    for (std::size_t i = program.ops.size(); i < seconds.size(); ++i)
      r.update_seconds += seconds[i];
  }
  r.compute_seconds += r.update_seconds;

  const std::size_t n_coll = program.collectives.size();
  const std::size_t n_all = n_coll + program.gathers.size();  // with ZeRO-1's all_gathers
  std::vector<double> given;
  if (options.collective_seconds) {
    given.assign(n_all, -1);
    for (std::size_t c = 0; c < n_all; ++c) {
      const SpmdOp& op = program.ops[static_cast<std::size_t>(
          c < n_coll ? program.collectives[c] : program.gathers[c - n_coll])];
      const std::vector<int> group = group_of(program.mesh, 0, op.axes);
      const double p = static_cast<double>(group.size());
      if (group.size() > 1)
        given[c] = options.collective_seconds(
            op.kind, group, op.kind == CollectiveKind::AllGather ? op.bytes * p : op.bytes);
    }
  }
  const std::string answer = run_isolated([&] {
    SimEngine sim_engine(options.simgrid_args);
    sg4::Engine& engine = sim_engine.get();
    const Platform platform = build_platform(cluster);
    Sim sim(platform, program, r);
    sim.log_on = options.log;
    sim.inline_collectives = !cluster.overlap_collectives;
    sim.call_overhead = cluster.collective_overhead;
    sim.share = cluster.device.comm_sm_share;
    sim.oversub = model.time_share();
    if (!cluster.device.measured.oversubscribed.empty())
      sim.sync = &cluster.device.measured.oversubscribed;
    if (!cluster.device.measured.collectives.empty()) sim.tables = &cluster.device.measured;
    sim.given = given;
    for (std::size_t c = 0; c < n_coll; ++c) {
      sim.coll_index[program.collectives[c]] = static_cast<int>(c);
      sim.issue[program.issue_after[c]].push_back(static_cast<int>(c));
    }
    const auto ranks = static_cast<std::size_t>(r.ranks);
    sim.ready.resize(ranks);
    sim.done.resize(ranks);
    for (std::size_t k = 0; k < ranks; ++k)
      for (std::size_t c = 0; c < n_coll; ++c) {
        sim.ready[k].push_back(sg4::Semaphore::create(0));
        sim.done[k].push_back(sg4::Semaphore::create(0));
      }
    for (std::size_t k = 0; k < ranks; ++k) {
      sim.updated.push_back(sg4::Semaphore::create(0));
      sim.gathered.push_back(sg4::Semaphore::create(0));
    }
    sim.compute.resize(ranks);
    sim.compute_ops.resize(ranks);
    sim.comm.resize(ranks);
    sim.coll_seconds.assign(ranks, std::vector<double>(n_all, 0));
    sim.end.assign(ranks, -1);
    sim.work.assign(ranks, 0);
    sim.work_at_sync.assign(ranks, 0);
    sim.synced.assign(ranks, 0);
    for (int k = 0; k < r.ranks; ++k) {
      sg4::Host* host = platform.devices[static_cast<std::size_t>(k)];
      sg4::Actor::create(fmt::format("compute{}", k), host, [&sim, k] { compute_actor(sim, k); });
      if (n_all > 0)
        sg4::Actor::create(fmt::format("comm{}", k), host, [&sim, k] { comm_actor(sim, k); });
    }
    engine.run();
    for (int k = 0; k < r.ranks; ++k)
      if (sim.end[static_cast<std::size_t>(k)] < 0)
        throw SimulationError(fmt::format("the simulation deadlocked: rank {} never finished", k));
    std::stable_sort(sim.log.begin(), sim.log.end(), [](const LogEntry& a, const LogEntry& b) {
      return std::tie(a.time, a.rank, a.seq) < std::tie(b.time, b.rank, b.seq);
    });
    std::string out = fmt::format("events {}\n", sim.events);
    for (std::size_t k = 0; k < ranks; ++k) {
      out += fmt::format("device {:a}", sim.end[k]);
      put(out, sim.compute[k]);
      put(out, sim.compute_ops[k]);
      put(out, sim.comm[k]);
      for (double s : sim.coll_seconds[k]) out += fmt::format(" {:a}", s);
      out += "\n";
    }
    out += fmt::format("log {}\n", sim.log.size());
    for (const LogEntry& e : sim.log) out += e.text + "\n";
    return out;
  });

  std::istringstream in(answer);
  std::string tag;
  auto number = [&] { return read_number(in); };
  auto intervals = [&] {
    std::size_t n = 0;
    in >> n;
    std::vector<Interval> v;
    for (std::size_t i = 0; i < n; ++i) {
      const double a = number();
      v.push_back({a, number()});
    }
    return v;
  };
  in >> tag >> r.events;
  if (tag != "events") throw SimulationError("garbled answer from the simulation process");
  for (int k = 0; k < r.ranks; ++k) {
    in >> tag;
    if (tag != "device") throw SimulationError("garbled answer from the simulation process");
    const double end = number();
    r.step_seconds = std::max(r.step_seconds, end);
    r.compute_intervals.push_back(intervals());
    {
      std::size_t n = 0;
      in >> n;
      std::vector<std::array<int, 2>>& v = r.compute_ops.emplace_back();
      for (std::size_t i = 0; i < n; ++i) {
        std::array<int, 2> range{};
        in >> range[0] >> range[1];
        v.push_back(range);
      }
      if (!in || n != r.compute_intervals.back().size())
        throw SimulationError("garbled answer from the simulation process");
    }
    r.comm_intervals.push_back(intervals());
    std::vector<double> secs;
    for (std::size_t c = 0; c < n_all; ++c) secs.push_back(number());
    if (k == 0)
      for (std::size_t c = 0; c < n_all; ++c) {
        const int index = c < n_coll ? program.collectives[c] : program.gathers[c - n_coll];
        const SpmdOp& op = program.ops[static_cast<std::size_t>(index)];
        r.collectives.push_back({index, op.kind, group_size(program, op), op.bytes, secs[c]});
      }
  }
  std::size_t lines = 0;
  in >> tag >> lines;
  std::string line;
  std::getline(in, line);
  for (std::size_t i = 0; i < lines && std::getline(in, line); ++i) r.log.push_back(line);

  for (int k = 0; k < r.ranks; ++k) {
    const auto& c = r.compute_intervals[static_cast<std::size_t>(k)];
    const auto& m = r.comm_intervals[static_cast<std::size_t>(k)];
    DeviceReport d;
    d.compute = union_length(c);
    d.communication = union_length(m);
    std::vector<Interval> both = c;
    both.insert(both.end(), m.begin(), m.end());
    const double busy = union_length(both);
    d.exposed_communication = busy - d.compute;
    d.idle = r.step_seconds - busy;
    d.parameters = program.param_bytes;
    d.gradients = program.step_gradients;
    d.optimizer_state = program.optimizer_state_bytes;
    d.activations = program.step_intermediates;
    r.devices.push_back(d);
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

std::string spmd_report(const SpmdProgram& program, const SpmdSimResult& r) {
  auto ms = [](double s) { return fmt::format("{:.3f} ms", s * 1e3); };
  auto mb = [](double b) { return fmt::format("{:.2f} MB", b / 1e6); };
  std::string out =
      fmt::format("mesh {} ({} devices), {} ops, {} collectives{}\n", fmt::join(program.mesh, "x"),
                  r.ranks, program.ops.size(), program.collectives.size(),
                  program.gathers.empty()
                      ? ""
                      : fmt::format(" + {} all_gathers after the update", program.gathers.size()));
  out += fmt::format("step time           {}\n", ms(r.step_seconds));
  out += fmt::format("compute per device  {} (ops {} + update {})\n", ms(r.compute_seconds),
                     ms(r.compute_seconds - r.update_seconds), ms(r.update_seconds));
  double comm = 0, exposed = 0, idle = 0;
  for (const DeviceReport& d : r.devices) {
    comm = std::max(comm, d.communication);
    exposed = std::max(exposed, d.exposed_communication);
    idle = std::max(idle, d.idle);
  }
  out += fmt::format("communication       {} (exposed {}), idle up to {}\n", ms(comm), ms(exposed),
                     ms(idle));
  if (!r.devices.empty()) {
    const DeviceReport& d = r.devices[0];
    out += fmt::format(
        "memory per device   {} (parameters {}, gradients {}, optimizer state {}, "
        "activations {})\n",
        mb(d.peak_memory()), mb(d.parameters), mb(d.gradients), mb(d.optimizer_state),
        mb(d.activations));
    if (program.optimizer_shard >= 0)
      out += fmt::format(
          "optimizer_shard     mesh axis {}: {} parameters' updates split, optimizer state "
          "{} instead of {} (saves {} per device)\n",
          program.optimizer_shard, program.gathers.size(), mb(program.optimizer_state_bytes),
          mb(program.optimizer_state_unsharded_bytes),
          mb(program.optimizer_state_unsharded_bytes - program.optimizer_state_bytes));
  }
  std::map<std::tuple<std::string, int>, std::tuple<int, double, double>> by_kind;
  for (const SpmdCollectiveRecord& c : r.collectives) {
    auto& [count, bytes, secs] = by_kind[{std::string(collective_kind_name(c.kind)), c.group}];
    ++count;
    bytes += c.bytes;
    secs += c.seconds;
  }
  for (const auto& [key, v] : by_kind)
    out += fmt::format("  {:<15} group {:<4} x{:<4} {:>10}  {}\n", std::get<0>(key),
                       std::get<1>(key), std::get<0>(v), mb(std::get<1>(v)), ms(std::get<2>(v)));
  return out;
}

std::vector<PlacedOp> placed_ops(const SpmdSimResult& r, std::size_t device) {
  std::vector<PlacedOp> out;
  const std::vector<Interval>& compute = r.compute_intervals[device];
  for (std::size_t s = 0; s < compute.size() && s < r.compute_ops[device].size(); ++s) {
    const auto [begin, end] = r.compute_ops[device][s];
    double modelled = 0;
    for (int i = std::max(begin, 0); i < end; ++i)
      modelled += r.op_seconds[static_cast<std::size_t>(i)];
    if (begin < 0 || !(modelled > 0)) continue;
    const double scale = (compute[s].end - compute[s].start) / modelled;
    double t = compute[s].start;
    for (int i = begin; i < end; ++i) {
      const double secs = r.op_seconds[static_cast<std::size_t>(i)] * scale;
      if (!(secs > 0)) continue;
      out.push_back({i, t, t + secs});
      t += secs;
    }
  }
  return out;
}

std::string spmd_chrome_trace(const SpmdProgram& program, const SpmdSimResult& r, int max_ranks) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto line = [&](const std::string& text) {
    out += (first ? "" : ",\n") + text;
    first = false;
  };
  auto box = [&](std::string_view name, std::string_view cat, int pid, int tid, double start,
                 double end, const std::string& args) {
    line(fmt::format(
        "{{\"name\": \"{}\", \"cat\": \"{}\", \"ph\": \"X\", \"ts\": {:.3f}, \"dur\": {:.3f}, "
        "\"pid\": {}, \"tid\": {}, \"args\": {{{}}}}}",
        name, cat, start * 1e6, (end - start) * 1e6, pid, tid, args));
  };
  const std::size_t n_coll = program.collectives.size();
  std::size_t shown = r.compute_intervals.size();
  if (max_ranks > 0) shown = std::min(shown, static_cast<std::size_t>(max_ranks));
  for (std::size_t k = 0; k < shown; ++k) {
    const int pid = static_cast<int>(k);
    line(fmt::format(
        "{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {}, \"args\": {{\"name\": "
        "\"rank {}\"}}}}",
        pid, pid));
    for (int tid = 0; tid < 2; ++tid)
      line(fmt::format(
          "{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": "
          "{{\"name\": \"{}\"}}}}",
          pid, tid, tid == 0 ? "compute" : "comm"));
    const std::vector<Interval>& compute = r.compute_intervals[k];
    for (std::size_t s = 0; s < compute.size(); ++s) {
      const auto [begin, end] =
          s < r.compute_ops[k].size() ? r.compute_ops[k][s] : std::array<int, 2>{-1, -1};
      if (begin < 0)
        box("update", "update", pid, 0, compute[s].start, compute[s].end, "");
      else
        box("compute", "segment", pid, 0, compute[s].start, compute[s].end,
            fmt::format("\"ops\": \"{}-{}\"", begin, end - 1));
    }
    for (const PlacedOp& p : placed_ops(r, k)) {
      const StepOp& op = program.ops[static_cast<std::size_t>(p.op)].op;
      box(op.name(), "op", pid, 0, p.start, p.end,
          fmt::format("\"op\": {}, \"output\": \"{}\", \"flops\": {:.0f}, \"bytes\": {:.0f}, "
                      "\"modelled_us\": {:.3f}",
                      p.op, op.output ? op.output->str() : "", op.cost.flops, op.cost.bytes,
                      r.op_seconds[static_cast<std::size_t>(p.op)] * 1e6));
    }
    const std::vector<Interval>& comm = r.comm_intervals[k];
    for (std::size_t c = 0; c < comm.size(); ++c) {
      const bool gather = c >= n_coll;
      if (gather && c - n_coll >= program.gathers.size()) break;
      const SpmdOp& op = program.ops[static_cast<std::size_t>(gather ? program.gathers[c - n_coll]
                                                                     : program.collectives[c])];
      box(collective_kind_name(op.kind), gather ? "after update" : "collective", pid, 1,
          comm[c].start, comm[c].end,
          fmt::format("\"bytes\": {:.0f}, \"group\": {}, \"mesh_axes\": \"{}\"", op.bytes,
                      group_size(program, op), fmt::join(op.axes, ",")));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace spora::sim
