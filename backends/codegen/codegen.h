// Kernel generation for fusion groups: the kernel IR of each group (semantics/kernel_ir/, built
// by semantics/passes/fusion_plan.h) printed as C++ (one OpenMP loop nest, vectorisable inner
// loops) or CUDA (grid-stride loops, block reductions), and the C++ compiled by the system
// compiler into a cached shared object. See README.md of this folder.
//
//   emit_cpp / emit_cuda       one kernel's source (named by the hash of its body, so equal
//                              groups share a kernel), and whole translation units with the
//                              target's prelude (the sp_* helpers, vectorised exp/erf/tanh)
//   compile_cpp                source -> shared object in the cache (a hash of compiler, flags,
//                              machine and source names it; a second build loads it without
//                              compiling), dlopen'ed once per process
//   nvrtc_compile              CUDA source -> CUBIN for sm_90 with NVRTC (compile only: a check
//                              that the generated CUDA is valid where no GPU is present)
//   FusedRuntime               (fused_runtime.h) runs the calls of fused graphs with them
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"
#include "semantics/passes/fusion_plan.h"

namespace spora::codegen {

// ---- source --------------------------------------------------------------------------------

struct KernelSource {
  std::string name;  // spora_k<hash of the body>
  std::string text;  // the function(s)
};

// C++: `extern "C" int NAME(const void* const* in, void* const* out, int threads)`; in[k] /
// out[k] point to the plan's buffers (row-major, bool as uint8_t); `threads` is the OpenMP team
// of the outer loop (1: run on the calling thread); returns 0, or 1 when an SP_CHECK failed.
KernelSource emit_cpp(const passes::KernelPlan& plan);
// The kernel as emit_cpp prints it: tiled, interleaved and given vector width 16 where the
// C++ target does so (semantics/kernel_ir/transform.h).
kir::Kernel cpp_schedule(const kir::Kernel& plan);
// A translation unit: the C++ prelude, then each distinct kernel once.
std::string cpp_unit(const std::vector<KernelSource>& kernels);
const std::string& cpp_prelude();

// CUDA: `extern "C" __global__ void NAME(in0.., out0.., int* sp_err, double* sp_totals)`, plus
// NAME_init (sets the totals) and NAME_finish (the scalar epilogue) when the group has totals.
// Launch: one block per row for row reductions (blockDim a multiple of 32, at most 1024),
// any grid for elementwise groups.
KernelSource emit_cuda(const passes::KernelPlan& plan);
std::string cuda_unit(const std::vector<KernelSource>& kernels);
const std::string& cuda_prelude();

// Every fused graph of m with its loop nest (those plan_group accepts), in module order.
struct FusedGroup {
  const ir::Graph* graph;
  passes::KernelPlan plan;
};
std::vector<FusedGroup> fused_groups(const ir::Module& m);

// What `spora ir --emit kernels` prints: per fused graph a header comment, its C++ and
// (cuda) its CUDA source; the preludes once at the top when `preludes`.
std::string kernel_listing(const ir::Module& m, bool cuda, bool preludes);

// ---- C++ compilation -----------------------------------------------------------------------

struct CompileOptions {
  std::string compiler;   // the system C++ compiler (SPORA_CXX, else the one Spora was built with)
  std::string flags;      // -O3 -march=native -fopenmp ... (SPORA_CXXFLAGS replaces them)
  std::string cache_dir;  // SPORA_CACHE_DIR, else $XDG_CACHE_HOME/spora/kernels, else
                          // ~/.cache/spora/kernels, else <temp>/spora-<uid>; private to the
                          // user (cache.h), compile_cpp refuses any other
};
CompileOptions default_compile_options();

// Process-wide counters (tests check that a cached build does not compile).
struct CompileStats {
  size_t compiles = 0;    // compiler runs that produced a shared object
  size_t cache_hits = 0;  // shared objects found in the cache
  size_t failures = 0;    // compiler runs that failed (or could not start)
  size_t rejected = 0;    // cache entries not loaded (wrong digest, foreign) and built anew
};
CompileStats compile_stats();
void reset_compile_stats();

// A loaded shared object of kernels.
class KernelLibrary {
 public:
  using Fn = int (*)(const void* const* in, void* const* out, int threads);
  ~KernelLibrary();
  Fn find(const std::string& name) const;  // null when absent
  const std::string& path() const { return path_; }

 private:
  friend std::shared_ptr<KernelLibrary> compile_cpp(const std::string&, const CompileOptions&,
                                                    std::string*);
  void* handle_ = nullptr;
  std::string path_;
};

// Where compile_cpp keeps the shared object of `source` built with `options`
// (<cache_dir>/<hash>.so; its digest in <hash>.so.sha256, see cache.h).
std::string kernel_cache_path(const std::string& source, const CompileOptions& options);

// Compiles (or finds in the cache) and loads a translation unit. On failure (the cache
// directory is not private, the compiler failed): null, and the reason (the compiler's first
// lines) in *error.
std::shared_ptr<KernelLibrary> compile_cpp(const std::string& source, const CompileOptions& options,
                                           std::string* error = nullptr);

// ---- CUDA ----------------------------------------------------------------------------------

// Is NVRTC available (Spora built with the CUDA toolkit)?
bool nvrtc_available();
// Compiles a CUDA translation unit for `arch` (sm_90) to CUBIN; true on success, else the
// log in *log. Always false (with a message) without NVRTC.
bool nvrtc_compile(const std::string& source, const std::string& arch = "sm_90",
                   std::string* log = nullptr);

// What the GPU launcher loads: `image` is a CUBIN for an sm_XY arch, or PTX text (0-terminated)
// for a compute_XY arch (the driver compiles it when loading).
struct NvrtcImage {
  std::string image;
  bool cached = false;  // read from the cache, no NVRTC run
};
// Compiles (or finds in cache_dir: `<hash>.cubin` / `<hash>.ptx`, a hash of NVRTC's version,
// the arch, the options and the source) a CUDA translation unit. The cache is compile_cpp's
// (cache.h): private, an entry used only when its bytes have the recorded SHA-256. False with
// NVRTC's log (or the reason) in *log on failure; the source is then kept as `<hash>.cu`.
bool nvrtc_build(const std::string& source, const std::string& arch, const std::string& cache_dir,
                 NvrtcImage* out, std::string* log = nullptr);
struct NvrtcStats {
  size_t compiles = 0, cache_hits = 0, failures = 0;
  size_t rejected = 0;  // cache entries whose digest did not match (built anew)
};
NvrtcStats nvrtc_stats();

// The parameters emit_cuda gives a kernel, in order: what the launcher packs (every one a
// device pointer, 8 bytes). The host-side check compares them with the PTX's .entry.
struct CudaParam {
  enum class Kind { In, Out, Err, Totals } kind;
  int index = 0;             // in<index> / out<index>
  DType dtype = DType::f32;  // the buffer's element type (Err: i32, Totals: f64)
};
std::vector<CudaParam> cuda_params(const passes::KernelPlan& plan);
// The launch geometry of a plan's main kernel: one block per row (rowwise) or a grid-stride
// loop over rows * inner elements; blocks of `threads` (a multiple of 32).
struct CudaGeometry {
  bool rowwise = false;
  int threads = 256;
  int64_t work = 0;  // rows (rowwise) or rows * inner elements
};
CudaGeometry cuda_geometry(const passes::KernelPlan& plan);
// The byte sizes of the parameters of `.entry name(...)` in PTX text (.u64 -> 8, .u32 -> 4
// ...); nullopt when the entry is not there.
std::optional<std::vector<int>> ptx_entry_params(const std::string& ptx, const std::string& name);

}  // namespace spora::codegen
