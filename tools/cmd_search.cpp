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
#include "parallel/search/cost_graph.h"
#include "parallel/search/from_ir.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/pipeline.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"
#include "tools/pipeline_run.h"

namespace spora::tools {

namespace {

namespace ps = parallel::search;

struct Options {
  std::string file, cluster, algo = "dp", mesh, out, entry = "main", optimizer = "sgd";
  int top = 5;
  int dp_budget = 64;
  long batch = 0;
  double memory_limit_gb = 0;
  std::vector<std::string> fix;  // "name=(2, 1)": semi-auto annotations of parameters / inputs
  bool no_simulate = false;
  int stages = 1, micro_batches = 1;  // a pipeline of `stages` stages of --mesh each
  bool explain = false;
  int explain_rows = 30;
  std::string evaluate;  // a strategy file to price instead of searching
  std::string schedule = "1f1b";
};
Options g_options;

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
    sim::OpCost cost;
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
    ro.latency = std::max(ro.latency, l.alpha_s);
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
    std::ofstream f(o.out, std::ios::binary);
    if (!f) throw UsageError(fmt::format("cannot write '{}'", o.out));
    f << ps::rec_strategy_json(g, r, ro.devices);
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
void print_terms(const ps::StepCostGraph& g, const ps::Assignment& a, int rows) {
  const ps::CostTerms t = ps::cost_terms(g, a);
  std::printf(
      "the best strategy's analytic step: operators and parameters %s (compute, update), "
      "edges %s (redistributions); the largest terms:\n",
      human_seconds(t.nodes).c_str(), human_seconds(t.edges).c_str());
  for (size_t i = 0; i < t.terms.size() && i < static_cast<size_t>(rows); ++i)
    std::printf("  %10s  %s\n", human_seconds(t.terms[i].seconds).c_str(), t.terms[i].what.c_str());
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
    simulated =
        sim::simulate_spmd_step(cluster, sim::spmd_program(program, s, o.optimizer)).step_seconds;
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
  print_terms(g, a, o.explain_rows);
  return 0;
}

int run(const Options& o) {
  if (o.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  if (o.mesh.empty()) throw UsageError("--mesh is required (e.g. 2x4)");
  if (o.top < 1) throw UsageError(fmt::format("--top must be at least 1, got {}", o.top));
  const sim::ClusterSpec cluster = sim::load_cluster_spec(o.cluster);
  const parallel::Mesh mesh = parallel::Mesh::parse(o.mesh);
  if (mesh.size() > cluster.device_count())
    throw UsageError(fmt::format("--mesh {} needs {} devices but {} has {}", o.mesh, mesh.size(),
                                 cluster.name, cluster.device_count()));
  if (o.algo != "rec" && o.algo != "dp" && o.algo != "propagate" && o.algo != "exhaustive")
    throw UsageError(fmt::format("unknown --algo '{}' (dp, rec, propagate, exhaustive)", o.algo));

  sim::StepOptions so;
  so.entry = o.entry;
  so.optimizer = o.optimizer;
  if (o.batch < 0) throw UsageError(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.batch > 0) so.batch = o.batch;  // the global batch: the search decides how to split it
  if (o.stages < 1 || o.micro_batches < 1)
    throw UsageError(fmt::format("--stages and --micro-batches must be at least 1, got {} and {}",
                                 o.stages, o.micro_batches));
  const bool pipelined = o.stages > 1;
  if (pipelined && o.algo == "rec")
    throw UsageError(
        "--stages: use --algo dp, propagate or exhaustive (rec writes no layouts file)");
  if (pipelined && mesh.size() * o.stages > cluster.device_count())
    throw UsageError(fmt::format("--stages {} x --mesh {} needs {} devices but {} has {}", o.stages,
                                 o.mesh, mesh.size() * o.stages, cluster.name,
                                 cluster.device_count()));
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

  ps::SearchOptions so2;
  so2.top_k = o.top;
  so2.dp_branch_budget = o.dp_budget;
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
  ps::SearchResult r = o.algo == "dp"          ? ps::search_dp(g.graph, so2)
                       : o.algo == "propagate" ? ps::search_propagate(g.graph, so2)
                                               : ps::search_exhaustive(g.graph, so2);

  std::printf(
      "spora search: %s on %s, mesh %s, --algo %s: %zu operators and parameters, %zu "
      "edges\n",
      o.file.c_str(), cluster.name.c_str(), mesh.to_string().c_str(), o.algo.c_str(),
      g.graph.nodes.size(), g.graph.edges.size());
  std::printf("  %s%s\n", r.notes.c_str(), r.exact ? " (exact)" : "");
  if (!r.any_feasible)
    std::printf("  no strategy fits %s per device: the least memory any needs is %s\n",
                human_bytes(so2.memory_limit).c_str(), human_bytes(r.min_memory_needed).c_str());
  if (pipelined)
    std::printf(
        "  a pipeline of %d stages of mesh %s (%lld devices), %d micro-batches of %lld, %s: "
        "the analytic step is one micro-batch of the whole model on one stage's mesh, the "
        "simulated one the pipelined step (sim/pipeline.h)\n",
        o.stages, mesh.to_string().c_str(), static_cast<long long>(mesh.size() * o.stages),
        o.micro_batches, static_cast<long long>(program.batch), o.schedule.c_str());
  std::printf("%-4s %-16s %-16s %-14s %-5s %s\n", "rank", "step (analytic)", "step (simulated)",
              "memory/device", "fits", "parameter layouts");
  // The second oracle: each candidate partitioned and its per-rank program simulated on the
  // cluster (sim/spmd_step.h), unless --no-simulate.
  auto simulate = [&](const ps::Assignment& a) -> std::optional<double> {
    if (o.no_simulate) return std::nullopt;
    try {
      if (pipelined) {
        SpmdOptions po;
        po.file = o.file;
        po.entry = o.entry;
        po.batch = global_batch;
        return sim::simulate_pipeline(
                   cluster, pipeline_sim_program(po, with_pipeline(ps::strategy_json(g, a), o),
                                                 "candidate", cluster))
            .step_seconds;
      }
      const parallel::Strategy s =
          parallel::parse_strategy(ps::strategy_json(g, a), *program.step, "candidate");
      return sim::simulate_spmd_step(cluster, sim::spmd_program(program, s, o.optimizer))
          .step_seconds;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "spora search: the simulator could not run a candidate: %s\n", e.what());
      return std::nullopt;
    }
  };
  for (size_t i = 0; i < r.top.size(); ++i) {
    const ps::Assignment& a = r.top[i];
    const std::optional<double> simulated = simulate(a);
    std::string layouts;
    for (const std::string& l : ps::parameter_layouts(g, a))
      layouts += (layouts.empty() ? "" : ", ") + l;
    std::printf("%-4zu %-16s %-16s %-14s %-5s %s\n", i + 1, human_seconds(a.cost).c_str(),
                simulated ? human_seconds(*simulated).c_str() : "-",
                human_bytes(a.peak_memory).c_str(), a.feasible ? "yes" : "no", layouts.c_str());
  }
  if (o.explain && !r.top.empty()) print_terms(g, r.top[0], o.explain_rows);
  if (!o.out.empty() && !r.top.empty()) {
    const std::string text = ps::strategy_json(g, r.top[0]);
    runtime::data::write_file_atomic(o.out, pipelined ? with_pipeline(text, o) : text);
    std::printf("wrote the best strategy to %s\n", o.out.c_str());
  }
  return 0;
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
  s->add_option("--memory-limit", o.memory_limit_gb,
                "GB per device (default: the cluster spec's device memory)");
  s->add_option("--batch,-b", o.batch, "global batch (default: the program's)");
  s->add_option("--fn", o.entry, "the function that runs one training step")->capture_default_str();
  s->add_option("--optimizer", o.optimizer, "sgd, momentum or adam")->capture_default_str();
  s->add_option("-o,--output", o.out, "write the best strategy (JSON) to FILE");
  s->add_option(
       "--stages", o.stages,
       "pipeline stages of --mesh each (ranks = stages x mesh): the strategy file gets a "
       "\"pipeline\" key with the layer-level \"auto\" split, and the simulator scores the "
       "pipelined step")
      ->capture_default_str();
  s->add_option("--micro-batches", o.micro_batches, "with --stages: micro-batches per step")
      ->capture_default_str();
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
  std::ofstream f(path, std::ios::binary);
  f << ps::propagate_from_annotations(g);
  if (!f) throw UsageError(fmt::format("cannot write '{}'", path));
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
