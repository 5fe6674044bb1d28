// The CUDA backend's interface (cuda.h) in a build without the toolkit (SPORA_CUDA=OFF or no
// nvcc): nothing is available, nothing is registered, copies are a user error.
#include "backends/cuda/cuda.h"
#include "backends/cuda/fused.h"
#include "lang/diagnostics.h"
#include "semantics/interpreter.h"

namespace spora::cuda {

namespace {
const char* kWhy = "no CUDA device: Spora was built without CUDA (SPORA_CUDA=OFF or no toolkit)";
[[noreturn]] void unavailable() {
  throw lang::UserError(std::string("the CUDA backend cannot start: ") + kWhy);
}
}  // namespace

bool cuda_available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}
bool built_with_cuda() { return false; }
void install() { unavailable(); }
void select_device(int) { unavailable(); }
void register_kernels() {}
sem::Tensor to_device(const sem::Tensor& t, int) {
  if (!t.defined() || !t.device().is_cpu()) return t;
  unavailable();
}
sem::Tensor to_host(const sem::Tensor& t) { return t; }
sem::Value to_device(const sem::Value& v, int) {
  if (v.is_tensor()) return to_device(v.tensor, 0);
  return v;
}
sem::Value to_host(const sem::Value& v) { return v; }
void synchronize() {}
std::vector<Coverage> coverage() { return {}; }
std::vector<std::string> fallbacks_used() { return {}; }
DeviceMemoryStats memory_stats() { return {}; }
void empty_cache() {}
bool enable_graphs(bool) { return false; }
void disable_graphs() {}
sem::Value call_with_graphs(sem::Interpreter& interp, const ir::Graph* g,
                            std::vector<sem::Value> args) {
  return interp.call(g, std::move(args));
}
LaunchStats launch_stats() { return {}; }
void reset_launch_stats() {}
std::shared_ptr<codegen::GpuKernels> make_fused_gpu(std::string* why) {
  if (why) *why = kWhy;
  return nullptr;
}

}  // namespace spora::cuda
