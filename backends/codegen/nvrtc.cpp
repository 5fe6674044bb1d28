// NVRTC compile checks of generated CUDA (codegen.h). Built with SPORA_HAVE_NVRTC when the CUDA
// toolkit is found; NVRTC compiles without a GPU or a driver, so every machine with the
// toolkit checks the generated kernels for sm_90.
#include "backends/codegen/codegen.h"

#ifdef SPORA_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace spora::codegen {

#ifdef SPORA_HAVE_NVRTC

bool nvrtc_available() { return true; }

bool nvrtc_compile(const std::string& source, const std::string& arch, std::string* log) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "spora_fused.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    if (log) *log = "nvrtcCreateProgram failed";
    return false;
  }
  const std::string gpu = "--gpu-architecture=" + arch;
  const char* options[] = {gpu.c_str(), "-std=c++17"};
  const nvrtcResult rc = nvrtcCompileProgram(prog, 2, options);
  size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::string text(size, '\0');
  if (size) nvrtcGetProgramLog(prog, text.data());
  bool ok = rc == NVRTC_SUCCESS;
  if (ok) {
    size_t cubin = 0;
    ok = nvrtcGetCUBINSize(prog, &cubin) == NVRTC_SUCCESS && cubin > 0;
    if (!ok) text += "\nno CUBIN was produced";
  }
  if (log) *log = std::string(nvrtcGetErrorString(rc)) + "\n" + text;
  nvrtcDestroyProgram(&prog);
  return ok;
}

#else

bool nvrtc_available() { return false; }

bool nvrtc_compile(const std::string&, const std::string&, std::string* log) {
  if (log) *log = "Spora was built without the CUDA toolkit (no NVRTC)";
  return false;
}

#endif

}  // namespace spora::codegen
