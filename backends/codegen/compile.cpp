// Compiling generated C++ into a cached shared object (codegen.h).
//
// The cache key is the hash of the compiler, its flags, the machine's CPU model (the flags say
// -march=native) and the source: <cache>/<key>.so, with the source beside it (<key>.cpp) for
// reading. A build writes to temporary names and renames them into place, so concurrent
// processes never load a half-written object. A failed compile leaves <key>.log.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"

namespace spora::codegen {

namespace fs = std::filesystem;

namespace {

std::atomic<size_t> g_compiles{0}, g_hits{0}, g_failures{0};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line;
  return "unknown cpu";
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_head(const fs::path& p, size_t max_lines) {
  std::ifstream f(p);
  std::string line, out;
  for (size_t i = 0; i < max_lines && std::getline(f, line); ++i) out += line + "\n";
  return out;
}

// Loaded objects by path: each is opened once per process.
std::mutex g_mutex;
std::unordered_map<std::string, std::weak_ptr<KernelLibrary>> g_loaded;

}  // namespace

CompileOptions default_compile_options() {
  CompileOptions o;
  o.compiler = env("SPORA_CXX");
#ifdef SPORA_SYSTEM_CXX
  if (o.compiler.empty()) o.compiler = SPORA_SYSTEM_CXX;
#endif
  if (o.compiler.empty()) o.compiler = "c++";
  o.flags = env("SPORA_CXXFLAGS");
  if (o.flags.empty())
    o.flags =
        "-std=c++17 -O3 -march=native -fopenmp -fPIC -shared -fno-math-errno "
        "-fno-trapping-math -w";
  o.cache_dir = env("SPORA_CACHE_DIR");
  if (o.cache_dir.empty()) {
    std::string base = env("XDG_CACHE_HOME");
    if (base.empty()) {
      const std::string home = env("HOME");
      base = home.empty() ? fs::temp_directory_path().string() : home + "/.cache";
    }
    o.cache_dir = base + "/spora/kernels";
  }
  return o;
}

CompileStats compile_stats() { return {g_compiles.load(), g_hits.load(), g_failures.load()}; }
void reset_compile_stats() {
  g_compiles = 0;
  g_hits = 0;
  g_failures = 0;
}

KernelLibrary::~KernelLibrary() {
  // The object stays mapped: kernels may still be referenced by function pointers copied out.
}

KernelLibrary::Fn KernelLibrary::find(const std::string& name) const {
  return handle_ ? reinterpret_cast<Fn>(dlsym(handle_, name.c_str())) : nullptr;
}

std::shared_ptr<KernelLibrary> compile_cpp(const std::string& source, const CompileOptions& o,
                                           std::string* error) {
  static const std::string machine = cpu_model();
  const std::string key = hash_hex(o.compiler + "\n" + o.flags + "\n" + machine + "\n" + source);
  std::error_code ec;
  fs::create_directories(o.cache_dir, ec);
  const fs::path dir(o.cache_dir);
  const fs::path so = dir / (key + ".so");

  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_loaded.find(so.string()); it != g_loaded.end())
    if (auto lib = it->second.lock()) {
      ++g_hits;
      return lib;
    }

  if (fs::exists(so)) {
    ++g_hits;
  } else {
    const std::string tag = "." + std::to_string(::getpid()) + ".tmp";
    const fs::path src = dir / (key + ".cpp");
    const fs::path src_tmp = dir / (key + tag + ".cpp");
    const fs::path so_tmp = dir / (key + ".so" + tag);
    const fs::path log = dir / (key + ".log");
    {
      std::ofstream f(src_tmp);
      f << source;
      if (!f) {
        ++g_failures;
        if (error) *error = "cannot write the kernel source in " + dir.string();
        return nullptr;
      }
    }
    const std::string cmd = quote(o.compiler) + " " + o.flags + " -o " + quote(so_tmp.string()) +
                            " " + quote(src_tmp.string()) + " > " + quote(log.string()) + " 2>&1";
    const int status = std::system(cmd.c_str());
    if (status != 0 || !fs::exists(so_tmp)) {
      ++g_failures;
      if (error) {
        *error = "'" + o.compiler + "' failed (status " + std::to_string(status) + ")";
        const std::string head = read_head(log, 8);
        if (!head.empty()) *error += ":\n" + head;
      }
      fs::remove(so_tmp, ec);
      fs::rename(src_tmp, src, ec);
      return nullptr;
    }
    fs::rename(src_tmp, src, ec);
    fs::rename(so_tmp, so, ec);
    fs::remove(log, ec);
    if (ec && !fs::exists(so)) {
      ++g_failures;
      if (error) *error = "cannot move the kernel library into " + dir.string();
      return nullptr;
    }
    ++g_compiles;
  }
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    ++g_failures;
    if (error) *error = std::string("cannot load ") + so.string() + ": " + dlerror();
    return nullptr;
  }
  auto lib = std::shared_ptr<KernelLibrary>(new KernelLibrary());
  lib->handle_ = handle;
  lib->path_ = so.string();
  g_loaded[so.string()] = lib;
  return lib;
}

}  // namespace spora::codegen
