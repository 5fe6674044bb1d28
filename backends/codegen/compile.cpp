// Compiling generated C++ into a cached shared object (codegen.h).
//
// The cache key is the hash of the compiler, its flags, the machine's CPU model (the flags say
// -march=native) and the source: <cache>/<key>.so, its digest beside it (<key>.so.sha256, see
// cache.h: the directory is private, an entry is loaded only when its bytes have the recorded
// SHA-256, anything else is rebuilt) and the source (<key>.cpp) for reading. A build writes to
// temporary names and renames them into place, so concurrent processes never load a
// half-written object. A failed compile leaves <key>.log.
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

#include "backends/codegen/cache.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"

namespace spora::codegen {

namespace fs = std::filesystem;

namespace {

std::atomic<size_t> g_compiles{0}, g_hits{0}, g_failures{0}, g_rejected{0};

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
      if (!home.empty()) base = home + "/.cache";
    }
    o.cache_dir = base.empty() ? fallback_cache_dir() : base + "/spora/kernels";
  }
  return o;
}

CompileStats compile_stats() {
  return {g_compiles.load(), g_hits.load(), g_failures.load(), g_rejected.load()};
}
void reset_compile_stats() {
  g_compiles = 0;
  g_hits = 0;
  g_failures = 0;
  g_rejected = 0;
}

KernelLibrary::~KernelLibrary() {
  // The object stays mapped: kernels may still be referenced by function pointers copied out.
}

KernelLibrary::Fn KernelLibrary::find(const std::string& name) const {
  return handle_ ? reinterpret_cast<Fn>(dlsym(handle_, name.c_str())) : nullptr;
}

std::string kernel_cache_path(const std::string& source, const CompileOptions& o) {
  static const std::string machine = cpu_model();
  const std::string key = hash_hex(o.compiler + "\n" + o.flags + "\n" + machine + "\n" + source);
  return (fs::path(o.cache_dir) / (key + ".so")).string();
}

std::shared_ptr<KernelLibrary> compile_cpp(const std::string& source, const CompileOptions& o,
                                           std::string* error) {
  auto fail = [&](const std::string& why) -> std::shared_ptr<KernelLibrary> {
    ++g_failures;
    if (error) *error = why;
    return nullptr;
  };
  std::string why;
  if (!private_cache_dir(o.cache_dir, &why)) return fail(why);
  std::error_code ec;
  const fs::path so = kernel_cache_path(source, o);
  const fs::path dir = so.parent_path();
  const std::string key = so.stem().string();

  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto it = g_loaded.find(so.string()); it != g_loaded.end())
    if (auto lib = it->second.lock()) {
      ++g_hits;
      return lib;
    }

  if (const CacheEntry entry(so); entry.valid) {
    ++g_hits;
  } else {
    if (entry.exists) {
      // Corrupted, foreign or without its digest: never loaded, built anew.
      ++g_rejected;
      fs::remove(so, ec);
      fs::remove(digest_path(so), ec);
    }
    const fs::path src = dir / (key + ".cpp");
    const fs::path so_tmp = dir / (key + ".so." + std::to_string(::getpid()) + ".tmp");
    const fs::path log = dir / (key + ".log");
    if (!write_file_atomic(src, source))
      return fail("cannot write the kernel source in " + dir.string());
    const std::string cmd = quote(o.compiler) + " " + o.flags + " -o " + quote(so_tmp.string()) +
                            " " + quote(src.string()) + " > " + quote(log.string()) + " 2>&1";
    const int status = std::system(cmd.c_str());
    if (status != 0 || !fs::exists(so_tmp)) {
      fs::remove(so_tmp, ec);
      std::string message = "'" + o.compiler + "' failed (status " + std::to_string(status) + ")";
      const std::string head = read_head(log, 8);
      if (!head.empty()) message += ":\n" + head;
      return fail(message);
    }
    const CacheEntry built(so_tmp, /*check_digest=*/false);
    const bool kept = built.valid && record_digest(so, built.bytes) &&
                      ::rename(so_tmp.c_str(), so.c_str()) == 0;
    fs::remove(log, ec);
    if (!kept) {
      fs::remove(so_tmp, ec);
      return fail("cannot move the kernel library into " + dir.string());
    }
    ++g_compiles;
  }
  // Only this user can write to the directory, so the file is the one just checked.
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return fail(std::string("cannot load ") + so.string() + ": " + dlerror());
  auto lib = std::shared_ptr<KernelLibrary>(new KernelLibrary());
  lib->handle_ = handle;
  lib->path_ = so.string();
  g_loaded[so.string()] = lib;
  return lib;
}

}  // namespace spora::codegen
