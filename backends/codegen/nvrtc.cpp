// NVRTC compilation of generated CUDA (codegen.h). Built with SPORA_HAVE_NVRTC when the CUDA
// toolkit is found; NVRTC compiles without a GPU or a driver, so every machine with the
// toolkit checks the generated kernels for sm_90. nvrtc_build adds the on-disk cache the GPU
// launcher (backends/cuda/fused.cpp) loads from, like compile_cpp's for the C++ kernels.
#include <atomic>
#include <filesystem>
#include <regex>

#include "backends/codegen/cache.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"

#ifdef SPORA_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace spora::codegen {

namespace fs = std::filesystem;

namespace {
std::atomic<size_t> g_compiles{0}, g_hits{0}, g_failures{0}, g_rejected{0};
}  // namespace

NvrtcStats nvrtc_stats() {
  return {g_compiles.load(), g_hits.load(), g_failures.load(), g_rejected.load()};
}

std::vector<CudaParam> cuda_params(const passes::KernelPlan& plan) {
  std::vector<CudaParam> out;
  for (size_t k = 0; k < plan.inputs.size(); ++k)
    out.push_back({CudaParam::Kind::In, static_cast<int>(k), plan.inputs[k].dtype});
  for (size_t k = 0; k < plan.outputs.size(); ++k)
    out.push_back({CudaParam::Kind::Out, static_cast<int>(k), plan.outputs[k].dtype});
  out.push_back({CudaParam::Kind::Err, 0, DType::i32});
  out.push_back({CudaParam::Kind::Totals, 0, DType::f64});
  return out;
}

CudaGeometry cuda_geometry(const passes::KernelPlan& plan) {
  CudaGeometry g;
  g.rowwise = !plan.splittable;
  if (g.rowwise) {
    g.work = plan.rows;
    // Short rows waste fewer idle threads with a smaller block; 32 at least (a warp).
    g.threads = plan.inner >= 256 ? 256 : (plan.inner > 64 ? 128 : 64);
  } else {
    g.work = plan.rows * plan.inner;
    g.threads = 256;
  }
  return g;
}

std::optional<std::vector<int>> ptx_entry_params(const std::string& ptx, const std::string& name) {
  const std::string head = ".entry " + name + "(";
  size_t at = ptx.find(head);
  if (at == std::string::npos) return std::nullopt;
  const size_t end = ptx.find(')', at);
  if (end == std::string::npos) return std::nullopt;
  const std::string list = ptx.substr(at + head.size(), end - at - head.size());
  std::vector<int> sizes;
  static const std::regex param(R"(\.param\s+([^,]*))");
  static const std::regex scalar(R"(\.[usbf](8|16|32|64)\b)");
  static const std::regex array(R"(\.b8\s+\w+\[(\d+)\])");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), param);
       it != std::sregex_iterator(); ++it) {
    const std::string decl = (*it)[1].str();
    std::smatch m;
    if (std::regex_search(decl, m, array))
      sizes.push_back(std::stoi(m[1].str()));
    else if (std::regex_search(decl, m, scalar))
      sizes.push_back(std::stoi(m[1].str()) / 8);
    else
      sizes.push_back(-1);
  }
  return sizes;
}

#ifdef SPORA_HAVE_NVRTC

bool nvrtc_available() { return true; }

namespace {
// One NVRTC run: CUBIN for sm_XY, PTX for compute_XY. False with the log.
bool run_nvrtc(const std::string& source, const std::string& arch, std::string* image,
               std::string* log) {
  nvrtcProgram prog;
  nvrtcResult rc = nvrtcCreateProgram(&prog, source.c_str(), "spora_fused.cu", 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    if (log) *log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(rc);
    return false;
  }
  const std::string gpu = "--gpu-architecture=" + arch;
  const char* options[] = {gpu.c_str(), "-std=c++17"};
  rc = nvrtcCompileProgram(prog, 2, options);
  size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::string text(size, '\0');
  if (size) nvrtcGetProgramLog(prog, text.data());
  bool ok = rc == NVRTC_SUCCESS;
  if (ok) {
    const bool ptx = arch.rfind("compute_", 0) == 0;
    size_t n = 0;
    ok = (ptx ? nvrtcGetPTXSize(prog, &n) : nvrtcGetCUBINSize(prog, &n)) == NVRTC_SUCCESS && n > 0;
    if (ok && image) {
      image->assign(n, '\0');
      ok = (ptx ? nvrtcGetPTX(prog, image->data()) : nvrtcGetCUBIN(prog, image->data())) ==
           NVRTC_SUCCESS;
    }
    if (!ok) text += std::string("\nno ") + (ptx ? "PTX" : "CUBIN") + " was produced";
  }
  if (log) *log = std::string(nvrtcGetErrorString(rc)) + "\n" + text;
  nvrtcDestroyProgram(&prog);
  return ok;
}
}  // namespace

bool nvrtc_compile(const std::string& source, const std::string& arch, std::string* log) {
  return run_nvrtc(source, arch, nullptr, log);
}

bool nvrtc_build(const std::string& source, const std::string& arch, const std::string& cache_dir,
                 NvrtcImage* out, std::string* log) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  const bool ptx = arch.rfind("compute_", 0) == 0;
  const std::string key = hash_hex("nvrtc " + std::to_string(major) + "." + std::to_string(minor) +
                                   " " + arch + " -std=c++17\n" + source);
  if (!cache_dir.empty() && !private_cache_dir(cache_dir, log)) {
    ++g_failures;
    return false;
  }
  const fs::path file = fs::path(cache_dir) / (key + (ptx ? ".ptx" : ".cubin"));
  if (!cache_dir.empty()) {
    CacheEntry entry(file);
    if (entry.valid && !entry.bytes.empty()) {
      out->image = entry.bytes;
      out->cached = true;
      ++g_hits;
      return true;
    }
    if (entry.exists) ++g_rejected;  // corrupted or foreign: built anew and replaced
  }
  std::string message;
  if (!run_nvrtc(source, arch, &out->image, &message)) {
    ++g_failures;
    if (!cache_dir.empty()) write_file_atomic(fs::path(cache_dir) / (key + ".cu"), source);
    if (log) *log = message;
    return false;
  }
  ++g_compiles;
  out->cached = false;
  if (!cache_dir.empty() && record_digest(file, out->image)) write_file_atomic(file, out->image);
  return true;
}

#else

bool nvrtc_available() { return false; }

bool nvrtc_compile(const std::string&, const std::string&, std::string* log) {
  if (log) *log = "Spora was built without the CUDA toolkit (no NVRTC)";
  return false;
}

bool nvrtc_build(const std::string&, const std::string&, const std::string&, NvrtcImage*,
                 std::string* log) {
  ++g_failures;
  if (log) *log = "Spora was built without the CUDA toolkit (no NVRTC)";
  return false;
}

#endif

}  // namespace spora::codegen
