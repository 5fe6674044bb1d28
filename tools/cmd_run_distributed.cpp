// `spora run FILE --ranks N ...`: the command line of the distributed runtime
// (backends/distributed/spmd_runtime.h): checks the arguments, launches through mpirun, and
// on each rank installs the runtime and runs the program as `spora run` does.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/comm/device_check.h"
#include "backends/comm/nccl_comm.h"
#include "backends/cuda/cuda.h"
#include "backends/distributed/batch_cut.h"
#include "backends/distributed/launch.h"
#include "backends/distributed/plan.h"
#include "backends/distributed/program_pipeline.h"
#include "backends/distributed/spmd_runtime.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "semantics/pipeline.h"
#include "semantics/set_parallel.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {

// Compiles the program once and checks the plan against it, so that a program or a strategy
// that does not fit is one located error before any rank starts. False after printing it.
bool check_before_launch(const std::string& path, const distributed::SpmdPlan& plan) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions options;
  auto recomputed = std::make_shared<distributed::RecomputeChoice>();
  distributed::configure_recompute(plan, options, recomputed);
  if (!plan.pipeline.empty()) distributed::program_pipeline_setup(path, plan.pipeline, plan.origin);
  std::optional<distributed::StepCapture> capture;
  if (!plan.pipeline.empty()) capture.emplace();
  const distributed::BatchCut cut(plan);
  sem::Compiled c = sem::compile_file(sources, diags, path, options);
  diags.print(std::cerr);
  if (!c.module) return false;
  if (capture) capture->finish(*c.module, plan.origin);
  distributed::check_recompute(plan, *recomputed);
  distributed::pin_plan(*c.module, plan);
  return true;
}

// --auto: `spora search FILE --cluster C --mesh M --algo dp -o OUT` as a child process (the
// search is its own command; running it apart keeps its state out of this run). Returns the
// strategy text with the keys a program run does not take removed, after printing it.
std::string auto_strategy(const std::string& path, const DistributedArgs& d, int ranks) {
  if (d.cluster.empty())
    throw lang::UserError("--auto needs --cluster c.yaml (what the search prices)");
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw lang::UserError("cannot find the spora executable (/proc/self/exe)");
  self[len] = '\0';
  char out[] = "/tmp/spora-auto-XXXXXX";
  const int fd = mkstemp(out);
  if (fd < 0) throw lang::UserError("cannot create a temporary file for the searched strategy");
  close(fd);
  std::vector<std::string> args = {self,
                                   "search",
                                   path,
                                   "--cluster",
                                   d.cluster,
                                   "--mesh",
                                   d.mesh.empty() ? std::to_string(ranks) : d.mesh,
                                   "--algo",
                                   "dp",
                                   "--top",
                                   "1",
                                   "--no-simulate",
                                   "-o",
                                   out};
  if (d.search_batch > 0) {
    args.push_back("--batch");
    args.push_back(std::to_string(d.search_batch));
  }
  std::vector<char*> c;
  for (std::string& a : args) c.push_back(a.data());
  c.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(2, 1);  // the search's table goes to stderr: stdout is the program's
    execv(self, c.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.str().empty())
    throw lang::UserError("--auto: the strategy search failed (its message is above)");
  nlohmann::json j = nlohmann::json::parse(text.str());
  for (const char* key : {"ops", "recompute"})
    if (j.contains(key)) {
      std::cerr << fmt::format(
          "spora run: --auto: the search's \"{}\" is left out (a program "
          "run takes the mesh and layouts)\n",
          key);
      j.erase(key);
    }
  std::cerr << "spora run: --auto: the strategy searched for " << path << ":\n"
            << j.dump(2) << "\n";
  return j.dump(2);
}

// --zero and --recompute, over what the plan says.
void apply_flags(distributed::SpmdPlan& plan, const DistributedArgs& d) {
  if (!d.recompute.empty() && !plan.pipeline.empty())
    throw lang::UserError(fmt::format(
        "--recompute does not combine with the pipeline of {} (its stages recompute their "
        "forward pass in the backward pass already)",
        plan.origin));
  if (d.zero >= 0) distributed::set_zero_stage(plan, d.zero);
  if (d.recompute == "all") {
    plan.recompute_all = true;
    plan.recompute.clear();
  } else if (!d.recompute.empty()) {
    plan.recompute_all = false;
    plan.recompute.clear();
    std::stringstream names(d.recompute);
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) plan.recompute.push_back(name);
  }
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
    // `mpirun -np N spora run prog.sp` without --ranks: data parallelism over the N processes.
    plan = distributed::data_parallel_plan(
        d.ranks > 0 ? d.ranks : std::max(1, distributed::mpi_world_size()));
  else
    plan = distributed::plan_from_strategy(d.strategy);
  plan.tag_all_ranks = d.tag_ranks;
  apply_flags(plan, d);
  return plan;
}

}  // namespace

bool apply_set_parallel(const std::string& path, DistributedArgs& d) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  int file = -1;
  try {
    file = sources.load(path);
  } catch (const std::exception&) {
    return false;  // cmd_run reports the missing file
  }
  const auto module = lang::parse_file(sources, file, diags);
  if (!module) return false;  // cmd_run reports the syntax errors
  for (const auto& f : module->functions) {
    if (f->name != "main") continue;
    const std::optional<sem::ParallelDirective> p = sem::find_set_parallel(*f);
    if (!p) return false;  // none, or a malformed one the lowering reports with its location
    d.ranks = static_cast<int>(p->ranks);
    d.mesh = p->mesh;
    d.strategy = p->strategy;
    if (!d.strategy.empty() && d.strategy != "dp" && d.strategy.front() != '/') {
      const auto dir = std::filesystem::path(path).parent_path();
      if (!dir.empty()) d.strategy = (dir / d.strategy).string();
    }
    if (d.strategy.empty() && d.mesh.empty()) d.strategy = "dp";
    d.zero = p->zero;
    d.recompute = p->recompute;
    d.origin = "the program's set_parallel(...)";
    return true;
  }
  return false;
}

// GPU ranks: NCCL runs one rank per GPU (it refuses two ranks on one GPU).
static void gpus_for_ranks(int ranks, const char* where) {
  std::string why;
  const int gpus = comm::cuda_device_count(&why);
  if (gpus == 0)
    throw lang::UserError(fmt::format("--device cuda with {} rank{} needs a GPU per rank: {}",
                                      ranks, ranks == 1 ? "" : "s",
                                      why.empty() ? "no GPU found" : why));
  if (gpus < ranks)
    throw lang::UserError(fmt::format(
        "--device cuda runs one rank per GPU (NCCL refuses two ranks on one GPU): {} ranks on "
        "{} need {} GPUs, and it has {}",
        ranks, where, ranks, gpus));
}

int cmd_run_distributed(const std::string& path, RunOptions opts, const DistributedArgs& d,
                        const std::vector<std::string>& argv) {
  distributed::SpmdPlan plan;
  std::string auto_file;  // --auto: the searched strategy the ranks read
  try {
    if (opts.mode == "eager")
      throw lang::UserError(fmt::format(
          "{} runs a program in graph mode: eager mode runs each operation as the program is "
          "lowered, with no whole program to shard; drop --mode eager",
          d.origin));
    if (opts.device != "cpu" && opts.device != "cuda")
      throw lang::UserError(fmt::format("--device must be cpu or cuda, got '{}'", opts.device));
    if (d.ranks < 0)
      throw lang::UserError(fmt::format("--ranks must be positive, got {}", d.ranks));
    std::vector<std::string> rank_argv = argv;
    if (d.auto_search && !distributed::under_mpi()) {
      if (!d.strategy.empty())
        throw lang::UserError("--auto searches a strategy; --strategy gives one: use one of them");
      const int n = d.ranks > 0 ? d.ranks : 1;
      const std::string text = auto_strategy(path, d, n);
      plan = distributed::plan_from_strategy_text(text, "the searched strategy");
      // The ranks run the searched strategy: a file, given to them instead of --auto.
      char file[] = "/tmp/spora-strategy-XXXXXX";
      const int fd = mkstemp(file);
      if (fd < 0 || write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        throw lang::UserError("cannot write the searched strategy to a temporary file");
      close(fd);
      auto_file = file;
      rank_argv.clear();
      for (size_t i = 0; i < argv.size(); ++i) {
        if (argv[i] == "--auto") continue;
        if (argv[i] == "--cluster" || argv[i] == "--mesh" || argv[i] == "--search-batch") {
          ++i;
          continue;
        }
        if (argv[i].rfind("--cluster=", 0) == 0 || argv[i].rfind("--mesh=", 0) == 0 ||
            argv[i].rfind("--search-batch=", 0) == 0)
          continue;
        rank_argv.push_back(argv[i]);
      }
      rank_argv.push_back("--strategy");
      rank_argv.push_back(auto_file);
      plan.tag_all_ranks = d.tag_ranks;
      apply_flags(plan, d);
    } else {
      plan = plan_of(d);
    }
    const int ranks = d.ranks > 0 ? d.ranks : static_cast<int>(plan.mesh.size());
    if (plan.mesh.size() != ranks)
      throw lang::UserError(fmt::format("the mesh {} of {} has {} devices, but --ranks is {}",
                                        plan.mesh.to_string(), plan.origin, plan.mesh.size(),
                                        ranks));
    if (!distributed::under_mpi()) {
      if (ranks == 1) return cmd_run(path, opts);
      if (opts.device == "cuda" && d.hostfile.empty()) gpus_for_ranks(ranks, "this machine");
      if (!check_before_launch(path, plan)) return 1;
      distributed::LaunchOptions lo;
      lo.tag_output = d.tag_ranks;
      lo.hostfile = d.hostfile;
      const int rc = distributed::spawn_mpirun(ranks, rank_argv, lo);
      if (!auto_file.empty()) std::remove(auto_file.c_str());
      return rc;
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
      throw lang::UserError(fmt::format("mpirun started {} processes, but the mesh {} of {} has {} devices",
                                        world.size(), plan.mesh.to_string(), plan.origin,
                                        plan.mesh.size()));
    // The collectives' communicator: MPI between CPU ranks; NCCL between GPU ranks, one GPU
    // per rank (its local rank on its host), its id sent over MPI; under
    // SPORA_COMM_DEVICE_CHECK=1, MPI seen as a device-memory communicator (DeviceCheck).
    std::unique_ptr<comm::Communicator> collectives_comm;
    if (opts.device == "cuda") {
      // Without Open MPI's local numbering, all ranks are taken to share one host.
      const int local =
          distributed::mpi_local_rank() >= 0 ? distributed::mpi_local_rank() : world.rank();
      gpus_for_ranks(
          distributed::mpi_local_size() > 0 ? distributed::mpi_local_size() : world.size(),
          "this host");
      cuda::select_device(local);
      std::string id(128, '\0');  // NCCL_UNIQUE_ID_BYTES
      if (world.rank() == 0) id = comm::nccl_unique_id();
      std::string got(id.size(), '\0');
      comm::CollectiveCall b{comm::Collective::Broadcast,
                             comm::ReduceOp::Sum,
                             comm::DType::I32,
                             static_cast<std::int64_t>(id.size() / 4),
                             0,
                             id.data(),
                             got.data()};
      world.native(b);
      collectives_comm = comm::make_nccl_communicator(got, world.size(), world.rank(), local);
    } else if (const char* v = std::getenv("SPORA_COMM_DEVICE_CHECK"); v && std::string(v) == "1") {
      collectives_comm = std::make_unique<comm::DeviceCheck>(world);
    }
    comm::Communicator& collectives = collectives_comm ? *collectives_comm : world;
    distributed::SpmdRuntime rt(world, plan);
    if (!plan.pipeline.empty())
      rt.set_pipeline(distributed::program_pipeline_setup(path, plan.pipeline, plan.origin));
    comm::CollectiveScope scope(&collectives, plan.mesh.shape);
    opts.spmd = &rt;
    opts.quiet = world.rank() != 0 && !d.tag_ranks;
    if (!opts.profile.empty() && world.rank() != 0)
      opts.profile += fmt::format(".rank{}", world.rank());
    int rc = cmd_run(path, opts);
    if (auto* checked = dynamic_cast<comm::DeviceCheck*>(collectives_comm.get());
        checked && checked->ungrouped_messages() > 0) {
      std::cerr << fmt::format(
          "spora run: error: device-check: {} messages were posted outside a group_start / "
          "group_end pair (NCCL would deadlock)\n",
          checked->ungrouped_messages());
      rc = rc ? rc : 1;
    }
    if (opts.stats && world.rank() == 0) {
      const distributed::SpmdStats& s = rt.stats();
      std::cerr << fmt::format(
          "stats: rank 0 of {} ({} mesh {}): {} primitives ran on shards, {} collective steps "
          "({:.3f} MB in), {} parameters placed, {} batches cut, {} whole, {} values cut where "
          "a loss reads them\n",
          world.size(), plan.origin, plan.mesh.to_string(), s.sharded_applications, s.collectives,
          static_cast<double>(s.collective_bytes) / 1e6, s.placed_parameters, s.sharded_batches,
          s.whole_batches, s.held_cuts);
      std::string kinds;
      for (const auto& [prim, cb] : s.by_collective)
        kinds += fmt::format("{}{} {} ({:.3f} MB)", kinds.empty() ? "" : ", ", prim, cb.first,
                             static_cast<double>(cb.second) / 1e6);
      if (!kinds.empty()) std::cerr << "stats: collectives: " << kinds << "\n";
      if (s.fused_on_shards > 0)
        std::cerr << fmt::format("stats: fused kernels run on shards: {} (their anchors on the "
                                 "shards, then the kernel on whole values)\n",
                                 s.fused_on_shards);
      if (s.fused_local > 0)
        std::cerr << fmt::format(
            "stats: fused kernels run on this rank's shards: {} (compiled "
            "for the shards' shapes)\n",
            s.fused_local);
      if (!plan.pipeline.empty())
        std::cerr << fmt::format(
            "stats: pipeline: {} steps run as the schedule, {} owned values got from their "
            "stage for another use\n",
            s.pipeline_steps, s.owned_fetches);
    }
    return rc;
  } catch (const lang::UserError& e) {
    if (rank == 0 || d.tag_ranks) std::cerr << fmt::format("spora run: error: {}\n", e.what());
    return 1;
  } catch (const comm::CommError& e) {
    if (rank == 0 || d.tag_ranks) std::cerr << fmt::format("spora run: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
