// Running fusion groups with their compiled kernels (fused_runtime.h).
#include "backends/codegen/fused_runtime.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <unordered_map>
#include <unordered_set>

#include "backends/codegen/cache.h"
#include "backends/cpu/kernels.h"
#include "semantics/ir/clone.h"
#include "semantics/passes/fusion.h"
#include "semantics/registry.h"

namespace spora::codegen {

std::vector<FusedGroup> fused_groups(const ir::Module& m) {
  std::vector<FusedGroup> out;
  for (const auto& g : m.graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    if (auto plan = passes::plan_group(passes::group_of(*g))) out.push_back({g.get(), *plan});
  }
  return out;
}

std::string kernel_listing(const ir::Module& m, bool cuda, bool preludes) {
  std::string out;
  if (preludes) {
    out += "// ---- C++ prelude ----\n" + cpp_prelude();
    if (cuda) out += "\n// ---- CUDA prelude ----\n" + cuda_prelude();
  }
  for (const FusedGroup& g : fused_groups(m)) {
    out += "\n// ---- @" + source_identifier(g.graph->name) + " ----\n";
    out += emit_cpp(g.plan).text;
    if (cuda) out += "\n" + emit_cuda(g.plan).text;
  }
  return out;
}

FusedOptions default_fused_options() {
  FusedOptions o;
  o.min_elements = 4096;
  o.min_elements_in_loops = 0;
  if (const char* v = std::getenv("SPORA_FUSE_MIN_ELEMENTS"))
    o.min_elements = o.min_elements_in_loops = std::atoll(v);
  return o;
}

std::unordered_set<const ir::Graph*> graphs_run_by_loops(const ir::Module& m) {
  std::unordered_map<const ir::Graph*, std::vector<const ir::Graph*>> edges;
  std::vector<const ir::Graph*> work;
  for (const auto& g : m.graphs()) {
    auto& out = edges[g.get()];
    for (const ir::Node* n : g->nodes) {
      if (n->callee) out.push_back(n->callee);
      if (n->graph_value) out.push_back(n->graph_value);
      const bool loop = n->is_prim("while") || n->is_prim("for_range") || n->is_prim("for_each");
      for (const ir::Node* x : n->inputs)
        if (x->graph_value) {
          out.push_back(x->graph_value);
          if (loop) work.push_back(x->graph_value);
        }
    }
  }
  std::unordered_set<const ir::Graph*> seen;
  while (!work.empty()) {
    const ir::Graph* g = work.back();
    work.pop_back();
    if (!seen.insert(g).second) continue;
    for (const ir::Graph* h : edges[g]) work.push_back(h);
  }
  return seen;
}

namespace {
// Whether the group's only reader of `p` is `reader`.
bool read_only_by(const ir::Graph& group, const ir::Node* p, const ir::Node* reader) {
  bool read = false;
  for (const ir::Node* n : group.nodes)
    for (const ir::Node* x : n->inputs)
      if (x == p) {
        if (n != reader) return false;
        read = true;
      }
  return read && group.output != p;
}

// The generated CUDA has no f16/bf16 buffer type (emit_cuda.cpp): such groups run node by node
// on the GPU (the backend's kernels compute them in f32).
bool gpu_plannable(const passes::KernelPlan& plan) {
  auto low = [](const passes::KernelBuffer& b) {
    return b.dtype == DType::f16 || b.dtype == DType::bf16;
  };
  return std::none_of(plan.inputs.begin(), plan.inputs.end(), low) &&
         std::none_of(plan.outputs.begin(), plan.outputs.end(), low);
}

// A copy of the flat group `g` in `dst` whose parameters have `shapes` and whose nodes the
// primitives' shape rules retype; nullptr when a rule refuses those shapes.
ir::Graph* retyped_copy(ir::Module& dst, const ir::Graph& g,
                        const std::vector<sem::Shape>& shapes) {
  ir::CloneMap map;
  ir::Graph* copy = ir::clone_graph(dst, g, nullptr, map);
  for (size_t k = 0; k < copy->params.size(); ++k) {
    const sem::TypeP& t = copy->params[k]->type;
    if (!t || !t->is_tensor() || k >= shapes.size()) return nullptr;
    copy->params[k]->type = sem::Type::tensor(t->dtype, shapes[k]);
  }
  try {
    for (ir::Node* n : copy->nodes) {
      if (n->is_param() || n->is_constant()) continue;
      if (!n->prim || !n->prim->infer) return nullptr;
      std::vector<sem::TypeP> in;
      for (const ir::Node* x : n->inputs) in.push_back(x->type);
      n->type = n->prim->infer(in, n->attrs);
    }
  } catch (const std::exception&) {
    return nullptr;
  }
  return copy;
}
}  // namespace

FusedRuntime::Entry FusedRuntime::make_entry(const ir::Graph& g, const passes::GroupSpec& spec,
                                             passes::KernelPlan plan) {
  Entry e;
  e.graph = &g;
  e.plan = std::move(plan);
  if (e.plan.anchor >= 0) e.anchor = spec.nodes[static_cast<size_t>(e.plan.anchor)];
  for (const ir::Node* p : g.params)
    e.anchor_only.push_back(e.anchor && read_only_by(g, p, e.anchor));
  return e;
}

FusedRuntime::FusedRuntime(const ir::Module& m, FusedOptions options)
    : compile_(options.compile), gpu_(options.gpu), warn_(options.warn) {
  std::vector<KernelSource> sources;
  const std::unordered_set<const ir::Graph*> in_loops = graphs_run_by_loops(m);
  for (const auto& g : m.graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    ++groups_;
    const passes::GroupSpec spec = passes::group_of(*g);
    auto plan = passes::plan_group(spec);
    if (!plan) continue;
    if (plan->rows * plan->inner <
        (in_loops.count(g.get()) ? options.min_elements_in_loops : options.min_elements))
      continue;
    if (gpu_ && !gpu_plannable(*plan)) continue;
    Entry e = make_entry(*g, spec, *plan);
    KernelSource src = gpu_ ? emit_cuda(*plan) : emit_cpp(*plan);
    e.name = src.name;
    sources.push_back(std::move(src));
    entries_.emplace(g.get(), std::move(e));
  }
  if (gpu_) {
    if (!entries_.empty() && !build_gpu(sources, options)) {
      entries_.clear();
      if (options.warn)
        std::cerr << "spora: warning: fused CUDA kernels could not be built; running the "
                  << groups_ << " fusion groups node by node (" << error_ << ")\n";
    }
  } else if (!entries_.empty()) {
    library_ = options.library ? options.library
                               : compile_cpp(cpp_unit(sources), options.compile, &error_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      it->second.fn = library_ ? library_->find(it->second.name) : nullptr;
      it = it->second.fn ? std::next(it) : entries_.erase(it);
    }
    if (!library_ && options.warn)
      std::cerr << "spora: warning: fused kernels could not be compiled; running the " << groups_
                << " fusion groups node by node (" << error_ << ")\n";
  }
  sem::set_fused_kernel_hook([this](const ir::Graph& g, const std::vector<sem::Value>& args,
                                    sem::Value& result) { return run(g, args, result); });
}

FusedRuntime::~FusedRuntime() { sem::set_fused_kernel_hook(nullptr); }

bool FusedRuntime::build_gpu(const std::vector<KernelSource>& sources,
                             const FusedOptions& options) {
  NvrtcImage image;
  std::string log;
  if (!nvrtc_build(cuda_unit(sources), gpu_->arch(), options.compile.cache_dir, &image, &log)) {
    // NVRTC's log starts with its status; the first lines say what failed.
    error_ = "NVRTC for " + gpu_->arch() + ": " + log.substr(0, 600);
    return false;
  }
  if (!gpu_->load(image.image, &error_)) return false;
  for (const auto& [graph, e] : entries_)
    if (!gpu_->find(e.name, !e.plan.totals.empty() || !e.plan.epilogue.empty(), &error_))
      return false;
  return true;
}

namespace {
// The anchor's arguments: the group's parameters it reads, or its scalar constants.
std::vector<sem::Value> anchor_args(const ir::Graph& group, const ir::Node& anchor,
                                    const std::vector<sem::Value>& args) {
  std::vector<sem::Value> out;
  for (const ir::Node* x : anchor.inputs) {
    if (x->is_param()) {
      const auto p = std::find(group.params.begin(), group.params.end(), x);
      out.push_back(args[static_cast<size_t>(p - group.params.begin())]);
    } else {
      out.push_back(x->value);
    }
  }
  return out;
}

sem::Value pack_outputs(std::vector<sem::Tensor>& outs) {
  if (outs.size() == 1) return sem::Value(std::move(outs[0]));
  std::vector<sem::Value> items;
  for (sem::Tensor& t : outs) items.emplace_back(std::move(t));
  return sem::Value::tuple(std::move(items));
}

// The anchor's result by its backend kernel, or false when it is not a tensor.
bool run_anchor(const ir::Graph& group, const ir::Node& anchor, const std::vector<sem::Value>& args,
                sem::Tensor& result) {
  // As the interpreter runs a primitive (a distributed run's hook takes sharded arguments),
  // then as the host reads it (whole, unless the group runs on this rank's shards).
  sem::Value v = sem::apply_primitive(anchor, anchor_args(group, anchor, args));
  sem::to_host_value(v);
  if (!v.is_tensor()) return false;
  result = std::move(v.tensor);
  return true;
}

// Whether the anchor's result is the tensor the plan reads.
bool anchor_fits(const passes::KernelPlan& plan, const sem::Tensor& anchor) {
  const passes::KernelBuffer& want = plan.inputs.back();
  return anchor.dtype() == want.dtype && anchor.shape() == want.shape;
}

// The output buffers (their raw pointers appended to `out`). An input the plan reads at each
// element's own index only (in_place_ok) may be overwritten in place by one output of its
// dtype and size, as the CPU backend's elementwise kernels do: the anchor's result when nobody
// else holds it, and, given `args`, a parameter the caller passed as its last use (unique()),
// where the kernel has no checks that could fail halfway and send the group to the node-by-node
// path with that input already overwritten. Writing over an input that was just read saves
// bringing a fresh buffer into the cache: W3's relu gradient (gt + where over f32[64,6,28,28])
// took 0.166 ms fused into a new buffer, 0.106-0.109 ms fused in place, against gt 0.084 and
// where 0.065 ms unfused (bench_workloads --profile=W3, Intel Xeon).
template <typename Alloc>
std::vector<sem::Tensor> allocate_outputs(const passes::KernelPlan& plan, bool has_anchor,
                                          const sem::Tensor& anchor,
                                          const std::vector<sem::Value>* args, Alloc alloc,
                                          std::vector<void*>& out) {
  std::vector<sem::Tensor> outs;
  std::vector<bool> reused(plan.in_place_ok.size(), false);
  auto reusable = [&](size_t i, const sem::Tensor& t, const passes::KernelBuffer& b) {
    return i < plan.in_place_ok.size() && plan.in_place_ok[i] && !reused[i] && t.unique() &&
           t.dtype() == b.dtype && t.numel() == b.numel();
  };
  for (const passes::KernelBuffer& b : plan.outputs) {
    const size_t last = plan.in_place_ok.size() - 1;
    if (has_anchor && reusable(last, anchor, b)) {
      outs.push_back(anchor.reshaped(b.shape));
      reused[last] = true;
    } else {
      bool done = false;
      for (size_t i = 0; args && !plan.checks && i < args->size() && !done; ++i) {
        const sem::Value& a = (*args)[i];
        if (a.is_tensor() && reusable(i, a.tensor, b)) {
          outs.push_back(a.tensor.reshaped(b.shape));
          reused[i] = done = true;
        }
      }
      if (!done) outs.push_back(alloc(b.dtype, b.shape));
    }
    out.push_back(outs.back().raw());
  }
  return outs;
}
}  // namespace

// The GPU path of run() (its arguments checked there): the same anchor handling, device
// buffers, one launch.
bool FusedRuntime::run_gpu(const ir::Graph& group, const Entry& e,
                           const std::vector<sem::Value>& args, sem::Tensor anchor,
                           sem::Value& result) {
  const passes::KernelPlan& plan = e.plan;
  const size_t params = group.params.size();
  std::vector<sem::Tensor> held;  // inputs copied to the device live until the launch is queued
  std::vector<const void*> in;
  for (size_t k = 0; k < params; ++k) {
    held.push_back(gpu_->to_device(args[k].tensor));
    in.push_back(held.back().raw());
  }
  if (e.anchor) {
    anchor = gpu_->to_device(anchor);
    in.push_back(anchor.raw());
  }
  std::vector<void*> out;
  std::vector<sem::Tensor> outs = allocate_outputs(
      plan, e.anchor != nullptr, anchor, nullptr,
      [&](DType t, const sem::Shape& shape) { return gpu_->empty(t, shape); }, out);
  std::string error;
  const int rc = gpu_->launch(e.name, plan, in, out, &error);
  if (rc != 0) {
    ++fallbacks_;
    if (rc < 0 && !gpu_failed_.exchange(true) && warn_)
      std::cerr << "spora: warning: a fused CUDA kernel failed to launch; running the fusion "
                   "groups node by node from now on ("
                << error << ")\n";
    return false;
  }
  ++launches_;
  result = pack_outputs(outs);
  return true;
}

size_t FusedRuntime::variants() const {
  std::lock_guard lock(variants_mutex_);
  return static_cast<size_t>(std::count_if(
      variants_.begin(), variants_.end(), [](const auto& v) { return v.second.entry != nullptr; }));
}

const FusedRuntime::Entry* FusedRuntime::variant(const ir::Graph& group,
                                                 const std::vector<sem::Value>& args) {
  std::vector<sem::Shape> shapes;
  for (const sem::Value& a : args) shapes.push_back(a.tensor.shape());
  std::lock_guard lock(variants_mutex_);
  Variant& v = variants_[{&group, shapes}];
  if (v.entry) return v.entry.get();
  // The first call runs node by node; the second compiles; after a failure, none does. A group
  // called with ever new shapes keeps at most kMaxVariants kernels.
  if (++v.calls != 2) return nullptr;
  constexpr size_t kMaxVariants = 8;
  if (std::count_if(variants_.begin(), variants_.end(), [&](const auto& x) {
        return x.first.first == &group && x.second.entry;
      }) >= static_cast<std::ptrdiff_t>(kMaxVariants))
    return nullptr;
  if (!variant_graphs_) variant_graphs_ = std::make_unique<ir::Module>();
  const ir::Graph* copy = retyped_copy(*variant_graphs_, group, shapes);
  if (!copy) return nullptr;
  const passes::GroupSpec spec = passes::group_of(*copy);
  auto plan = passes::plan_group(spec);
  if (!plan) return nullptr;
  Entry e = make_entry(*copy, spec, *plan);
  KernelSource src = emit_cpp(e.plan);
  e.name = src.name;
  std::string error;
  v.library = compile_cpp(cpp_unit({src}), compile_, &error);
  e.fn = v.library ? v.library->find(e.name) : nullptr;
  if (!e.fn) return nullptr;
  v.entry = std::make_unique<Entry>(std::move(e));
  return v.entry.get();
}

bool FusedRuntime::run(const ir::Graph& group, const std::vector<sem::Value>& args,
                       sem::Value& result) {
  auto it = entries_.find(&group);
  if (it == entries_.end()) return false;
  const Entry& e = it->second;
  const passes::KernelPlan& plan = e.plan;
  const size_t params = group.params.size();
  if ((gpu_ && gpu_failed_) || args.size() != params ||
      plan.inputs.size() != params + (e.anchor ? 1 : 0)) {
    ++fallbacks_;
    return false;
  }
  // Every argument a tensor of the dtype the kernel was generated for, and of its shape (one
  // only the anchor reads goes to the anchor's kernel, which takes any shape, and may be a
  // shard); other shapes run a variant.
  bool same_shapes = true;
  for (size_t k = 0; k < params; ++k) {
    const sem::Value& a = args[k];
    if (!a.is_tensor() || a.tensor.dtype() != plan.inputs[k].dtype) {
      ++fallbacks_;
      return false;
    }
    same_shapes &= a.tensor.shape() == plan.inputs[k].shape || e.anchor_only[k];
  }
  // The kernel for these shapes: the group's own, or a variant compiled for them.
  const Entry* use = same_shapes ? &e : gpu_ ? nullptr : variant(group, args);
  if (!use) {
    ++fallbacks_;
    return false;
  }
  sem::Tensor anchor;
  if (e.anchor) {
    if (!run_anchor(group, *e.anchor, args, anchor)) {
      ++fallbacks_;
      return false;
    }
    // The anchor's result a shard where the kernel reads it whole: its operands were shards
    // cut along the anchor's rows (a layer's matmul on this rank's rows of the batch), so the
    // kernel for the shards' shapes runs.
    if (!anchor_fits(use->plan, anchor) && use == &e && !gpu_) use = variant(group, args);
    if (!use || !anchor_fits(use->plan, anchor)) {
      ++fallbacks_;
      return false;
    }
  }
  return run_entry(*use, args, std::move(anchor), result);
}

bool FusedRuntime::run_entry(const Entry& e, const std::vector<sem::Value>& args,
                             sem::Tensor anchor, sem::Value& result) {
  const ir::Graph& group = *e.graph;
  const passes::KernelPlan& plan = e.plan;
  const size_t params = group.params.size();
  if (gpu_) return run_gpu(group, e, args, std::move(anchor), result);
  std::vector<const void*> in;
  for (size_t k = 0; k < params; ++k) in.push_back(args[k].tensor.raw());
  if (e.anchor) in.push_back(anchor.raw());
  std::vector<void*> out;
  std::vector<sem::Tensor> outs = allocate_outputs(
      plan, e.anchor != nullptr, anchor, &args,
      [](DType t, const sem::Shape& shape) { return sem::Tensor::empty(t, shape); }, out);
  // The CPU backend's policy: a team only for enough work, and none while the machine is
  // oversubscribed (a parallel region then waits for time slices).
  const int64_t work = plan.rows * plan.inner * static_cast<int64_t>(plan.passes.size());
  const int threads = work >= cpu::parallel_work() ? cpu::team_size() : 1;
  if (e.fn(in.data(), out.data(), threads) != 0) {
    ++fallbacks_;
    return false;
  }
  ++launches_;
  result = pack_outputs(outs);
  return true;
}

}  // namespace spora::codegen
