// Sub-commands of the `spora` program, one function each.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "lang/diagnostics.h"

namespace spora::distributed {
class SpmdRuntime;
struct TrainStepOptions;
}
namespace spora::sem {
struct Primitive;
}

namespace spora::tools {

struct RunOptions {
  std::string mode = "graph";
  bool stats = false;
  bool optimize = true;   // run the simplification passes before executing (graph mode)
  bool fuse = true;       // fuse operators and run the groups with generated kernels (graph mode)
  std::string device = "cpu";  // cpu | cuda (`--device`; a program's set_device(...) overrides it)
  std::string profile;         // graph mode: the run's Chrome trace (backends/runtime/profile.h)
  std::string amp;                 // O0..O3 (`--amp`; overrides a program's set_amp(...)); "": none
  std::string amp_dtype = "bf16";  // bf16 | f16 (`--amp-dtype`)
  bool verbose = false;        // cuda: say which functions are captured as CUDA graphs
  // One rank of a multi-rank run: the runtime that shards the program (installed once the
  // program is compiled and fused), and whether this rank keeps its diagnostics to itself
  // (every rank but 0: the run reads as one program).
  distributed::SpmdRuntime* spmd = nullptr;
  bool quiet = false;
};

// `spora run FILE --ranks N [--strategy dp|FILE | --mesh AxB]`: the program's own main() on N
// MPI ranks (backends/distributed): outside MPI, runs itself under mpirun; inside, this rank's
// part. `argv` are the arguments to pass on to the ranks.
struct DistributedArgs {
  int ranks = 0;
  std::string strategy;  // "dp", a strategy file, or empty
  std::string mesh;      // --mesh, or empty
  bool tag_ranks = false;
  std::string hostfile;
  int zero = -1;
  std::string recompute;  // --recompute all | net.l1,net.l2; empty: the plan's  // --zero N: ZeRO stage over the data-parallel axis; -1: the plan's
  // --auto: search a strategy for the program's training step with the simulator on this
  // cluster spec (`spora search --algo dp` over --mesh, default a 1-D mesh of the ranks), print
  // it, then run with it; search_batch is the step's global batch (default: the program's).
  bool auto_search = false;
  std::string cluster;
  int64_t search_batch = 0;
  std::string origin = "--ranks";  // what asked for ranks, for errors (or the program's set_parallel)
};
int cmd_run_distributed(const std::string& path, RunOptions opts, const DistributedArgs& d,
                        const std::vector<std::string>& argv);
// The program's `set_parallel(...)` (semantics/set_parallel.h) into `d`, a relative strategy
// file taken from the program's directory; false (d untouched) when main has none or the
// program does not parse (the compile then reports it).
bool apply_set_parallel(const std::string& path, DistributedArgs& d);

int cmd_run(const std::string& path, const RunOptions& opts);
// Prints a run-time error with its source location, like a compile-time diagnostic.
void report_runtime_error(const lang::SourceManager& sources, const lang::SourceLoc& loc,
                          const std::string& msg, std::ostream& out = std::cerr);

// `spora train-step FILE --strategy S --ranks N` (cmd_train_step.cpp; the training-step harness,
// backends/distributed/train_step.h): outside MPI with N > 1, runs itself under mpirun
// (--oversubscribe, one OpenMP thread per rank); inside, the rank's part; rank 0 prints the loss
// per step and the parameters' checksum. N = 1: the single-device reference.
int cmd_train_step(const distributed::TrainStepOptions& o, const std::string& strategy_path,
                   int ranks, const std::vector<std::string>& argv_for_ranks);
// `spora ir FILE --stage partitioned --strategy s.json`: the per-rank step, then the layouts of
// its parameters and the collectives it runs, as comments.
int cmd_ir_partitioned(const distributed::TrainStepOptions& o, const std::string& strategy_path);
int cmd_check(const std::string& path);
int cmd_ir(const std::string& path, const std::string& stage, bool dot, const std::string& out,
           const std::vector<std::string>& print_after, const std::string& emit = "",
           const std::string& entry = "");
int cmd_ops(bool markdown = false);
// A primitive's signature ("sum(x, axis=none, keepdims=false)") and its doc without the
// signature it may start with (cmd_ops.cpp; `spora ops` and `spora lsp`).
std::string primitive_signature(const sem::Primitive& p);
std::string primitive_description(const sem::Primitive& p);
int cmd_grad_check(const std::string& path, double tolerance);

// Commands that live in their own files (coll, sim, ...): they add their sub-commands to
// the app, and run the one that was chosen (returns 2 if none of them was).
// `spora repl` (cmd_repl.cpp).
CLI::App* add_repl_subcommand(CLI::App& app);
int run_repl_subcommand();
// `spora jupyter install` (cmd_jupyter.cpp).
CLI::App* add_jupyter_subcommand(CLI::App& app);
int run_jupyter_subcommand();

void register_extra_commands(CLI::App& app);
int run_extra_commands(CLI::App& app);

}  // namespace spora::tools
