// CUDA graphs of graph-mode functions (cuda.h): capture one call, replay it on later calls.
//
// Memory: the graph's kernels write the same addresses on every replay, so every block the
// capture allocates belongs to the graph (context.h CapturePool): the captured arguments, the
// intermediates (freed blocks are reused only inside the same capture) and the results, which
// each call copies out into fresh tensors. Constants of the function are pinned on the device
// before capture (a host copy cannot be recorded).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"

namespace spora::cuda {

namespace {

std::atomic<int64_t> g_kernels{0}, g_captured{0}, g_graph_launches{0}, g_captures{0}, g_failures{0};

struct Captured {
  std::string key;
  std::vector<sem::Tensor> inputs;  // the graph reads its arguments here
  sem::Value outputs;               // ... and writes its results here
  std::vector<sem::Tensor> flags;   // deferred error flags (defer_check)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturePool pool;
};
// The capture in progress (one at a time: the backend has one stream).
std::atomic<Captured*> g_active{nullptr};

struct FnState {
  bool checked = false, dead = false, said_key = false;
  int calls = 0;
  std::unique_ptr<Captured> cap;  // never destroyed while the process runs: see give_up
};

struct Graphs {
  bool enabled = false;
  bool verbose = false;
  int warm_calls = 1;
  std::unordered_map<const ir::Graph*, FnState> fns;
};
Graphs& graphs() {
  static Graphs* g = new Graphs();  // never destroyed: graphs may be in flight at exit
  return *g;
}

void say(bool verbose, const std::string& text) {
  if (verbose) std::fprintf(stderr, "spora: cuda graphs: %s\n", text.c_str());
}

// The arguments' structure, dtypes and shapes ("" when something is not a tensor, a tuple or
// a record: such calls are never captured); `leaves` gets the tensors in order.
bool signature(const sem::Value& v, std::string& key, std::vector<sem::Tensor>* leaves) {
  switch (v.kind) {
    case sem::Value::Kind::Tensor: {
      if (!v.tensor.defined()) return false;
      key += std::string(dtype_name(v.tensor.dtype())) + "[";
      for (int64_t d : v.tensor.shape()) key += std::to_string(d) + ",";
      key += "]";
      if (leaves) leaves->push_back(v.tensor);
      return true;
    }
    case sem::Value::Kind::Tuple:
    case sem::Value::Kind::Record:
      // A record by its model name and field names: a record a step returns (the updated
      // parameters) has a type object of its own but the same structure as its argument.
      if (v.kind == sem::Value::Kind::Tuple) {
        key += "(";
      } else {
        key += "R" + (v.record_type ? v.record_type->name : std::string()) + "{";
        if (v.record_type)
          for (const std::string& f : v.record_type->names) key += f + ",";
        key += "}(";
      }
      for (const sem::Value& e : v.items())
        if (!signature(e, key, leaves)) return false;
      key += ")";
      return true;
    default:
      return false;
  }
}

void copy_into(const sem::Tensor& dst, const sem::Tensor& src) {
  if (src.device().kind == sem::Device::Kind::cuda) {
    SPORA_CUDA_CHECK(cudaMemcpyAsync(const_cast<void*>(dst.raw()), src.raw(), src.nbytes(),
                                     cudaMemcpyDeviceToDevice, stream()));
  } else {
    copy_to_device(const_cast<void*>(dst.raw()), src.raw(), src.nbytes());
  }
}

void pin_constants(const ir::Graph& g, std::unordered_map<const ir::Graph*, bool>& seen) {
  if (seen[&g]) return;
  seen[&g] = true;
  for (const ir::Node* n : g.nodes) {
    if (n->is_constant() && n->value.is_tensor()) pin_constant(n->value.tensor);
    if (n->graph_value) pin_constants(*n->graph_value, seen);
    if (n->callee) pin_constants(*n->callee, seen);
  }
}

// Launches st's graph for `args`: their tensors into the captured buffers (unless they are
// there already), the graph, the deferred checks, the results copied out.
bool replay(FnState& st, const ir::Graph& g, std::vector<sem::Value>& args, sem::Value& result,
            const std::function<sem::Value(std::vector<sem::Value>&)>& run, bool copy_inputs) {
  Captured& c = *st.cap;
  if (copy_inputs) {
    std::vector<sem::Tensor> leaves;
    std::string key;
    for (const sem::Value& a : args) signature(a, key, &leaves);
    for (size_t i = 0; i < leaves.size(); ++i) copy_into(c.inputs[i], leaves[i]);
  }
  SPORA_CUDA_CHECK(cudaGraphLaunch(c.exec, stream()));
  ++g_graph_launches;
  if (!c.flags.empty()) {
    bool bad = false;
    for (const sem::Tensor& f : c.flags) {
      int v = 0;
      copy_to_host(&v, f.raw(), sizeof(int));
      bad = bad || v != 0;
    }
    if (bad) {
      // The uncaptured call raises the kernel's error (a label out of range) with its message.
      st.dead = true;
      say(graphs().verbose,
          "@" + g.name + ": a kernel check failed in the graph; running uncaptured");
      result = run(args);
      return true;
    }
  }
  auto out = [](const sem::Tensor& t) {
    sem::Tensor copy = sem::Tensor::empty(t.dtype(), t.shape(), sem::Device::cuda());
    copy_into(copy, t);
    return copy;
  };
  result = map_tensors(c.outputs, out);
  return true;
}

bool capture(FnState& st, const ir::Graph& g, const std::string& key, std::vector<sem::Value>& args,
             sem::Value& result, const std::function<sem::Value(std::vector<sem::Value>&)>& run) {
  const bool verbose = graphs().verbose;
  std::unordered_map<const ir::Graph*, bool> seen;
  pin_constants(g, seen);
  auto c = std::make_unique<Captured>();
  c->key = key;
  // Device buffers of the arguments, filled before capture; held here, so no kernel of the
  // graph takes one over in place (unique() is false).
  auto in = [&c](const sem::Tensor& t) {
    sem::Tensor d = sem::Tensor::empty(t.dtype(), t.shape(), sem::Device::cuda());
    copy_into(d, t);
    c->inputs.push_back(d);
    return d;
  };
  std::vector<sem::Value> cargs;
  for (const sem::Value& a : args) cargs.push_back(map_tensors(a, in));

  std::string why;
  sem::Value out;
  device_allocator().set_capture_pool(&c->pool);
  cudaError_t e = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    cudaGetLastError();
    why = std::string("cudaStreamBeginCapture failed: ") + cudaGetErrorName(e);
  } else {
    g_active = c.get();
    try {
      out = run(cargs);
    } catch (const CaptureAbort& a) {
      why = a.why;
    } catch (const std::exception& x) {
      // A user error raises again in the uncaptured run below; anything else is a CUDA call
      // capture does not support.
      why = std::string("the captured call failed: ") + x.what();
    }
    g_active = nullptr;
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream(), &graph);
    if (e != cudaSuccess && why.empty())
      why = std::string("cudaStreamEndCapture failed: ") + cudaGetErrorName(e);
    if (e != cudaSuccess) cudaGetLastError();
    c->graph = graph;
  }
  device_allocator().set_capture_pool(nullptr);
  cargs.clear();
  if (why.empty()) {
    std::string out_key;
    if (!signature(out, out_key, nullptr)) why = "the result is not made of tensors";
  }
  if (why.empty()) {
    auto on_device = [&why](const sem::Tensor& t) {
      if (t.device().kind != sem::Device::Kind::cuda) why = "a result is on the host";
      return t;
    };
    map_tensors(out, on_device);
  }
  if (why.empty()) {
    e = cudaGraphInstantiate(&c->exec, c->graph, 0);
    if (e != cudaSuccess) {
      cudaGetLastError();
      why = std::string("cudaGraphInstantiate failed: ") + cudaGetErrorName(e);
      c->exec = nullptr;
    }
  }
  if (!why.empty()) {
    // Nothing of the capture ran: its blocks go back to the shared cache, the call runs as
    // usual, and so do later calls.
    ++g_failures;
    out = sem::Value();
    c->flags.clear();
    c->inputs.clear();
    if (c->graph) cudaGraphDestroy(c->graph);
    device_allocator().release_pool(c->pool);
    st.dead = true;
    say(verbose, "@" + g.name + " runs uncaptured: " + why);
    result = run(args);
    return true;
  }
  c->outputs = std::move(out);
  ++g_captures;
  say(verbose, "@" + g.name + " captured (" + std::to_string(c->pool.owned.size()) +
                   " device blocks, " + std::to_string(c->pool.cuda_mallocs) +
                   " of them new; arguments " + key + ")");
  st.cap = std::move(c);
  return replay(st, g, args, result, run, /*copy_inputs=*/false);
}

bool hook(const ir::Graph& g, std::vector<sem::Value>& args, sem::Value& result,
          const std::function<sem::Value(std::vector<sem::Value>&)>& run) {
  if (g_active) return false;  // called inside a capture: part of the graph
  Graphs& gs = graphs();
  FnState& st = gs.fns[&g];
  if (st.dead) return false;
  if (!st.checked) {
    st.checked = true;
    std::string why;
    if (!capture_eligible(g, runs_natively, &why)) {
      st.dead = true;
      say(gs.verbose, "@" + g.name + " is not captured: " + why);
      return false;
    }
  }
  std::string key;
  for (const sem::Value& a : args) {
    if (!signature(a, key, nullptr)) {
      st.dead = true;
      say(gs.verbose, "@" + g.name + " is not captured: an argument is not made of tensors");
      return false;
    }
    key += ";";
  }
  if (st.cap) {
    if (st.cap->key == key) return replay(st, g, args, result, run, /*copy_inputs=*/true);
    if (!st.said_key) {
      st.said_key = true;
      say(gs.verbose, "@" + g.name + " called with other shapes than captured (" + key +
                          "); those calls run uncaptured");
    }
    return false;
  }
  if (++st.calls <= gs.warm_calls) return false;
  return capture(st, g, key, args, result, run);
}

}  // namespace

bool capturing() { return g_active.load() != nullptr; }

void capture_guard(const char* what) {
  if (capturing()) throw CaptureAbort(std::string(what) + " during capture");
}

void defer_check(const sem::Tensor& flag) {
  if (Captured* c = g_active.load()) c->flags.push_back(flag);
}

void note_launch(int64_t n) { (capturing() ? g_captured : g_kernels) += n; }

bool enable_graphs(bool verbose) {
  if (const char* v = std::getenv("SPORA_CUDA_GRAPHS"); v && std::string(v) == "0") {
    say(verbose, "off (SPORA_CUDA_GRAPHS=0)");
    return false;
  }
  graphs().verbose = verbose;
  graphs().enabled = true;
  sem::set_call_hook(hook);
  return true;
}

void disable_graphs() {
  Graphs& gs = graphs();
  gs.enabled = false;
  sem::set_call_hook(nullptr);
  // The captured graphs go too: their functions' modules may be destroyed next, and a new
  // graph at a freed address must not find a stale capture. Nothing may still run them.
  if (!gs.fns.empty()) cudaStreamSynchronize(stream());
  for (auto& [g, st] : gs.fns) {
    if (!st.cap) continue;
    Captured& c = *st.cap;
    if (c.exec) cudaGraphExecDestroy(c.exec);
    if (c.graph) cudaGraphDestroy(c.graph);
    device_allocator().release_pool(c.pool);
  }
  gs.fns.clear();  // the tensors the captures held go back to the shared cache
}

sem::Value call_with_graphs(sem::Interpreter& interp, const ir::Graph* g,
                            std::vector<sem::Value> args) {
  if (!graphs().enabled) return interp.call(g, std::move(args));
  sem::Value result;
  auto run = [&](std::vector<sem::Value>& a) { return interp.call(g, a); };
  if (hook(*g, args, result, run)) return result;
  return interp.call(g, std::move(args));
}

LaunchStats launch_stats() {
  return {g_kernels.load(), g_captured.load(), g_graph_launches.load(), g_captures.load(),
          g_failures.load()};
}

void reset_launch_stats() {
  g_kernels = 0;
  g_captured = 0;
  g_graph_launches = 0;
  g_captures = 0;
  g_failures = 0;
}

}  // namespace spora::cuda
