// The `spora` command-line program. Each sub-command is a small
// function; the compile pipeline lives in semantics/pipeline.h.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "autodiff/install.h"
#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "backends/distributed/batch_cut.h"
#include "backends/distributed/program_pipeline.h"
#include "backends/distributed/spmd_runtime.h"
#include "backends/distributed/train_step.h"
#include "backends/runtime/allocator.h"
#include "backends/runtime/data/files.h"
#include "backends/runtime/memory_plan.h"
#include "backends/runtime/profile.h"
#include "backends/runtime/runtime.h"
#include "backends/runtime/signals.h"
#include "lang/ast_printer.h"
#include "lang/parser.h"
#include "ops/ops.h"
#include "semantics/eager.h"
#include "semantics/interpreter.h"
#include "semantics/ir/dot.h"
#include "semantics/ir/printer.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"
#include "sim/step_program.h"
#include "tools/cmd_search.h"
#include "tools/commands.h"
#include "tools/fused_stage.h"

namespace spora::tools {

void report_runtime_error(const lang::SourceManager& sources, const lang::SourceLoc& loc,
                          const std::string& msg, std::ostream& out) {
  lang::DiagnosticEngine diags(sources);
  lang::SourceRange r{loc, loc};
  if (loc.valid()) r.end.col = loc.col + 1;
  diags.error(r, msg);
  diags.print(out);
}

namespace {

int write_output(const std::string& text, const std::string& out_path) {
  if (out_path.empty()) {
    std::cout << text;
    return 0;
  }
  try {
    runtime::data::write_file_atomic(out_path, text);
  } catch (const lang::UserError& e) {
    std::cerr << fmt::format("spora: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

double megabytes(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

// `spora run --stats` of an eager run (the program ran while it was lowered).
void print_eager_stats(const ir::Module* m, double ms, int64_t live_before) {
  const sem::EagerStats e = sem::last_eager_stats();
  const sem::MemoryStats mem = sem::memory_stats();
  std::cerr << fmt::format(
      "stats: eager; {} ops run in {:.1f} ms; entry graph {} nodes at the end (at most {}; {} collected in {} "
      "collections)\n",
      e.ops_run, ms, m && m->entry ? m->entry->nodes.size() : size_t{0}, e.peak_graph_nodes, e.nodes_removed,
      e.collections);
  std::cerr << fmt::format("stats: peak tensor memory {:.3f} MB ({:.3f} MB live before); {}\n",
                           megabytes(mem.peak_bytes), megabytes(live_before),
                           runtime::describe(runtime::caching_allocator().stats()));
}

}  // namespace

namespace {
// Where tensors live and kernels run from now on: "" or why the device cannot be used.
std::string use_device(const std::string& device, bool& gpu) {
  if (device == "cpu") {
    sem::set_backend(sem::Backend::Cpu);
    gpu = false;
    return "";
  }
  std::string why;
  if (!cuda::cuda_available(&why)) return why;
  cuda::install();
  cuda::register_kernels();
  sem::set_backend(sem::Backend::Cuda);
  gpu = true;  // fused groups are launched as NVRTC-compiled CUDA (backends/cuda/fused.h)
  return "";
}
}  // namespace

int cmd_run(const std::string& path, const RunOptions& opts) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  if (opts.mode != "graph" && opts.mode != "eager") {
    std::cerr << fmt::format("spora: error: unknown mode '{}' (expected graph or eager)\n", opts.mode);
    return 2;
  }
  const bool fuse = opts.fuse;
  bool gpu = false;
  if (const std::string why = use_device(opts.device, gpu); !why.empty()) {
    std::cerr << fmt::format("spora: error: --device {}: {}\n", opts.device, why);
    return 2;
  }
  sem::LowerOptions options;
  options.eager = opts.mode == "eager";
  // set_device(...) in main: before anything runs (eager mode runs while it lowers).
  options.set_device = [&gpu](const std::string& d) { return use_device(d, gpu); };
  if (!opts.amp.empty())  // both checked by CLI11 (IsMember)
    options.amp = sem::AmpPolicy{*sem::parse_amp_level(opts.amp), *parse_dtype(opts.amp_dtype)};
  auto recomputed = std::make_shared<distributed::RecomputeChoice>();
  if (opts.spmd) distributed::configure_recompute(opts.spmd->plan(), options, recomputed);
  sem::Compiled c;
  const int64_t live_at_start = sem::memory_stats().live_bytes;
  sem::reset_peak_memory();
  runtime::caching_allocator().reset_stats();
  const auto compile_start = std::chrono::steady_clock::now();
  // A pipeline plan compiles the program's training step as a call of its own
  // (backends/distributed/program_pipeline.h).
  std::optional<distributed::StepCapture> capture;
  if (opts.spmd && !opts.spmd->plan().pipeline.empty()) capture.emplace();
  // A data-parallel plan cuts the data the program holds whole (batch_cut.h).
  std::optional<distributed::BatchCut> cut;
  if (opts.spmd) cut.emplace(opts.spmd->plan());
  // --profile: eager mode's nodes run while the program lowers (semantics/eager.h), graph mode's
  // in the interpreter below; one profiler takes both, until this function returns.
  std::unique_ptr<runtime::RunProfiler> profiler;
  if (!opts.profile.empty()) {
    profiler = std::make_unique<runtime::RunProfiler>(&sources);
    sem::set_eager_trace(profiler->hook());
  }
  struct EagerTraceOff {
    ~EagerTraceOff() { sem::set_eager_trace(nullptr); }
  } eager_trace_off;
  try {
    c = sem::compile_file(sources, diags, path, options);
  } catch (const sem::RuntimeError& e) {
    // Eager mode runs while it lowers.
    std::cout.flush();
    if (!opts.quiet) diags.print(std::cerr);
    if (!opts.quiet) report_runtime_error(sources, e.loc, e.what());
    return 1;
  }
  if (!opts.quiet) diags.print(std::cerr);
  if (!c.module) return 1;
  // Eager mode ran the program while lowering it (--mode eager, or set_mode("eager") in main;
  // set_mode("graph") under --mode eager leaves the graph to run here).
  if (c.module->annotations.count("lowered.eager")) {
    if (profiler) {
      std::cout.flush();
      profiler->write(opts.profile, std::cerr);
    }
    if (opts.stats) {
      std::cout.flush();
      print_eager_stats(c.module.get(),
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count(),
                        live_at_start);
    }
    return 0;
  }
  if (capture) {
    capture->finish(*c.module, opts.spmd->plan().origin);
    capture.reset();
  }
  if (cut) {
    opts.spmd->note_batch_cuts(cut->hinted());
    cut.reset();
  }
  if (opts.spmd) {
    distributed::check_recompute(opts.spmd->plan(), *recomputed);
    opts.spmd->pin_parameters(*c.module);
  }
  if (opts.optimize) passes::optimize(*c.module);
  const auto fused = fuse_for_run(*c.module, fuse, gpu);
  // Calls of graph-mode functions are captured and replayed as CUDA graphs (SPORA_CUDA_GRAPHS=0:
  // not).
  if (gpu) cuda::enable_graphs(opts.verbose);
  if (!c.module->entry) {
    std::cerr << fmt::format("spora: error: {} has no main graph to run\n", path);
    return 1;
  }
  if (opts.spmd) opts.spmd->install();  // after fusion: it wraps the fused-kernel hook
  try {
    sem::Interpreter interp(*c.module);
    if (profiler) {
      interp.set_trace(profiler->hook());
      if (opts.spmd) opts.spmd->set_profiler(profiler.get());  // a pipeline's stage passes
    }
    const int64_t live_before = sem::memory_stats().live_bytes;  // the module's constants
    sem::reset_peak_memory();
    runtime::caching_allocator().reset_stats();
    const auto t0 = std::chrono::steady_clock::now();
    interp.call(c.module->entry, {});
    if (opts.stats && !opts.quiet) {
      std::cout.flush();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const sem::MemoryStats mem = sem::memory_stats();
      size_t nodes = 0;
      for (const auto& g : c.module->graphs()) nodes += g->nodes.size();
      std::cerr << fmt::format("stats: {} graphs, {} nodes after optimization ({} in @{}); ran in {:.1f} ms\n",
                               c.module->graphs().size(), nodes, c.module->entry->nodes.size(),
                               c.module->entry->name, ms);
      std::cerr << fmt::format("stats: {}\n", runtime::describe(runtime::plan_module(*c.module)));
      std::cerr << fmt::format("stats: measured peak tensor memory {:.3f} MB ({:.3f} MB above the {:.3f} MB live "
                               "before the run); {}\n",
                               megabytes(mem.peak_bytes), megabytes(mem.peak_bytes - live_before),
                               megabytes(live_before), runtime::describe(runtime::caching_allocator().stats()));
      if (fused) std::cerr << "stats: " << describe_fusion(*fused) << "\n";
      if (gpu) {
        const cuda::LaunchStats l = cuda::launch_stats();
        std::cerr << fmt::format(
            "stats: cuda: {} kernel launches, {} graph launches ({} functions captured, "
            "{} captures given up, {} kernels in them)\n",
            l.kernels, l.graph_launches, l.captures, l.capture_failures, l.captured);
      }
    }
    if (opts.spmd) opts.spmd->set_profiler(nullptr);
    if (profiler) {
      std::cout.flush();
      profiler->write(opts.profile, std::cerr);
    }
  } catch (const sem::RuntimeError& e) {
    std::cout.flush();
    if (!opts.quiet) report_runtime_error(sources, e.loc, e.what());
    return 1;
  } catch (const lang::UserError& e) {
    std::cout.flush();
    if (!opts.quiet) std::cerr << fmt::format("spora: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

int cmd_check(const std::string& path) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions options;
  options.check_all = true;
  options.never_eager = true;  // set_mode("eager") is checked, not run
  sem::Compiled c = sem::compile_file(sources, diags, path, options);
  diags.print(std::cerr);
  if (diags.has_errors()) {
    std::cerr << fmt::format("{} error{} generated\n", diags.distinct_error_count(),
                             diags.distinct_error_count() == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

// `spora ir --entry` on a stage that has no graphs to choose from (parsed, partitioned).
int entry_needs_graph_stage() {
  std::cerr << "spora: error: --entry needs a graph stage (typed, grad, optimized or fused)\n";
  return 2;
}

int cmd_ir(const std::string& path, const std::string& stage, bool dot, const std::string& out,
           const std::vector<std::string>& print_after, const std::string& emit,
           const std::string& entry) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  if (!entry.empty() && stage == "parsed") return entry_needs_graph_stage();
  if (stage == "parsed") {
    int file;
    try {
      file = sources.load(path);
    } catch (const std::exception& e) {
      std::cerr << fmt::format("spora: error: cannot read '{}': {}\n", path, e.what());
      return 1;
    }
    auto ast = lang::parse_file(sources, file, diags);
    diags.print(std::cerr);
    if (!ast || diags.has_errors()) return 1;
    return write_output(lang::print_ast(*ast), out);
  }
  if (stage != "typed" && stage != "grad" && stage != "optimized" && stage != "fused" &&
      stage != "kernels") {
    std::cerr << fmt::format("spora: error: unknown stage '{}' (available: parsed, typed, grad, optimized, fused, kernels)\n", stage);
    return 2;
  }
  sem::Compiled c = sem::compile_file(sources, diags, path);
  diags.print(std::cerr);
  if (!c.module) return 1;
  if (!entry.empty()) {
    // Another graph as the entry, before the passes: they then keep what it needs (a
    // workload's @step, with the types main calls it with, instead of main's inlined copy).
    ir::Graph* g = c.module->find_graph(entry);
    if (!g) {
      std::string names;
      for (const auto& h : c.module->graphs()) names += (names.empty() ? "@" : ", @") + h->name;
      std::cerr << fmt::format("spora: error: --entry: no graph @{} in {}\nspora: note: its graphs: {}\n",
                               entry, path, names);
      return 2;
    }
    c.module->entry = g;
  }
  if (stage == "optimized" || stage == "fused" || stage == "kernels" || !print_after.empty()) {
    passes::PassOptions po;
    po.print_after = print_after;
    po.dump = &std::cout;
    try {
      passes::optimize(*c.module, po);
    } catch (const lang::UserError& e) {
      std::cerr << fmt::format("spora: error: {}\n", e.what());
      return 2;
    }
    if (!print_after.empty()) return 0;
  }
  if (stage == "kernels") return write_output(kernels_stage(*c.module), out);
  if (stage == "fused" && !dot) {
    try {
      return write_output(fused_stage(*c.module, emit), out);
    } catch (const lang::UserError& e) {
      std::cerr << fmt::format("spora: error: {}\n", e.what());
      return 2;
    }
  }
  if (stage == "fused") fused_stage(*c.module, "");
  return write_output(dot ? ir::to_dot(*c.module) : ir::print_module(*c.module), out);
}

}  // namespace spora::tools

namespace {

// `spora run`: the program's main() in graph or eager mode, on one device or on N ranks.
struct RunCommand {
  CLI::App* app = nullptr;
  spora::tools::RunOptions opts;
  std::string path;
  bool no_fuse = false, no_opt = false;
  std::string device = "cpu";
  spora::tools::DistributedArgs dist;  // backends/distributed, tools/cmd_run_distributed.cpp
  double collective_timeout = -1;
};

void add_run_command(CLI::App& app, RunCommand& c) {
  using namespace spora;
  c.app = app.add_subcommand(
      "run", "Compile a .sp program (or a hand-written .ir file) and run its main()");
  c.app->add_option("file", c.path, "the program (.sp) or IR module (.ir)")->required();
  c.app
      ->add_option("--mode", c.opts.mode,
                   "execution mode: graph (compile the whole program) or eager (op by op)")
      ->capture_default_str();
  c.app->add_option("--profile", c.opts.profile,
                    "write a timeline of the run (Chrome trace JSON: every primitive, "
                    "fused group and call "
                    "with its type and source line) to FILE and print the costliest primitives to "
                    "stderr (eager mode: every op as it ran); with --ranks N: "
                    "every rank writes its own (FILE.rank<k> beyond rank 0)");
  c.app->add_flag("--stats", c.opts.stats,
                  "print to stderr: graph size, run time, the planned and the measured peak tensor "
                  "memory, the allocator's reserved bytes and cache hits (eager mode: ops run, "
                  "entry graph size, peak memory)");
  c.app->add_flag(
      "--no-fuse", c.no_fuse,
      "graph mode: run every node on its own (no operator fusion, no generated kernels)");
  c.app
      ->add_option("--device", c.device,
                   "where tensors live and kernels run: cpu, or cuda (an NVIDIA GPU: CUDA kernels "
                   "and cuBLAS; rows without a CUDA kernel run on the CPU with a one-time warning; "
                   "fused groups run as NVRTC-compiled CUDA; repeated calls of a function replay a "
                   "CUDA graph unless SPORA_CUDA_GRAPHS=0)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  c.app
      ->add_option("--amp", c.opts.amp,
                   "automatic mixed precision of the network (models with parameters): O0 off, O1 "
                   "autocast (matmul/conv in the low dtype, softmax/norms/losses/sums in f32), O2 "
                   "all but norms and the loss in the low dtype, O3 all; overrides set_amp(...)")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}));
  c.app
      ->add_option("--amp-dtype", c.opts.amp_dtype,
                   "the low dtype of --amp: bf16 (no loss scaling needed) or f16 (use std.amp's "
                   "loss scaler)")
      ->check(CLI::IsMember({"bf16", "f16"}))
      ->capture_default_str();
  c.app->add_flag("--no-optimize", c.no_opt,
                  "run the IR as lowered, without the simplification passes");
  c.app->add_option(
      "--ranks", c.dist.ranks,
      "run main() on N MPI ranks (runs itself under mpirun), sharded by --strategy or "
      "--mesh (default: data parallelism over all ranks); every rank runs the same "
      "program on its shards, rank 0 prints");
  c.app->add_option("--strategy", c.dist.strategy,
                    "with --ranks: dp (every batch cut over all ranks) or a strategy file (JSON, "
                    "parallel/partition/README.md: a mesh and parameter layouts by name)");
  c.app->add_option("--mesh", c.dist.mesh,
                    "with --ranks: the device mesh (2x2, or named: dp=2,tp=2); the program's shard "
                    "annotations place values, an axis named dp cuts the batches");
  c.app->add_flag("--tag-ranks", c.dist.tag_ranks,
                  "with --ranks: every rank prints, each line prefixed with its rank");
  c.app->add_flag("--verbose", c.opts.verbose,
                  "with --device cuda: say which functions are captured as CUDA graphs and why "
                  "others are not");
  c.app->add_flag("--auto", c.dist.auto_search,
                  "with --ranks and --cluster: search a strategy for the program's training step "
                  "(spora search --algo dp over --mesh, default all ranks in one axis), print it, "
                  "then run main() with it");
  c.app->add_option("--cluster", c.dist.cluster,
                    "with --auto: the cluster spec (YAML) the search prices");
  c.app->add_option("--search-batch", c.dist.search_batch,
                    "with --auto: the training step's global batch (default: the program's `let "
                    "batch`)");
  c.app->add_option("--recompute", c.dist.recompute,
                    "with --ranks: recompute layers' forward in the backward pass: all, or layers "
                    "by name (net.l1,net.l2)");
  c.app->add_option(
      "--zero", c.dist.zero,
      "with --ranks: ZeRO over the data-parallel axis: 1 shards the optimizer state, 2 "
      "also the gradients, 3 also the parameters (gathered before each use)");
  c.app->add_option("--hostfile", c.dist.hostfile,
                    "with --ranks: an Open MPI hostfile (ranks on several hosts)");
  c.app
      ->add_option(
          "--collective-timeout", c.collective_timeout,
          "with --ranks: a rank that waits SECONDS in a collective stops the run, naming the "
          "ranks that did not arrive (sets SPORA_COLLECTIVE_TIMEOUT; default: wait forever)")
      ->check([](const std::string& v) {
        char* end = nullptr;
        const double t = std::strtod(v.c_str(), &end);
        return *end || !(t >= 0)
                   ? "must be a number of seconds >= 0 (0: no timeout), not '" + v + "'"
                   : std::string();
      });
}

int run_command(RunCommand& c, const std::vector<std::string>& args) {
  using namespace spora;
  c.opts.optimize = !c.no_opt;
  c.opts.fuse = !c.no_fuse;
  // The command line's --ranks / --strategy / --mesh / --auto win over the program's own
  // set_parallel(...); --zero and --recompute given with it win over its zero= / recompute=.
  if (c.dist.ranks == 0 && c.dist.strategy.empty() && c.dist.mesh.empty() && !c.dist.auto_search) {
    tools::DistributedArgs from_program = c.dist;
    if (tools::apply_set_parallel(c.path, from_program)) {
      if (c.dist.zero >= 0) from_program.zero = c.dist.zero;
      if (!c.dist.recompute.empty()) from_program.recompute = c.dist.recompute;
      c.dist = from_program;
    }
  }
  c.opts.device = c.device;
  if (c.dist.ranks > 0 || !c.dist.strategy.empty() || !c.dist.mesh.empty() || c.dist.auto_search)
    return tools::cmd_run_distributed(c.path, c.opts, c.dist, args);
  return tools::cmd_run(c.path, c.opts);
}

// `spora train-step`: the training-step harness (backends/distributed/train_step.h): the step
// of the program's loss, partitioned, on seeded data with a built-in optimizer. A pipeline's
// "split": "auto" balances its stages by the simulator's cost rows.
struct TrainStepCommand {
  CLI::App* app = nullptr;
  spora::distributed::TrainStepOptions spmd;
  std::string path, strategy, mesh;
  int ranks = 0;
  int64_t batch = 0;
};

void add_train_step_command(CLI::App& app, TrainStepCommand& c) {
  using namespace spora;
  c.spmd.stage_cost = sim::node_cost;
  CLI::App* step_cmd = c.app = app.add_subcommand(
      "train-step",
      "Train the step of a program's loss function (value_and_grad of `loss`) on seeded random "
      "data with a built-in optimizer, partitioned by a strategy: the reference the simulator "
      "predicts (spora run --ranks runs the program's own main() instead)");
  step_cmd->add_option("file", c.path, "the program (.sp), with a `loss` function")->required();
  step_cmd->add_option("--strategy", c.strategy,
                       "the parallel strategy (JSON, parallel/README.md)");
  step_cmd->add_option("--ranks", c.ranks,
                       "the number of ranks (runs itself under mpirun); 1: the single-device "
                       "reference of the same steps");
  step_cmd->add_option("--steps", c.spmd.steps, "training steps")->capture_default_str();
  step_cmd->add_option("--batch", c.batch, "the global batch (default: the program's)");
  step_cmd->add_option("--lr", c.spmd.lr, "the learning rate")->capture_default_str();
  step_cmd->add_option("--optimizer", c.spmd.optimizer, "sgd, momentum or adam")
      ->check(CLI::IsMember({"sgd", "momentum", "adam"}))
      ->capture_default_str();
  step_cmd->add_option("--profile", c.spmd.profile,
                       "write every rank's steps as one Chrome trace, and each rank's time in "
                       "collectives");
  step_cmd->add_flag("--verbose", c.spmd.verbose,
                     "say which optimizer updates optimizer_shard splits; with a pipeline, every "
                     "rank prints its stage and schedule");
  step_cmd->add_option(
      "--mesh", c.mesh,
      "with --ranks and no --strategy: the device mesh (e.g. 2x2); the strategy is propagated "
      "from the program's shard annotations (spora search --algo propagate)");
}

int train_step_command(TrainStepCommand& c, const std::vector<std::string>& args) {
  using namespace spora;
  c.spmd.file = c.path;
  std::error_code same_ec;
  if (!c.spmd.profile.empty() && !c.strategy.empty() &&
      std::filesystem::equivalent(c.spmd.profile, c.strategy, same_ec)) {
    std::cerr << fmt::format(
        "spora train-step: error: --profile {} would overwrite the strategy it runs; give another "
        "file\n",
        c.spmd.profile);
    return 2;
  }
  if (c.batch > 0) c.spmd.batch = c.batch;
  if (!c.mesh.empty() && !c.strategy.empty()) {
    std::cerr
        << "spora train-step: error: --mesh propagates a strategy from the program's annotations; "
           "--strategy gives one: use one of them\n";
    return 2;
  }
  std::string annotated;  // --mesh alone: the strategy propagated from the annotations
  if (!c.mesh.empty() && c.strategy.empty()) {
    try {
      c.strategy = annotated = tools::write_annotation_strategy(
          sim::build_step_program(c.spmd.file, distributed::step_options(c.spmd)), c.mesh);
    } catch (const lang::InternalError&) {
      throw;
    } catch (const std::exception& e) {
      std::cerr << "spora train-step: error: " << e.what() << "\n";
      return 1;
    }
  }
  const int rc = tools::cmd_train_step(c.spmd, c.strategy, c.ranks > 0 ? c.ranks : 1, args);
  if (!annotated.empty()) std::remove(annotated.c_str());
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace spora;
  ops::register_all();
  autodiff::install();
  runtime::install();
  runtime::install_interrupt_handlers();
  cpu::register_kernels();
  sem::set_backend(sem::Backend::Cpu);
  CLI::App app{
      "Spora: a typed language for deep-learning models, compiled to a graph IR with automatic "
      "differentiation, fused CPU/GPU kernels, auto-parallel strategies and a cluster simulator."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Describe every command");

  RunCommand run;
  add_run_command(app, run);
  TrainStepCommand step;
  add_train_step_command(app, step);
  std::string check_path;
  auto* check = app.add_subcommand("check", "Report the diagnostics of a program without running it (exit 1 on errors)");
  check->add_option("file", check_path, "the program (.sp)")->required();

  std::string ir_path, stage = "typed", out;
  bool dot = false;
  auto* irc = app.add_subcommand("ir", "Print a program at a compilation stage");
  irc->add_option("file", ir_path, "the program (.sp)")->required();
  irc->add_option("--stage", stage,
                  "parsed (the AST), typed (the specialised graph IR, with derivative code), grad (the "
                  "same: derivatives are emitted while lowering), optimized (after the simplification passes), "
                  "fused (after operator fusion: groups become calls of @fused graphs), kernels (the kernel IR of "
                  "every fusion group, with the CPU schedule) or partitioned (the "
                  "training step split by --strategy: the program of every rank)")
      ->capture_default_str();
  std::string emit;
  irc->add_option("--emit", emit, "with --stage fused: print the generated source of every fusion group instead "
                  "(kernels: C++ and CUDA)");
  irc->add_flag("--dot", dot, "write Graphviz dot instead of text");
  std::string ir_entry;
  irc->add_option("--entry", ir_entry,
                  "print the program with this graph as its entry (e.g. step): the optimized and fused "
                  "stages keep what it needs, with the types main calls it with");
  std::vector<std::string> print_after;
  irc->add_option(
         "--print-after", print_after,
         "print the module after these simplification passes (inline, fold-tuples, fold-constants, "
         "simplify, hoist, stack, cse, dce, or all)")
      ->delimiter(',');
  irc->add_option("-o,--output", out, "write to this file instead of stdout");
  std::string ir_strategy;
  int64_t ir_batch = 0;
  irc->add_option("--strategy", ir_strategy,
                  "with --stage partitioned: the strategy (JSON) the training step is split with");
  irc->add_option("--batch", ir_batch, "with --stage partitioned: the global batch");

  auto* ops_cmd = app.add_subcommand("ops", "List the primitives of the registry with their signatures");
  bool ops_markdown = false;
  ops_cmd->add_flag("--markdown", ops_markdown,
                    "print the table of docs/primitives.md: one section per family, with derivative rules and fusion kinds");

  std::string gc_path;
  double gc_tol = 1e-6;
  auto* gc = app.add_subcommand("grad-check",
                                "Check every derivative main takes against finite differences (in f64)");
  gc->add_option("file", gc_path, "the program (.sp)")->required();
  gc->add_option("--tolerance", gc_tol, "largest accepted relative error")->capture_default_str();

  tools::register_extra_commands(app);

  CLI11_PARSE(app, argc, argv);
  if (run.collective_timeout >= 0)  // read where the ranks make their communicators
    ::setenv("SPORA_COLLECTIVE_TIMEOUT", fmt::format("{}", run.collective_timeout).c_str(), 1);
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (*step.app) return train_step_command(step, args);
    if (*run.app) return run_command(run, args);
    if (*irc && stage == "partitioned") {
      if (!ir_entry.empty()) return tools::entry_needs_graph_stage();
      distributed::TrainStepOptions io;
      io.stage_cost = sim::node_cost;
      io.file = ir_path;
      if (ir_batch > 0) io.batch = ir_batch;
      return tools::cmd_ir_partitioned(io, ir_strategy);
    }
    if (*check) return tools::cmd_check(check_path);
    if (*irc) return tools::cmd_ir(ir_path, stage, dot, out, print_after, emit, ir_entry);
    if (*ops_cmd) return tools::cmd_ops(ops_markdown);
    if (*gc) return tools::cmd_grad_check(gc_path, gc_tol);
    return tools::run_extra_commands(app);
  } catch (const lang::InternalError& e) {
    std::cerr << "spora: internal error: " << e.what() << "\n";
    return 3;
  }
}
