// `spora run-dp`: one real data-parallel training step per iteration, over MPI, timed -- the
// reality `spora sim` is validated against (sim/README.md, "Validation").
//
//   mpirun --oversubscribe --allow-run-as-root -np 2 -x OMP_NUM_THREADS=1
//          -x OPENBLAS_NUM_THREADS=1 spora run-dp benchmarks/sim/w2_mlp.sp --batch 64
//
// Every rank builds the per-rank program exactly as the simulator does (sim/step_program.h,
// batch / ranks each), then per step:
//   1. barrier; the interpreter runs the step graph (forward and backward) with the CPU kernels;
//   2. for each gradient bucket (sim/train_step.h's assignment): copy the gradients into the
//      bucket, all-reduce it with the ring schedule of parallel/collectives over the MPI
//      communicator (backends/comm), copy the sums back;
//   3. the optimizer's update (sgd: p - lr g, the kernels of mul and sub) of every parameter.
// The all-reduces run after the backward pass, not during it (the interpreter runs the graph
// to the end); with one bucket completed by the backward's last op, as in the MLP of W2, that is
// what overlap would do too. A step's time is the slowest rank's; the report gives the median
// over --steps steps after --warmup, and the medians of the three parts.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/comm/executor.h"
#include "backends/comm/mpi_comm.h"
#include "lang/diagnostics.h"
#include "parallel/collectives/algorithms.h"
#include "semantics/interpreter.h"
#include "semantics/registry.h"
#include "sim/step_program.h"
#include "sim/train_step.h"
#include "tools/cmd_sim.h"

namespace spora::tools {

namespace {

struct Options {
  std::string file, entry = "main", batch_name = "batch", algo = "ring";
  long batch = 0;
  int steps = 20, warmup = 3;
  double lr = 0.01, bucket_mb = 25, first_bucket_mb = 1;
  bool json = false, profile = false, sync = false;
};

Options g_options;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A value of type t to feed the step: floats small and random (fixed seed), integers zero (a
// valid class index for labels).
sem::Value sample(const sem::TypeP& t, std::mt19937& rng) {
  if (t->kind == sem::Type::Kind::Tuple || t->kind == sem::Type::Kind::Record) {
    std::vector<sem::Value> elems;
    for (const sem::TypeP& e : t->elems) elems.push_back(sample(e, rng));
    return t->kind == sem::Type::Kind::Tuple ? sem::Value::tuple(std::move(elems))
                                             : sem::Value::record(t, std::move(elems));
  }
  if (t->kind != sem::Type::Kind::Tensor)
    throw lang::UserError(fmt::format("run-dp cannot make an input of type {}", t->str()));
  sem::Tensor x = sem::Tensor::zeros(t->dtype, t->shape);
  if (is_float(t->dtype)) {
    std::normal_distribution<double> normal(0.0, 0.05);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, normal(rng));
  }
  return x;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const Options& o) {
  comm::MpiWorld mpi;
  const std::unique_ptr<comm::Communicator>& world = mpi.world;
  const int ranks = world->size(), rank = world->rank();

  parallel::StepOptions so;
  so.entry = o.entry;
  so.batch_name = o.batch_name;
  so.optimizer = "sgd";
  so.lr = o.lr;
  if (o.batch != 0) {
    if (o.batch < 0 || o.batch % ranks != 0)
      throw lang::UserError(fmt::format("--batch {} is not a positive multiple of the {} ranks",
                                        o.batch, ranks));
    so.batch = o.batch / ranks;
  }
  sim::StepProgram program = sim::build_step_program(o.file, so);
  const std::vector<sim::Bucket> buckets = sim::assign_buckets(
      program, o.bucket_mb * (1 << 20), o.first_bucket_mb * (1 << 20));
  const auto algorithm = parallel::parse_algorithm(o.algo);
  if (!algorithm || !parallel::supports(*algorithm, parallel::Collective::AllReduce))
    throw lang::UserError(fmt::format("unknown all-reduce --algo '{}'", o.algo));
  for (const sim::StepParam& p : program.params)
    if (p.type->dtype != DType::f32)
      throw lang::UserError(fmt::format("run-dp all-reduces f32 gradients; {} is {}", p.name,
                                        p.type->str()));

  // Inputs, bucket buffers and one executor per bucket (built once).
  std::mt19937 rng(1234u + static_cast<unsigned>(rank));
  std::vector<sem::Value> args;
  for (const ir::Node* p : program.step->params) args.push_back(sample(p->type, rng));
  std::vector<std::vector<float>> send(buckets.size()), recv(buckets.size());
  std::vector<parallel::Schedule> schedules;
  std::vector<std::unique_ptr<comm::Executor>> executors;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto count = static_cast<std::int64_t>(buckets[b].bytes / 4);
    send[b].resize(static_cast<std::size_t>(count));
    recv[b].resize(static_cast<std::size_t>(count));
    schedules.push_back(parallel::build_schedule(
        *algorithm, {parallel::Collective::AllReduce, parallel::ReduceOp::Sum, ranks, count}));
    executors.push_back(
        std::make_unique<comm::Executor>(schedules.back(), *world, comm::DType::F32));
  }
  const sem::Primitive* mul = sem::Registry::instance().find("mul");
  const sem::Primitive* sub = sem::Registry::instance().find("sub");
  const sem::Value lr(sem::Tensor::scalar(DType::f32, o.lr));

  sem::Interpreter interp(*program.module);
  // --profile: time per primitive over the timed steps (the interpreter's node times).
  std::map<std::string, std::pair<long, double>> profile;
  bool timing = false;
  double executor_seconds = 0;
  if (o.profile)
    interp.set_trace([&](const sem::TraceEvent& e) {
      if (timing && e.depth == 0 && e.node->prim) {
        auto& [calls, seconds] = profile[e.node->prim->name];
        ++calls;
        seconds += e.seconds;
      }
    });
  std::vector<double> step_times, compute_times, comm_times, update_times;
  for (int it = 0; it < o.warmup + o.steps; ++it) {
    world->barrier();
    timing = it >= o.warmup;
    const auto t0 = Clock::now();
    const sem::Value out = interp.call(program.step, args);
    const double compute = since(t0);
    if (o.sync) world->barrier();  // --sync: the all-reduce starts on both ranks at once
    const auto t1 = Clock::now();
    std::vector<sem::Tensor> grads;
    for (std::size_t i = 0; i < program.params.size(); ++i) {
      const sem::Tensor& g = out.items()[i + 1].tensor;
      grads.push_back(g.unique() ? g : g.clone());  // written back in place below
    }
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      std::size_t offset = 0;
      for (int i : buckets[b].params) {
        const sem::Tensor& g = grads[static_cast<std::size_t>(i)];
        std::memcpy(send[b].data() + offset, g.data<float>(), g.nbytes());
        offset += static_cast<std::size_t>(g.numel());
      }
      const auto ta = Clock::now();
      executors[b]->run(send[b].data(), recv[b].data());
      if (timing) executor_seconds += since(ta);
      if (timing && std::getenv("SPORA_RUN_DP_DEBUG") && rank == 0)
        std::fprintf(stderr, "bucket %zu: %.3f ms\n", b, since(ta) * 1e3);
      offset = 0;
      for (int i : buckets[b].params) {
        sem::Tensor& g = grads[static_cast<std::size_t>(i)];
        std::memcpy(g.data<float>(), recv[b].data() + offset, g.nbytes());
        offset += static_cast<std::size_t>(g.numel());
      }
    }
    const double communication = since(t1);
    const auto t2 = Clock::now();
    for (std::size_t i = 0; i < program.params.size(); ++i) {
      const sem::Value step = sem::kernel_for(*mul)({grads[i], lr}, {});
      args[i] = sem::kernel_for(*sub)({args[i], step}, {});
    }
    const double update = since(t2);
    double local[4] = {since(t0), compute, communication, update}, slowest[4];
    comm::CollectiveCall call;
    call.collective = parallel::Collective::AllReduce;
    call.op = parallel::ReduceOp::Max;
    call.dtype = comm::DType::F64;
    call.count = 4;
    call.input = local;
    call.output = slowest;
    world->native(call);
    if (it < o.warmup) continue;
    step_times.push_back(slowest[0]);
    compute_times.push_back(slowest[1]);
    comm_times.push_back(slowest[2]);
    update_times.push_back(slowest[3]);
  }
  if (rank != 0) return 0;
  if (o.profile) {
    std::printf("# rank 0, per step: the all-reduce executors %.4f ms; primitive, calls, ms\n",
                executor_seconds / o.steps * 1e3);
    for (const auto& [name, v] : profile)
      std::printf("%-20s %5.1f %9.4f\n", name.c_str(), static_cast<double>(v.first) / o.steps,
                  v.second / o.steps * 1e3);
  }
  double param_bytes = program.param_bytes();
  if (o.json) {
    std::printf(
        "{\"ranks\": %d, \"batch_per_rank\": %lld, \"buckets\": %zu, \"param_bytes\": %.0f, "
        "\"steps\": %d, \"step_seconds\": %.9g, \"compute_seconds\": %.9g, "
        "\"communication_seconds\": %.9g, \"update_seconds\": %.9g, \"min_step_seconds\": "
        "%.9g}\n",
        ranks, static_cast<long long>(program.batch), buckets.size(), param_bytes, o.steps,
        median(step_times), median(compute_times), median(comm_times), median(update_times),
        *std::min_element(step_times.begin(), step_times.end()));
    return 0;
  }
  std::printf("# spora run-dp: %s, %d MPI ranks x batch %lld, %zu parameters (%.2f MB), %zu "
              "bucket%s, %s all-reduce, sgd\n",
              o.file.c_str(), ranks, static_cast<long long>(program.batch),
              program.params.size(), param_bytes / 1e6, buckets.size(),
              buckets.size() == 1 ? "" : "s", o.algo.c_str());
  std::printf("# medians over %d steps after %d warm-up steps (the slowest rank's times)\n",
              o.steps, o.warmup);
  std::printf("step time         %.4f ms\n", median(step_times) * 1e3);
  std::printf("forward+backward  %.4f ms\n", median(compute_times) * 1e3);
  std::printf("all-reduce        %.4f ms (with bucket copies)\n", median(comm_times) * 1e3);
  std::printf("update            %.4f ms\n", median(update_times) * 1e3);
  return 0;
}

}  // namespace

CLI::App* add_run_dp_subcommand(CLI::App& app) {
  Options& o = g_options;
  CLI::App* cmd = app.add_subcommand(
      "run-dp", "Run and time real data-parallel training steps over MPI (under mpirun)");
  cmd->add_option("file", o.file, "the program (.sp), as for spora sim")->required();
  cmd->add_option("--batch,-b", o.batch, "global batch, split over the MPI ranks");
  cmd->add_option("--fn", o.entry, "the function that runs one training step")
      ->capture_default_str();
  cmd->add_option("--batch-name", o.batch_name, "the module-level constant that holds the batch")
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "SGD learning rate")->capture_default_str();
  cmd->add_option("--steps", o.steps, "timed steps")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "untimed steps first")->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb, "gradient bucket cap in MiB")->capture_default_str();
  cmd->add_option("--first-bucket-mb", o.first_bucket_mb, "cap of the first bucket in MiB")
      ->capture_default_str();
  cmd->add_option("--algo", o.algo, "all-reduce schedule (ring, tree, halving-doubling, ...)")
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "print one JSON object");
  cmd->add_flag("--profile", o.profile, "also print rank 0's time per primitive");
  cmd->add_flag("--sync", o.sync,
                "barrier before the all-reduces (the communication time then excludes waiting "
                "for the slower rank)");
  return cmd;
}

int run_run_dp_subcommand() {
  try {
    return run(g_options);
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora run-dp: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
