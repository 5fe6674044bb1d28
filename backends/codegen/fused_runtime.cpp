// Running fusion groups with their compiled kernels (fused_runtime.h).
#include "backends/codegen/fused_runtime.h"

#include <cstdlib>
#include <iostream>

#include "backends/cpu/kernels.h"
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
    out += "\n// ---- @" + g.graph->name + " ----\n";
    out += emit_cpp(g.plan).text;
    if (cuda) out += "\n" + emit_cuda(g.plan).text;
  }
  return out;
}

FusedOptions default_fused_options() {
  FusedOptions o;
  o.min_elements = 4096;
  if (const char* v = std::getenv("SPORA_FUSE_MIN_ELEMENTS")) o.min_elements = std::atoll(v);
  return o;
}

FusedRuntime::FusedRuntime(const ir::Module& m, FusedOptions options) {
  std::vector<KernelSource> sources;
  for (const auto& g : m.graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    ++groups_;
    const passes::GroupSpec spec = passes::group_of(*g);
    auto plan = passes::plan_group(spec);
    if (!plan) continue;
    if (plan->rows * plan->inner < options.min_elements) continue;
    Entry e;
    e.plan = *plan;
    if (plan->anchor >= 0) e.anchor = spec.nodes[static_cast<size_t>(plan->anchor)];
    KernelSource src = emit_cpp(*plan);
    e.name = src.name;
    sources.push_back(std::move(src));
    entries_.emplace(g.get(), std::move(e));
  }
  if (!entries_.empty()) {
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
  sem::set_fused_kernel_hook(
      [this](const ir::Graph& g, const std::vector<sem::Value>& args, sem::Value& result) {
        return run(g, args, result);
      });
}

FusedRuntime::~FusedRuntime() { sem::set_fused_kernel_hook(nullptr); }

bool FusedRuntime::run(const ir::Graph& group, const std::vector<sem::Value>& args,
                       sem::Value& result) {
  auto it = entries_.find(&group);
  if (it == entries_.end()) return false;
  const Entry& e = it->second;
  const passes::KernelPlan& plan = e.plan;
  const size_t params = group.params.size();
  if (args.size() != params || plan.inputs.size() != params + (e.anchor ? 1 : 0)) {
    ++fallbacks_;
    return false;
  }
  std::vector<const void*> in;
  for (size_t k = 0; k < params; ++k) {
    const sem::Value& a = args[k];
    if (!a.is_tensor() || a.tensor.dtype() != plan.inputs[k].dtype ||
        a.tensor.shape() != plan.inputs[k].shape) {
      ++fallbacks_;
      return false;
    }
    in.push_back(a.tensor.raw());
  }
  // The anchor: its backend kernel on its arguments (parameters or copied scalar constants).
  sem::Tensor anchor;
  if (e.anchor) {
    std::vector<sem::Value> anchor_args;
    for (const ir::Node* x : e.anchor->inputs) {
      if (x->is_param()) {
        const auto p = std::find(group.params.begin(), group.params.end(), x);
        anchor_args.push_back(args[static_cast<size_t>(p - group.params.begin())]);
      } else {
        anchor_args.push_back(x->value);
      }
    }
    sem::Value v = sem::kernel_for(*e.anchor->prim)(anchor_args, e.anchor->attrs);
    const passes::KernelBuffer& want = plan.inputs.back();
    if (!v.is_tensor() || v.tensor.dtype() != want.dtype || v.tensor.shape() != want.shape) {
      ++fallbacks_;
      return false;
    }
    anchor = std::move(v.tensor);
    in.push_back(anchor.raw());
  }
  std::vector<sem::Tensor> outs;
  std::vector<void*> out;
  bool anchor_reused = false;
  for (const passes::KernelBuffer& b : plan.outputs) {
    // The anchor's result is read at each element's own index only: an output may overwrite it.
    if (e.anchor && !anchor_reused && plan.in_place_ok.back() && anchor.unique() &&
        anchor.dtype() == b.dtype && anchor.numel() == b.numel()) {
      outs.push_back(anchor.reshaped(b.shape));
      anchor_reused = true;
    } else {
      outs.push_back(sem::Tensor::empty(b.dtype, b.shape));
    }
    out.push_back(outs.back().raw());
  }
  // The CPU backend's policy: a team only for enough work, and none while the machine is
  // oversubscribed (a parallel region then waits for time slices).
  const int64_t work = plan.rows * plan.inner * static_cast<int64_t>(plan.passes.size());
  const int threads = work >= cpu::parallel_work() ? cpu::team_size() : 1;
  if (e.fn(in.data(), out.data(), threads) != 0) {
    ++fallbacks_;
    return false;
  }
  ++launches_;
  if (outs.size() == 1) {
    result = sem::Value(std::move(outs[0]));
  } else {
    std::vector<sem::Value> items;
    for (sem::Tensor& t : outs) items.emplace_back(std::move(t));
    result = sem::Value::tuple(std::move(items));
  }
  return true;
}

}  // namespace spora::codegen
