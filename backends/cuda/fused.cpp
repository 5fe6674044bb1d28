// Fused groups on the GPU: loading NVRTC images and launching their kernels (fused.h).
#include "backends/cuda/fused.h"

#include <cuda.h>  // driver API types; the functions come from cudaGetDriverEntryPointByVersion

#include <mutex>
#include <unordered_map>

#include "backends/cuda/context.h"
#include "lang/diagnostics.h"

namespace spora::cuda {

namespace {

// The driver functions the launcher needs, looked up through the runtime (which has loaded
// libcuda already): Spora never links libcuda, so its binaries still start on machines
// without a driver (the development and CI machines).
struct Driver {
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  std::string error;  // why a lookup failed
};

template <class F>
void lookup(const char* symbol, F& fn, std::string& error) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    if (error.empty())
      error = std::string("the driver has no ") + symbol + " (" + cudaGetErrorName(e) +
              ", status " + std::to_string(static_cast<int>(status)) + ")";
    return;
  }
  fn = reinterpret_cast<F>(p);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    lookup("cuModuleLoadData", r.module_load_data, r.error);
    lookup("cuModuleGetFunction", r.module_get_function, r.error);
    lookup("cuLaunchKernel", r.launch_kernel, r.error);
    lookup("cuCtxGetCurrent", r.ctx_get_current, r.error);
    lookup("cuCtxSetCurrent", r.ctx_set_current, r.error);
    lookup("cuGetErrorName", r.get_error_name, r.error);
    return r;
  }();
  return d;
}

std::string describe(CUresult r, const char* what) {
  const char* name = nullptr;
  if (driver().get_error_name) driver().get_error_name(r, &name);
  return std::string(what) + " failed: " + (name ? name : "CUresult " + std::to_string(r));
}

class FusedGpu final : public codegen::GpuKernels {
 public:
  FusedGpu() {
    Context& c = context();
    int major = 0, minor = 0;
    SPORA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c.device));
    SPORA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, c.device));
    arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  }

  std::string arch() const override { return arch_; }

  bool load(const std::string& image, std::string* error) override {
    const Driver& d = driver();
    if (!d.error.empty()) {
      *error = d.error;
      return false;
    }
    // The runtime's primary context: cudaSetDevice makes it current on this thread and
    // cudaFree(0) makes sure it exists; the module is loaded into it, so kernels launched on
    // the backend's stream (created by the runtime in the same context) may use it.
    if (cudaSetDevice(context().device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
      cudaGetLastError();
      *error = "cannot make the primary context current";
      return false;
    }
    CUresult r = d.ctx_get_current(&ctx_);
    if (r != CUDA_SUCCESS || !ctx_) {
      *error = r != CUDA_SUCCESS ? describe(r, "cuCtxGetCurrent") : "no current CUDA context";
      return false;
    }
    r = d.module_load_data(&module_, image.c_str());
    if (r != CUDA_SUCCESS) {
      *error = describe(r, "cuModuleLoadData") + " (image of " + std::to_string(image.size()) +
               " bytes for " + arch_ + ")";
      return false;
    }
    return true;
  }

  bool find(const std::string& name, bool totals, std::string* error) override {
    for (const std::string& n :
         totals ? std::vector<std::string>{name, name + "_init", name + "_finish"}
                : std::vector<std::string>{name}) {
      CUfunction f = nullptr;
      const CUresult r = driver().module_get_function(&f, module_, n.c_str());
      if (r != CUDA_SUCCESS) {
        *error = describe(r, "cuModuleGetFunction") + " for " + n;
        return false;
      }
      functions_[n] = f;
    }
    return true;
  }

  sem::Tensor to_device(const sem::Tensor& t) override { return cuda::to_device(t); }
  sem::Tensor empty(DType dtype, const sem::Shape& shape) override {
    return sem::Tensor::empty(dtype, shape, sem::Device::cuda());
  }

  int launch(const std::string& name, const passes::KernelPlan& plan,
             const std::vector<const void*>& in, const std::vector<void*>& out,
             std::string* error) override {
    const std::vector<codegen::CudaParam> params = codegen::cuda_params(plan);
    if (in.size() != plan.inputs.size() || out.size() != plan.outputs.size() ||
        params.size() != in.size() + out.size() + 2) {
      *error = "the arguments do not match the kernel's parameters of " + name;
      return -1;
    }
    const Driver& d = driver();
    // Another thread (the interpreter's deep-recursion stacks) may have no current context.
    CUcontext cur = nullptr;
    if (d.ctx_get_current(&cur) != CUDA_SUCCESS || cur != ctx_) d.ctx_set_current(ctx_);
    const bool has_totals = !plan.totals.empty() || !plan.epilogue.empty();
    sem::Tensor totals, err;
    if (has_totals)
      totals = empty(DType::f64, {static_cast<int64_t>(std::max<size_t>(1, plan.totals.size()))});
    if (plan.checks) {
      err = empty(DType::i32, {});
      SPORA_CUDA_CHECK(cudaMemsetAsync(err.raw(), 0, sizeof(int), stream()));
    }
    // The parameters in cuda_params' order: in0.., out0.., sp_err, sp_totals.
    std::vector<void*> ptrs;
    for (const void* p : in) ptrs.push_back(const_cast<void*>(p));
    for (void* p : out) ptrs.push_back(p);
    ptrs.push_back(plan.checks ? err.raw() : scratch());
    ptrs.push_back(has_totals ? totals.raw() : nullptr);
    std::vector<void*> args;
    for (void*& p : ptrs) args.push_back(&p);
    auto fn = [&](const std::string& n) { return functions_.at(n); };
    auto go = [&](CUfunction f, unsigned grid, unsigned block, void** a) {
      const CUresult r = d.launch_kernel(f, grid, 1, 1, block, 1, 1, 0,
                                         reinterpret_cast<CUstream>(stream()), a, nullptr);
      if (r != CUDA_SUCCESS) *error = describe(r, "cuLaunchKernel") + " for " + name;
      note_launch();
      return r == CUDA_SUCCESS;
    };
    void* totals_arg[] = {&ptrs.back()};
    if (has_totals && !go(fn(name + "_init"), 1, 1, totals_arg)) return -1;
    const codegen::CudaGeometry g = codegen::cuda_geometry(plan);
    if (g.work > 0) {
      const unsigned grid =
          g.rowwise
              ? static_cast<unsigned>(std::min<int64_t>(g.work, int64_t{context().sm_count} * 32))
              : grid_for(g.work, g.threads);
      if (!go(fn(name), grid, static_cast<unsigned>(g.threads), args.data())) return -1;
    }
    if (has_totals && !go(fn(name + "_finish"), 1, 1, args.data())) return -1;
    if (plan.checks) {
      if (capturing()) {
        defer_check(err);  // read after each replay (graphs.cpp)
      } else {
        int bad = 0;
        copy_to_host(&bad, err.raw(), sizeof(int));
        if (bad) return 1;
      }
    }
    return 0;
  }

 private:
  // sp_err of kernels without checks: never written, but a valid pointer.
  void* scratch() {
    if (!scratch_.defined()) scratch_ = empty(DType::i32, {});
    return scratch_.raw();
  }
  std::string arch_;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;  // never unloaded: launched graphs may still use it
  std::unordered_map<std::string, CUfunction> functions_;
  sem::Tensor scratch_;
};

}  // namespace

std::shared_ptr<codegen::GpuKernels> make_fused_gpu(std::string* why) {
  if (!cuda_available(why)) return nullptr;
  if (const std::string& e = driver().error; !e.empty()) {
    if (why) *why = e;
    return nullptr;
  }
  return std::make_shared<FusedGpu>();
}

}  // namespace spora::cuda
