// `spora search`: see tools/cmd_search.h.
#include "tools/cmd_search.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "backends/runtime/data/files.h"
#include "lang/diagnostics.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/setup.h"
#include "parallel/search/cost_graph.h"
#include "parallel/search/from_ir.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/pipeline.h"
#include "sim/pipeline_program.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"
#include "tools/synth_cache.h"

namespace spora::tools {

namespace {

namespace ps = parallel::search;

struct Options {
  std::string file, cluster, algo = "dp", mesh, out, entry = "main", optimizer = "sgd";
  int top = 5;
  int dp_budget = 64;
  double search_memory_mb = 512;  // --algo dp: SearchOptions::max_search_bytes
  long batch = 0;
  double memory_limit_gb = 0;
  std::vector<std::string> fix;  // "name=(2, 1)": semi-auto annotations of parameters / inputs
  bool no_simulate = false;
  int stages = 1, micro_batches = 1;  // a pipeline of `stages` stages of --mesh each
  // The command line's --stages / --micro-batches: a number, or "auto" (run_auto_stages).
  std::string stages_text = "1", micro_batches_text;  // "": auto with --stages auto, else 1
  bool explain = false;
  int explain_rows = 30;
  std::string evaluate;  // a strategy file to price instead of searching
  std::string schedule = "1f1b";
  std::string collectives = "ring";  // the simulator's collectives: ring (model/tables) | synth
  double synth_time_limit = 20;
};
Options g_options;

// The simulator's options: with --collectives synth, each collective of a candidate takes the
// synthesizer's time for its group (tools/synth_cache.h; searched once per group and size
// class, then cached).
sim::SpmdSimOptions spmd_options(const Options& o, const sim::ClusterSpec& cluster) {
  sim::SpmdSimOptions opts;
  if (o.collectives == "synth") {
    static std::optional<SynthCache> cache;
    if (!cache) cache.emplace(o.cluster);
    opts.collective_seconds = synthesized_collective_seconds(*cache, cluster, o.synth_time_limit);
  }
  return opts;
}

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace

// The analytic oracle's device numbers from the cluster spec. Mesh axes are laid out
// row-major over the ranks (the last axis varies fastest): an axis whose span of consecutive
// ranks stays inside one node uses the intra-node interconnect, the others the network.
ps::DeviceModel search_device_model(const sim::ClusterSpec& c, const parallel::Mesh& mesh,
                                    const std::string& optimizer) {
  ps::DeviceModel d;
  const auto f32 = c.device.peak_flops.find("f32");
  d.peak_flops = f32 != c.device.peak_flops.end() ? f32->second : c.device.max_peak_flops();
  d.memory_bandwidth = c.device.memory_bandwidth;
  d.launch_overhead = c.device.launch_overhead;
  // Compute priced by the simulator's own cost model (per-class efficiencies and launch
  // overheads), so that the oracle and the simulator that re-ranks its picks agree on it.
  d.op_seconds = [model = sim::CostModel(c.device)](double flops, double bytes,
                                                    const std::string& op_class, DType dtype) {
    sem::OpCost cost;
    cost.flops = flops;
    cost.bytes = bytes;
    cost.op_class = op_class;
    return model.time(cost, dtype).seconds;
  };
  if (!optimizer.empty())
    d.update_seconds = [model = sim::CostModel(c.device), optimizer](const sem::TypeP& shard) {
      int state = 0;
      double seconds = 0;
      for (const sim::StepOp& op : sim::update_ops(optimizer, shard, state))
        seconds += model.time(op.cost, op.dtype).seconds;
      return seconds;
    };
  d.comm.axes.assign(mesh.ndim(), parallel::AxisLink{});
  int64_t span = 1;
  for (int ax = mesh.ndim() - 1; ax >= 0; --ax) {
    span *= mesh.axis_size(ax);
    parallel::AxisLink& l = d.comm.axes[ax];
    if (span <= c.devices_per_node || !c.network) {
      l.alpha_s = c.interconnect.latency;
      l.bandwidth_Bps = c.interconnect.bandwidth * c.interconnect.efficiency;
    } else {
      const sim::NetworkSpec& n = *c.network;
      l.alpha_s = n.nic_latency + n.latency;
      double bw = n.nic_bandwidth * std::max(1, n.nics_per_node) / c.devices_per_node;
      if (n.link_bandwidth > 0) bw = std::min(bw, n.link_bandwidth);
      l.bandwidth_Bps = bw * n.efficiency;
    }
    if (l.bandwidth_Bps <= 0) l.bandwidth_Bps = 1e9;  // a spec without links: 1 GB/s
    l.call_s = c.collective_overhead;
  }
  return d;
}

namespace {

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.2f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string human_seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

// --algo rec: one strategy, from operator shapes (parallel/search/rec.h), over all the devices
// of the mesh as one dimension of cuts.
int run_rec(const Options& o, const sim::ClusterSpec& cluster, const parallel::Mesh& mesh,
            const sim::StepProgram& program, const std::vector<std::string>& names) {
  const ps::StepRecGraph g =
      ps::build_step_rec_graph(*program.step, names, static_cast<int>(program.params.size()));
  const ps::DeviceModel d = search_device_model(cluster, mesh);
  ps::RecOptions ro;
  ro.devices = mesh.size();
  ro.peak_flops = d.peak_flops;
  ro.bandwidth = d.comm.axes.empty() ? 1e9 : d.comm.axes[0].bandwidth_Bps;
  ro.latency = 0;
  for (const parallel::AxisLink& l : d.comm.axes) {
    ro.bandwidth = std::min(ro.bandwidth, l.bandwidth_Bps);
    ro.latency = std::max(ro.latency, l.alpha_s + l.call_s);
  }
  ro.memory_limit = o.memory_limit_gb > 0 ? o.memory_limit_gb * 1e9 : cluster.device.memory_bytes;
  const ps::RecResult r = ps::search_rec(g.graph, ro);
  std::printf("spora search: %s on %s, %lld devices, --algo rec: %zu forward operators\n",
              o.file.c_str(), cluster.name.c_str(), static_cast<long long>(ro.devices),
              g.graph.ops.size());
  std::printf("  recursive programming: one strategy, cuts per operator dimension\n");
  std::string layouts;
  for (const std::string& l : ps::rec_parameter_layouts(g, r))
    layouts += (layouts.empty() ? "" : ", ") + l;
  std::printf("%-4s %-16s %-16s %-14s %-5s %s\n", "rank", "step (analytic)", "step (simulated)",
              "memory/device", "fits", "parameter layouts");
  std::printf("%-4d %-16s %-16s %-14s %-5s %s\n", 1, human_seconds(r.cost).c_str(), "-",
              human_bytes(r.memory).c_str(), r.feasible ? "yes" : "no", layouts.c_str());
  if (!o.out.empty()) {
    runtime::data::write_file_atomic(o.out, ps::rec_strategy_json(g, r, ro.devices));
    std::printf("wrote the strategy to %s\n", o.out.c_str());
  }
  return 0;
}

// With --stages S > 1: the candidate's parameter and input layouts (its operator choices are
// for the whole step's graph, not the stages': the partitioner places the stages' operators)
// and the pipeline key, split "auto" (parallel/pipeline: the layer-level dynamic program).
std::string with_pipeline(const std::string& strategy, const Options& o) {
  nlohmann::json j = nlohmann::json::parse(strategy);
  j.erase("ops");
  j.erase("predicted_step_seconds");  // the analytic time of one micro-batch, not of the pipeline
  j["pipeline"] = {{"stages", o.stages},
                   {"micro_batches", o.micro_batches},
                   {"split", "auto"},
                   {"schedule", o.schedule}};
  return j.dump(2) + "\n";
}

// The analytic step of an assignment term by term, largest first (--explain, --evaluate).
void print_terms(std::FILE* out, const ps::StepCostGraph& g, const ps::Assignment& a, int rows) {
  const ps::CostTerms t = ps::cost_terms(g, a);
  std::fprintf(out,
               "the best strategy's analytic step: operators and parameters %s (compute, update), "
               "edges %s (redistributions); the largest terms:\n",
               human_seconds(t.nodes).c_str(), human_seconds(t.edges).c_str());
  for (size_t i = 0; i < t.terms.size() && i < static_cast<size_t>(rows); ++i)
    std::fprintf(out, "  %10s  %s\n", human_seconds(t.terms[i].seconds).c_str(),
                 t.terms[i].what.c_str());
}

// --evaluate FILE: the analytic oracle's price of a given strategy (as the partitioner runs it:
// its layouts, and each operator in the strategy the partitioner picks or the file's "ops"
// name), next to the simulator's step, and its terms.
int run_evaluate(const Options& o, const sim::ClusterSpec& cluster, const sim::StepProgram& program,
                 const ps::StepCostGraph& g) {
  const parallel::Strategy s = parallel::load_strategy(o.evaluate, *program.step);
  if (!(s.mesh.shape == g.mesh.shape))
    throw UsageError(fmt::format("--evaluate {}: its mesh {} is not --mesh {}", o.evaluate,
                                 s.mesh.to_string(), g.mesh.to_string()));
  const parallel::Partitioned part =
      parallel::partition_training_step(*program.step, program.params.size(), s);
  std::vector<std::string> unmatched;
  const ps::Assignment a =
      ps::assignment_of(g, *program.step, part.param_layouts, part.strategies, &unmatched);
  std::optional<double> simulated;
  if (!o.no_simulate)
    simulated = sim::simulate_spmd_step(cluster, sim::spmd_program(program, s, o.optimizer),
                                        spmd_options(o, cluster))
                    .step_seconds;
  std::printf("spora search --evaluate %s: %s on %s, mesh %s\n", o.evaluate.c_str(), o.file.c_str(),
              cluster.name.c_str(), g.mesh.to_string().c_str());
  std::printf("%-16s %-16s %-14s %s\n", "step (analytic)", "step (simulated)", "memory/device",
              "collectives the partitioner inserts");
  std::printf("%-16s %-16s %-14s %d\n", human_seconds(a.cost).c_str(),
              simulated ? human_seconds(*simulated).c_str() : "-",
              human_bytes(a.peak_memory).c_str(), part.collectives);
  if (!unmatched.empty()) {
    std::printf(
        "  %zu operators ran a strategy the cost graph does not enumerate (priced as the "
        "closest candidate with their output layout):\n",
        unmatched.size());
    for (size_t i = 0; i < unmatched.size() && i < 10; ++i)
      std::printf("    %s\n", unmatched[i].c_str());
  }
  print_terms(stdout, g, a, o.explain_rows);
  return 0;
}

// What run_config found: its best candidate, for --stages auto's table.
struct Outcome {
  double analytic = 0, memory = 0;
  std::optional<double> simulated;
  bool feasible = false;
  std::string layouts;
};

// The options of one search that contradict each other or the cluster: a usage error.
void check_config(const Options& o, const sim::ClusterSpec& cluster, const parallel::Mesh& mesh) {
  if (mesh.size() > cluster.device_count())
    throw UsageError(fmt::format("--mesh {} needs {} devices but {} has {}", o.mesh, mesh.size(),
                                 cluster.name, cluster.device_count()));
  if (o.algo != "rec" && o.algo != "dp" && o.algo != "propagate" && o.algo != "exhaustive")
    throw UsageError(fmt::format("unknown --algo '{}' (dp, rec, propagate, exhaustive)", o.algo));
  // Output options that a kind of run would otherwise ignore.
  if (!o.evaluate.empty() && !o.out.empty())
    throw UsageError(fmt::format(
        "--output does not apply to --evaluate: it prices the strategy {} and finds none to "
        "write",
        o.evaluate));
  if (o.algo == "rec" && o.evaluate.empty() && o.explain)
    throw UsageError(
        "--explain does not apply to --algo rec: its single strategy has no term-by-term "
        "analytic cost (use --algo dp or exhaustive)");

  if (o.batch < 0) throw UsageError(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.stages < 1 || o.micro_batches < 1)
    throw UsageError(fmt::format("--stages and --micro-batches must be at least 1, got {} and {}",
                                 o.stages, o.micro_batches));
  if (o.stages > 1 && o.algo == "rec")
    throw UsageError(
        "--stages: use --algo dp, propagate or exhaustive (rec writes no layouts file)");
  if (o.stages > 1 && mesh.size() * o.stages > cluster.device_count())
    throw UsageError(fmt::format("--stages {} x --mesh {} needs {} devices but {} has {}", o.stages,
                                 o.mesh, mesh.size() * o.stages, cluster.name,
                                 cluster.device_count()));
}

// The search's options: --top, the budgets, the memory limit, and the layouts --fix and the
// program's own annotations pin.
ps::SearchOptions search_options(const Options& o, const sim::ClusterSpec& cluster,
                                 const parallel::Mesh& mesh, const ps::StepCostGraph& g) {
  ps::SearchOptions so2;
  so2.top_k = o.top;
  so2.dp_branch_budget = o.dp_budget;
  so2.max_search_bytes = static_cast<size_t>(o.search_memory_mb * 1e6);
  so2.memory_limit = o.memory_limit_gb > 0             ? o.memory_limit_gb * 1e9
                     : cluster.device.memory_bytes > 0 ? cluster.device.memory_bytes
                                                       : ps::kNoMemoryLimit;
  for (const std::string& f : o.fix) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos)
      throw UsageError(fmt::format("--fix '{}' is not NAME=LAYOUT (e.g. x=(2, 1))", f));
    const std::string name = f.substr(0, eq), text = f.substr(eq + 1);
    bool found = false;
    for (size_t i = 0; i < g.origins.size() && !found; ++i) {
      const ps::StepCostGraph::Origin& og = g.origins[i];
      if (!og.is_param || og.name != name) continue;
      found = true;
      const parallel::Layout want =
          parallel::Layout::parse(text, mesh, static_cast<int>(og.node->type->rank()));
      const auto at = std::find(og.layouts.begin(), og.layouts.end(), want);
      if (at == og.layouts.end())
        throw UsageError(fmt::format("--fix {}: {} is not a layout {} can take on mesh {}", name,
                                     text, name, mesh.to_string()));
      so2.fixed[static_cast<int>(i)] = static_cast<int>(at - og.layouts.begin());
    }
    if (!found)
      throw UsageError(
          fmt::format("--fix {}: the step has no parameter or input of that name", name));
  }
  if (!so2.fixed.empty() && o.algo != "propagate")
    throw UsageError("--fix seeds sharding propagation: use it with --algo propagate");
  // The program's own annotations (shard(x, ...), shard=) are pins too: one candidate each,
  // so every algorithm respects them; propagation starts from them.
  if (o.algo == "propagate")
    for (const auto& [node, candidate] : ps::annotation_pins(g)) so2.fixed.emplace(node, candidate);
  return so2;
}

// The second oracle: each candidate partitioned and its per-rank program simulated on the
// cluster (sim/spmd_step.h), unless --no-simulate.
// A pipelined candidate's memory is the pipeline simulator's (a stage holds its share of the
// parameters and the activations of its micro-batches in flight), not the analytic graph's
// (the whole model on one stage's mesh).
struct Simulated {
  double step = 0, memory = -1;
};
std::optional<Simulated> simulate_candidate(const Options& o, const sim::ClusterSpec& cluster,
                                            const sim::StepProgram& program,
                                            const ps::StepCostGraph& g, const ps::Assignment& a,
                                            long global_batch) {
  if (o.no_simulate) return std::nullopt;
  try {
    if (o.stages > 1) {
      parallel::StepOptions po;
      po.entry = o.entry;
      po.batch = global_batch;
      const sim::PipelineSimResult pr = sim::simulate_pipeline(
          cluster, sim::pipeline_program(parallel::pipeline::setup_pipeline(
                                             o.file, po, with_pipeline(ps::strategy_json(g, a), o),
                                             "candidate", sim::node_cost),
                                         cluster, "", o.optimizer));
      return Simulated{pr.step_seconds, pr.peak_memory};
    }
    const parallel::Strategy s =
        parallel::parse_strategy(ps::strategy_json(g, a), *program.step, "candidate");
    return Simulated{sim::simulate_spmd_step(cluster, sim::spmd_program(program, s, o.optimizer),
                                             spmd_options(o, cluster))
                         .step_seconds};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora search: the simulator could not run a candidate: %s\n", e.what());
    return std::nullopt;
  }
}

// One search on one mesh with fixed stages and micro-batches. Prints to `out` (nullptr: nothing
// printed and no file written; the best candidate goes to `outcome`).
int run_config(const Options& o, std::FILE* out, Outcome* outcome) {
  std::FILE* const devnull = out ? nullptr : std::fopen("/dev/null", "w");
  struct Close {
    std::FILE* f;
    ~Close() {
      if (f) std::fclose(f);
    }
  } close_devnull{devnull};
  if (!out) out = devnull;
  if (!out) throw UsageError("cannot open /dev/null");
  if (o.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  if (o.mesh.empty()) throw UsageError("--mesh is required (e.g. 2x4)");
  if (o.top < 1) throw UsageError(fmt::format("--top must be at least 1, got {}", o.top));
  const sim::ClusterSpec cluster = sim::load_cluster_spec(o.cluster);
  const parallel::Mesh mesh = parallel::Mesh::parse(o.mesh);
  check_config(o, cluster, mesh);

  parallel::StepOptions so;
  so.entry = o.entry;
  so.optimizer = o.optimizer;
  if (o.batch > 0) so.batch = o.batch;  // the global batch: the search decides how to split it
  const bool pipelined = o.stages > 1;
  long global_batch = o.batch;
  if (pipelined) {
    // The stages run micro-batches: the operator strategy inside a stage is searched on the
    // step of one micro-batch.
    if (global_batch == 0) global_batch = sim::build_step_program(o.file, so).batch;
    if (global_batch % o.micro_batches != 0)
      throw UsageError(fmt::format("the batch of {} does not split into --micro-batches {}",
                                   global_batch, o.micro_batches));
    so.batch = global_batch / o.micro_batches;
  }
  const sim::StepProgram program = sim::build_step_program(o.file, so);
  std::vector<std::string> names;
  int states = 0;
  for (const sim::StepParam& p : program.params) {
    names.push_back(p.name);
    states = p.state_tensors;
  }
  if (o.algo == "rec" && o.evaluate.empty()) return run_rec(o, cluster, mesh, program, names);
  const ps::StepCostGraph g = ps::build_step_cost_graph(
      *program.step, names, static_cast<int>(program.params.size()), states, mesh,
      o.algo == "propagate" ? ps::propagation_device(search_device_model(cluster, mesh))
                            : search_device_model(cluster, mesh, o.optimizer));
  if (!o.evaluate.empty()) {
    if (pipelined) throw UsageError("--evaluate prices one stage's step: leave out --stages");
    return run_evaluate(o, cluster, program, g);
  }

  const ps::SearchOptions so2 = search_options(o, cluster, mesh, g);
  ps::SearchResult r = o.algo == "dp"          ? ps::search_dp(g.graph, so2)
                       : o.algo == "propagate" ? ps::search_propagate(g.graph, so2)
                                               : ps::search_exhaustive(g.graph, so2);

  std::fprintf(out,
               "spora search: %s on %s, mesh %s, --algo %s: %zu operators and parameters, %zu "
               "edges\n",
               o.file.c_str(), cluster.name.c_str(), mesh.to_string().c_str(), o.algo.c_str(),
               g.graph.nodes.size(), g.graph.edges.size());
  std::fprintf(out, "  %s%s\n", r.notes.c_str(), r.exact ? " (exact)" : "");
  if (!r.any_feasible)
    std::fprintf(out, "  no strategy fits %s per device: the least memory any needs is %s\n",
                 human_bytes(so2.memory_limit).c_str(), human_bytes(r.min_memory_needed).c_str());
  if (pipelined)
    std::fprintf(
        out,
        "  a pipeline of %d stages of mesh %s (%lld devices), %d micro-batches of %lld, %s: "
        "the analytic step is one micro-batch of the whole model on one stage's mesh, the "
        "simulated one the pipelined step (sim/pipeline.h)\n",
        o.stages, mesh.to_string().c_str(), static_cast<long long>(mesh.size() * o.stages),
        o.micro_batches, static_cast<long long>(program.batch), o.schedule.c_str());
  std::fprintf(out, "%-4s %-16s %-16s %-14s %-5s %s\n", "rank", "step (analytic)",
               "step (simulated)", "memory/device", "fits", "parameter layouts");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const ps::Assignment& a = r.top[i];
    const std::optional<Simulated> simulated =
        simulate_candidate(o, cluster, program, g, a, global_batch);
    std::string layouts;
    for (const std::string& l : ps::parameter_layouts(g, a))
      layouts += (layouts.empty() ? "" : ", ") + l;
    double memory = a.peak_memory;
    bool feasible = a.feasible;
    if (simulated && simulated->memory >= 0) {
      memory = simulated->memory;
      feasible = memory <= so2.memory_limit;
    }
    if (outcome && i == 0)
      *outcome = {a.cost, memory, simulated ? std::optional<double>(simulated->step) : std::nullopt,
                  feasible, layouts};
    std::fprintf(out, "%-4zu %-16s %-16s %-14s %-5s %s\n", i + 1, human_seconds(a.cost).c_str(),
                 simulated ? human_seconds(simulated->step).c_str() : "-",
                 human_bytes(memory).c_str(), feasible ? "yes" : "no", layouts.c_str());
  }
  if (o.explain && !r.top.empty()) print_terms(out, g, r.top[0], o.explain_rows);
  if (!o.out.empty() && r.top.empty() && !outcome)
    throw UsageError(fmt::format("no strategy found: nothing written to {}", o.out));
  if (!o.out.empty() && !r.top.empty() && !outcome) {
    const std::string text = ps::strategy_json(g, r.top[0]);
    runtime::data::write_file_atomic(o.out, pipelined ? with_pipeline(text, o) : text);
    std::fprintf(out, "wrote the best strategy to %s\n", o.out.c_str());
  }
  return 0;
}

// "4" -> 4; "auto" -> 0; anything else is a usage error.
int count_or_auto(const std::string& text, const char* flag) {
  if (text == "auto") return 0;
  size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1)
    throw UsageError(fmt::format("{} takes a positive number or auto, got '{}'", flag, text));
  return v;
}

// The mesh of one stage when `stages` stages share `mesh`: its first axis divided by the stage
// count (pipelines run across the outermost axis, the nodes of a cluster), the axis dropped
// when it becomes 1 and others remain.
std::string stage_mesh(const parallel::Mesh& mesh, int64_t stages) {
  std::string text;
  for (int ax = 0; ax < mesh.ndim(); ++ax) {
    const int64_t n = ax == 0 ? mesh.axis_size(0) / stages : mesh.axis_size(ax);
    if (ax == 0 && n == 1 && mesh.ndim() > 1) continue;
    if (!text.empty()) text += mesh.axis_names.empty() ? "x" : ",";
    text +=
        mesh.axis_names.empty() ? std::to_string(n) : fmt::format("{}={}", mesh.axis_name(ax), n);
  }
  return text;
}

// --stages auto: the search chooses the pipeline depth. Every S dividing the first axis of
// --mesh (the devices of --mesh are shared: a stage gets the mesh of stage_mesh), with
// --micro-batches M or, for "auto", each of S, 2S, 4S and 8S that divides the batch, is
// searched as `--stages S --micro-batches M` would be and scored by the simulator (the
// analytic oracle with --no-simulate); S = 1 is the unpipelined step on the whole mesh. The
// table lists every configuration; the fastest one that fits in memory is then printed and
// written as usual. (Megatron's rule of thumb, tensor parallelism inside a node and pipelines
// across nodes, is one of the configurations; the search does not assume it.)
int run_auto_stages(const Options& o) {
  if (o.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  if (o.mesh.empty()) throw UsageError("--mesh is required (e.g. 2x4)");
  if (o.algo == "rec") throw UsageError("--stages auto: use --algo dp, propagate or exhaustive");
  const parallel::Mesh mesh = parallel::Mesh::parse(o.mesh);
  const int micro =
      o.micro_batches_text.empty() ? 0 : count_or_auto(o.micro_batches_text, "--micro-batches");
  parallel::StepOptions so;
  so.entry = o.entry;
  so.optimizer = o.optimizer;
  if (o.batch > 0) so.batch = o.batch;
  const long batch = o.batch > 0 ? o.batch : sim::build_step_program(o.file, so).batch;

  struct Row {
    Options options;
    Outcome outcome;
    std::string error;
  };
  std::vector<Row> rows;
  for (int64_t s = 1; s <= mesh.axis_size(0); ++s) {
    if (mesh.axis_size(0) % s != 0) continue;
    std::vector<int> micros;
    if (s == 1)
      micros = {1};
    else if (micro > 0)
      micros = {micro};
    else
      for (int k : {1, 2, 4, 8})
        if (batch % (s * k) == 0) micros.push_back(static_cast<int>(s) * k);
    for (int m : micros) {
      Row row;
      row.options = o;
      row.options.top = 1;
      row.options.explain = false;
      row.options.out.clear();
      row.options.stages = static_cast<int>(s);
      row.options.micro_batches = m;
      row.options.mesh = s == 1 ? o.mesh : stage_mesh(mesh, s);
      try {
        run_config(row.options, nullptr, &row.outcome);
      } catch (const lang::InternalError&) {
        throw;
      } catch (const std::exception& e) {
        row.error = e.what();  // e.g. fewer layers than stages: the split cannot be made
      }
      rows.push_back(std::move(row));
    }
  }
  std::printf(
      "spora search: %s on %s, %lld devices (--mesh %s), --stages auto: %zu pipeline "
      "configurations, each scored by its best strategy's %s step\n",
      o.file.c_str(), o.cluster.c_str(), static_cast<long long>(mesh.size()), o.mesh.c_str(),
      rows.size(), o.no_simulate ? "analytic" : "simulated");
  std::printf("%-7s %-14s %-7s %-16s %-16s %-14s %s\n", "stages", "stage mesh", "micro",
              "step (analytic)", "step (simulated)", "memory/device", "fits");
  const Row* best = nullptr;
  auto score = [&](const Row& r) {
    return o.no_simulate || !r.outcome.simulated ? r.outcome.analytic : *r.outcome.simulated;
  };
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-7d %-14s %-7d cannot be searched: %s\n", r.options.stages,
                  r.options.mesh.c_str(), r.options.micro_batches, r.error.c_str());
      continue;
    }
    std::printf("%-7d %-14s %-7d %-16s %-16s %-14s %s\n", r.options.stages, r.options.mesh.c_str(),
                r.options.micro_batches, human_seconds(r.outcome.analytic).c_str(),
                r.outcome.simulated ? human_seconds(*r.outcome.simulated).c_str() : "-",
                human_bytes(r.outcome.memory).c_str(), r.outcome.feasible ? "yes" : "no");
    const bool scored = o.no_simulate || r.outcome.simulated;
    if (scored && (!best || (r.outcome.feasible && !best->outcome.feasible) ||
                   (r.outcome.feasible == best->outcome.feasible && score(r) < score(*best))))
      best = &r;
  }
  if (!best) throw UsageError("--stages auto: no configuration could be searched (see above)");
  std::printf("chosen: %d stage%s of mesh %s, %d micro-batch%s\n\n", best->options.stages,
              best->options.stages == 1 ? "" : "s", best->options.mesh.c_str(),
              best->options.micro_batches, best->options.micro_batches == 1 ? "" : "es");
  Options chosen = best->options;
  chosen.top = o.top;
  chosen.explain = o.explain;
  chosen.out = o.out;
  return run_config(chosen, stdout, nullptr);
}

int run(Options o) {
  if (o.stages_text == "auto" && !o.evaluate.empty())
    throw UsageError("--evaluate prices a given strategy: leave out --stages auto");
  if (o.stages_text == "auto") return run_auto_stages(o);
  o.stages = count_or_auto(o.stages_text, "--stages");
  if (o.micro_batches_text == "auto")
    throw UsageError("--micro-batches auto goes with --stages auto");
  o.micro_batches =
      o.micro_batches_text.empty() ? 1 : count_or_auto(o.micro_batches_text, "--micro-batches");
  return run_config(o, stdout, nullptr);
}

}  // namespace

CLI::App* add_search_subcommand(CLI::App& app) {
  Options& o = g_options;
  o = Options{};  // a fresh app (the tests build several) starts from the defaults
  CLI::App* s = app.add_subcommand("search", "Search a parallel strategy for a training step");
  s->add_option("file", o.file, "the program (.sp), as `spora sim` takes it")->required();
  s->add_option("--cluster,-c", o.cluster, "cluster spec (YAML): the analytic oracle's numbers");
  s->add_option("--mesh", o.mesh, "device mesh, e.g. 2x4 or dp=2,tp=4");
  s->add_option("--algo", o.algo, "dp, rec, propagate or exhaustive")->capture_default_str();
  s->add_option("--top", o.top, "how many strategies to print")->capture_default_str();
  s->add_option("--dp-budget", o.dp_budget,
                "--algo dp: elimination runs that cutset conditioning may spend on a graph that is "
                "not series-parallel before a greedy fallback decides the rest")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s->add_option("--search-memory", o.search_memory_mb,
                "--algo dp: MB its tables may take; a search that needs more stops with an error "
                "saying how far it got")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s->add_option("--memory-limit", o.memory_limit_gb,
                "GB per device (default: the cluster spec's device memory)");
  s->add_option("--batch,-b", o.batch, "global batch (default: the program's)");
  s->add_option("--fn", o.entry, "the function that runs one training step")->capture_default_str();
  s->add_option("--optimizer", o.optimizer, "sgd, momentum or adam")->capture_default_str();
  s->add_option("-o,--output", o.out, "write the best strategy (JSON) to FILE");
  s->add_option(
       "--stages", o.stages_text,
       "pipeline stages of --mesh each (ranks = stages x mesh): the strategy file gets a "
       "\"pipeline\" key with the layer-level \"auto\" split, and the simulator scores the "
       "pipelined step; auto: the search chooses the stages (each S dividing the first axis of "
       "--mesh, whose devices the stages share) and, with --micro-batches auto, the "
       "micro-batches (S, 2S, 4S, 8S)")
      ->capture_default_str();
  s->add_option("--micro-batches", o.micro_batches_text,
                "with --stages: micro-batches per step (default 1; with --stages auto, auto: "
                "S, 2S, 4S and 8S)");
  s->add_option("--schedule", o.schedule, "with --stages: 1f1b or gpipe")
      ->check(CLI::IsMember({"1f1b", "gpipe"}))
      ->capture_default_str();
  s->add_flag("--explain", o.explain,
              "print the best strategy's analytic cost term by term: each operator's candidate "
              "(compute, a parameter's update) and each edge's redistribution, largest first");
  s->add_option("--explain-rows", o.explain_rows, "with --explain or --evaluate: how many terms")
      ->capture_default_str();
  s->add_option("--evaluate", o.evaluate,
                "price this strategy file instead of searching: its analytic step (the "
                "partitioner's operator choices, or the file's \"ops\"), the simulated one and "
                "the largest terms");
  s->add_option("--collectives", o.collectives,
                "the simulator's collectives: ring (the ring model, or the cluster's measured "
                "tables) or synth (spora synth's schedule per group and size, cached)")
      ->check(CLI::IsMember({"ring", "synth"}))
      ->capture_default_str();
  s->add_option("--synth-time-limit", o.synth_time_limit,
                "--collectives synth: seconds of search per group and size not in the cache")
      ->capture_default_str();
  s->add_flag("--no-simulate", o.no_simulate,
              "skip the simulator's score of the top strategies (the analytic oracle only)");
  s->add_option("--fix", o.fix,
                "with --algo propagate: pin a parameter's or input's layout, NAME=LAYOUT, e.g. "
                "--fix 'x=(2, 1)' (MindSpore partition numbers or [m0, -])");
  return s;
}

std::string write_annotation_strategy(const sim::StepProgram& program, const std::string& mesh) {
  std::vector<std::string> names;
  int states = 0;
  for (const sim::StepParam& p : program.params) {
    names.push_back(p.name);
    states = p.state_tensors;
  }
  const parallel::Mesh m = parallel::Mesh::parse(mesh);
  const ps::StepCostGraph g =
      ps::build_step_cost_graph(*program.step, names, static_cast<int>(program.params.size()),
                                states, m, ps::propagation_device({}));
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("spora_annotated_{}_{}.json", ::getpid(), mesh))
                               .string();
  runtime::data::write_file_atomic(path, ps::propagate_from_annotations(g));
  return path;
}

int run_search_subcommand() {
  try {
    return run(g_options);
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora search: error: %s\n", e.what());
  }
  return 1;
}

}  // namespace spora::tools
