// `spora train-step FILE --strategy s.json --ranks N` and `spora ir FILE --stage partitioned
// --strategy s.json` (commands.h): the command line of the training-step harness
// (backends/distributed/train_step.h, pipeline_step.h): read the strategy, check it once outside
// MPI, run itself under mpirun, print rank 0's losses and checksum.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "backends/comm/communicator.h"
#include "backends/distributed/launch.h"
#include "backends/distributed/pipeline_step.h"
#include "backends/distributed/train_step.h"
#include "backends/runtime/profile.h"
#include "lang/diagnostics.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/pipeline/setup.h"
#include "semantics/ir/printer.h"
#include "tools/commands.h"

namespace spora::tools {

using distributed::build_training_step;
using distributed::params_checksum;
using distributed::pipeline_ir;
using distributed::pipeline_ranks;
using distributed::run_pipeline;
using distributed::run_training;
using distributed::TrainStepOptions;
using distributed::TrainStepResult;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw lang::UserError(fmt::format("cannot read the strategy file '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void print_result(const TrainStepOptions& o, const TrainStepResult& r, const std::string& what) {
  std::printf("# spora train-step: %s, %s, %d steps of %s (lr %g)\n", o.file.c_str(), what.c_str(),
              o.steps, o.optimizer.c_str(), o.lr);
  for (size_t i = 0; i < r.losses.size(); ++i)
    std::printf("step %zu loss %.12g\n", i + 1, r.losses[i]);
  for (size_t i = 0; i < r.params.size(); ++i) {
    double sum = 0;
    for (int64_t k = 0; k < r.params[i].numel(); ++k) sum += r.params[i].get(k);
    std::printf("param %s %s sum %.12g\n", r.names[i].c_str(), r.params[i].type()->str().c_str(),
                sum);
  }
  std::printf("checksum %.12g\n", params_checksum(r.params));
  // The median step after the first (which pays first-touch allocations), on this rank; the
  // collectives keep the ranks in step, so it is the run's step time too.
  if (r.step_seconds.size() > 1) {
    std::vector<double> t(r.step_seconds.begin() + 1, r.step_seconds.end());
    std::sort(t.begin(), t.end());
    std::printf("median step %.6f ms over %zu steps (after the first)\n", t[t.size() / 2] * 1e3,
                t.size());
  }
}

// --profile of a multi-rank run: one line per rank (each one write, so lines from the ranks do
// not mix), then rank 0 merges the rank traces once all are written.
void report_profile(const TrainStepOptions& o, const TrainStepResult& r,
                    comm::Communicator& world) {
  if (o.profile.empty()) return;
  std::fprintf(stderr,
               "profile: rank %d: %.3f ms of %.3f ms in primitives were collectives or receives\n",
               world.rank(), r.collective_seconds * 1e3, r.profiled_seconds * 1e3);
  world.barrier();
  if (world.rank() == 0) {
    runtime::merge_rank_traces(o.profile, world.size());
    std::fprintf(stderr, "profile: rank 0's summary (every rank is in the timeline)\n%s",
                 r.profile_summary.c_str());
  }
}

}  // namespace

int cmd_train_step(const TrainStepOptions& o, const std::string& strategy_path, int ranks,
                   const std::vector<std::string>& argv_for_ranks) {
  try {
    if (ranks < 1) throw lang::UserError(fmt::format("--ranks must be positive, got {}", ranks));
    if (ranks == 1 || strategy_path.empty()) {
      if (ranks > 1)
        throw lang::UserError(
            "spora run --ranks N needs --strategy s.json (how to split the step)");
      const TrainStepResult r = run_training(o, nullptr, "");
      print_result(o, r, "1 device (the reference)");
      if (!o.profile.empty()) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s", r.profile_summary.c_str());
      }
      return 0;
    }
    const std::string text = read_text(strategy_path);
    if (parallel::pipeline::is_pipeline_strategy(text)) {
      if (!distributed::under_mpi()) {
        const int needed = pipeline_ranks(o, text, strategy_path);
        if (needed != ranks)
          throw lang::UserError(
              fmt::format("the pipeline of {} needs {} ranks (stages x mesh), but "
                          "--ranks is {}",
                          strategy_path, needed, ranks));
        return distributed::spawn_mpirun(ranks, argv_for_ranks);
      }
      const distributed::MpiWorld mpi;
      comm::Communicator* world = mpi.world.get();
      const TrainStepResult r = run_pipeline(o, *world, text, strategy_path);
      report_profile(o, r, *world);
      if (world->rank() == 0)
        print_result(o, r,
                     fmt::format("pipeline strategy {} over {} MPI ranks", strategy_path, ranks));
      return 0;
    }
    if (!distributed::under_mpi()) {
      // Check the program and the strategy once here, rather than as N copies of an error.
      const parallel::StepGraph program = build_training_step(o, text);
      const parallel::Strategy s = parallel::parse_strategy(text, *program.step, strategy_path);
      if (s.mesh.size() != ranks)
        throw lang::UserError(fmt::format("the mesh {} of {} has {} devices, but --ranks is {}",
                                          s.mesh.to_string(), strategy_path, s.mesh.size(), ranks));
      return distributed::spawn_mpirun(ranks, argv_for_ranks);
    }
    const distributed::MpiWorld mpi;
    comm::Communicator* world = mpi.world.get();
    if (world->size() != ranks)
      throw lang::UserError(
          fmt::format("--ranks {} but mpirun started {} processes", ranks, world->size()));
    const TrainStepResult r = run_training(o, world, text);
    report_profile(o, r, *world);
    if (world->rank() == 0)
      print_result(o, r,
                   fmt::format("strategy {} over {} MPI ranks, {} collectives per step{}",
                               strategy_path, ranks, r.collectives,
                               r.gathers ? fmt::format(" + {} all_gathers of updated shards "
                                                       "(optimizer_shard)",
                                                       r.gathers)
                                         : ""));
    return 0;
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora run: error: %s\n", e.what());
    return 1;
  }
}

int cmd_ir_partitioned(const TrainStepOptions& o, const std::string& strategy_path) {
  try {
    if (strategy_path.empty()) throw lang::UserError("--stage partitioned needs --strategy s.json");
    if (const std::string text = read_text(strategy_path);
        parallel::pipeline::is_pipeline_strategy(text)) {
      std::printf("%s", pipeline_ir(o, text, strategy_path).c_str());
      return 0;
    }
    const parallel::StepGraph program = build_training_step(o, read_text(strategy_path));
    const ir::Graph& step = *program.step;
    const parallel::Strategy strategy = parallel::load_strategy(strategy_path, step);
    const parallel::Partitioned part =
        parallel::partition_training_step(step, program.param_names.size(), strategy);
    std::printf("# mesh %s; the program of every rank:\n", strategy.mesh.to_string().c_str());
    std::printf("%s", ir::print_module(*part.module).c_str());
    for (size_t i = 0; i < step.params.size(); ++i)
      std::printf("# %s %s: %s\n", step.params[i]->name.c_str(),
                  step.params[i]->type->str().c_str(),
                  part.param_layouts[i].to_string(strategy.mesh).c_str());
    for (size_t i = 0; i < part.optimizer_shards.size(); ++i) {
      const parallel::OptimizerShard& z = part.optimizer_shards[i];
      std::printf("# optimizer_shard %s: %s\n", step.params[i]->name.c_str(),
                  z.dim >= 0 ? fmt::format("update split along dim {} over {}", z.dim,
                                           strategy.mesh.axis_name(strategy.optimizer_shard))
                                   .c_str()
                             : fmt::format("whole ({})", z.reason).c_str());
    }
    if (!program.recomputed.empty())
      std::printf("# recomputed in the backward pass: %s\n",
                  fmt::format("{}", fmt::join(program.recomputed, ", ")).c_str());
    std::printf("# %d collectives:\n", part.collectives);
    for (const std::string& line : parallel::collective_summary(*part.graph))
      std::printf("#   %s\n", line.c_str());
    return 0;
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora ir: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
