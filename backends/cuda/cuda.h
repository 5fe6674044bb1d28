// The CUDA backend (issue 8): device probe, caching allocator for
// Device::Kind::cuda storage, host <-> device copies, and the "kernel.cuda" facet of every
// registry row. See README.md of this folder.
//
// This header has no CUDA include, so every layer that may include backends (tools/, tests)
// compiles with or without the toolkit. Built without CUDA (SPORA_CUDA=OFF or no nvcc), the
// same functions exist: cuda_available() says why not, and the copies throw a user error.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "semantics/value.h"

namespace spora::ir {
struct Graph;
}
namespace spora::sem {
struct Primitive;
class Interpreter;
}  // namespace spora::sem

namespace spora::cuda {

// Whether a CUDA device can run kernels now. Never crashes or throws: without a driver (the
// development and CI machines: cudaErrorInsufficientDriver), without a device, or in a build
// without CUDA it returns false and puts the reason in *why ("no CUDA device: ...").
bool cuda_available(std::string* why = nullptr);
// Whether Spora was built with the CUDA parts (the toolkit was found).
bool built_with_cuda();

// The GPU this process uses (default 0), chosen before the backend starts: a distributed run
// gives each rank of a host its own (its local rank). Throws lang::UserError when the index is
// not a device, or when the backend already runs on another one.
void select_device(int index);

// Installs the CUDA caching allocator for Device::Kind::cuda (sem::set_allocator). Needs
// cuda_available(); throws lang::UserError with the reason otherwise. Idempotent.
void install();

// Adds the "kernel.cuda" facet (sem::kCudaKernelFacet) to every registry row that has a
// reference kernel: a CUDA kernel where one is written, else the host fallback (inputs copied
// to the host, the CPU kernel or the reference kernel run, the result copied back, with a
// one-time warning per row). Call after ops::register_all() and cpu::register_kernels();
// then sem::set_backend(Backend::Cuda). Registering touches no GPU (works without one).
void register_kernels();

// The tensor on the device (a copy; the tensor itself when it is there already) / on the host.
sem::Tensor to_device(const sem::Tensor& t, int index = 0);
sem::Tensor to_host(const sem::Tensor& t);
// The same over values: every tensor inside tuples and records is moved; other values stay.
sem::Value to_device(const sem::Value& v, int index = 0);
sem::Value to_host(const sem::Value& v);
// Waits for every queued kernel and copy of the backend's stream.
void synchronize();

// One registry row's CUDA status, for the coverage list (README.md, `spora ops`, test_gpu).
struct Coverage {
  std::string name;
  enum class Kind { Native, Host } kind;  // Native: a CUDA kernel (or cuBLAS); Host: fallback
  std::string note;                       // what the native kernel leaves to the fallback
};
// Every row with a reference kernel, sorted by name (after register_kernels()).
std::vector<Coverage> coverage();
// Rows whose fallback ran in this process (each warned once).
std::vector<std::string> fallbacks_used();

// The CUDA caching allocator's counters (cudaMalloc'd blocks; see allocator.h).
struct DeviceMemoryStats {
  int64_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0, reserved_bytes = 0;
  int64_t hits = 0, misses = 0, frees = 0, cuda_mallocs = 0, oom_retries = 0;
};
DeviceMemoryStats memory_stats();
// Returns every cached block to the driver (cudaFree).
void empty_cache();

// ---- CUDA graphs of graph-mode functions (graphs.cpp) ---------------------------------------
//
// With graphs enabled, the interpreter's calls of a top-level function run on the GPU like
// this: the first call runs as usual (it warms the caching allocator and cuBLAS up); the
// second is captured on the backend's stream (cudaStreamBeginCapture / EndCapture) from
// device copies of its arguments, instantiated and launched; later calls whose arguments have
// the same structure, dtypes and shapes copy their arguments into the captured buffers,
// launch the graph (cudaGraphLaunch) and copy the results out. A function that cannot be
// captured runs uncaptured from then on: statically (capture_eligible) or when capture meets a
// host read, a host fallback kernel or a failing CUDA call (said once with verbose).

// Whether a function qualifies, looking through the functions it calls: no control flow
// (if, while, for_range, for_each read values on the host), and every primitive one that
// `native` says runs a CUDA kernel (the host fallback copies through host memory). False
// with the first reason in *why. Host logic only: works in every build.
bool capture_eligible(const ir::Graph& g, const std::function<bool(const sem::Primitive&)>& native,
                      std::string* why = nullptr);
// The default `native`: the row's coverage is Native (after register_kernels()).
bool runs_natively(const sem::Primitive& p);

// Installs the interpreter's call hook (sem::set_call_hook), unless SPORA_CUDA_GRAPHS=0.
// Returns whether graphs are on. verbose: say on stderr which functions are captured and
// why a function is not.
bool enable_graphs(bool verbose = false);
// Removes the hook and destroys every captured graph (waits for the stream first).
void disable_graphs();
// interp.call(g, args) through the same capture and replay (a benchmark's or a driver's
// top-level calls, which the interpreter's hook does not see); a plain call when graphs are
// off (enable_graphs not called, or SPORA_CUDA_GRAPHS=0).
sem::Value call_with_graphs(sem::Interpreter& interp, const ir::Graph* g,
                            std::vector<sem::Value> args);

// Kernel and graph launch counters of the backend.
struct LaunchStats {
  int64_t kernels = 0;           // kernels and cuBLAS calls queued outside capture
  int64_t captured = 0;          // ... recorded into a graph while capturing
  int64_t graph_launches = 0;    // cudaGraphLaunch calls
  int64_t captures = 0;          // functions captured
  int64_t capture_failures = 0;  // captures given up
};
LaunchStats launch_stats();
void reset_launch_stats();

}  // namespace spora::cuda
