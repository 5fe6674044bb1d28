// Running fusion groups with their compiled kernels: the interpreter's
// fused-kernel hook (semantics/interpreter.h).
//
// A FusedRuntime is made for one module after fuse_operators (semantics/passes/fusion.h): it
// plans every fused graph, emits the C++ of those whose domain has at least `min_elements`
// elements, compiles them as one translation unit (codegen.h: cached on disk, so a second run
// does not compile), and installs the hook while it lives. A call of a fused graph then
//   1. checks the arguments against the kernel's buffers (dtype, shape),
//   2. runs the group's output-fusable anchor (matmul, conv2d) with its backend kernel
//      (sem::kernel_for: BLAS), whose result the epilogue may overwrite in place,
//   3. allocates the outputs and runs the kernel.
// Arguments of other shapes than the group's types (a distributed run's shards, a loop's short
// last batch) run a variant of the kernel: the group retyped for those shapes by the
// primitives' shape rules, planned and compiled on its second call with them (a single call
// runs node by node: compiling would cost more than it saves; at most 8 per group); a group the
// shapes do not retype or plan keeps running node by node.
// Anything else runs the group node by node, exactly as the unfused program: a group without a
// kernel (too small, unplannable, compile failure), unexpected arguments, or a kernel that
// reports a failed check (a label out of range: the node-by-node run raises the error).
// A compile failure prints one warning (`spora: warning: ...`) and never stops the program.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backends/codegen/codegen.h"
#include "semantics/interpreter.h"

namespace spora::codegen {

// A GPU target for fused groups: backends/cuda/fused.h makes one (cuda::make_fused_gpu). The
// runtime then emits CUDA (emit_cuda), compiles the module's groups as one translation unit
// with NVRTC for arch() (nvrtc_build: cached on disk like the C++ kernels), loads the image
// and launches groups through it; tensors are allocated on the device. Any failure (NVRTC,
// loading, a launch) prints one warning and the groups run node by node.
class GpuKernels {
 public:
  virtual ~GpuKernels() = default;
  virtual std::string arch() const = 0;  // what NVRTC compiles for: sm_90 (CUBIN) or compute_XY
  // Loads a compiled image (nvrtc_build's); false with the reason in *error.
  virtual bool load(const std::string& image, std::string* error) = 0;
  // Looks up kernel `name` (and NAME_init / NAME_finish when `totals`) in the loaded image.
  virtual bool find(const std::string& name, bool totals, std::string* error) = 0;
  virtual sem::Tensor to_device(const sem::Tensor& t) = 0;              // t itself when it is there
  virtual sem::Tensor empty(DType dtype, const sem::Shape& shape) = 0;  // on the device
  // Queues the group's kernels on the backend's stream: 0 done, 1 an SP_CHECK failed (the
  // caller runs the group node by node, which raises the error), -1 a CUDA error (*error).
  virtual int launch(const std::string& name, const passes::KernelPlan& plan,
                     const std::vector<const void*>& in, const std::vector<void*>& out,
                     std::string* error) = 0;
};

struct FusedOptions {
  CompileOptions compile = default_compile_options();
  // Groups with fewer domain elements run node by node (compiling would cost more than it
  // saves), except groups run by a loop (a while, for or for-each body, or a graph such a body
  // reaches through calls and graph values): those are compiled from min_elements_in_loops,
  // since each call saves the interpreter's per-node work and a loop makes many calls.
  // SPORA_FUSE_MIN_ELEMENTS overrides both defaults of default_fused_options().
  int64_t min_elements = 0;
  int64_t min_elements_in_loops = 0;
  bool warn = true;  // a compile failure prints a warning on stderr
  // A library already built with the groups' kernels (cpp_unit of emit_cpp of their plans):
  // nothing is compiled, kernels are looked up in it by name.
  std::shared_ptr<KernelLibrary> library;
  // Run the groups on this GPU target instead of as C++ (null: the CPU).
  std::shared_ptr<GpuKernels> gpu;
};
FusedOptions default_fused_options();  // min_elements 4096, in loops 0 (or SPORA_FUSE_MIN_ELEMENTS)

// The graphs a loop runs: while, for and for-each bodies and conditions, and every graph they
// reach through calls and graph values.
std::unordered_set<const ir::Graph*> graphs_run_by_loops(const ir::Module& m);

class FusedRuntime {
 public:
  explicit FusedRuntime(const ir::Module& m, FusedOptions options = default_fused_options());
  ~FusedRuntime();
  FusedRuntime(const FusedRuntime&) = delete;
  FusedRuntime& operator=(const FusedRuntime&) = delete;

  size_t groups() const { return groups_; }     // fused graphs of the module
  size_t kernels() const { return entries_.size(); }  // of them, with a compiled kernel
  const std::string& error() const { return error_; }  // the compile failure, if any
  size_t launches() const { return launches_; }
  size_t fallbacks() const { return fallbacks_; }
  size_t variants() const;  // kernels compiled for other argument shapes
  bool on_gpu() const { return gpu_ != nullptr; }

  // The hook itself: runs `group` on `args` with its kernel (false: run it node by node).
  bool run(const ir::Graph& group, const std::vector<sem::Value>& args, sem::Value& result);

 private:
  struct Entry {
    const ir::Graph* graph = nullptr;  // the group the plan was made from
    passes::KernelPlan plan;
    std::string name;
    KernelLibrary::Fn fn = nullptr;
    const ir::Node* anchor = nullptr;
    std::vector<bool> anchor_only;  // per parameter: read by the anchor alone
  };
  std::unordered_map<const ir::Graph*, Entry> entries_;
  // Kernels for other argument shapes: per (group, shapes), the calls seen and the entry once
  // compiled (a null entry after a failure: that group runs node by node with those shapes).
  struct Variant {
    int calls = 0;
    std::unique_ptr<Entry> entry;
    std::shared_ptr<KernelLibrary> library;
  };
  std::map<std::pair<const ir::Graph*, std::vector<sem::Shape>>, Variant> variants_;
  std::unique_ptr<ir::Module> variant_graphs_;  // the retyped copies the variants plan
  mutable std::mutex variants_mutex_;
  CompileOptions compile_;
  static Entry make_entry(const ir::Graph& g, const passes::GroupSpec& spec,
                          passes::KernelPlan plan);
  const Entry* variant(const ir::Graph& group, const std::vector<sem::Value>& args);
  // Runs an entry on `args`; `anchor` is its anchor's result (run() computes it), or empty.
  bool run_entry(const Entry& e, const std::vector<sem::Value>& args, sem::Tensor anchor,
                 sem::Value& result);
  std::shared_ptr<KernelLibrary> library_;
  std::shared_ptr<GpuKernels> gpu_;
  bool warn_ = true;
  std::atomic<bool> gpu_failed_{false};  // a launch failed: every group runs node by node
  bool build_gpu(const std::vector<KernelSource>& sources, const FusedOptions& options);
  bool run_gpu(const ir::Graph& group, const Entry& e, const std::vector<sem::Value>& args,
               sem::Tensor anchor, sem::Value& result);
  std::string error_;
  size_t groups_ = 0;
  std::atomic<size_t> launches_{0}, fallbacks_{0};
};

}  // namespace spora::codegen
