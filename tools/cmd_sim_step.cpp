// `spora sim`: simulate one data-parallel training step of a program on a cluster spec
// (sim/train_step.h). See tools/cmd_sim.h for the usage.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/runtime/data/files.h"
#include "lang/diagnostics.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/setup.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/isolation.h"
#include "sim/pipeline_program.h"
#include "sim/report.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"
#include "sim/timeline_svg.h"
#include "sim/train_step.h"
#include "tools/cmd_sim.h"
#include "tools/synth_cache.h"

namespace spora::tools {

namespace {

struct Options {
  std::string file, cluster, strategy = "dp", entry = "main", batch_name = "batch",
                             optimizer = "sgd", algo = "auto", comm_model = "auto", matmul_dtype,
                             trace, svg, log_file, recv_reduce = "fused", collectives = "ring",
                             update = "ops", core_sharing = "static";
  long batch = 0;
  int ranks = 0, trace_ranks = 16;
  double lr = 0.01, bucket_mb = 25, first_bucket_mb = 1, comm_sm_share = -1, synth_time_limit = 20;
  bool json = false, no_copies = false, log_collectives = false, profile = false;
  std::vector<std::string> simgrid_args;
};

Options g_options;

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

CLI::App* g_sim = nullptr;  // to ask which options the user gave

// What each kind of run honours. An option given to a run that does not honour it stops the
// command with the reason, before any work: no option is ignored in silence.
enum class RunKind { DataParallel, Spmd, Pipeline };
struct OptionSupport {
  const char* flag;
  bool dp, spmd, pipeline;
  const char* why_not;  // for the kinds without it
};
constexpr OptionSupport kOptionSupport[] = {
    {"--svg", true, true, true, ""},
    {"--trace", true, true, true, ""},
    {"--trace-ranks", true, true, true, ""},
    {"--json", true, true, true, ""},
    {"--log", true, true, false,
     "the pipeline simulator keeps no event log (--trace has every pass)"},
    {"--log-collectives", true, false, false,
     "only the data-parallel step simulates its all-reduces step by step (--log has the "
     "collectives)"},
    {"--profile", true, true, false,
     "the pipeline simulator times stages, not primitives (run the strategy without its "
     "\"pipeline\" key to profile a stage's program)"},
    {"--ranks", true, false, false, "the strategy's mesh sets the ranks"},
    {"--core-sharing", false, false, true,
     "only the pipeline simulator shares a node's cores among the passes running at once (in "
     "a step every rank runs every op: static)"},
    {"--algo", true, false, false,
     "a strategy's collectives run as rings over their mesh axes (sim/spmd_step.h)"},
    {"--comm-model", true, false, false, "a strategy's collectives are simulated one way"},
    {"--recv-reduce", true, false, false, "a strategy's collectives overlap their reductions"},
    {"--bucket-mb", true, false, false,
     "gradient buckets are data parallelism's (DDP); a strategy all-reduces each gradient"},
    {"--first-bucket-mb", true, false, false,
     "gradient buckets are data parallelism's (DDP); a strategy all-reduces each gradient"},
    {"--no-bucket-copies", true, false, false,
     "gradient buckets are data parallelism's (DDP); a strategy all-reduces each gradient"},
};

std::string_view run_kind_name(RunKind k) {
  return k == RunKind::DataParallel ? "--strategy dp"
         : k == RunKind::Spmd       ? "a strategy file"
                                    : "a pipeline strategy";
}

void check_options(RunKind kind) {
  if (!g_sim) return;
  for (const OptionSupport& s : kOptionSupport) {
    const bool ok = kind == RunKind::DataParallel ? s.dp
                    : kind == RunKind::Spmd       ? s.spmd
                                                  : s.pipeline;
    const CLI::Option* opt = g_sim->get_option_no_throw(s.flag);
    if (!ok && opt && opt->count() > 0)
      throw UsageError(
          fmt::format("{} does not apply to {}: {}", s.flag, run_kind_name(kind), s.why_not));
  }
}

// The modelled time of one device's ops (forward and backward; update apart): per primitive, as
// run-dp --profile prints it, then per primitive and result type, the most time first, which
// `spora train-step --profile`'s trace gives for the real step (its events carry the type):
// benchmarks/sim/validate/compare_ops.py sets the two side by side. With --json the same rows
// are the report's "profile" object.
struct ProfileRow {
  std::string primitive, type;  // type: empty in the per-primitive rows
  long calls = 0;
  double seconds = 0;
};
struct Profile {
  std::vector<ProfileRow> per_primitive, per_type;  // by name; the most time first
};

Profile profile_of(const std::vector<sim::StepOp>& ops, const std::vector<double>& seconds,
                   const std::vector<bool>& skip) {
  std::map<std::string, std::pair<long, double>> per;
  std::map<std::pair<std::string, std::string>, std::pair<long, double>> typed;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (skip[i]) continue;
    const std::string& name = ops[i].prim->name;
    auto& [calls, total] = per[name];
    ++calls;
    total += seconds[i];
    auto& [tcalls, ttotal] = typed[{name, ops[i].output ? ops[i].output->str() : "-"}];
    ++tcalls;
    ttotal += seconds[i];
  }
  Profile p;
  for (const auto& [name, v] : per) p.per_primitive.push_back({name, "", v.first, v.second});
  for (const auto& [key, v] : typed)
    p.per_type.push_back({key.first, key.second, v.first, v.second});
  std::stable_sort(p.per_type.begin(), p.per_type.end(),
                   [](const ProfileRow& a, const ProfileRow& b) { return a.seconds > b.seconds; });
  return p;
}

void print_profile(const Profile& p) {
  std::printf("# per step: primitive, calls, ms (forward and backward; update apart)\n");
  for (const ProfileRow& r : p.per_primitive)
    std::printf("%-20s %5ld %9.4f\n", r.primitive.c_str(), r.calls, r.seconds * 1e3);
  std::printf("# per step: primitive, result type, calls, ms\n");
  for (const ProfileRow& r : p.per_type)
    std::printf("%-20s %-24s %5ld %9.4f\n", r.primitive.c_str(), r.type.c_str(), r.calls,
                r.seconds * 1e3);
}

// `"profile": {...}` of the JSON report: the same rows, seconds.
std::string profile_json(const Profile& p) {
  auto rows = [](const std::vector<ProfileRow>& v, bool typed) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out += fmt::format("{}{{\"primitive\": \"{}\", {}\"calls\": {}, \"seconds\": {:.9g}}}",
                         i ? ", " : "", v[i].primitive,
                         typed ? fmt::format("\"type\": \"{}\", ", v[i].type) : "", v[i].calls,
                         v[i].seconds);
    return out;
  };
  return fmt::format("\"profile\": {{\"per_primitive\": [{}], \"per_type\": [{}]}}",
                     rows(p.per_primitive, false), rows(p.per_type, true));
}

// A JSON object (one line or several, ending "}\n") with `member` added as its last member.
std::string with_member(std::string object, const std::string& member) {
  const std::size_t close = object.rfind('}');
  if (close == std::string::npos) throw std::logic_error("with_member: not a JSON object");
  object.insert(close, ", " + member);
  return object;
}

void write_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return;
  }
  runtime::data::write_file_atomic(path, text);
}

std::string json_report(const sim::StepProgram& program, const sim::TrainSimResult& r) {
  std::string out = fmt::format(
      "{{\"ranks\": {}, \"batch_per_rank\": {}, \"global_batch\": {}, \"algorithm\": \"{}\", "
      "\"comm_model\": \"{}\", \"buckets\": {}, \"step_seconds\": {:.9g}, \"throughput\": "
      "{:.6g}, \"compute_seconds\": {:.9g}, \"update_seconds\": {:.9g}, \"events\": {}, "
      "\"wall_seconds\": {:.3f}, \"cpu_seconds\": {:.3f}, \"devices\": [",
      r.ranks, program.batch, r.global_batch, r.algorithm, sim::comm_model_name(r.comm_model),
      r.buckets.size(), r.step_seconds, r.throughput,
      r.devices.empty() ? 0.0 : r.devices[0].compute, r.update_seconds, r.events,
      r.wall_seconds, r.cpu_seconds);
  for (std::size_t k = 0; k < r.devices.size(); ++k) {
    const sim::DeviceReport& d = r.devices[k];
    out += fmt::format(
        "{}\n  {{\"compute\": {:.9g}, \"communication\": {:.9g}, \"idle\": {:.9g}, "
        "\"exposed_communication\": {:.9g}, \"parameters\": {:.0f}, \"gradients\": {:.0f}, "
        "\"optimizer_state\": {:.0f}, \"activations\": {:.0f}, \"peak_memory\": {:.0f}}}",
        k ? "," : "", d.compute, d.communication, d.idle, d.exposed_communication, d.parameters,
        d.gradients, d.optimizer_state, d.activations, d.peak_memory());
  }
  out += "\n]}\n";
  return out;
}

bool is_strategy_file(const std::string& s) {
  return s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0;
}

// --strategy FILE.json with a "pipeline" key: the stage programs of a micro-batch
// (parallel/pipeline/setup.h, sim/pipeline_program.h) through the pipeline simulator
// (sim/pipeline.h).
int run_pipeline_sim(const Options& o, const sim::ClusterSpec& cluster, const std::string& text) {
  check_options(RunKind::Pipeline);
  parallel::StepOptions so;
  so.entry = o.entry;
  so.batch_name = o.batch_name;
  so.optimizer = o.optimizer;
  so.lr = o.lr;
  if (o.batch > 0) so.batch = o.batch;
  const sim::PipelineProgram p = sim::pipeline_program(
      parallel::pipeline::setup_pipeline(o.file, so, text, o.strategy, sim::node_cost), cluster,
      o.matmul_dtype, o.optimizer, sim::parse_update_kernel(o.update),
      sim::parse_core_sharing(o.core_sharing));
  if (p.devices() > cluster.device_count())
    throw UsageError(fmt::format("the pipeline needs {} devices but {} has {}", p.devices(),
                                 cluster.name, cluster.device_count()));
  sim::SpmdSimOptions opts;
  opts.matmul_dtype = o.matmul_dtype;
  opts.simgrid_args = o.simgrid_args;
  opts.ranks_on_node = sim::ranks_on_node(cluster, static_cast<int>(p.devices()));  // every stage's ranks share it
  const sim::PipelineSimResult r = sim::simulate_pipeline(cluster, p, opts);
  if (!o.trace.empty()) write_file(o.trace, sim::pipeline_chrome_trace(r, o.trace_ranks));
  if (!o.svg.empty())
    write_file(o.svg, sim::pipeline_svg_timeline(
                          r, fmt::format("{} on {}, pipeline {}", o.file, cluster.name, o.strategy),
                          o.trace_ranks));
  if (o.json) {
    std::string stages;
    for (std::size_t k = 0; k < r.stages.size(); ++k)
      stages += fmt::format(
          "{}{{\"forward\": {:.9g}, \"backward\": {:.9g}, \"busy\": {:.9g}, "
          "\"peak_in_flight\": {}, \"parameter_bytes\": {:.0f}, \"gradient_bytes\": {:.0f}, "
          "\"optimizer_state_bytes\": {:.0f}, \"activation_bytes\": {:.0f}, \"memory_bytes\": "
          "{:.0f}}}",
          k ? ", " : "", r.stages[k].times.forward, r.stages[k].times.backward, r.stages[k].busy,
          r.stages[k].peak_in_flight, r.stages[k].memory.parameters, r.stages[k].memory.gradients,
          r.stages[k].memory.optimizer_state, r.stages[k].memory.activations,
          r.stages[k].memory.peak_memory());
    std::printf(
        "{\"strategy\": \"%s\", \"ranks\": %lld, \"micro_batches\": %d, \"schedule\": "
        "\"%s\", \"step_seconds\": %.9g, \"pipeline_seconds\": %.9g, \"bubble\": %.6g, "
        "\"peak_memory\": %.0f, \"stages\": [%s]}\n",
        o.strategy.c_str(), static_cast<long long>(p.devices()), p.micro_batches,
        std::string(sim::pipeline_schedule_name(p.schedule)).c_str(), r.step_seconds,
        r.pipeline_seconds, r.bubble_fraction, r.peak_memory, stages.c_str());
  } else {
    std::printf("%s on %s, pipeline strategy %s\n", o.file.c_str(), cluster.name.c_str(),
                o.strategy.c_str());
    std::fputs(sim::pipeline_report(p, r).c_str(), stdout);
  }
  return 0;
}

// --strategy FILE.json: the step with the global batch, partitioned by the strategy
// (parallel/partition), simulated as an SPMD program (sim/spmd_step.h).
int run_spmd(const Options& o, const sim::ClusterSpec& cluster) {
  parallel::StepOptions so;
  so.entry = o.entry;
  so.batch_name = o.batch_name;
  so.optimizer = o.optimizer;
  so.lr = o.lr;
  if (o.batch < 0) throw UsageError(fmt::format("--batch {} is not positive", o.batch));
  if (o.batch > 0) so.batch = o.batch;
  {
    // The strategy's "recompute" changes the step itself (parallel/step/step_graph.h).
    std::ifstream f(o.strategy);
    std::stringstream text;
    text << f.rdbuf();
    if (f && parallel::pipeline::is_pipeline_strategy(text.str()))
      return run_pipeline_sim(o, cluster, text.str());
    check_options(RunKind::Spmd);
    if (f) {
      const parallel::Strategy r = parallel::parse_recompute(text.str(), o.strategy);
      so.recompute_all = r.recompute_all;
      so.recompute = r.recompute;
    }
  }
  const sim::StepProgram program =
      sim::build_step_program(o.file, so, sim::parse_update_kernel(o.update));
  const parallel::Strategy strategy = parallel::load_strategy(o.strategy, *program.step);
  if (strategy.mesh.size() > cluster.device_count())
    throw UsageError(fmt::format("the strategy's mesh {} has {} devices but {} has {}",
                                 strategy.mesh.to_string(), strategy.mesh.size(), cluster.name,
                                 cluster.device_count()));
  const sim::SpmdProgram sp =
      sim::spmd_program(program, strategy, o.optimizer, sim::parse_update_kernel(o.update));
  sim::SpmdSimOptions opts;
  opts.matmul_dtype = o.matmul_dtype;
  opts.log = !o.log_file.empty();
  opts.simgrid_args = o.simgrid_args;
  std::optional<SynthCache> synth_cache;
  if (o.collectives == "synth") {
    synth_cache.emplace(o.cluster);
    opts.collective_seconds =
        synthesized_collective_seconds(*synth_cache, cluster, o.synth_time_limit);
  }
  const sim::SpmdSimResult r = sim::simulate_spmd_step(cluster, sp, opts);
  if (opts.log) {
    std::string text;
    for (const std::string& line : r.log) text += line + "\n";
    write_file(o.log_file, text);
  }
  if (!o.trace.empty()) write_file(o.trace, sim::spmd_chrome_trace(sp, r, o.trace_ranks));
  if (!o.svg.empty())
    write_file(o.svg, sim::spmd_svg_timeline(
                          cluster, r,
                          fmt::format("{} on {}, strategy {}", o.file, cluster.name, o.strategy),
                          o.trace_ranks));
  std::optional<Profile> profile;
  if (o.profile) {
    std::vector<sim::StepOp> ops;
    std::vector<bool> skip;
    for (const auto& op : sp.ops) {
      ops.push_back(op.op);
      skip.push_back(op.collective);
    }
    profile = profile_of(ops, r.op_seconds, skip);
    if (!o.json) print_profile(*profile);
  }
  if (o.json) {
    const sim::DeviceReport d = r.devices.empty() ? sim::DeviceReport{} : r.devices[0];
    std::string json = fmt::format(
        "{{\"strategy\": \"{}\", \"ranks\": {}, \"global_batch\": {}, \"step_seconds\": "
        "{:.9g}, \"compute_seconds\": {:.9g}, \"communication\": {:.9g}, "
        "\"exposed_communication\": {:.9g}, \"collectives\": {}, \"peak_memory\": {:.0f}, "
        "\"optimizer_state\": {:.0f}, \"optimizer_state_unsharded\": {:.0f}, \"activations\": "
        "{:.0f}}}\n",
        o.strategy, r.ranks, program.batch, r.step_seconds, r.compute_seconds, d.communication,
        d.exposed_communication, r.collectives.size(), d.peak_memory(), d.optimizer_state,
        sp.optimizer_state_unsharded_bytes, d.activations);
    if (profile) json = with_member(json, profile_json(*profile));
    std::fputs(json.c_str(), stdout);
  } else {
    std::printf("%s on %s, strategy %s, global batch %lld\n", o.file.c_str(),
                cluster.name.c_str(), o.strategy.c_str(), static_cast<long long>(program.batch));
    std::fputs(sim::spmd_report(sp, r).c_str(), stdout);
  }
  return 0;
}

// The report (or --json) goes to stdout; only --log may share it ('-'), and not with --json.
void check_stdout(const Options& o) {
  for (const auto& [flag, path] : {std::pair{"--svg", &o.svg}, std::pair{"--trace", &o.trace}})
    if (*path == "-")
      throw UsageError(fmt::format(
          "{} -: the report goes to stdout and would be mixed with it; give {} a file", flag,
          flag));
  if (o.json && o.log_file == "-")
    throw UsageError("--log - and --json both write to stdout; give --log a file");
}

int run(const Options& o) {
  if (o.cluster.empty())
    throw UsageError("--cluster is required (e.g. examples/clusters/dgx-a100.yaml)");
  check_stdout(o);
  sim::ClusterSpec cluster = sim::load_cluster_spec(o.cluster);
  if (o.comm_sm_share >= 0) {
    if (o.comm_sm_share >= 1)
      throw UsageError(fmt::format("--comm-sm-share {} is not in [0, 1)", o.comm_sm_share));
    cluster.device.comm_sm_share = o.comm_sm_share;
  }
  if (is_strategy_file(o.strategy)) return run_spmd(o, cluster);
  if (o.strategy != "dp")
    throw UsageError(fmt::format(
        "unknown --strategy '{}' (dp: data parallelism, or a strategy file FILE.json)",
        o.strategy));
  check_options(RunKind::DataParallel);
  if (o.collectives != "ring")
    throw UsageError(
        "--collectives prices a strategy file's collectives; the data-parallel "
        "step's all-reduce is chosen with --algo (--algo synth)");
  const int ranks = o.ranks > 0 ? o.ranks : cluster.device_count();
  if (ranks > cluster.device_count())
    throw UsageError(fmt::format("--ranks {} but {} has {} devices", ranks, cluster.name,
                                 cluster.device_count()));
  parallel::StepOptions so;
  so.entry = o.entry;
  so.batch_name = o.batch_name;
  so.optimizer = o.optimizer;
  so.lr = o.lr;
  if (o.batch != 0) {
    if (o.batch < 0 || o.batch % ranks != 0)
      throw UsageError(fmt::format("--batch {} is not a positive multiple of the {} ranks",
                                   o.batch, ranks));
    so.batch = o.batch / ranks;
  }
  const sim::StepProgram program =
      sim::build_step_program(o.file, so, sim::parse_update_kernel(o.update));

  sim::TrainSimOptions to;
  to.ranks = ranks;
  to.bucket_bytes = o.bucket_mb * (1 << 20);
  to.first_bucket_bytes = o.first_bucket_mb * (1 << 20);
  to.algorithm = o.algo;
  if (o.comm_model == "auto")
    to.comm_model = sim::CommModel::Auto;
  else if (o.comm_model == "steps")
    to.comm_model = sim::CommModel::Steps;
  else if (o.comm_model == "bulk")
    to.comm_model = sim::CommModel::Bulk;
  else
    throw UsageError(fmt::format("unknown --comm-model '{}' (auto, steps, bulk)", o.comm_model));
  to.bucket_copies = !o.no_copies;
  if (o.recv_reduce != "fused" && o.recv_reduce != "staged")
    throw UsageError(fmt::format("unknown --recv-reduce '{}' (fused, staged)", o.recv_reduce));
  to.recv_reduce =
      o.recv_reduce == "fused" ? sim::RecvReduceModel::Fused : sim::RecvReduceModel::Staged;
  to.matmul_dtype = o.matmul_dtype;
  to.log = !o.log_file.empty();
  to.log_collectives = o.log_collectives;
  to.simgrid_args = o.simgrid_args;
  // --algo synth: each bucket's all-reduce synthesized for its size (or taken from the cache).
  std::optional<SynthCache> synth_cache;
  if (o.algo == "synth") {
    synth_cache.emplace(o.cluster);
    to.schedule_for = [&](const parallel::CollectiveSpec& spec,
                          const sim::SimOptions& sim_options) {
      sim::SynthOptions synth_options;
      synth_options.time_limit = o.synth_time_limit;
      synth_options.sim = sim_options;
      synth_options.sim.log = false;
      return synth_cache->get(cluster, spec, synth_options).result.schedule;
    };
  }
  sim::TrainSimResult r = sim::simulate_train_step(cluster, program, to);

  if (to.log) {
    std::string text;
    for (const std::string& line : r.log) text += line + "\n";
    write_file(o.log_file, text);
  }
  if (!o.trace.empty()) write_file(o.trace, sim::chrome_trace(cluster, program, r, o.trace_ranks));
  if (!o.svg.empty()) write_file(o.svg, sim::svg_timeline(cluster, program, r, o.trace_ranks));
  std::optional<Profile> profile;
  if (o.profile) {
    profile = profile_of(program.ops, r.op_seconds, std::vector<bool>(program.ops.size()));
    if (!o.json) print_profile(*profile);
  }
  if (o.json)
    std::fputs((profile ? with_member(json_report(program, r), profile_json(*profile))
                        : json_report(program, r))
                   .c_str(),
               stdout);
  else
    std::fputs(sim::format_report(cluster, program, r).c_str(), stdout);
  return 0;
}

}  // namespace

CLI::App* add_sim_subcommand(CLI::App& app) {
  Options& o = g_options;
  CLI::App* sim = app.add_subcommand(
      "sim", "Simulate one data-parallel training step of a program on a cluster spec");
  g_sim = sim;
  sim->add_option("file", o.file, "the program (.sp): `let batch = N` and a main that takes "
                                  "value_and_grad of its loss")
      ->required();
  sim->add_option("--cluster,-c", o.cluster, "cluster spec (YAML), e.g. examples/clusters/dgx-a100.yaml");
  sim->add_option("--strategy", o.strategy,
                  "dp (data parallelism with DDP buckets), or a strategy file (.json, "
                  "parallel/README.md) whose partitioned program is simulated with the global "
                  "--batch")
      ->capture_default_str();
  sim->add_option("--batch,-b", o.batch,
                  "global batch, split evenly over the ranks (default: the program's batch per rank)");
  sim->add_option("--ranks,-n", o.ranks, "number of ranks (default: every device)");
  sim->add_option("--fn", o.entry, "the function that runs one training step (no parameters)")
      ->capture_default_str();
  sim->add_option("--batch-name", o.batch_name, "the module-level constant that holds the batch")
      ->capture_default_str();
  sim->add_option("--optimizer", o.optimizer, "sgd, momentum or adam")->capture_default_str();
  sim->add_option("--update", o.update,
                  "how the optimizer's update runs: ops (one kernel per primitive, as spora "
                  "train-step runs it) or fused (one pass over each parameter, its gradient and "
                  "its state, as spora run runs std.optim's update)")
      ->check(CLI::IsMember({"ops", "fused"}))
      ->capture_default_str();
  sim->add_option("--bucket-mb", o.bucket_mb, "gradient bucket cap in MiB (DDP's bucket_cap_mb)")
      ->capture_default_str();
  sim->add_option("--first-bucket-mb", o.first_bucket_mb, "cap of the first bucket in MiB")
      ->capture_default_str();
  sim->add_flag("--no-bucket-copies", o.no_copies,
                "all-reduce gradients in place (DDP's gradient_as_bucket_view)");
  sim->add_option("--algo", o.algo,
                  "all-reduce: auto (hierarchical across nodes, else ring), ring, hierarchical, "
                  "tree, halving-doubling, binomial, synth (spora synth's schedule per bucket "
                  "size, cached)")
      ->capture_default_str();
  sim->add_option("--collectives", o.collectives,
                  "--strategy FILE: the collectives' times from the ring model (or the "
                  "cluster's measured tables), or synth: spora synth's schedule per group and "
                  "size, cached")
      ->check(CLI::IsMember({"ring", "synth"}))
      ->capture_default_str();
  sim->add_option("--synth-time-limit", o.synth_time_limit,
                  "--algo synth, --collectives synth: seconds of search per size (and group) "
                  "not in the cache")
      ->capture_default_str();
  sim->add_option("--comm-model", o.comm_model,
                  "auto (steps up to 64 ranks), steps (every step of the schedule) or bulk "
                  "(one transfer per ring phase)")
      ->capture_default_str();
  sim->add_option("--recv-reduce", o.recv_reduce,
                  "steps model: fused (reduce as data arrives, NCCL) or staged (receive, then "
                  "reduce: MPI)")
      ->capture_default_str();
  sim->add_option("--matmul-dtype", o.matmul_dtype,
                  "run f32 matmul and conv at this peak of the spec (tf32, bf16, f16)");
  sim->add_option("--comm-sm-share", o.comm_sm_share,
                  "share of a device a running collective's kernels hold, slowing the compute "
                  "beside it (sim/interference.h; default: the spec's device.comm_sm_share; 0: "
                  "off)");
  sim->add_option("--core-sharing", o.core_sharing,
                  "pipeline strategy on a node of fewer cores than ranks (the spec's "
                  "device.measured.cores): static (every pass takes ranks / cores as long) or "
                  "running (only the passes running at once share the cores; sim/pipeline.h)")
      ->check(CLI::IsMember({"static", "running"}))
      ->capture_default_str();
  sim->add_option("--trace", o.trace, "write a Chrome trace (Perfetto) to FILE");
  sim->add_option("--svg", o.svg, "write an SVG timeline to FILE");
  sim->add_option("--trace-ranks", o.trace_ranks,
                  "devices (pipeline: stages) in the trace and the SVG (0: all)")
      ->capture_default_str();
  sim->add_option("--log", o.log_file, "write the simulation log to FILE ('-': stdout)");
  sim->add_flag("--log-collectives", o.log_collectives,
                "with --log, also every step of every all-reduce (steps model)");
  sim->add_option("--simgrid-arg", o.simgrid_args, "pass an argument to SimGrid");
  sim->add_flag("--json", o.json, "print one JSON object instead of the report");
  sim->add_flag("--profile", o.profile,
                "also print the modelled time per primitive, and per primitive and result type");
  return sim;
}

int run_sim_subcommand() {
  try {
    return run(g_options);
  } catch (const lang::InternalError&) {
    throw;
  } catch (const lang::UserError& e) {
    std::fprintf(stderr, "spora sim: error: %s\n", e.what());
  } catch (const sim::ClusterSpecError& e) {
    std::fprintf(stderr, "spora sim: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora sim: error: %s\n", e.what());
  }
  return 1;
}

}  // namespace spora::tools
