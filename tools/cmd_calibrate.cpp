// `spora calibrate`: measure this machine and write its cluster spec.
//
//   spora calibrate [--out examples/clusters/this-machine.yaml] [--devices 2] [--no-mpi]
//
// One device is one core: the measurements run in child processes with OMP_NUM_THREADS=1 and
// OPENBLAS_NUM_THREADS=1, one per device and all at once (so they share the memory system
// the way the ranks of `spora run-dp` do); one child's figures are kept, as they belong
// together (run_children says which).
//   1. compute (`calibrate --measure compute`, the child): our own CPU kernels
//      (sem::kernel_for, Backend::Cpu) on a sweep of sizes per op class (sim/cost.h), each
//      timed as the median of repeated calls after a warm-up:
//        peak_flops.f32      the best rate of the matmul and conv sweeps (f64: an f64 matmul)
//        memory_bandwidth    the best bytes/s of adds and multiplies of 4 MiB arrays, the size
//                            of gradient buckets (each byte read or written counted once, as
//                            the cost facet counts it); classes of small ops, which run from
//                            the caches, may reach efficiency 1
//        op_classes.C        efficiency = the median over C's sweep of roofline time /
//                            measured time (the kernel's fixed cost taken off first);
//                            launch_overhead = the interpreter's time per node of a long chain
//                            of scalar adds, plus what a tiny op of class C costs in its kernel
//                            beyond a tiny add
//   2. MPI point-to-point (`mpirun -np 2 ... calibrate --measure mpi`): latency = half the
//      round trip of 8-byte ping-pongs; bandwidth = 512 KiB exchanged both ways at once, back to
//      back, as the steps of a ring all-reduce of gradient buckets run, its mean time (on a
//      shared machine some exchanges stall for a scheduler period; a training loop pays for
//      them too, so the median would flatter the machine). The interconnect is a
//      `switch` of that bandwidth per direction. (1 MiB ping-pongs after a barrier, and our
//      ring all-reduce of 1 MiB, are recorded in the header: on a loaded machine the ping-pong
//      is far faster than what collectives in a loop get.) Then the collective primitives as
//      `spora run --strategy` runs them, each call after 2 ms of computation over 32 MiB
//      (measure_primitives): the median excess over the ring model is the spec's
//      `collective_overhead`, charged once per collective by the SPMD simulator and the search.
//      With --program model.sp [--batch B], the efficiency of every class the program's
//      training step uses (sim/step_program.h) comes from that step instead, run as
//      `spora run-dp` runs it on one rank (interpreter, CPU kernels, then the update), every
//      node timed: sum of rooflines / sum of measured times less the per-op overheads, over the
//      class (so the class reproduces the step's own total, caches and all); the sweep still
//      gives peak, bandwidth and overheads.
//   3. The YAML is written to a temporary file and renamed (atomic), with the measurements
//      in its header comment.
// The whole takes well under a minute.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/comm/executor.h"
#include "backends/comm/mpi_comm.h"
#include "parallel/collectives/algorithms.h"
#include "lang/diagnostics.h"
#include "ops/collective.h"
#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"
#include "semantics/registry.h"
#include "sim/cost.h"
#include "sim/step_program.h"
#include "tools/cmd_sim.h"
#include "tools/spmd_run.h"

namespace spora::tools {

namespace {

struct Options {
  std::string out = "examples/clusters/this-machine.yaml", measure, program;
  int devices = 0;
  long batch = 0;
  bool no_mpi = false;
};

Options g_options;

using Clock = std::chrono::steady_clock;
using sem::Attrs;
using sem::Tensor;
using sem::Value;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The median time of f() over repetitions adding up to about `budget` seconds (at least 3).
double time_it(const std::function<void()>& f, double budget = 0.05) {
  f();  // warm-up
  const auto t0 = Clock::now();
  f();
  const double once = std::max(seconds_since(t0), 1e-7);
  const int reps = std::clamp(static_cast<int>(budget / once), 3, 2000);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    f();
    times.push_back(seconds_since(t));
  }
  return median(times);
}

Tensor random_tensor(DType dtype, sem::Shape shape, std::mt19937& rng) {
  Tensor t = Tensor::zeros(dtype, std::move(shape));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (is_float(dtype))
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  if (dtype == DType::boolean)  // random masks: kernels that branch pay for it as in training
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng) > 0 ? 1.0 : 0.0);
  return t;
}

// One primitive application: the kernel the CPU backend runs, and its cost facet.
struct Case {
  std::string prim;
  std::vector<Value> inputs;
  Attrs attrs;
};

// The row's defaults for every attribute the case does not set.
Attrs with_defaults(const sem::Primitive& p, Attrs attrs) {
  for (const sem::ParamSpec& s : p.params)
    if (s.kind == sem::ParamSpec::Kind::Attr && !attrs.has(s.name) && s.default_value)
      attrs.set(s.name, *s.default_value);
  return attrs;
}

struct Measured {
  double seconds = 0;
  sim::OpCost cost;
};

Measured measure(const Case& c, double budget = 0.05) {
  const sem::Primitive* p = sem::Registry::instance().find(c.prim);
  if (!p) throw lang::InternalError("calibrate: no primitive " + c.prim);
  const Attrs attrs = with_defaults(*p, c.attrs);
  std::vector<sem::TypeP> types;
  for (const Value& v : c.inputs) types.push_back(v.kind == Value::Kind::None ? nullptr : v.type());
  const sem::RefKernel& kernel = sem::kernel_for(*p);
  Measured m;
  m.seconds = time_it([&] { (void)kernel(c.inputs, attrs); }, budget);
  const sim::CostRule* rule = p->facet<sim::CostRule>(sim::kCostFacet);
  if (!rule) throw lang::InternalError("calibrate: no cost rule for " + c.prim);
  m.cost = (*rule)(types, p->infer(types, attrs), attrs);
  return m;
}

Attrs attrs_of(std::initializer_list<std::pair<const char*, sem::Attr>> items) {
  Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

using Ints = std::vector<int64_t>;

// The interpreter's time per node: a chain of n scalar adds, run as a graph.
double interpreter_overhead() {
  ir::Module m;
  ir::Graph* g = m.add_graph("chain");
  const sem::TypeP scalar = sem::Type::scalar(DType::f32);
  ir::Node* x = m.add_param(g, "x", scalar);
  const sem::Primitive* add = sem::Registry::instance().find("add");
  ir::Node* acc = x;
  const int n = 2000;
  for (int i = 0; i < n; ++i) acc = m.add_apply(g, add, {acc, x}, {}, scalar);
  g->output = acc;
  sem::Interpreter interp(m);
  const Value one(Tensor::scalar(DType::f32, 1.0));
  return time_it([&] { (void)interp.call(g, {one}); }, 0.3) / n;
}

// `calibrate --measure compute`: prints `key value` lines.
// A value of type t for measuring a kernel: floats in [-1, 1], integers and bools zero (valid
// indices and labels).
Value sample_value(const sem::TypeP& t, std::mt19937& rng) {
  if (!t) return Value();
  if (t->kind == sem::Type::Kind::Tuple || t->kind == sem::Type::Kind::Record) {
    std::vector<Value> elems;
    for (const sem::TypeP& e : t->elems) elems.push_back(sample_value(e, rng));
    return t->kind == sem::Type::Kind::Tuple ? Value::tuple(std::move(elems))
                                             : Value::record(t, std::move(elems));
  }
  if (t->kind != sem::Type::Kind::Tensor) return Value();
  return Value(random_tensor(t->dtype, t->shape, rng));
}

// --program: the program's training step (sim/step_program.h) run as `spora run-dp` runs it
// on one rank: the interpreter over the step graph with the CPU kernels, then the optimizer's
// update with the same kernels, 40 times after 3 warm-ups, every primitive node timed (the
// interpreter's trace hook). Per op class: the sum of rooflines over the sum of measured times
// less the per-op overheads, so that the class reproduces the step's own total with caches,
// data-dependent branches and allocation as they really are (timing each op alone, on its own
// warm inputs, flatters it). Returns class -> (roofline, measured) sums.
std::map<std::string, std::pair<double, double>> measure_program(
    const Options& o, double peak, double bandwidth, const std::map<std::string, double>& overhead,
    std::mt19937& rng) {
  sim::StepOptions so;
  if (o.batch > 0) so.batch = o.batch;
  const sim::StepProgram program = sim::build_step_program(o.program, so);
  std::map<std::string, std::pair<double, double>> sums;
  auto add = [&](const sim::OpCost& cost, double seconds) {
    if (cost.op_class == "view" || cost.op_class == "host") return;
    const auto h = overhead.find(cost.op_class);
    sums[cost.op_class].first += std::max(cost.flops / peak, cost.bytes / bandwidth);
    sums[cost.op_class].second +=
        std::max(seconds - (h == overhead.end() ? 0 : h->second), 0.05 * seconds);
  };
  // The values `spora run --strategy` trains on (tools/spmd_run.h: weights scaled by
  // 1/sqrt(fan_in), labels in range): with standard normal weights, W4's attention scores are
  // so large that softmax underflows to subnormals, and the matmuls over them ran 4x slower
  // than in the real step (210 ms of matmul per step against a whole step of 69 ms).
  std::vector<Value> args;
  try {
    for (Tensor& t : global_values(*program.step, program.params.size(), rng()))
      args.emplace_back(std::move(t));
  } catch (const lang::UserError&) {  // a non-tensor input: sampled as before
    args.clear();
    for (const ir::Node* p : program.step->params) args.push_back(sample_value(p->type, rng));
  }
  sem::Interpreter interp(*program.module);
  std::map<std::string, double> per_prim;
  bool timing = false;
  interp.set_trace([&](const sem::TraceEvent& e) {
    const ir::Node* n = e.node;
    if (!timing || e.depth != 0 || !n->prim) return;
    const sim::CostRule* rule = n->prim->facet<sim::CostRule>(sim::kCostFacet);
    if (!rule) return;
    std::vector<sem::TypeP> in;
    for (const ir::Node* i : n->inputs) in.push_back(i->type);
    add((*rule)(in, n->type, n->attrs), e.seconds);
    if (std::getenv("SPORA_CALIBRATE_DEBUG")) per_prim[n->prim->name] += e.seconds;
  });
  for (int it = 0; it < 43; ++it) {
    timing = it >= 3;
    const Value out = interp.call(program.step, args);
    for (std::size_t i = 0; i < program.params.size(); ++i) {
      Value g = out.items()[i + 1];
      for (const sim::StepOp& op : program.params[i].update) {
        std::vector<Value> in{g, Value(Tensor::scalar(DType::f32, 0.01))};
        if (op.inputs.size() == 1) in.pop_back();
        if (op.inputs.size() == 2 && op.inputs[1]->rank() > 0) in[1] = args[i];
        const auto t0 = Clock::now();
        g = sem::kernel_for(*op.prim)(in, op.attrs);
        if (timing) add(op.cost, seconds_since(t0));
      }
    }
  }
  for (const auto& [name, seconds] : per_prim)
    std::fprintf(stderr, "%-16s %.4f ms per step\n", name.c_str(), seconds / 40 * 1e3);
  return sums;
}

int measure_compute(const Options& o) {
  std::mt19937 rng(7);
  auto f32 = [&](sem::Shape s) { return Value(random_tensor(DType::f32, std::move(s), rng)); };
  std::map<std::string, double> out;

  // Matmul sweep: the products of training, forward ([batch, in] @ [in, out]) and backward
  // (weight gradients [in, batch] @ [batch, out], input gradients [batch, out] @ [out, in]) at
  // small batches, and larger square and rectangular ones.
  std::vector<Measured> matmuls;
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {32, 784, 512}, {32, 512, 512}, {512, 32, 512}, {784, 32, 512}, {32, 512, 10},
           {512, 32, 10}, {64, 784, 512}, {128, 1024, 1024}, {256, 256, 256}, {512, 512, 512},
           {1024, 1024, 1024}, {256, 1024, 4096}})
    matmuls.push_back(measure({"matmul", {f32({m, k}), f32({k, n})}, {}}));
  std::vector<Measured> convs;
  auto conv = [&](sem::Shape x, sem::Shape w, int64_t pad) {
    return Case{"conv2d", {f32(std::move(x)), f32(std::move(w)), Value()},
                attrs_of({{"padding", Ints{pad}}})};
  };
  for (const Case& c : {conv({64, 1, 28, 28}, {6, 1, 5, 5}, 2), conv({64, 6, 14, 14}, {16, 6, 5, 5}, 0),
                        conv({16, 32, 32, 32}, {32, 32, 3, 3}, 1), conv({8, 64, 16, 16}, {64, 64, 3, 3}, 1)})
    convs.push_back(measure(c));
  // The peak: the best rate of any matrix product or convolution.
  double peak = 0;
  for (const auto* sweep : {&matmuls, &convs})
    for (const Measured& mm : *sweep) peak = std::max(peak, mm.cost.flops / mm.seconds);
  Value a64(random_tensor(DType::f64, {512, 512}, rng));
  const Measured mm64 = measure({"matmul", {a64, a64}, {}});
  out["peak_f32"] = peak;
  out["peak_f64"] = mm64.cost.flops / mm64.seconds;


  // Fixed costs: tiny ops of each class against a tiny add.
  const double tiny_add = measure({"add", {f32({1}), f32({1})}, {}}).seconds;
  std::map<std::string, double> tiny{{"elementwise", tiny_add}};
  tiny["matmul"] = measure({"matmul", {f32({1, 1}), f32({1, 1})}, {}}).seconds;
  tiny["conv"] = measure({"conv2d", {f32({1, 1, 1, 1}), f32({1, 1, 1, 1}), Value()}, {}}).seconds;
  tiny["reduction"] = measure({"sum", {f32({1})}, {}}).seconds;
  tiny["norm"] = measure({"softmax", {f32({1, 1})}, {}}).seconds;
  tiny["pool"] =
      measure({"max_pool2d", {f32({1, 1, 2, 2})}, attrs_of({{"kernel", Ints{2}}})}).seconds;
  tiny["copy"] = measure({"permute", {f32({1, 1})}, attrs_of({{"axes", Ints{1, 0}}})}).seconds;
  tiny["creation"] = measure({"zeros", {}, attrs_of({{"shape", Ints{1}}})}).seconds;
  const double interp = interpreter_overhead();
  out["launch_overhead"] = interp;

  // Efficiency per class: median of roofline / (measured - the kernel's fixed cost).
  std::map<std::string, std::vector<Measured>> sweep;
  sweep["matmul"] = matmuls;
  sweep["conv"] = convs;
  for (int64_t n : {1 << 14, 1 << 17, 1 << 20, 1 << 22}) {
    for (const char* op : {"add", "mul", "gt"}) sweep["elementwise"].push_back(measure({op, {f32({n}), f32({n})}, {}}));
    for (const char* op : {"relu", "exp", "tanh"}) sweep["elementwise"].push_back(measure({op, {f32({n})}, {}}));
    // where(c, a, 0.0): the vjp of relu, with a broadcast scalar.
    Value cond(Tensor::zeros(DType::boolean, {n}));
    sweep["elementwise"].push_back(
        measure({"where", {cond, f32({n}), Value(Tensor::scalar(DType::f32, 0.0))}, {}}));
  }
  // Transposes of training: weights, and activations [batch, features].
  for (const auto& shape : std::vector<sem::Shape>{{512, 512}, {32, 784}, {32, 512}, {512, 10}})
    sweep["copy"].push_back(measure({"permute", {f32(shape)}, attrs_of({{"axes", Ints{1, 0}}})}));
  for (const auto& shape : std::vector<sem::Shape>{{64, 512}, {512, 1024}, {1024, 4096}}) {
    sweep["reduction"].push_back(measure({"sum", {f32(shape)}, attrs_of({{"axis", Ints{0}}})}));
    sweep["reduction"].push_back(measure({"sum", {f32(shape)}, attrs_of({{"axis", Ints{1}}})}));
    sweep["reduction"].push_back(measure({"max", {f32(shape)}, attrs_of({{"axis", Ints{1}}})}));
    sweep["norm"].push_back(measure({"softmax", {f32(shape)}, {}}));
    sweep["norm"].push_back(measure({"layer_norm", {f32(shape), Value(), Value()}, {}}));
    sweep["copy"].push_back(measure({"permute", {f32(shape)}, attrs_of({{"axes", Ints{1, 0}}})}));
    sweep["creation"].push_back(measure({"zeros", {}, attrs_of({{"shape", Ints(shape)}})}));
  }
  Value labels(Tensor::zeros(DType::i32, {512}));
  sweep["norm"].push_back(measure({"cross_entropy", {f32({512, 1000}), labels}, {}}));
  for (const auto& shape : std::vector<sem::Shape>{{64, 6, 28, 28}, {16, 32, 32, 32}, {8, 64, 56, 56}})
    sweep["pool"].push_back(measure({"max_pool2d", {f32(shape)}, attrs_of({{"kernel", Ints{2}}})}));

  // Memory bandwidth: adds and multiplies of 4 MiB arrays, the size of gradient buckets and
  // large activations (what the communication stream's copies and reductions see). Smaller
  // arrays run from the caches, faster: classes of small ops may reach efficiency 1.
  double bandwidth = 0;
  for (const char* op : {"add", "mul"}) {
    const Measured e = measure({op, {f32({1 << 20}), f32({1 << 20})}, {}}, 0.1);
    bandwidth = std::max(bandwidth, e.cost.bytes / e.seconds);
  }
  out["memory_bandwidth"] = bandwidth;
  for (const auto& [cls, cases] : sweep) {
    std::vector<double> eff;
    for (const Measured& c : cases) {
      const double roofline = std::max(c.cost.flops / peak, c.cost.bytes / bandwidth);
      const double t = std::max(c.seconds - tiny[cls], 0.05 * c.seconds);
      eff.push_back(std::min(1.0, roofline / t));
    }
    out["efficiency." + cls] = median(eff);
    out["overhead." + cls] = interp + std::max(0.0, tiny[cls] - tiny_add);
  }
  std::map<std::string, double> per_op_overhead;
  for (const auto& [k, v] : out)
    if (k.rfind("overhead.", 0) == 0) per_op_overhead[k.substr(9)] = v;
  if (!o.program.empty()) {
    double total = 0;
    for (const auto& [cls, sums] : measure_program(o, peak, bandwidth, per_op_overhead, rng)) {
      if (sums.second > 0) out["efficiency." + cls] = std::min(1.0, sums.first / sums.second);
      total += sums.second;
    }
    out["program_seconds"] = total;
  }
  for (const auto& [k, v] : out) std::printf("%s %.9g\n", k.c_str(), v);
  return 0;
}

// The collectives as `spora run --strategy` runs them: the all_reduce, reduce_scatter and
// all_gather primitives (ops/collective.cpp: their piece copies, the ring schedule over MPI,
// the result tensor) on f32 [64, n] tensors, each call after 2 ms of computation on both ranks
// that sweeps 32 MiB (more than this machine's caches) and then multiplies matrices, as a
// training step's kernels do between two collectives: the data is fresh from a kernel, the
// transport's buffers and the executor's code and data were evicted. That costs far more than
// calls back to back, and it grows with the memory the computation touched, not with its
// length (this machine, 2026-11-30, in place / back to back, us): after 2 ms of matmuls on
// 0.3 MB, all_reduce of 2 KiB 18 / 12, of 128 KiB 42 / 41; sweeping 8 MiB first 28 and 91;
// 32 MiB 61 and 135. W2's partitioned step (6 MB of weights and gradients per rank) measured
// 32-43 us for an all_reduce of 40 bytes and 113-139 us for 128 KiB. The cost of a call is the time from the later rank's start to the later rank's end
// (the earlier one's wait for its peer is rank skew, not the collective's cost); the median over
// the calls. Back-to-back calls of the same sizes (`..._b2b`) are recorded for comparison.
// Keys: coll_<primitive>_<bytes of the full tensor> seconds (rank 0's map; empty on rank 1).
constexpr double kGap = 2e-3;
constexpr size_t kGapBytes = size_t{32} << 20;

std::map<std::string, double> measure_primitives(comm::Communicator& world) {
  const sem::Registry& reg = sem::Registry::instance();
  ops::CollectiveScope scope(&world, {2});
  const Tensor a = sem::Tensor::full(DType::f32, {64, 256}, 0.5);
  const Tensor b = sem::Tensor::full(DType::f32, {256, 256}, 0.25);
  std::vector<float> sweep(kGapBytes / sizeof(float), 0.0f);
  const sem::RefKernel& matmul = sem::kernel_for(*reg.find("matmul"));
  const Attrs none;
  std::map<std::string, double> out;
  for (const char* name : {"all_reduce", "reduce_scatter", "all_gather"}) {
    const sem::RefKernel& k = sem::kernel_for(*reg.find(name));
    Attrs attrs;
    attrs.set("mesh", std::vector<int64_t>{2});
    if (std::string(name) == "all_reduce") {
      attrs.set("axes", std::vector<int64_t>{0});
    } else {
      attrs.set("dim", int64_t{1});
      attrs.set("axis", int64_t{0});
    }
    for (const int64_t bytes : {int64_t{2} << 10, int64_t{16} << 10, int64_t{128} << 10,
                                int64_t{1} << 20}) {
      // The full tensor is [64, cols]; all_gather's input is this rank's half of it.
      const int64_t cols = bytes / 4 / 64;
      const Tensor x = sem::Tensor::full(
          DType::f32, {64, std::string(name) == "all_gather" ? cols / 2 : cols}, 1.0);
      for (const bool gap : {true, false}) {
        const int calls = 40;
        std::vector<double> start(calls), end(calls);
        world.barrier();
        for (int i = 0; i < calls + 3; ++i) {
          if (gap) {
            const auto g0 = Clock::now();
            for (float& f : sweep) f += 1.0f;
            while (seconds_since(g0) < kGap) matmul({Value(a), Value(b)}, none);
          }
          const auto t0 = Clock::now();
          k({Value(x)}, attrs);
          if (i >= 3) {
            start[i - 3] = std::chrono::duration<double>(t0.time_since_epoch()).count();
            end[i - 3] = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
          }
        }
        // Rank 1's times to rank 0 (steady_clock is one clock for the processes of a machine;
        // on several machines the skew estimate is off, so the figure is rank 0's alone).
        std::vector<double> theirs(2 * calls);
        std::vector<double> mine(start);
        mine.insert(mine.end(), end.begin(), end.end());
        const std::size_t n = mine.size() * sizeof(double);
        if (world.rank() == 1) {
          world.wait_some(std::vector<comm::Request>{world.isend(mine.data(), n, 0, 7000)});
          continue;
        }
        std::vector<comm::Request> r{world.irecv(theirs.data(), n, 1, 7000)};
        while (world.wait_some(r).empty()) {
        }
        std::vector<double> cost;
        for (int i = 0; i < calls; ++i)
          cost.push_back(std::max(end[i], theirs[calls + i]) - std::max(start[i], theirs[i]));
        out[fmt::format("coll_{}_{}{}", name, bytes, gap ? "" : "_b2b")] = median(cost);
      }
    }
  }
  return out;
}

// `calibrate --measure mpi` under mpirun -np 2: rank 0 prints `key value` lines.
int measure_mpi() {
  comm::mpi_initialize(nullptr, nullptr);
  struct Finalize {
    ~Finalize() { comm::mpi_finalize(); }
  } finalize;
  auto world = comm::make_mpi_communicator();
  if (world->size() != 2) throw lang::UserError("calibrate --measure mpi needs exactly 2 ranks");
  const int rank = world->rank(), peer = 1 - rank;
  std::vector<char> a(1 << 20, 1), b(1 << 20, 0);
  auto wait = [&](std::vector<comm::Request> rs) {
    while (!rs.empty()) {
      const std::vector<std::size_t> done = world->wait_some(rs);
      std::vector<comm::Request> left;
      for (std::size_t i = 0; i < rs.size(); ++i)
        if (std::find(done.begin(), done.end(), i) == done.end()) left.push_back(rs[i]);
      rs = left;
    }
  };
  // Half a round trip of `bytes`, the median of `reps`.
  auto ping_pong = [&](std::size_t bytes, int reps) {
    std::vector<double> times;
    for (int i = 0; i < reps + 3; ++i) {
      world->barrier();
      const auto t0 = Clock::now();
      if (rank == 0) {
        wait({world->isend(a.data(), bytes, peer, i)});
        wait({world->irecv(b.data(), bytes, peer, i)});
      } else {
        wait({world->irecv(b.data(), bytes, peer, i)});
        wait({world->isend(a.data(), bytes, peer, i)});
      }
      if (i >= 3) times.push_back(seconds_since(t0) / 2);
    }
    return median(times);
  };
  const double latency = ping_pong(8, 2000);
  const double one_way = ping_pong(a.size(), 60);
  // Exchanges of 512 KiB both ways at once, back to back without a barrier, as the steps of a
  // ring all-reduce run (a barrier before each would let both processes start in step, which
  // a loaded machine does not grant collectives in a training loop).
  // Sixteen buffer pairs in turn (16 MiB), so that the data is not all in cache, as gradients
  // fresh from the backward pass are not.
  const std::size_t half = a.size() / 2;
  std::vector<std::vector<char>> sends(16, std::vector<char>(half, 1)), recvs(16, std::vector<char>(half));
  std::vector<double> both;
  world->barrier();
  for (int i = 0; i < 67; ++i) {
    const auto t0 = Clock::now();
    wait({world->isend(sends[i % 16].data(), half, peer, 100000 + i),
          world->irecv(recvs[i % 16].data(), half, peer, 100000 + i)});
    if (i >= 3) both.push_back(seconds_since(t0));
  }
  // Our own runtime's ring all-reduce of 1 MiB (backends/comm's executor, as spora run-dp runs
  // it), back to back: for the record in the spec's header.
  const std::int64_t count = static_cast<std::int64_t>(a.size() / 4);
  const parallel::Schedule ring = parallel::build_schedule(
      parallel::Algorithm::Ring, {parallel::Collective::AllReduce, parallel::ReduceOp::Sum, 2, count});
  comm::Executor executor(ring, *world, comm::DType::F32);
  std::vector<float> in(static_cast<std::size_t>(count), 1.0f), out(in.size());
  std::vector<double> all_reduce;
  world->barrier();
  for (int i = 0; i < 33; ++i) {
    const auto t0 = Clock::now();
    executor.run(in.data(), out.data());
    if (i >= 3) all_reduce.push_back(seconds_since(t0));
  }
  const std::map<std::string, double> in_situ = measure_primitives(*world);
  if (rank == 0) {
    for (const auto& [k, v] : in_situ) std::printf("%s %.9g\n", k.c_str(), v);
    std::printf("mpi_ring_allreduce_1mib %.9g\n", median(all_reduce));
    if (std::getenv("SPORA_CALIBRATE_DEBUG")) {
      std::sort(all_reduce.begin(), all_reduce.end());
      for (double t : all_reduce) std::fprintf(stderr, "%.3f ", t * 1e3);
      std::fprintf(stderr, "\n");
    }
    std::printf("mpi_latency %.9g\n", latency);
    std::printf("mpi_bandwidth %.9g\n", static_cast<double>(a.size()) / (one_way - latency));
    // The mean, not the median: on a shared machine some exchanges stall for a scheduler
    // period (the two processes are not running at the same time), and a training loop pays
    // for those too.
    double mean = 0;
    for (double t : both) mean += t / static_cast<double>(both.size());
    std::printf("mpi_exchange_bandwidth %.9g\n",
                static_cast<double>(half) / std::max(mean - latency, 1e-9));
    std::printf("mpi_exchange_bandwidth_median %.9g\n",
                static_cast<double>(half) / std::max(median(both) - latency, 1e-9));
  }
  return 0;
}

std::string self_path() {
  return std::filesystem::read_symlink("/proc/self/exe").string();
}

// Runs `copies` instances of a shell command at once and parses their `key value` lines. The
// figures of one instance belong together (efficiencies are relative to its own peak and
// bandwidth), so one instance's whole answer is taken: the one with the slowest program step
// when there is one (data-parallel steps wait for the slowest rank), else the one with the
// median f32 peak. Empty when an instance failed.
std::map<std::string, double> run_children(const std::string& command, int copies = 1) {
  std::vector<FILE*> pipes;
  for (int i = 0; i < copies; ++i) {
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw lang::UserError(fmt::format("cannot run: {}", command));
    pipes.push_back(pipe);
  }
  std::vector<std::map<std::string, double>> answers;
  bool failed = false;
  for (FILE* pipe : pipes) {
    std::map<std::string, double> values;
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) {
      std::istringstream in(line);
      std::string key;
      double value = 0;
      if (in >> key >> value) values[key] = value;
    }
    failed = pclose(pipe) != 0 || failed;
    answers.push_back(std::move(values));
  }
  if (failed || answers.empty()) return {};
  const std::string key = answers[0].count("program_seconds") ? "program_seconds" : "peak_f32";
  std::sort(answers.begin(), answers.end(), [&](const auto& a, const auto& b) {
    const auto x = a.find(key), y = b.find(key);
    return (x == a.end() ? 0 : x->second) < (y == b.end() ? 0 : y->second);
  });
  return key == "program_seconds" ? answers.back() : answers[answers.size() / 2];
}

std::string gb(double bytes_per_s) { return fmt::format("{:.3g} GB/s", bytes_per_s / 1e9); }
std::string gflops(double f) { return fmt::format("{:.4g} GFLOP/s", f / 1e9); }
std::string usec(double s) { return fmt::format("{:.3g} us", s * 1e6); }

int calibrate(const Options& o) {
  const auto t0 = Clock::now();
  const std::string self = self_path();
  const std::string env = "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1";
  const int devices =
      o.devices > 0 ? o.devices : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::fprintf(stderr, "calibrate: measuring the CPU kernels, %d single-threaded processes at once...\n",
               devices);
  std::string program;
  if (!o.program.empty())
    program = fmt::format(" --program '{}'{}", o.program,
                          o.batch > 0 ? fmt::format(" --batch {}", o.batch) : "");
  const auto c = run_children(
      fmt::format("{} '{}' calibrate --measure compute{}", env, self, program), devices);
  if (c.empty()) throw lang::UserError("the compute measurement failed");
  std::map<std::string, double> m;
  if (!o.no_mpi) {
    std::fprintf(stderr, "calibrate: measuring MPI point-to-point between 2 ranks...\n");
    m = run_children(fmt::format("{} mpirun --oversubscribe --allow-run-as-root -np 2 '{}' calibrate "
                              "--measure mpi 2>/dev/null",
                              env, self));
    if (m.empty())
      std::fprintf(stderr, "calibrate: mpirun failed; the interconnect falls back to memory copies\n");
  }
  const double bw = c.at("memory_bandwidth");
  const bool have_mpi = m.count("mpi_latency") && m.count("mpi_exchange_bandwidth");
  const double link = have_mpi ? m.at("mpi_exchange_bandwidth") : bw / 2;
  const double latency = have_mpi ? m.at("mpi_latency") : 1e-6;
  // collective_overhead: the median, over the primitives and sizes measured in place
  // (measure_primitives), of the time beyond the ring model the simulator charges anyway
  // (with p = 2: all_reduce 2 steps, reduce_scatter and all_gather 1, each of half the tensor
  // at the link's latency and bandwidth).
  std::vector<double> beyond;
  std::string in_place, back_to_back;
  for (const auto& [name, steps] : {std::pair<const char*, int>{"all_reduce", 2},
                                    {"reduce_scatter", 1},
                                    {"all_gather", 1}})
    for (const int64_t bytes : {int64_t{2} << 10, int64_t{16} << 10, int64_t{128} << 10,
                                int64_t{1} << 20}) {
      const std::string key = fmt::format("coll_{}_{}", name, bytes);
      if (!m.count(key)) continue;
      const double ring = steps * (latency + static_cast<double>(bytes) / 2 / link);
      beyond.push_back(m.at(key) - ring);
      if (std::string(name) == "all_reduce" && m.count(key + "_b2b")) {
        in_place += fmt::format("{}{} KiB {}", in_place.empty() ? "" : ", ", bytes >> 10, usec(m.at(key)));
        back_to_back += fmt::format("{}{}", back_to_back.empty() ? "" : ", ", usec(m.at(key + "_b2b")));
      }
    }
  const double overhead = beyond.empty() ? 0 : std::max(0.0, median(beyond));

  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::string y;
  y += "# This machine, measured by `spora calibrate` (tools/cmd_calibrate.cpp) on " +
       std::string(date) + ":\n";
  y += fmt::format("# {} devices, one per core; each a single-threaded run of our CPU kernels.\n",
                   devices);
  y += fmt::format("#   best f32 matmul/conv {}, f64 matmul {}; add/mul of 4 MiB arrays {}\n",
                   gflops(c.at("peak_f32")), gflops(c.at("peak_f64")), gb(bw));
  y += sched_getscheduler(0) == SCHED_FIFO
           ? "#   (measured under SCHED_FIFO: the machine's other work did not preempt it)\n"
           : "#   (on a shared machine, `chrt -f 5 spora calibrate` keeps other work from "
             "preempting it)\n";
  y += fmt::format("#   interpreter: {} per node of a chain of scalar adds\n",
                   usec(c.at("launch_overhead")));
  if (have_mpi)
    y += fmt::format(
        "#   MPI (mpirun -np 2): latency {} (8 B ping-pong), 1 MiB ping-pong {}, 512 KiB both "
        "ways back to back {} each way\n#   on average ({} at the median); our ring all-reduce "
        "of 1 MiB back to back {} at the median\n",
        usec(latency), gb(m.at("mpi_bandwidth")), gb(link),
        gb(m.count("mpi_exchange_bandwidth_median") ? m.at("mpi_exchange_bandwidth_median") : 0),
        usec(m.count("mpi_ring_allreduce_1mib") ? m.at("mpi_ring_allreduce_1mib") : 0));
  else
    y += "#   no MPI measurement: transfers assumed to be memory copies\n";
  if (!in_place.empty())
    y += fmt::format(
        "#   all_reduce primitive as spora run runs it, after {} of computation over 32 MiB: {}\n#   (back to "
        "back: {}); beyond the ring model, a collective costs {} (median of 3 primitives x 4 "
        "sizes)\n",
        fmt::format("{:.3g} ms", kGap * 1e3), in_place, back_to_back, usec(overhead));
  y += o.program.empty()
           ? "# Efficiencies: the median over each op class's sweep of roofline / measured time.\n"
           : "# Efficiencies: " + o.program +
                 "'s step run on one rank, per class: sum of rooflines / sum of\n# measured "
                 "times (classes it lacks: the median of the sweep).\n";
  y += "# Rerun `spora calibrate` to refresh; the numbers drift with the load of the machine.\n";
  y += "name: this-machine\nnodes: 1\n";
  y += fmt::format("devices_per_node: {}\n", devices);
  y += "device:\n  kind: cpu\n  model: x86-64 core (one thread of our CPU kernels)\n";
  y += fmt::format("  peak_flops:\n    f32: {}\n    f64: {}\n", gflops(c.at("peak_f32")),
                   gflops(c.at("peak_f64")));
  y += "  memory: " +
       fmt::format("{:.3g} GB", static_cast<double>(sysconf(_SC_PHYS_PAGES)) *
                                    static_cast<double>(sysconf(_SC_PAGE_SIZE)) / devices / 1e9) +
       "\n";
  y += fmt::format("  memory_bandwidth: {}\n", gb(bw));
  y += fmt::format("  launch_overhead: {}\n", usec(c.at("launch_overhead")));
  y += "  op_classes:\n";
  for (const char* cls : {"matmul", "conv", "elementwise", "reduction", "norm", "pool", "copy",
                          "creation"}) {
    const std::string e = std::string("efficiency.") + cls, h = std::string("overhead.") + cls;
    if (!c.count(e)) continue;
    y += fmt::format("    {}: {{efficiency: {:.3f}, launch_overhead: {}}}\n", cls,
                     std::clamp(c.at(e), 0.001, 1.0), usec(c.at(h)));
  }
  // `spora run --strategy`'s MPI executor runs each collective where the program reaches it
  // (ops/collective.cpp): nothing overlaps it, and the simulator must not assume otherwise.
  y += "collectives: inline   # spora run's MPI executor: no overlap with computation\n";
  if (have_mpi && !in_place.empty())
    y += fmt::format("collective_overhead: {}   # per call, measured in place (see above)\n",
                     usec(overhead));
  y += fmt::format("interconnect:\n  kind: switch\n  bandwidth: {}\n  latency: {}\n", gb(link),
                   usec(latency));

  const std::filesystem::path out(o.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  const std::string tmp = o.out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw lang::UserError(fmt::format("cannot write '{}'", tmp));
    f << y;
  }
  std::filesystem::rename(tmp, out);
  std::fputs(y.c_str(), stdout);
  std::fprintf(stderr, "calibrate: wrote %s in %.1f s\n", o.out.c_str(), seconds_since(t0));
  return 0;
}

}  // namespace

CLI::App* add_calibrate_subcommand(CLI::App& app) {
  Options& o = g_options;
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure this machine (CPU kernels, interpreter, MPI) and write its cluster spec");
  cmd->add_option("--out,-o", o.out, "where to write the spec")->capture_default_str();
  cmd->add_option("--devices", o.devices, "devices of the node (default: the cores)");
  cmd->add_flag("--no-mpi", o.no_mpi, "skip the MPI measurement");
  cmd->add_option("--program", o.program,
                  "also measure the ops of this program's training step (as spora sim builds it) "
                  "and take each op class's efficiency from them");
  cmd->add_option("--batch", o.batch, "with --program: the per-rank batch");
  cmd->add_option("--measure", o.measure, "internal: run one measurement (compute, mpi)");
  return cmd;
}

int run_calibrate_subcommand() {
  try {
    if (g_options.measure == "compute") return measure_compute(g_options);
    if (g_options.measure == "mpi") return measure_mpi();
    if (!g_options.measure.empty())
      throw lang::UserError(fmt::format("unknown --measure '{}'", g_options.measure));
    return calibrate(g_options);
  } catch (const lang::InternalError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spora calibrate: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
