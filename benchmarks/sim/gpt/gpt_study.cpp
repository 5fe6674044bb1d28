// The GPT auto-vs-Megatron study (papers/gpt_auto_vs_megatron.md): for each GPT size of
// Narayanan et al. 2021's table 1, one training step priced by `spora sim-gpt`'s model of
// Megatron-LM (sim/transformer/: fused kernels, shape-dependent GEMM efficiency, 2 + 2
// tensor-parallel all-reduces per layer, 1F1B with scatter / gather, gradient all-reduce beside
// the last backward pass, fused Adam, memory with the CUDA context, NCCL buffers and
// fragmentation counted) for
//   hand      Megatron-LM's table-1 configuration (t, p; d the rest), micro-batch the fastest
//             that fits: `spora sim-gpt` itself (sim::transformer::simulate_gpt);
//   hand+sp   the same with Megatron-LM's sequence parallelism (Korthikanti et al. 2022);
//   auto      the best over every d x t x p (t <= 8 inside a node, p dividing the layers) and
//             micro-batch, each Transformer layer running the operator strategy that the
//             strategy search (parallel/search, dynamic programming) picks for the layer's
//             program (gpt_block.sp) on the t devices, under the memory limit with sim-gpt's
//             headroom; everything outside the layer is sim-gpt's (layer_pipeline.h).
//
// The searched layer is priced in sim-gpt's kernel model, pass by pass (forward, backward):
//   GEMMs         sim-gpt's Megatron GEMM time x (the searched program's GEMMs / Megatron's
//                 layouts' GEMMs, both as our partitioner runs them, each GEMM at its local
//                 shape through sim-gpt's GEMM model)
//   memory-bound  sim-gpt's fused kernels x (the searched program's memory-bound time / that of
//                 Megatron's layouts, both op by op: the same fusion saving on both sides)
//   collectives   the searched program's own, each on the tensor-parallel group with sim-gpt's
//                 ring closed forms (sim/transformer/comm_model.h), all exposed
//   memory        its parameters per device; the stored input (full recomputation) as Megatron;
//                 the working set x (searched / Megatron's layouts' activation peak)
// At t = 1 there is nothing to search: auto's layer is sim-gpt's.
//
//   gpt_study [--sizes 1.7B,3.6B] [--cluster FILE] [--micro-batches 1,2,4,8] [--csv FILE]
//             [--json FILE]  (per size: hand, hand+sp, auto at hand's configuration, auto)
//             [--dp-budget N] [--no-pass-partial-sums]  (the search without the linear
//                                                        operators' partial inputs)
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autodiff/install.h"
#include "layer_pipeline.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/search/cost_graph.h"
#include "parallel/search/from_ir.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/pipeline.h"
#include "sim/spmd_step.h"
#include "sim/step_program.h"
#include "sim/transformer/comm_model.h"
#include "sim/transformer/gpt_sim.h"
#include "sim/transformer/kernels.h"
#include "sim/transformer/layer_ops.h"

namespace {

using namespace spora;

struct Size {
  std::string name;
  int layers, hidden, heads, gpus, batch, hand_t, hand_p;
  double paper_tflops;  // per GPU, Narayanan et al. 2021, Table 1
};

// Narayanan et al. 2021 (arXiv 2104.04473), Table 1 (weak scaling): seq 2048, vocab 51200.
const std::vector<Size> kSizes = {
    {"1.7B", 24, 2304, 24, 32, 512, 1, 1, 137},    {"3.6B", 30, 3072, 32, 64, 512, 2, 1, 138},
    {"7.5B", 36, 4096, 32, 128, 512, 4, 1, 142},   {"18.4B", 40, 6144, 48, 256, 1024, 8, 1, 135},
    {"39.1B", 48, 8192, 64, 512, 1536, 8, 2, 138},
};
constexpr int kSeq = 2048, kVocab = 51200;
constexpr int kMaxMicroBatch = 64;  // the default micro-batch set: every divisor up to this

std::string g_dir;  // benchmarks/sim/gpt
bool g_pass_partial_sums = true;

int g_dp_budget = 64;  // --dp-budget N: SearchOptions::dp_branch_budget

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("cannot read '{}'", path));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The template with `let NAME = ...` lines replaced, in a temporary file of its own.
std::string instantiate(const std::string& file, const std::map<std::string, int>& values) {
  std::istringstream in(read(g_dir + "/" + file));
  std::string out, line;
  while (std::getline(in, line)) {
    for (const auto& [name, v] : values)
      if (line.rfind("let " + name + " = ", 0) == 0) line = fmt::format("let {} = {}", name, v);
    out += line + "\n";
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp ? tmp : "/tmp") + "/gpt_study_XXXXXX.sp";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  const int fd = mkstemps(buf.data(), 3);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file");
  if (write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size()))
    throw std::runtime_error("cannot write a temporary file");
  close(fd);
  return buf.data();
}

// The analytic oracle priced as the study simulates (block() below): compute by the
// simulator's cost model with the matmuls at the f16 peak and every op's bytes halved, and
// redistributions of f16 elements (half the f32 program's bytes) over the NVSwitch link.
parallel::search::DeviceModel device_model(const sim::ClusterSpec& c) {
  parallel::search::DeviceModel d;
  d.peak_flops = c.device.peak_flops.at("f16");  // the matmuls' rate (mixed precision)
  d.memory_bandwidth = c.device.memory_bandwidth;
  d.launch_overhead = c.device.launch_overhead;
  d.op_seconds = [model = sim::CostModel(c.device, "f16")](
                     double flops, double bytes, const std::string& op_class, DType dtype) {
    sem::OpCost cost;
    cost.flops = flops;
    cost.bytes = bytes / 2;
    cost.op_class = op_class;
    return model.time(cost, dtype).seconds;
  };
  d.comm_bytes_scale = 0.5;
  d.pass_partial_sums = g_pass_partial_sums;
  parallel::AxisLink l;
  l.alpha_s = c.interconnect.latency;
  l.bandwidth_Bps = c.interconnect.bandwidth * c.interconnect.efficiency;
  d.comm.axes.assign(1, l);
  return d;
}

std::string megatron_layer_json(int t) {
  if (t == 1) return R"J({"mesh": [1], "layouts": {}})J";
  return fmt::format(
      R"J({{"mesh": [{0}], "layouts": {{"blk.wq": "(1, {0})", "blk.bq": "({0})",
      "blk.wk": "(1, {0})", "blk.bk": "({0})", "blk.wv": "(1, {0})", "blk.bv": "({0})",
      "blk.wo": "({0}, 1)", "blk.w1": "(1, {0})", "blk.b1": "({0})", "blk.w2": "({0}, 1)"}}}})J",
      t);
}

namespace tr = sim::transformer;

// A layer program (the partitioned gpt_block.sp) priced in sim-gpt's kernel and ring models.
struct ProgramCost {
  double gemm[2] = {0, 0}, memory[2] = {0, 0}, comm[2] = {0, 0};  // [forward, backward] seconds
  std::string collectives[2];                                     // "all_reduce 25.2 MB, ..."
  double params = 0;                                              // elements per device
  double working = 0;  // bytes (f16): the program's peak of live intermediates
  std::string strategy;
  double search_seconds = 0;
  // The layer's boundary: the layout it takes x in ("(1, 1, 1)") and the strategy of the op
  // whose result the loss reads, the layer's output ("replicated", "d2:m0").
  std::string x_layout = "replicated", output = "replicated";
  // The dimension x is split along (-1: replicated): "(1, 4, 1)" -> 1.
  int x_dim() const {
    int dim = 0;
    for (size_t i = 1; i < x_layout.size(); ++i) {
      if (x_layout[i] == ',') ++dim;
      if (x_layout[i] >= '2' && x_layout[i] <= '9') return dim;
    }
    return -1;
  }
  bool x_sharded() const { return x_dim() >= 0; }
  // A chain of layers feeds each output to the next layer's x: when the output's layout is not
  // x's, a redistribution runs between layers (output -> x forward, its transpose backward).
  bool boundary_mismatch() const {
    const std::string want = x_sharded() ? fmt::format("d{}:m0", x_dim()) : "replicated";
    return output != want;
  }
};

// `"name": "value"` of a strategy JSON's entry `name` (empty when absent).
std::string json_entry(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"" + name + "\": \"");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 5;
  return json.substr(from, json.find('"', from) - from);
}

// The strategy of the op just before the loss's `mean` in the JSON's "ops" (node order).
std::string output_strategy(const std::string& json) {
  const size_t ops = json.find("\"ops\"");
  const size_t mean = ops == std::string::npos ? ops : json.find("\"mean#", ops);
  if (mean == std::string::npos) return "replicated";
  const size_t line = json.rfind("\n", mean);
  const size_t prev = json.rfind("\"", json.rfind("\": \"", line) - 1);
  const std::string key = json.substr(prev + 1, json.find('"', prev + 1) - prev - 1);
  return json_entry(json, key);
}

// One GEMM of the op-level program at its local shape: [..., m, k] @ [..., k, n]; a 2-D right
// operand folds the left operand's leading axes into m (as cuBLAS runs x @ W).
tr::Kernel gemm_of(const sim::StepOp& op) {
  const sem::Shape& a = op.inputs.at(0)->shape;
  const sem::Shape& w = op.inputs.at(1)->shape;
  const sem::Shape& out = op.output->shape;
  if (a.size() < 2 || w.size() < 2 || out.size() < 2)
    throw std::runtime_error(
        fmt::format("matmul with operand ranks {} and {}", a.size(), w.size()));
  double lead = 1;
  for (size_t i = 0; i + 2 < out.size(); ++i) lead *= static_cast<double>(out[i]);
  const double m = static_cast<double>(out[out.size() - 2]);
  const double n = static_cast<double>(out.back()), k = static_cast<double>(a.back());
  return w.size() == 2 ? tr::gemm(op.prim->name, lead * m, n, k)
                       : tr::gemm(op.prim->name, m, n, k, lead);
}

double collective_seconds(const tr::CommModel& comm, const tr::Group& g, const sim::SpmdOp& op) {
  const double p = static_cast<double>(g.size);
  switch (op.kind) {
    case sim::CollectiveKind::AllReduce:
      return comm.seconds(tr::CommKind::AllReduce, g, op.bytes);
    case sim::CollectiveKind::AllGather:  // op.bytes: the local shard
      return comm.seconds(tr::CommKind::AllGather, g, op.bytes * p);
    case sim::CollectiveKind::ReduceScatter:
    case sim::CollectiveKind::AllToAll:  // (p - 1) / p of the local bytes leave each rank
      return comm.seconds(tr::CommKind::ReduceScatter, g, op.bytes);
  }
  return 0;
}

struct Study {
  const sim::ClusterSpec& cluster;  // scaled to the size's GPUs
  const Size& size;
  tr::GptSimOptions sim_options;
  std::map<std::tuple<int, int>, ProgramCost> hand_programs;          // (t, b)
  std::map<std::tuple<int, int, double>, ProgramCost> auto_programs;  // (t, b, memory limit)

  tr::GptModel model() const { return {size.hidden, size.layers, size.heads, kVocab, kSeq}; }

  // gpt_block.sp at micro-batch b on t devices: Megatron's layouts (hand) or the search's pick
  // under `limit` bytes, partitioned and priced.
  ProgramCost program(int t, int b, bool hand, double limit) {
    const std::string path =
        instantiate("gpt_block.sp", {{"d", size.hidden}, {"heads", size.heads}, {"batch", b}});
    parallel::StepOptions so;
    so.batch = b;
    so.optimizer = "adam";
    const sim::StepProgram step = sim::build_step_program(path, so);
    std::remove(path.c_str());
    ProgramCost out;
    std::string json = megatron_layer_json(t);
    if (!hand) {
      std::vector<std::string> names;
      for (const sim::StepParam& p : step.params) names.push_back(p.name);
      parallel::Mesh mesh;
      mesh.shape = {t};
      const auto start = std::chrono::steady_clock::now();
      const auto g = parallel::search::build_step_cost_graph(
          *step.step, names, static_cast<int>(step.params.size()), 2, mesh, device_model(cluster));
      parallel::search::DeviceModel without = device_model(cluster);
      without.pass_partial_sums = false;
      const auto g0 = parallel::search::build_step_cost_graph(
          *step.step, names, static_cast<int>(step.params.size()), 2, mesh, without);
      parallel::search::SearchOptions o;
      o.memory_limit = limit;
      o.dp_branch_budget = g_dp_budget;
      const parallel::search::SearchResult r =
          g_pass_partial_sums ? parallel::search::search_dp_two_starts(g, g0, o)
                              : parallel::search::search_dp_fitting(g.graph, o);
      out.search_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!r.top.at(0).feasible)
        std::fprintf(stderr, "  search t=%d b=%d: no strategy fits %.2f GB (%.2f GB over)\n", t, b,
                     limit / 1e9, parallel::search::bytes_over_limit(r.top[0], limit) / 1e9);
      json = parallel::search::strategy_json(g, r.top.at(0));
    }
    out.strategy = json;
    if (!hand) {
      if (const std::string x = json_entry(json, "x"); !x.empty()) out.x_layout = x;
      out.output = output_strategy(json);
    }
    const parallel::Strategy s = parallel::parse_strategy(json, *step.step, "gpt_block.sp");
    const parallel::Partitioned part =
        parallel::partition_training_step(*step.step, step.params.size(), s);
    const sim::SpmdProgram whole =
        sim::spmd_program(*part.graph, s.mesh.shape, step.params.size(), "adam");
    const auto [fwd, bwd] = sim::split_forward_backward(*part.graph, whole);
    // Mixed precision: every op and collective moves half the f32 program's bytes.
    const tr::KernelTimer timer(cluster.device, "f16", 2);
    const tr::CommModel comm(cluster);
    const tr::Group group = tr::tensor_group(cluster, t);
    int pass = 0;
    for (const sim::SpmdProgram* p : {&fwd, &bwd}) {
      std::map<std::string, std::pair<int, double>> kinds;
      for (const sim::SpmdOp& op : p->ops) {
        if (op.collective) {
          sim::SpmdOp half = op;
          half.bytes /= 2;
          out.comm[pass] += collective_seconds(comm, group, half);
          auto& [n, bytes] = kinds[std::string(sim::collective_kind_name(op.kind))];
          ++n, bytes += half.bytes;
        } else if (op.op.cost.op_class == "matmul") {
          out.gemm[pass] += timer.seconds(gemm_of(op.op));
        } else {
          out.memory[pass] += timer.seconds(
              tr::memory_kernel(op.op.prim->name, op.op.cost.bytes / 2, op.op.cost.op_class));
        }
      }
      for (const auto& [k, v] : kinds)
        out.collectives[pass] +=
            fmt::format("{}{} x{} {:.1f} MB", out.collectives[pass].empty() ? "" : ", ", k, v.first,
                        v.second / 1e6);
      ++pass;
    }
    out.params = whole.param_bytes / 4;
    out.working = whole.activation_peak / 2;
    std::fprintf(stderr,
                 "  layer t=%d b=%d %s%s: GEMM %.3f / %.3f ms, memory-bound %.3f / %.3f ms, "
                 "collectives %.3f / %.3f ms (forward / backward; forward: %s; backward: %s), "
                 "%.0f parameters per device, x %s, output %s (search %.1f s)\n",
                 t, b, hand ? "Megatron layouts" : "searched",
                 hand ? "" : fmt::format(" (limit {:.2f} GB)", limit / 1e9).c_str(),
                 out.gemm[0] * 1e3, out.gemm[1] * 1e3, out.memory[0] * 1e3, out.memory[1] * 1e3,
                 out.comm[0] * 1e3, out.comm[1] * 1e3, out.collectives[0].c_str(),
                 out.collectives[1].c_str(), out.params, out.x_layout.c_str(), out.output.c_str(),
                 out.search_seconds);
    return out;
  }

  const ProgramCost& hand_program(int t, int b) {
    const auto key = std::make_tuple(t, b);
    auto it = hand_programs.find(key);
    if (it == hand_programs.end()) it = hand_programs.emplace(key, program(t, b, true, 0)).first;
    return it->second;
  }
  const ProgramCost& auto_program(int t, int b, double limit) {
    const auto key = std::make_tuple(t, b, limit);
    auto it = auto_programs.find(key);
    if (it == auto_programs.end())
      it = auto_programs.emplace(key, program(t, b, false, limit)).first;
    return it->second;
  }

  // The search's memory limit for one layer: the device's memory less sim-gpt's headroom for
  // this configuration, over the layers of a stage.
  double layer_limit(const tr::GptParallel& par) const {
    const int comms = (par.tp > 1) + (par.dp > 1) + 2 * (par.pp > 1);
    const parallel::search::MemoryHeadroom h{
        sim_options.cuda_context_bytes + comms * sim_options.nccl_bytes_per_communicator,
        sim_options.fragmentation};
    return parallel::search::memory_limit_with_headroom(cluster.device.memory_bytes, h) /
           static_cast<double>(size.layers / par.pp);
  }

  // The searched layer in sim-gpt's terms (the header's rules).
  // A layer's time in terms, [forward, backward without recomputation], milliseconds.
  struct Terms {
    double gemm[2] = {0, 0}, memory[2] = {0, 0}, comm[2] = {0, 0}, boundary[2] = {0, 0};
    std::string line() const {
      return fmt::format(
          "GEMM {:.3f} / {:.3f}, memory-bound {:.3f} / {:.3f}, tensor-parallel collectives "
          "{:.3f} / {:.3f}, layer boundary {:.3f} / {:.3f} ms (forward / backward); total {:.3f} "
          "ms",
          gemm[0], gemm[1], memory[0], memory[1], comm[0], comm[1], boundary[0], boundary[1],
          gemm[0] + gemm[1] + memory[0] + memory[1] + comm[0] + comm[1] + boundary[0] +
              boundary[1]);
    }
  };
  // sim-gpt's Megatron layer (with or without sequence parallelism) in terms.
  Terms megatron_terms(const tr::GptParallel& par) const {
    const tr::KernelTimer timer(cluster.device, par.precision, 2);
    const tr::CommModel comm(cluster);
    const tr::Group group = tr::tensor_group(cluster, par.tp);
    const tr::LayerShape x = tr::layer_shape(model(), par, par.micro_batch);
    Terms out;
    int pass = 0;
    for (const tr::PassOps& ops : {tr::layer_forward(x), tr::layer_backward(x)}) {
      std::vector<double> k(ops.kernels.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = timer.seconds(ops.kernels[i]);
        (ops.kernels[i].kind == tr::KernelKind::Gemm ? out.gemm : out.memory)[pass] += k[i] * 1e3;
      }
      for (const tr::TpCollective& c : ops.collectives) {
        double sec = comm.seconds(c.kind, group, c.bytes);
        if (c.hidden_by >= 0) sec = std::max(0.0, sec - k[static_cast<size_t>(c.hidden_by)]);
        out.comm[pass] += sec * 1e3;
      }
      ++pass;
    }
    return out;
  }

  gpt_study::LayerCost auto_layer(const tr::GptParallel& par, Terms* terms = nullptr) {
    const gpt_study::LayerCost meg = gpt_study::megatron_layer(cluster, model(), par);
    if (par.tp == 1) {
      if (terms) *terms = megatron_terms(par);
      return meg;
    }
    const int t = static_cast<int>(par.tp), b = static_cast<int>(par.micro_batch);
    const ProgramCost& hp = hand_program(t, b);
    const ProgramCost& ap = auto_program(t, b, layer_limit(par));
    const tr::KernelTimer timer(cluster.device, par.precision, 2);
    const tr::LayerShape x = tr::layer_shape(model(), par, par.micro_batch);
    gpt_study::LayerCost out = meg;
    int pass = 0;
    for (const tr::PassOps& ops : {tr::layer_forward(x), tr::layer_backward(x)}) {
      double gemm = 0, memory = 0;
      for (const tr::Kernel& k : ops.kernels)
        (k.kind == tr::KernelKind::Gemm ? gemm : memory) += timer.seconds(k);
      const double s = gemm * ap.gemm[pass] / hp.gemm[pass] +
                       memory * ap.memory[pass] / hp.memory[pass] + ap.comm[pass];
      if (terms) {
        terms->gemm[pass] = gemm * ap.gemm[pass] / hp.gemm[pass] * 1e3;
        terms->memory[pass] = memory * ap.memory[pass] / hp.memory[pass] * 1e3;
        terms->comm[pass] = ap.comm[pass] * 1e3;
      }
      (pass == 0 ? out.forward : out.backward) = s;
      (pass == 0 ? out.forward_comm : out.backward_comm) = ap.comm[pass];
      ++pass;
    }
    if (ap.boundary_mismatch()) {  // all-gather forward, reduce-scatter backward
      const double act = x.b * x.s * x.h * x.E;
      const tr::CommModel comm(cluster);
      const tr::Group group = tr::tensor_group(cluster, par.tp);
      const double f = comm.seconds(tr::CommKind::AllGather, group, act);
      const double bw = comm.seconds(tr::CommKind::ReduceScatter, group, act);
      out.forward += f, out.forward_comm += f;
      out.backward += bw, out.backward_comm += bw;
      if (terms) terms->boundary[0] = f * 1e3, terms->boundary[1] = bw * 1e3;
    }
    out.local_params = ap.params;
    if (ap.x_sharded()) out.stored_bytes = meg.stored_bytes / static_cast<double>(par.tp);
    out.working_bytes = meg.working_bytes * ap.working / hp.working;
    return out;
  }
};

struct Config {
  tr::GptSimResult r;
  bool found = false;
};

std::string json_of(const Config& c) {
  if (!c.found) return "null";
  const tr::GptParallel& p = c.r.parallel;
  return fmt::format(
      "{{\"d\": {}, \"t\": {}, \"p\": {}, \"b\": {}, \"m\": {}, \"sequence_parallel\": {}, "
      "\"step_seconds\": {:.6f}, \"tflops_per_gpu\": {:.2f}, \"memory_per_gpu_bytes\": {:.0f}, "
      "\"layer_forward_seconds\": {:.9f}, \"layer_backward_seconds\": {:.9f}}}",
      p.dp, p.tp, p.pp, p.micro_batch, p.micro_batches(), p.sequence_parallel, c.r.step_seconds,
      c.r.tflops_per_gpu, c.r.memory.total(), c.r.layer_forward_seconds,
      c.r.layer_backward_seconds);
}

std::string describe(const tr::GptParallel& p) {
  return fmt::format("d={} t={} p={} b={} m={}", p.dp, p.tp, p.pp, p.micro_batch,
                     p.micro_batches());
}

// "1,2,4" -> {1, 2, 4}; nullopt unless every item is a positive integer.
std::optional<std::vector<int>> parse_ints(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, ',')) {
    char* end = nullptr;
    const long n = std::strtol(x.c_str(), &end, 10);
    if (x.empty() || *end || n < 1 || n > 1 << 20) return std::nullopt;
    v.push_back(static_cast<int>(n));
  }
  if (v.empty()) return std::nullopt;
  return v;
}

int run(const std::string& sizes, const std::string& cluster_path, const std::vector<int>& micro,
        const std::string& csv, const std::string& json);

// The micro-batch sizes tried for `per_replica` sequences per replica: `given`, or every divisor
// up to kMaxMicroBatch (what `spora sim-gpt --micro-batch auto` tries, capped).
std::vector<int> micro_batches(const std::vector<int>& given, int per_replica) {
  if (!given.empty()) return given;
  std::vector<int> out;
  for (int b = 1; b <= std::min(per_replica, kMaxMicroBatch); ++b)
    if (per_replica % b == 0) out.push_back(b);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "1.7B,3.6B,7.5B,18.4B,39.1B", cluster_path, csv, json;
  std::vector<int> micro;  // empty: every divisor of the batch per replica up to kMaxMicroBatch
  g_dir = SPORA_SOURCE_DIR "/benchmarks/sim/gpt";
  cluster_path = g_dir + "/dgx-a100-64.yaml";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpt_study: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sizes")
      sizes = next();
    else if (a == "--cluster")
      cluster_path = next();
    else if (a == "--micro-batches") {  // default: every divisor up to kMaxMicroBatch
      const std::string text = next();
      const auto v = parse_ints(text);
      if (!v) {
        std::fprintf(
            stderr, "gpt_study: --micro-batches expects positive integers like 1,2,4,8, got '%s'\n",
            text.c_str());
        return 2;
      }
      micro = *v;
    } else if (a == "--csv")
      csv = next();
    else if (a == "--json")
      json = next();
    else if (a == "--dp-budget")
      g_dp_budget = std::max(1, std::atoi(next().c_str()));
    else if (a == "--no-pass-partial-sums")
      g_pass_partial_sums = false;
    else {
      std::fprintf(stderr, "gpt_study: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  ops::register_all();
  autodiff::install();
  try {
    return run(sizes, cluster_path, micro, csv, json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt_study: error: %s\n", e.what());
    return 1;
  }
}

namespace {

int run(const std::string& sizes, const std::string& cluster_path, const std::vector<int>& micro,
        const std::string& csv, const std::string& json) {
  const sim::ClusterSpec base = sim::load_cluster_spec(cluster_path);
  int matched = 0;
  std::string table =
      "| size | GPUs | hand: Megatron (sim-gpt) | hand step | hand+sp step | auto layer at hand's "
      "config | / hand | auto (best) | auto step | auto / hand | auto / best hand | Megatron(+sp) "
      "at "
      "auto's config | auto / that | hand TFLOP/s/GPU | hand+sp | auto | paper |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string summary;
  std::string rows = "size,mode,d,t,p,b,m,step_s,memory_GB,fits,tflops_per_gpu\n";
  for (const Size& s : kSizes) {
    if (("," + sizes + ",").find("," + s.name + ",") == std::string::npos) continue;
    ++matched;
    const sim::ClusterSpec cluster = tr::scale_cluster(base, s.gpus);
    Study st{cluster, s, {}, {}, {}};
    const tr::GptModel model = st.model();
    auto record = [&](const char* mode, const tr::GptSimResult& r) {
      rows += fmt::format("{},{},{},{},{},{},{},{:.6f},{:.3f},{},{:.2f}\n", s.name, mode,
                          r.parallel.dp, r.parallel.tp, r.parallel.pp, r.parallel.micro_batch,
                          r.parallel.micro_batches(), r.step_seconds, r.memory.total() / 1e9,
                          r.fits ? "yes" : "no", r.tflops_per_gpu);
    };
    auto keep = [](Config& best, const tr::GptSimResult& r) {
      if (r.fits && (!best.found || r.step_seconds < best.r.step_seconds))
        best.r = r, best.found = true;
    };
    // hand and hand+sp: sim-gpt at Megatron's (t, p).
    Config hand, hand_sp;
    for (bool sp : {false, true})
      for (int b : micro_batches(micro, s.batch / (s.gpus / (s.hand_t * s.hand_p)))) {
        tr::GptParallel par{.global_batch = s.batch, .tp = s.hand_t, .pp = s.hand_p};
        par.precision = "f16";
        par.sequence_parallel = sp;
        tr::resolve_parallel(model, par, s.gpus);
        if ((par.global_batch / par.dp) % b) continue;
        par.micro_batch = b;
        const tr::GptSimResult r = tr::simulate_gpt(cluster, model, par, st.sim_options);
        record(sp ? "hand+sp" : "hand", r);
        keep(sp ? hand_sp : hand, r);
        if (!sp) {  // the study's pipeline with sim-gpt's layer is sim-gpt's step
          const tr::GptSimResult again = gpt_study::simulate_with_layer(
              cluster, model, par, gpt_study::megatron_layer(cluster, model, par), st.sim_options);
          if (std::abs(again.step_seconds - r.step_seconds) > 1e-9 * r.step_seconds)
            throw std::runtime_error(
                fmt::format("{}: the study's pipeline gives {} s, sim-gpt {} s", s.name,
                            again.step_seconds, r.step_seconds));
        }
      }
    // auto: every configuration, the searched layer.
    Config aut;
    for (int t : {1, 2, 4, 8}) {
      if (s.heads % t || kVocab % t) continue;
      for (int p = 1; p <= s.layers; ++p) {
        if (s.layers % p || s.gpus % (t * p)) continue;
        for (int b : micro_batches(micro, s.batch / (s.gpus / (t * p)))) {
          tr::GptParallel par{.global_batch = s.batch, .tp = t, .pp = p};
          par.precision = "f16";
          tr::resolve_parallel(model, par, s.gpus);
          if ((par.global_batch / par.dp) % b) continue;
          par.micro_batch = b;
          // Skip what cannot fit without searching: the searched layer keeps at least 1/t of
          // the weights (16 bytes per parameter with gradient and Adam state); Megatron's layer
          // keeps exactly that plus its 6 h replicated norm and bias elements (`slack`).
          const tr::GptSimResult floor = gpt_study::simulate_with_layer(
              cluster, model, par, gpt_study::megatron_layer(cluster, model, par), st.sim_options);
          const double frag = 1 + st.sim_options.fragmentation;
          const double slack = (s.layers / p) * 6.0 * s.hidden * 16 * frag;
          if (floor.memory.total() - floor.memory.activations * frag - slack >
              floor.memory.capacity) {
            record("auto", floor);
            continue;
          }
          const tr::GptSimResult r = gpt_study::simulate_with_layer(
              cluster, model, par, st.auto_layer(par), st.sim_options);
          record("auto", r);
          std::fprintf(stderr, "%s auto %s: %.4f s, %.2f GB%s\n", s.name.c_str(),
                       describe(r.parallel).c_str(), r.step_seconds, r.memory.total() / 1e9,
                       r.fits ? "" : " (does not fit)");
          keep(aut, r);
        }
      }
    }
    // The searched layer at Megatron's own configuration (hand's t, p, b): the layer alone.
    Config same;
    if (hand.found) {
      same.r = gpt_study::simulate_with_layer(cluster, model, hand.r.parallel,
                                              st.auto_layer(hand.r.parallel), st.sim_options);
      same.found = same.r.fits;
      record("auto@hand", same.r);
    }
    // Megatron-LM (with sequence parallelism when t > 1) at auto's configuration: what the
    // configuration search alone gives a hand-written strategy.
    Config meg_at_auto;
    if (aut.found) {
      tr::GptParallel par = aut.r.parallel;
      par.sequence_parallel = par.tp > 1;
      meg_at_auto.r = tr::simulate_gpt(cluster, model, par, st.sim_options);
      meg_at_auto.found = meg_at_auto.r.fits;
      record("hand+sp@auto", meg_at_auto.r);
    }
    // The strongest Megatron: the faster of hand and hand+sp.
    const Config& best_hand =
        hand_sp.found && (!hand.found || hand_sp.r.step_seconds < hand.r.step_seconds) ? hand_sp
                                                                                       : hand;
    auto step = [](const Config& c) {
      return c.found ? fmt::format("{:.3f} s", c.r.step_seconds) : std::string("nothing fits");
    };
    auto tf = [](const Config& c) {
      return c.found ? fmt::format("{:.0f}", c.r.tflops_per_gpu) : std::string("-");
    };
    auto ratio = [](const Config& a, const Config& h) {
      return a.found && h.found ? fmt::format("{:.3f}", a.r.step_seconds / h.r.step_seconds)
                                : std::string("-");
    };
    table += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0f} "
        "|\n",
        s.name, s.gpus, hand.found ? describe(hand.r.parallel) : "-", step(hand), step(hand_sp),
        step(same), ratio(same, hand), aut.found ? describe(aut.r.parallel) : "-", step(aut),
        ratio(aut, hand), ratio(aut, best_hand), step(meg_at_auto), ratio(aut, meg_at_auto),
        tf(hand), tf(hand_sp), tf(aut), s.paper_tflops);
    summary += fmt::format(
        "{{\"size\": \"{}\", \"gpus\": {}, \"hand\": {}, \"hand_sp\": {}, "
        "\"auto_at_hand_config\": {}, \"auto\": {}, \"megatron_at_auto_config\": {}, "
        "\"paper_tflops_per_gpu\": {}}},\n",
        s.name, s.gpus, json_of(hand), json_of(hand_sp), json_of(same), json_of(aut),
        json_of(meg_at_auto), s.paper_tflops);
    if (aut.found && aut.r.parallel.tp > 1) {
      const tr::GptParallel& a = aut.r.parallel;
      const ProgramCost& ap = st.auto_program(static_cast<int>(a.tp),
                                              static_cast<int>(a.micro_batch), st.layer_limit(a));
      std::fprintf(stderr, "%s auto layer strategy (%s): %s\n", s.name.c_str(), describe(a).c_str(),
                   ap.strategy.c_str());
    }
    // Where the layers differ: hand, hand+sp and the searched layer at each of their
    // configurations, term by term.
    for (const Config* c : {&hand, &hand_sp, &aut}) {
      if (!c->found) continue;
      tr::GptParallel par = c->r.parallel;
      const char* who = c == &hand ? "hand" : c == &hand_sp ? "hand+sp" : "auto";
      std::fprintf(stderr, "%s layer terms at %s's %s:\n", s.name.c_str(), who,
                   describe(par).c_str());
      par.sequence_parallel = false;
      std::fprintf(stderr, "  hand     %s\n", st.megatron_terms(par).line().c_str());
      if (par.tp > 1) {
        par.sequence_parallel = true;
        std::fprintf(stderr, "  hand+sp  %s\n", st.megatron_terms(par).line().c_str());
        par.sequence_parallel = false;
      }
      Study::Terms at;
      st.auto_layer(par, &at);
      std::fprintf(stderr, "  searched %s\n", at.line().c_str());
    }
    for (const auto* c : {&hand, &hand_sp, &aut})
      if (c->found)
        std::fprintf(stderr, "%s %s %s:\n%s", s.name.c_str(),
                     c == &hand      ? "hand"
                     : c == &hand_sp ? "hand+sp"
                                     : "auto",
                     describe(c->r.parallel).c_str(), tr::gpt_report(c->r).c_str());
    std::fputs(table.c_str(), stderr);
  }
  if (matched == 0)
    throw std::runtime_error(
        fmt::format("--sizes {} names no size (1.7B, 3.6B, 7.5B, 18.4B, 39.1B)", sizes));
  std::fputs(table.c_str(), stdout);
  if (!json.empty()) {
    std::ofstream f(json, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", json));
    if (!summary.empty()) summary.resize(summary.size() - 2);  // the last ",\n"
    f << "{\"cluster\": \"" << base.name << "\", \"micro_batches\": "
      << (micro.empty()
              ? fmt::format("\"every divisor of the batch per replica up to {}\"", kMaxMicroBatch)
              : fmt::format("[{}]", fmt::join(micro, ", ")))
      << ", \"sizes\": [\n"
      << summary << "\n]}\n";
  }
  if (!csv.empty()) {
    std::ofstream f(csv, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", csv));
    f << rows;
  }
  return 0;
}

}  // namespace
