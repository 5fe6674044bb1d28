// `spora sim-gpt` (tools/cmd_sim_gpt.h): options in, sim::transformer out.
#include "tools/cmd_sim_gpt.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/transformer/gpt_sim.h"

namespace spora::tools {

namespace {

namespace tr = sim::transformer;

struct Options {
  std::string cluster;
  int64_t gpus = 0;
  tr::GptModel model;
  tr::GptParallel par;
  std::string micro_batch = "auto";
  std::string recompute = "full";
  bool no_grad_overlap = false, no_scatter_gather = false;
  double fragmentation = 0.05;
  double comm_sm_share = -1;
  bool no_measured_kernels = false;
  std::vector<std::string> kernel_rates;
  bool one_ring = false, no_nic_sharing = false;
  bool json = false;
};

int run(Options& o) {
  sim::ClusterSpec base = sim::load_cluster_spec(o.cluster);
  if (o.no_measured_kernels) base.device.kernels.clear();
  for (const std::string& kv : o.kernel_rates) {
    const auto eq = kv.find('=');
    const std::string name = kv.substr(0, eq);
    const auto& names = sim::kernel_rate_names();
    double v = 0;
    const char* text = eq == std::string::npos ? "" : kv.c_str() + eq + 1;
    char* end = nullptr;
    v = std::strtod(text, &end);
    if (eq == std::string::npos || std::find(names.begin(), names.end(), name) == names.end() ||
        end == text || *end != '\0' || !(v > 0 && v <= 1))
      throw tr::GptConfigError(fmt::format(
          "--kernel-rate: expected NAME=FRACTION with NAME one of {} and FRACTION in (0, 1], got "
          "'{}'",
          fmt::join(names, ", "), kv));
    base.device.kernels[name] = v;
  }
  const int64_t gpus = o.gpus ? o.gpus : base.device_count();
  const sim::ClusterSpec cluster = tr::scale_cluster(base, gpus);
  o.par.recompute = tr::parse_recompute(o.recompute);
  if (o.micro_batch == "auto") {
    o.par.micro_batch = 0;
  } else {
    try {
      size_t used = 0;
      o.par.micro_batch = std::stoll(o.micro_batch, &used);
      if (used != o.micro_batch.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw tr::GptConfigError("--micro-batch: expected auto or a positive integer, got '" +
                               o.micro_batch + "'");
    }
  }
  tr::resolve_parallel(o.model, o.par, gpus);
  tr::GptSimOptions opt;
  opt.grad_overlap = !o.no_grad_overlap;
  opt.scatter_gather = !o.no_scatter_gather;
  opt.fragmentation = o.fragmentation;
  opt.comm_sm_share = o.comm_sm_share;
  opt.links.channels = !o.one_ring;
  opt.links.nic_sharing = !o.no_nic_sharing;
  // Progress on stderr once a run has taken more than a second.
  const auto start = std::chrono::steady_clock::now();
  opt.progress = [start](const std::string& line) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(1))
      std::fprintf(stderr, "sim-gpt: %s\n", line.c_str());
  };
  const tr::GptSimResult r = tr::simulate_gpt(cluster, o.model, o.par, opt);
  const std::string out = o.json ? tr::gpt_json(r) : tr::gpt_report(r);
  std::fputs(out.c_str(), stdout);
  if (!r.fits) {
    const tr::GptMemory& m = r.memory;
    std::fprintf(stderr,
                 "spora sim-gpt: error: the configuration does not fit: %.2f GB per GPU, "
                 "%.2f GB over the %.2f GB of a GPU\n",
                 m.total() / 1e9, (m.total() - m.capacity) / 1e9, m.capacity / 1e9);
    return 1;
  }
  return 0;
}

}  // namespace

int run_sim_gpt_command(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::string(args[1]) == "sim-gpt") args.erase(args.begin() + 1);
  Options o;
  CLI::App app{"Simulate a GPT training step as Megatron-LM runs it", "spora sim-gpt"};
  app.add_option("--cluster,-c", o.cluster, "cluster spec (YAML)")->required();
  app.add_option("--gpus", o.gpus, "GPUs (scales the spec's node count; default: all of it)");
  app.add_option("--hidden", o.model.hidden, "hidden size h")->required();
  app.add_option("--layers", o.model.layers, "Transformer layers l")->required();
  app.add_option("--heads", o.model.heads, "attention heads a")->required();
  app.add_option("--vocab", o.model.vocab, "vocabulary size V")->capture_default_str();
  app.add_option("--seq", o.model.seq, "sequence length s")->capture_default_str();
  app.add_option("--batch", o.par.global_batch, "global batch (sequences per step)")->required();
  app.add_option("--micro-batch", o.micro_batch,
                 "sequences per micro-batch, or auto (the "
                 "fastest that fits)")
      ->capture_default_str();
  app.add_option("--tp", o.par.tp, "tensor-parallel size")->capture_default_str();
  app.add_option("--pp", o.par.pp, "pipeline stages")->capture_default_str();
  app.add_option("--dp", o.par.dp, "data-parallel size (default: what remains)");
  app.add_option("--virtual-stages", o.par.virtual_stages,
                 "model chunks per stage (interleaved 1F1B)")
      ->capture_default_str();
  app.add_option("--recompute", o.recompute, "none, selective or full")->capture_default_str();
  app.add_flag("--sequence-parallel", o.par.sequence_parallel, "Megatron's sequence parallelism");
  app.add_flag("--async-tp-allreduce", o.par.async_tp_allreduce,
               "run the backward tensor-parallel all-reduce beside the weight-gradient GEMM "
               "(Megatron-LM's async_tensor_model_parallel_allreduce)");
  app.add_option("--zero", o.par.zero, "ZeRO stage 0-3 over the data-parallel group")
      ->capture_default_str();
  app.add_option("--precision", o.par.precision, "bf16 or f16")->capture_default_str();
  app.add_flag("--no-grad-overlap", o.no_grad_overlap,
               "reduce the gradients after the last backward pass, not beside it");
  app.add_flag("--no-scatter-gather", o.no_scatter_gather,
               "send whole activations between stages (no scatter / gather optimisation)");
  app.add_option("--fragmentation", o.fragmentation,
                 "allocator headroom as a share of the allocated memory")
      ->capture_default_str();
  app.add_flag("--no-measured-kernels", o.no_measured_kernels,
               "ignore the spec's device.kernels (the built-in GEMM ceiling, the op classes' "
               "efficiencies)");
  app.add_option("--kernel-rate", o.kernel_rates,
                 "NAME=FRACTION: a measured kernel rate, as device.kernels takes it (repeatable)");
  app.add_option("--comm-sm-share", o.comm_sm_share,
                 "share of a GPU a running collective's kernels hold, slowing the compute beside "
                 "it (default: the spec's device.comm_sm_share; 0: off)")
      ->check(CLI::Range(0.0, 0.95));
  app.add_flag("--one-ring", o.one_ring,
               "rings across nodes use one NIC (no channel per NIC), to show what channels bring");
  app.add_flag("--no-nic-sharing", o.no_nic_sharing,
               "give every group at least one NIC of its own, as if it ran alone");
  app.add_flag("--json", o.json, "print one JSON object");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora sim-gpt: error: %s\n", e.what());
    return 1;
  }
}

CLI::App* add_sim_gpt_subcommand(CLI::App& app) {
  CLI::App* sim = app.add_subcommand(
      "sim-gpt", "Simulate a GPT training step as Megatron-LM runs it (spora sim-gpt --help)");
  sim->prefix_command();
  sim->set_help_flag();
  return sim;
}

int run_sim_gpt_subcommand(CLI::App& sim_gpt) {
  std::vector<std::string> rest = sim_gpt.remaining();
  std::vector<char*> args{const_cast<char*>("spora sim-gpt")};
  for (std::string& s : rest) args.push_back(s.data());
  return run_sim_gpt_command(static_cast<int>(args.size()), args.data());
}

}  // namespace spora::tools
