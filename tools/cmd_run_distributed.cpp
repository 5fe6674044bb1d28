// `spora run FILE --ranks N ...`: the command line of the distributed runtime
// (backends/distributed/spmd_runtime.h): checks the arguments, launches through mpirun, and
// on each rank installs the runtime and runs the program as `spora run` does.
#include <fmt/format.h>

#include <iostream>

#include "backends/comm/communicator.h"
#include "backends/distributed/launch.h"
#include "backends/distributed/plan.h"
#include "backends/distributed/spmd_runtime.h"
#include "lang/diagnostics.h"
#include "ops/collective.h"
#include "parallel/partition/pin_fields.h"
#include "semantics/pipeline.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {

// Compiles the program once and checks the plan against it, so that a program or a strategy
// that does not fit is one located error before any rank starts. False after printing it.
bool check_before_launch(const std::string& path, const distributed::SpmdPlan& plan) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::Compiled c = sem::compile_file(sources, diags, path, sem::LowerOptions{});
  diags.print(std::cerr);
  if (!c.module) return false;
  parallel::pin_record_fields(*c.module, plan.params, &plan.mesh, plan.origin);
  return true;
}

distributed::SpmdPlan plan_of(const DistributedArgs& d) {
  if (!d.strategy.empty() && !d.mesh.empty())
    throw lang::UserError(
        "--mesh places values by the program's shard annotations and --strategy by a file: "
        "give one of them");
  distributed::SpmdPlan plan;
  if (!d.mesh.empty())
    plan = distributed::plan_from_mesh(d.mesh);
  else if (d.strategy.empty() || d.strategy == "dp")
    plan = distributed::data_parallel_plan(d.ranks > 0 ? d.ranks : 1);
  else
    plan = distributed::plan_from_strategy(d.strategy);
  plan.tag_all_ranks = d.tag_ranks;
  return plan;
}

}  // namespace

int cmd_run_distributed(const std::string& path, RunOptions opts, const DistributedArgs& d,
                        const std::vector<std::string>& argv) {
  distributed::SpmdPlan plan;
  try {
    if (opts.mode == "eager")
      throw lang::UserError(
          "--ranks runs a program in graph mode: eager mode runs each operation as the program "
          "is lowered, with no whole program to shard; drop --mode eager");
    if (opts.device != "cpu")
      throw lang::UserError(
          "--ranks runs on CPU ranks over MPI; GPU ranks (NCCL) need one GPU per rank, which "
          "this command does not place yet");
    if (d.ranks < 0)
      throw lang::UserError(fmt::format("--ranks must be positive, got {}", d.ranks));
    plan = plan_of(d);
    const int ranks = d.ranks > 0 ? d.ranks : static_cast<int>(plan.mesh.size());
    if (plan.mesh.size() != ranks)
      throw lang::UserError(fmt::format("the mesh {} of {} has {} devices, but --ranks is {}",
                                        plan.mesh.to_string(), plan.origin, plan.mesh.size(),
                                        ranks));
    if (!distributed::under_mpi()) {
      if (ranks == 1) return cmd_run(path, opts);
      if (!check_before_launch(path, plan)) return 1;
      distributed::LaunchOptions lo;
      lo.tag_output = d.tag_ranks;
      lo.hostfile = d.hostfile;
      return distributed::spawn_mpirun(ranks, argv, lo);
    }
  } catch (const lang::UserError& e) {
    std::cerr << fmt::format("spora run: error: {}\n", e.what());
    return 2;
  }
  int rank = 0;
  try {
    distributed::MpiWorld mpi;
    comm::Communicator& world = *mpi.world;
    rank = world.rank();
    if (world.size() != plan.mesh.size())
      throw lang::UserError(fmt::format("mpirun started {} processes, but the mesh {} of {} has {}",
                                        world.size(), plan.mesh.to_string(), plan.origin,
                                        plan.mesh.size()));
    distributed::SpmdRuntime rt(world, plan);
    ops::CollectiveScope scope(&world, plan.mesh.shape);
    opts.spmd = &rt;
    opts.quiet = world.rank() != 0 && !d.tag_ranks;
    if (!opts.profile.empty() && world.rank() != 0)
      opts.profile += fmt::format(".rank{}", world.rank());
    const int rc = cmd_run(path, opts);
    if (opts.stats && world.rank() == 0) {
      const distributed::SpmdStats& s = rt.stats();
      std::cerr << fmt::format(
          "stats: rank 0 of {} ({} mesh {}): {} primitives ran on shards, {} collective steps "
          "({:.3f} MB in), {} parameters placed, {} batches cut, {} whole\n",
          world.size(), plan.origin, plan.mesh.to_string(), s.sharded_applications, s.collectives,
          static_cast<double>(s.collective_bytes) / 1e6, s.placed_parameters, s.sharded_batches,
          s.whole_batches);
    }
    return rc;
  } catch (const lang::UserError& e) {
    if (rank == 0 || d.tag_ranks) std::cerr << fmt::format("spora run: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
