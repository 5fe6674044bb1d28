// The GPT auto-vs-Megatron study (papers/gpt_auto_vs_megatron.md): for each GPT size of
// Narayanan et al. 2021's weak-scaling table, the simulated training step of
//   hand   Megatron's configuration: tensor parallelism t inside a node with the column / row
//          splits of Megatron-LM, pipeline parallelism p across nodes, data parallelism over the
//          rest; the micro-batch size that the simulator finds best (1, 2, 4 or 8);
//   auto   the best over every factorisation d x t x p of the GPU count (t <= 8 inside a node,
//          p dividing the layers) and micro-batch size, with the intra-stage operator strategy
//          of the strategy search (parallel/search, dynamic programming) on the stage's mesh;
// both under the 80 GB memory of an A100, 1F1B, full activation recomputation, Adam in mixed
// precision.
//
// What is simulated (sim/pipeline.h): one decoder layer (gpt_block.sp) and the head
// (gpt_head.sp) at the size's widths and the micro-batch, partitioned over the stage's t
// devices (parallel/partition) and split into forward and backward; their SPMD programs run on
// the cluster (sim/spmd_step.h: compute streams and ring collectives) once, and a stage's time
// per micro-batch is layers x layer + head. The pipeline of S stages, M micro-batches, the p2p
// messages between nodes and the gradient all-reduce over the d replicas then run in SimGrid.
//
//   gpt_study [--sizes 1.7B,3.6B] [--cluster FILE] [--micro-batches 1,2,4,8] [--csv FILE]
//             [--trace FILE]   (the Chrome trace of Megatron's configuration, last size)
//             [--blocks T]     (only the layer at t = T, hand and auto: simulated and analytic)
//             [--no-pass-partial-sums]  (the search without the linear operators' partial
//                                        inputs: parallel/search/from_ir.h)
#include <fmt/format.h>
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
constexpr double kParamBytes = 2, kGradBytes = 2, kOptimizerBytes = 12;  // fp16, fp16, fp32 x 3

std::string g_dir;  // benchmarks/sim/gpt
bool g_pass_partial_sums = true;
int g_explain = 0;
int g_dp_budget = 64;  // --dp-budget N: SearchOptions::dp_branch_budget  // --explain N: the N
                       // largest terms of each layer's analytic price  //
                       // --no-pass-partial-sums: the ablation (from_ir.h)

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
    sim::OpCost cost;
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

struct Block {
  sim::StageTimes times;  // per micro-batch
  double params = 0;      // per device (elements)
  double working = 0;     // bytes: the peak of live intermediates of one pass, in f16
  std::string strategy;   // for people
};

// One program (layer or head) at micro-batch b on t devices, hand or auto.
Block block(const sim::ClusterSpec& c, const std::string& file, std::map<std::string, int> values,
            int b, int t, bool hand, const std::string& hand_json, double memory_limit) {
  values["batch"] = b;
  const std::string path = instantiate(file, values);
  parallel::StepOptions so;
  so.batch = b;
  so.optimizer = "adam";
  const sim::StepProgram step = sim::build_step_program(path, so);
  std::remove(path.c_str());
  std::string json;
  std::vector<std::string> names;
  for (const sim::StepParam& p : step.params) names.push_back(p.name);
  parallel::Mesh mesh;
  mesh.shape = {t};
  const auto g = parallel::search::build_step_cost_graph(
      *step.step, names, static_cast<int>(step.params.size()), 2, mesh, device_model(c));
  double search_seconds = 0;
  if (hand || t == 1) {
    json = hand_json;
  } else {
    parallel::search::SearchOptions o;
    o.memory_limit = memory_limit;
    o.dp_branch_budget = g_dp_budget;
    const auto start = std::chrono::steady_clock::now();
    parallel::search::DeviceModel without = device_model(c);
    without.pass_partial_sums = false;
    const auto g0 = parallel::search::build_step_cost_graph(
        *step.step, names, static_cast<int>(step.params.size()), 2, mesh, without);
    const parallel::search::SearchResult r = g_pass_partial_sums
                                                 ? parallel::search::search_dp_two_starts(g, g0, o)
                                                 : parallel::search::search_dp_fitting(g.graph, o);
    search_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    json = parallel::search::strategy_json(g, r.top.at(0));
    if (g_explain > 0) std::fprintf(stderr, "  search: %s\n", r.notes.c_str());
  }
  const parallel::Strategy s = parallel::parse_strategy(json, *step.step, file);
  const parallel::Partitioned part =
      parallel::partition_training_step(*step.step, step.params.size(), s);
  // The analytic oracle's price of what is simulated (the partitioner's run of the strategy),
  // without the parameters' update (the pipeline charges it once per step).
  std::vector<std::string> unmatched;
  const parallel::search::Assignment priced = parallel::search::assignment_of(
      g, *step.step, part.param_layouts, part.strategies, &unmatched);
  if (g_explain > 0) {
    const parallel::search::CostTerms terms = parallel::search::cost_terms(g, priced);
    std::fprintf(stderr, "  %s b=%d t=%d %s analytic: operators %.3f ms, edges %.3f ms\n",
                 file.c_str(), b, t, hand ? "hand" : "auto", terms.nodes * 1e3, terms.edges * 1e3);
    for (size_t i = 0; i < terms.terms.size() && i < static_cast<size_t>(g_explain); ++i)
      std::fprintf(stderr, "    %9.3f us  %s\n", terms.terms[i].seconds * 1e6,
                   terms.terms[i].what.c_str());
    for (const std::string& u : unmatched) std::fprintf(stderr, "    unmatched: %s\n", u.c_str());
  }
  double update = 0;
  for (size_t n = 0; n < g.origins.size(); ++n)
    if (g.origins[n].is_param)
      update += g.graph.nodes[n].cost[static_cast<size_t>(priced.choice[n])];
  const sim::SpmdProgram whole =
      sim::spmd_program(*part.graph, s.mesh.shape, step.params.size(), "adam");
  auto [fwd, bwd] = sim::split_forward_backward(*part.graph, whole);
  // Mixed precision keeps activations, weights and gradients in f16: every op and collective
  // moves half the bytes of the f32 program (the matmuls already run at the f16 peak).
  for (sim::SpmdProgram* p : {&fwd, &bwd})
    for (sim::SpmdOp& op : p->ops) {
      op.op.cost.bytes /= 2;
      op.bytes /= 2;
    }
  sim::PipelineStage st;
  st.blocks.push_back({file, std::move(fwd), std::move(bwd), 1});
  sim::SpmdSimOptions opt;
  opt.matmul_dtype = "f16";
  Block out;
  out.times = sim::stage_times(c, st, opt);
  out.params = whole.param_bytes / 4;
  out.working = whole.activation_peak / 2;
  out.strategy = json;
  std::fprintf(stderr,
               "  %s b=%d t=%d %s (memory limit %.1f GB): forward %.3f ms, backward %.3f ms per "
               "micro-batch (analytic %.3f ms), %.0f parameters per device (search %.2f s)\n",
               file.c_str(), b, t, hand ? "hand" : "auto", memory_limit / 1e9,
               out.times.forward * 1e3, out.times.backward * 1e3, (priced.cost - update) * 1e3,
               out.params, search_seconds);
  return out;
}

std::string megatron_layer_json(int t) {
  if (t == 1) return R"J({"mesh": [1], "layouts": {}})J";
  return fmt::format(
      R"J({{"mesh": [{0}], "layouts": {{"blk.wq": "(1, {0})", "blk.bq": "({0})",
      "blk.wk": "(1, {0})", "blk.bk": "({0})", "blk.wv": "(1, {0})", "blk.bv": "({0})",
      "blk.wo": "({0}, 1)", "blk.w1": "(1, {0})", "blk.b1": "({0})", "blk.w2": "({0}, 1)"}}}})J",
      t);
}
std::string megatron_head_json(int t) {
  if (t == 1) return R"J({"mesh": [1], "layouts": {}})J";
  return fmt::format(R"J({{"mesh": [{0}], "layouts": {{"head.wte": "(1, {0})"}}}})J", t);
}

struct Config {
  int d = 1, t = 1, p = 1, b = 1, m = 1;
  double step = 0, memory = 0;
  bool fits = false;
  std::string note;
};

// Megatron's model FLOPs per iteration with recomputation (Narayanan et al. 2021, eq. 3).
double model_flops(const Size& s) {
  const double B = s.batch, l = s.layers, h = s.hidden;
  return 96 * B * kSeq * l * h * h * (1 + kSeq / (6 * h) + kVocab / (16 * l * h));
}

struct Evaluator {
  const sim::ClusterSpec& cluster;
  const Size& size;
  // (hand, t, b, layers per stage: auto's memory budget)
  std::map<std::tuple<bool, int, int, int>, std::pair<Block, Block>> cache;
  sim::PipelineSimResult last;  // of the last simulated configuration
  sim::PipelineProgram last_program;

  // Auto searches each program under its share of the device's memory: the layer gets
  // 1 / (layers per stage), the head what one layer gets (the search counts parameters with
  // their gradient and two Adam states, 16 bytes in f32, as mixed precision's 2 + 2 + 12).
  const std::pair<Block, Block>& blocks(bool hand, int t, int b, int per_stage) {
    if (hand) per_stage = 0;
    auto key = std::make_tuple(hand, t, b, per_stage);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    const std::map<std::string, int> w = {{"d", size.hidden}, {"heads", size.heads}};
    const double limit = hand ? 0 : cluster.device.memory_bytes / per_stage;
    Block layer = block(cluster, "gpt_block.sp", w, b, t, hand, megatron_layer_json(t), limit);
    Block head = block(cluster, "gpt_head.sp", {{"d", size.hidden}}, b, t, hand,
                       megatron_head_json(t), limit);
    return cache.emplace(key, std::make_pair(std::move(layer), std::move(head))).first->second;
  }

  // The pipeline of configuration c; `simulate` false: memory and the analytic bound only.
  Config evaluate(Config c, bool hand, bool simulate) {
    const int per_stage = size.layers / c.p;
    const auto& [layer, head] = blocks(hand, c.t, c.b, per_stage);
    sim::PipelineProgram prog;
    prog.stage_devices = c.t;
    prog.replicas = c.d;
    prog.micro_batches = c.m;
    prog.recompute = true;
    double worst = 0;
    for (int k = 0; k < c.p; ++k) {
      sim::PipelineStage st;
      const bool last = k + 1 == c.p;
      sim::StageTimes t{layer.times.forward * per_stage, layer.times.backward * per_stage};
      double params = layer.params * per_stage, working = layer.working;
      if (k == 0) params += double(kVocab) * size.hidden / c.t;  // the embedding (vocab-parallel)
      if (last) {
        t.forward += head.times.forward;
        t.backward += head.times.backward;
        if (c.p > 1) params += head.params;  // the tied output embedding's copy
        working = std::max(working, head.working);
      }
      st.times = t;
      const double act = double(c.b) * kSeq * size.hidden * 2;  // f16 layer input
      st.send_bytes = st.cotangent_bytes = act / c.t;           // Megatron's scatter / gather p2p
      st.param_bytes = params * kParamBytes;
      st.grad_bytes = params * kGradBytes;
      st.optimizer_state_bytes = params * kOptimizerBytes;
      st.activation_bytes = act * per_stage;  // recomputation keeps each layer's input
      st.working_bytes = working;
      st.grad_sync_bytes = params * kGradBytes;
      // Adam over fp32 master weights: read p, g, m, v, write p, m, v and the f16 copy.
      st.update_seconds = params * 32 / cluster.device.memory_bandwidth;
      prog.stages.push_back(st);
      const int in_flight = std::min(c.p - k, c.m);
      worst = std::max(worst, st.param_bytes + st.grad_bytes + st.optimizer_state_bytes +
                                  in_flight * st.activation_bytes + st.working_bytes);
    }
    c.memory = worst;
    c.fits = worst <= cluster.device.memory_bytes;
    // The analytic 1F1B time: the bottleneck stage's (M + S - 1) (F + R + B).
    double bound = 0;
    for (const auto& st : prog.stages)
      bound = std::max(bound, (c.m + c.p - 1) * (2 * st.times->forward + st.times->backward));
    c.step = bound;
    if (simulate) {
      last = sim::simulate_pipeline(cluster, prog);
      last_program = prog;
      c.step = last.step_seconds;
    }
    return c;
  }
};

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

std::string describe(const Config& c) {
  return fmt::format("d={} t={} p={} b={} m={}", c.d, c.t, c.p, c.b, c.m);
}

int run(const std::string& sizes, const std::string& cluster_path, const std::vector<int>& micro,
        const std::string& csv, const std::string& trace);
int g_blocks_t = 0;  // --blocks T: only the layer programs at t = T (the oracle vs the simulator)

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "1.7B,3.6B,7.5B,18.4B,39.1B", cluster_path, csv, trace;
  std::vector<int> micro = {1, 2, 4, 8};
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
    else if (a == "--micro-batches") {
      const std::string text = next();
      const auto v = parse_ints(text);
      if (!v) {
        std::fprintf(
            stderr, "gpt_study: --micro-batches expects positive integers like 1,2,4,8, got '%s'\n",
            text.c_str());
        return 2;
      }
      micro = *v;
    } else if (a == "--trace")
      trace = next();
    else if (a == "--csv")
      csv = next();
    else if (a == "--dp-budget")
      g_dp_budget = std::max(1, std::atoi(next().c_str()));
    else if (a == "--explain")
      g_explain = std::atoi(next().c_str());
    else if (a == "--no-pass-partial-sums")
      g_pass_partial_sums = false;
    else if (a == "--blocks")
      g_blocks_t = std::atoi(next().c_str());
    else {
      std::fprintf(stderr, "gpt_study: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  ops::register_all();
  autodiff::install();
  try {
    return run(sizes, cluster_path, micro, csv, trace);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt_study: error: %s\n", e.what());
    return 1;
  }
}

namespace {

int run(const std::string& sizes, const std::string& cluster_path, const std::vector<int>& micro,
        const std::string& csv, const std::string& trace) {
  const sim::ClusterSpec cluster = sim::load_cluster_spec(cluster_path);
  int matched = 0;
  std::string table =
      "| size | GPUs | hand (Megatron) | hand step | auto (best) | auto step | auto / hand | hand "
      "TFLOP/s/GPU | auto TFLOP/s/GPU | paper TFLOP/s/GPU "
      "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  std::string rows = "size,mode,d,t,p,b,m,step_s,memory_GB,fits,tflops_per_gpu\n";
  for (const Size& s : kSizes) {
    if (("," + sizes + ",").find("," + s.name + ",") == std::string::npos) continue;
    ++matched;
    Evaluator ev{cluster, s, {}, {}, {}};
    if (g_blocks_t > 0) {
      // The layer of each micro-batch size, hand and auto, simulated and priced: where the
      // analytic oracle and the simulator disagree (papers/gpt_auto_vs_megatron.md).
      for (int b : micro)
        for (bool hand : {true, false}) ev.blocks(hand, g_blocks_t, b, 1);
      continue;
    }
    auto tflops = [&](double step) { return model_flops(s) / step / s.gpus / 1e12; };
    auto search = [&](bool hand) {
      std::vector<Config> cands;
      for (int t : {1, 2, 4, 8}) {
        if (hand && t != s.hand_t) continue;
        for (int p = 1; p <= s.layers; ++p) {
          if (hand && p != s.hand_p) continue;
          if (s.layers % p || s.gpus % (t * p)) continue;
          const int d = s.gpus / (t * p);
          for (int b : micro) {
            if (s.batch % (d * b)) continue;
            Config c;
            c.d = d, c.t = t, c.p = p, c.b = b, c.m = s.batch / (d * b);
            cands.push_back(ev.evaluate(c, hand, false));
          }
        }
      }
      // Simulate in order of the analytic bound; stop when the bound passes the best step.
      std::sort(cands.begin(), cands.end(),
                [](const Config& a, const Config& b) { return a.step < b.step; });
      Config best;
      best.step = -1;
      Config least_memory;
      least_memory.memory = -1;
      for (Config& c : cands) {
        if (least_memory.memory < 0 || c.memory < least_memory.memory) least_memory = c;
        if (!c.fits) {
          rows += fmt::format("{},{},{},{},{},{},{},,{:.2f},no,\n", s.name, hand ? "hand" : "auto",
                              c.d, c.t, c.p, c.b, c.m, c.memory / 1e9);
          continue;
        }
        if (best.step >= 0 && c.step >= best.step) continue;
        const Config r = ev.evaluate(c, hand, true);
        rows += fmt::format("{},{},{},{},{},{},{},{:.6f},{:.2f},yes,{:.1f}\n", s.name,
                            hand ? "hand" : "auto", r.d, r.t, r.p, r.b, r.m, r.step, r.memory / 1e9,
                            tflops(r.step));
        std::fprintf(stderr, "%s %s %s: %.3f s, %.1f GB\n", s.name.c_str(), hand ? "hand" : "auto",
                     describe(r).c_str(), r.step, r.memory / 1e9);
        if (best.step < 0 || r.step < best.step) best = r;
      }
      if (best.step < 0) {
        best = least_memory;
        best.step = -1;
        best.note = fmt::format("nothing fits: least memory {:.1f} GB ({})", best.memory / 1e9,
                                describe(best));
      }
      return best;
    };
    const Config hand = search(true), aut = search(false);
    // The report of both winners (and the Chrome trace of Megatron's, with --trace).
    for (const Config* c : {&hand, &aut}) {
      if (c->step < 0) continue;
      ev.evaluate(*c, c == &hand, true);
      std::fprintf(stderr, "%s %s %s:\n%s", s.name.c_str(), c == &hand ? "hand" : "auto",
                   describe(*c).c_str(), sim::pipeline_report(ev.last_program, ev.last).c_str());
      if (c == &hand && !trace.empty()) {
        std::ofstream f(trace, std::ios::binary);
        if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", trace));
        f << sim::pipeline_chrome_trace(ev.last);
      }
    }
    auto step = [](const Config& c) {
      return c.step < 0 ? std::string("infeasible") : fmt::format("{:.3f} s", c.step);
    };
    auto tf = [&](const Config& c) {
      return c.step < 0 ? std::string("-") : fmt::format("{:.0f}", tflops(c.step));
    };
    const std::string ratio = hand.step > 0 && aut.step > 0
                                  ? fmt::format("{:.3f}", aut.step / hand.step)
                                  : std::string("-");
    table += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0f} |\n", s.name,
                         s.gpus, hand.note.empty() ? describe(hand) : hand.note, step(hand),
                         aut.note.empty() ? describe(aut) : aut.note, step(aut), ratio, tf(hand),
                         tf(aut), s.paper_tflops);
    std::fputs(table.c_str(), stderr);
    // The operator strategies that were used (auto: the search's choice at its best t, b).
    if (aut.step > 0 && aut.t > 1)
      std::fprintf(stderr, "%s auto layer strategy (t=%d, b=%d): %s\n", s.name.c_str(), aut.t,
                   aut.b, ev.blocks(false, aut.t, aut.b, s.layers / aut.p).first.strategy.c_str());
  }
  if (matched == 0)
    throw std::runtime_error(
        fmt::format("--sizes {} names no size (1.7B, 3.6B, 7.5B, 18.4B, 39.1B)", sizes));
  std::fputs(table.c_str(), stdout);
  if (!csv.empty()) {
    std::ofstream f(csv, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("cannot write '{}'", csv));
    f << rows;
  }
  return 0;
}

}  // namespace
