// The per-shape GEMM library choice and its file (gemm_choice.h).
#include "backends/cpu/gemm_choice.h"

#include <cblas.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "backends/cpu/kernels.h"

#ifdef SPORA_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace spora::cpu {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "spora-gemm-choices 3";  // 3: best times (2: medians)
constexpr size_t kMaxChoices = 4096;  // beyond, new choices stay in memory

// -1: not read from the environment yet.
std::atomic<int> g_policy{-1};

std::mutex g_mutex;
bool g_loaded = false;
std::map<GemmShape, GemmChoice> g_choices;
std::function<bool()> g_busy = machine_oversubscribed;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

GemmPolicy policy_from_env() {
  const std::string v = env("SPORA_GEMM");
  const GemmPolicy fallback = have_onednn() ? GemmPolicy::autotune : GemmPolicy::openblas;
  if (v.empty() || v == "auto") return fallback;
  if (v == "openblas") return GemmPolicy::openblas;
  if (v == "onednn" && have_onednn()) return GemmPolicy::onednn;
  std::fprintf(stderr, "spora: SPORA_GEMM='%s' is not %s; using %s\n", v.c_str(),
               have_onednn() ? "openblas, onednn or auto" : "openblas or auto (no oneDNN here)",
               fallback == GemmPolicy::autotune ? "auto" : "openblas");
  return fallback;
}

std::string cpu_model_line() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

// OpenBLAS's kernel set ("Haswell", "Zen", "SkylakeX") and build configuration.
std::string openblas_name() {
  using Name = char* (*)();
  std::string out;
  if (auto core = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "openblas_get_corename")))
    out = core();
  if (auto config = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    out += std::string(out.empty() ? "" : " ") + config();
  return out.empty() ? "unknown" : out;
}

std::string onednn_name() {
#ifdef SPORA_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
#else
  return "none";
#endif
}

// Header fields are separated by " | "; none may hold a newline or a tab.
std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return s;
}

template <class T>
bool parse_number(std::string_view field, T* out) {
  const char* end = field.data() + field.size();
  auto [p, ec] = std::from_chars(field.data(), end, *out);
  return ec == std::errc() && p == end;
}

bool parse_double(std::string_view field, double* out) {
  // from_chars for double is missing from GCC 12's libstdc++ on some targets; strtod on a copy.
  const std::string copy(field);
  char* end = nullptr;
  *out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size() && *out >= 0 && *out < 1e12;
}

std::vector<std::string_view> split_tabs(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (true) {
    const size_t tab = line.find('\t', at);
    out.push_back(
        line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at));
    if (tab == std::string_view::npos) return out;
    at = tab + 1;
  }
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Times both libraries on the block itself (trial), alternating, until each has run at least 3
// times and 2 ms, or 25 times; the best time of each in microseconds. The best, not the
// median: another process taking the core only ever adds time. A choice file written on a
// shared machine held medians of 5-10x a block's time alone: W2's [112, 512] x k = 64 block at
// 1179 us (OpenBLAS) and 643 us (oneDNN), where one core alone takes 101 and 86 us.
GemmChoice measure(const GemmShape& s, const std::function<void(GemmLib)>& trial) {
  auto blas = [&] { trial(GemmLib::openblas); };
  auto dnnl = [&] { trial(GemmLib::onednn); };
  blas();  // first calls: page faults, oneDNN's kernel generation
  dnnl();
  std::vector<double> tb, td;
  const double start = seconds_now();
  while (tb.size() < 25 && (tb.size() < 3 || seconds_now() - start < 2e-3)) {
    double t0 = seconds_now();
    blas();
    tb.push_back(seconds_now() - t0);
    t0 = seconds_now();
    dnnl();
    td.push_back(seconds_now() - t0);
  }
  GemmChoice out;
  out.shape = s;
  out.openblas_us = *std::min_element(tb.begin(), tb.end()) * 1e6;
  out.onednn_us = *std::min_element(td.begin(), td.end()) * 1e6;
  out.lib = out.onednn_us < out.openblas_us ? GemmLib::onednn : GemmLib::openblas;
  return out;
}

// Reads the file into g_choices (held lock).
void load_locked() {
  g_loaded = true;
  const std::string path = gemm_choice_path();
  if (path.empty()) return;
  std::ifstream f(path, std::ios::binary);
  if (!f) return;
  std::stringstream text;
  text << f.rdbuf();
  if (auto parsed = parse_gemm_choices(text.str(), gemm_choice_header()))
    for (const GemmChoice& c : *parsed) g_choices.emplace(c.shape, c);
}

// Writes g_choices, merged with what the file holds now (another process may have added
// shapes, or timed on a quiet machine a shape this one timed busy), through a temporary file and
// a rename (held lock). Failures leave the file as it was.
void save_locked() {
  const std::string path = gemm_choice_path();
  if (path.empty()) return;
  std::map<GemmShape, GemmChoice> all;
  {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    if (f) text << f.rdbuf();
    if (auto parsed = parse_gemm_choices(text.str(), gemm_choice_header()))
      for (const GemmChoice& c : *parsed) all.emplace(c.shape, c);
  }
  for (const auto& [shape, c] : g_choices) {
    // A quiet timing another process wrote beats this process's busy one.
    auto [at, added] = all.emplace(shape, c);
    if (!added && !(c.busy && !at->second.busy)) at->second = c;
  }
  std::vector<GemmChoice> list;
  for (const auto& [shape, c] : all)
    if (list.size() < kMaxChoices) list.push_back(c);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  static std::atomic<unsigned> counter{0};
  const std::string tmp = fmt::format("{}.{}.{}.tmp", path, ::getpid(), counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << format_gemm_choices(gemm_choice_header(), list);
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

const char* gemm_lib_name(GemmLib lib) { return lib == GemmLib::onednn ? "onednn" : "openblas"; }

bool have_onednn() {
#ifdef SPORA_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

GemmPolicy gemm_policy() {
  int p = g_policy.load();
  if (p < 0) {
    int want = static_cast<int>(policy_from_env()), unset = -1;
    g_policy.compare_exchange_strong(unset, want);
    p = g_policy.load();
  }
  return static_cast<GemmPolicy>(p);
}

GemmPolicy set_gemm_policy(GemmPolicy p) {
  const GemmPolicy before = gemm_policy();
  g_policy =
      static_cast<int>(p == GemmPolicy::openblas || have_onednn() ? p : GemmPolicy::openblas);
  return before;
}

bool GemmShape::operator<(const GemmShape& o) const {
  return std::tie(ta, tb, m, n, k, lda, ldb, ldc) <
         std::tie(o.ta, o.tb, o.m, o.n, o.k, o.lda, o.ldb, o.ldc);
}
bool GemmShape::operator==(const GemmShape& o) const { return !(*this < o) && !(o < *this); }

GemmLib choose_gemm(const GemmShape& s, const std::function<void(GemmLib)>& trial) {
  switch (gemm_policy()) {
    case GemmPolicy::openblas:
      return GemmLib::openblas;
    case GemmPolicy::onednn:
      return GemmLib::onednn;
    case GemmPolicy::autotune:
      break;
  }
  if (s.m * s.n * s.k < kGemmTunedWork) return GemmLib::openblas;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_loaded) load_locked();
  // A choice timed while other processes wanted the processors is kept, marked busy, so that
  // the processes of one run and the runs after it agree; the first process to meet the shape
  // on a quiet machine times it again and replaces it.
  // The probe reads /proc/loadavg: asked only when the held choice may be replaced.
  const auto it = g_choices.find(s);
  const bool held = it != g_choices.end();
  if (held && (it->second.settled || !it->second.busy)) {
    it->second.settled = true;  // used: within a process a shape's choice never changes
    return it->second.lib;
  }
  const bool busy_before = g_busy && g_busy();
  if (held && busy_before) {
    it->second.settled = true;
    return it->second.lib;
  }
  GemmChoice c = measure(s, trial);
  c.busy = busy_before || (g_busy && g_busy());
  c.settled = true;
  g_choices[s] = c;
  save_locked();
  return c.lib;
}

std::string gemm_choice_header() {
  static const std::string header =
      clean(fmt::format("{} | cpu={} | isa={} | openblas={} | onednn={}", kMagic, cpu_model_line(),
                        isa() == Isa::avx512 ? "avx512"
                        : isa() == Isa::avx2 ? "avx2"
                                             : "base",
                        openblas_name(), onednn_name()));
  return header;
}

std::string format_gemm_choices(std::string_view header, const std::vector<GemmChoice>& choices) {
  std::string out = std::string(header) + "\n";
  for (const GemmChoice& c : choices)
    out += fmt::format("{}{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.2f}\t{:.2f}\t{}\n",
                       c.shape.ta ? 'T' : 'N', c.shape.tb ? 'T' : 'N', c.shape.m, c.shape.n,
                       c.shape.k, c.shape.lda, c.shape.ldb, c.shape.ldc, gemm_lib_name(c.lib),
                       c.openblas_us, c.onednn_us, c.busy ? "busy" : "quiet");
  return out;
}

std::optional<std::vector<GemmChoice>> parse_gemm_choices(std::string_view text,
                                                          std::string_view header,
                                                          std::string* error) {
  auto fail = [&](size_t line, const std::string& why) -> std::optional<std::vector<GemmChoice>> {
    if (error) *error = fmt::format("line {}: {}", line, why);
    return std::nullopt;
  };
  const size_t first = text.find('\n');
  if (first == std::string_view::npos || text.substr(0, first) != header)
    return fail(1, "the header is not this machine's");
  std::vector<GemmChoice> out;
  size_t at = first + 1, line_no = 1;
  while (at < text.size()) {
    ++line_no;
    const size_t end = text.find('\n', at);
    if (end == std::string_view::npos) return fail(line_no, "no newline at the end");
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const std::vector<std::string_view> f = split_tabs(line);
    if (f.size() != 11) return fail(line_no, fmt::format("{} fields, expected 11", f.size()));
    GemmChoice c;
    if (f[0].size() != 2 || (f[0][0] != 'N' && f[0][0] != 'T') ||
        (f[0][1] != 'N' && f[0][1] != 'T'))
      return fail(line_no, "the transposes are not NN, NT, TN or TT");
    c.shape.ta = f[0][0] == 'T';
    c.shape.tb = f[0][1] == 'T';
    GemmShape& s = c.shape;
    int64_t* dims[6] = {&s.m, &s.n, &s.k, &s.lda, &s.ldb, &s.ldc};
    for (int d = 0; d < 6; ++d)
      if (!parse_number(f[1 + d], dims[d]) || *dims[d] <= 0 || *dims[d] > (int64_t{1} << 31))
        return fail(line_no, "a dimension is not a positive integer below 2^31");
    if (s.lda < (s.ta ? s.m : s.k) || s.ldb < (s.tb ? s.k : s.n) || s.ldc < s.n)
      return fail(line_no, "a leading dimension is shorter than its operand's rows");
    if (f[7] == "openblas")
      c.lib = GemmLib::openblas;
    else if (f[7] == "onednn" && have_onednn())
      c.lib = GemmLib::onednn;
    else
      return fail(line_no, "the library is not one of this build's");
    if (!parse_double(f[8], &c.openblas_us) || !parse_double(f[9], &c.onednn_us))
      return fail(line_no, "a time is not a non-negative number");
    if (f[10] != "quiet" && f[10] != "busy")
      return fail(line_no, "the machine's state is not quiet or busy");
    c.busy = f[10] == "busy";
    out.push_back(c);
  }
  return out;
}

std::string gemm_choice_path() {
  const std::string v = env("SPORA_GEMM_CHOICES");
  if (v == "off") return "";
  if (!v.empty()) return v;
  const std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/spora/gemm-choices.tsv";
  const std::string home = env("HOME");
  if (!home.empty()) return home + "/.cache/spora/gemm-choices.tsv";
  return "";
}

void reset_gemm_choices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_loaded = false;
  g_choices.clear();
}

std::function<bool()> set_gemm_busy_probe(std::function<bool()> probe) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::swap(g_busy, probe);
  return probe;
}

std::vector<GemmChoice> gemm_choices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<GemmChoice> out;
  for (const auto& [shape, c] : g_choices) out.push_back(c);
  return out;
}

bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#ifdef SPORA_HAVE_ONEDNN
  // One thread: blas.cpp spreads the blocks over the team (oneDNN asks omp_get_max_threads()
  // outside a parallel region and would start a team of its own).
  const int threads = omp_get_max_threads();
  if (threads != 1) omp_set_num_threads(1);
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, std::max<int64_t>(1, lda), b,
                 std::max<int64_t>(1, ldb), beta, c, std::max<int64_t>(1, ldc));
  if (threads != 1) omp_set_num_threads(threads);
  if (st != dnnl_success)
    internal_error(fmt::format("oneDNN sgemm failed (status {}) on {}{} {}x{}x{}", int(st),
                               ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k));
  return true;
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b;
  (void)ldb, (void)beta, (void)c, (void)ldc;
  return false;
#endif
}

}  // namespace spora::cpu
