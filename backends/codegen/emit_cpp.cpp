// C++ source of fused kernels (codegen.h): the prelude and one OpenMP loop nest per plan.
//
//   extern "C" int spora_k<hash>(const void* const* in_, void* const* out_, int sp_threads) {
//     const float* in0 = (const float*)in_[0]; ...   float* out0 = (float*)out_[0]; ...
//     int err = 0; double t0 = 0;                     // totals
//     #pragma omp parallel for num_threads(sp_threads) reduction(...)   // rows (x chunks)
//     for (int64_t task = 0; task < TASKS; ++task) {
//       const int64_t r = ...; row setup
//       pre; accumulators; #pragma omp simd reduction(...) for (j ...) { body } post  // each pass
//     }
//     epilogue; return err != 0;
//   }
//
// Inner loops carry `omp simd`: iterations are independent (an output may share its buffer
// with an input read at the same index only, fusion_plan.h in_place_ok). Reductions
// accumulate floats in double; max/min track nan apart so that they vectorise.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <regex>
#include <set>

#include "backends/codegen/cache.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"

namespace spora::codegen {

using passes::Accumulator;
using passes::KernelPlan;
using passes::ReduceOp;

namespace {

// The vectorised f32 math of the CPU backend (backends/cpu/vmath.h), embedded at build time.
const char* const kVmath =
#if __has_include("codegen_vmath.inc")
#include "codegen_vmath.inc"
    ;
constexpr bool kHaveVmath = true;
#else
    "";
constexpr bool kHaveVmath = false;
#endif

const char* const kPrelude = R"SPORA(// Spora fused kernels (backends/codegen): generated C++.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#define SP_INF_F std::numeric_limits<float>::infinity()
#define SP_INF_D std::numeric_limits<double>::infinity()
#define SP_NAN_F std::numeric_limits<float>::quiet_NaN()
#define SP_NAN_D std::numeric_limits<double>::quiet_NaN()
#define SP_CHECK(cond) err |= (cond) ? 1 : 0
#define SP_FN static inline __attribute__((always_inline))
namespace {
template <class T> SP_FN T sp_neg(T x) { return -x; }
template <class T> SP_FN T sp_abs(T x) { return x < T(0) ? -x : x; }
template <class T> SP_FN T sp_sign(T x) { return x != x ? x : (x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0))); }
template <class T> SP_FN T sp_square(T x) { return x * x; }
template <class T> SP_FN T sp_relu(T x) { return x > T(0) ? x : T(0); }
template <class T> SP_FN T sp_floor(T x) { return std::floor(x); }
template <class T> SP_FN T sp_ceil(T x) { return std::ceil(x); }
template <class T> SP_FN T sp_round(T x) { return std::nearbyint(x); }
template <class T> SP_FN T sp_sqrt(T x) { return std::sqrt(x); }
template <class T> SP_FN T sp_rsqrt(T x) { return T(1) / std::sqrt(x); }
template <class T> SP_FN T sp_reciprocal(T x) { return T(1) / x; }
template <class T> SP_FN T sp_sin(T x) { return std::sin(x); }
template <class T> SP_FN T sp_cos(T x) { return std::cos(x); }
template <class T> SP_FN T sp_log1p(T x) { return std::log1p(x); }
template <class T> SP_FN T sp_expm1(T x) { return std::expm1(x); }
template <class T> SP_FN T sp_pow(T x, T y) { return std::pow(x, y); }
template <class T> SP_FN T sp_maximum(T a, T b) { return a != a || b != b ? std::numeric_limits<T>::quiet_NaN() : (a > b ? a : b); }
template <class T> SP_FN T sp_minimum(T a, T b) { return a != a || b != b ? std::numeric_limits<T>::quiet_NaN() : (a < b ? a : b); }
template <class T> SP_FN T sp_finite_or_zero(T x) { return x - x == T(0) ? x : T(0); }
// Python floor division and remainder on floats (ops/elementwise.cpp).
template <class T> SP_FN T sp_floordiv(T a, T b) {
  if (b == 0) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T fl = std::floor(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}
template <class T> SP_FN T sp_mod(T a, T b) {
  if (b == 0) return std::fmod(a, b);
  T m = std::fmod(a, b);
  if (m != 0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(T(0), b);
  }
  return m;
}
// The counter-based generator of semantics/rng.h (dropout keeps element i when u(seed, i) >= p).
SP_FN uint64_t sp_rng_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
SP_FN double sp_uniform01(uint64_t seed, uint64_t i) {
  const uint64_t g = 0x9E3779B97F4A7C15ull;
  uint64_t bits = sp_rng_finalize(sp_rng_finalize(seed + g) + (i + 1) * g);
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}
template <class T> SP_FN T sp_dropout(T x, uint64_t seed, uint64_t i, double p, double scale) {
  return sp_uniform01(seed, i) >= p ? static_cast<T>(static_cast<double>(x) * scale) : T(0);
}
// f64: the C library.
SP_FN double sp_exp(double x) { return std::exp(x); }
SP_FN double sp_log(double x) { return std::log(x); }
SP_FN double sp_tanh(double x) { return std::tanh(x); }
SP_FN double sp_erf(double x) { return std::erf(x); }
SP_FN double sp_sigmoid(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
SP_FN double sp_gelu(double x) { return 0.5 * x * (1 + std::erf(x * 0.70710678118654752440)); }
}  // namespace
)SPORA";

// f32 transcendental functions: vmath's when embedded (vectorised; errors in
// backends/cpu/vmath.h), else the C library's.
const char* const kF32Vmath = R"SPORA(namespace {
SP_FN float sp_exp(float x) { return spora::cpu::vm::exp(x); }
SP_FN float sp_log(float x) { return spora::cpu::vm::log(x); }
SP_FN float sp_tanh(float x) { return spora::cpu::vm::tanh(x); }
SP_FN float sp_erf(float x) { return spora::cpu::vm::erf(x); }
SP_FN float sp_sigmoid(float x) { return spora::cpu::vm::sigmoid(x); }
SP_FN float sp_gelu(float x) { return spora::cpu::vm::gelu(x); }
}  // namespace
// Explicit AVX-512 loops (emit_cpp.cpp, avx512_loop) where the kernel is compiled for it.
#if defined(__x86_64__) && !defined(SPORA_VM_NO_TABLE_FORMS) && defined(__AVX512F__) && \
    defined(__AVX512DQ__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SP_AVX512 1
#endif
)SPORA";
const char* const kF32Libm = R"SPORA(namespace {
SP_FN float sp_exp(float x) { return std::exp(x); }
SP_FN float sp_log(float x) { return std::log(x); }
SP_FN float sp_tanh(float x) { return std::tanh(x); }
SP_FN float sp_erf(float x) { return std::erf(x); }
SP_FN float sp_sigmoid(float x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
SP_FN float sp_gelu(float x) { return 0.5f * x * (1 + std::erf(x * 0.70710678118654752440f)); }
}  // namespace
)SPORA";

std::string buffer_type(DType d) {
  switch (d) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::i32:
      return "int32_t";
    case DType::i64:
      return "int64_t";
    default:
      return "uint8_t";
  }
}

std::string init_value(const Accumulator& a) {
  switch (a.op) {
    case ReduceOp::Sum:
    case ReduceOp::Any:
      return "0";
    case ReduceOp::Prod:
    case ReduceOp::All:
      return "1";
    case ReduceOp::Max:
      return a.ctype == "float" ? "(-SP_INF_F)" : "(-SP_INF_D)";
    case ReduceOp::Min:
      return a.ctype == "float" ? "SP_INF_F" : "SP_INF_D";
  }
  return "0";
}

// The OpenMP reduction clauses of some accumulators.
std::string clauses(const std::vector<const Accumulator*>& accs) {
  std::string out;
  for (const Accumulator* a : accs) {
    switch (a->op) {
      case ReduceOp::Sum:
        out += " reduction(+:" + a->var + ")";
        break;
      case ReduceOp::Prod:
        out += " reduction(*:" + a->var + ")";
        break;
      case ReduceOp::Max:
        out += " reduction(max:" + a->var + ") reduction(|:" + a->var + "n)";
        break;
      case ReduceOp::Min:
        out += " reduction(min:" + a->var + ") reduction(|:" + a->var + "n)";
        break;
      case ReduceOp::All:
        out += " reduction(&:" + a->var + ")";
        break;
      case ReduceOp::Any:
        out += " reduction(|:" + a->var + ")";
        break;
    }
  }
  return out;
}

void declare(std::string& out, const Accumulator& a, const std::string& indent) {
  out += fmt::format("{}{} {} = {};\n", indent, a.ctype, a.var, init_value(a));
  if (a.op == ReduceOp::Max || a.op == ReduceOp::Min) out += indent + "int " + a.var + "n = 0;\n";
}

std::string update(const Accumulator& a) {
  const std::string v = "(" + a.ctype + ")(" + a.value + ")";
  switch (a.op) {
    case ReduceOp::Sum:
      return a.var + " += " + v + ";";
    case ReduceOp::Prod:
      return a.var + " *= " + v + ";";
    case ReduceOp::Max:
      return fmt::format("{0} = {1} > {0} ? {1} : {0}; {0}n |= {1} != {1};", a.var, v);
    case ReduceOp::Min:
      return fmt::format("{0} = {1} < {0} ? {1} : {0}; {0}n |= {1} != {1};", a.var, v);
    case ReduceOp::All:
      return a.var + " &= (" + a.value + ") ? 1 : 0;";
    case ReduceOp::Any:
      return a.var + " |= (" + a.value + ") ? 1 : 0;";
  }
  return "";
}

// Adds a block's partial (`<var>_part[sp_block]`) into the total.
std::string merge_part(const Accumulator& a) {
  const std::string p = a.var + "_part[sp_block]";
  switch (a.op) {
    case ReduceOp::Sum:
      return a.var + " += " + p + ";";
    case ReduceOp::Prod:
      return a.var + " *= " + p + ";";
    case ReduceOp::Max:
      return fmt::format("{0} = {1} > {0} ? {1} : {0}; {0}n |= {0}n_part[sp_block];", a.var, p);
    case ReduceOp::Min:
      return fmt::format("{0} = {1} < {0} ? {1} : {0}; {0}n |= {0}n_part[sp_block];", a.var, p);
    case ReduceOp::All:
      return a.var + " &= " + p + ";";
    case ReduceOp::Any:
      return a.var + " |= " + p + ";";
  }
  return "";
}

void finish(std::string& out, const Accumulator& a, const std::string& indent) {
  if (a.op == ReduceOp::Max || a.op == ReduceOp::Min)
    out += fmt::format("{0}if ({1}n) {1} = {2};\n", indent, a.var,
                       a.ctype == "float" ? "SP_NAN_F" : "SP_NAN_D");
}

void lines(std::string& out, const std::vector<std::string>& stmts, const std::string& indent) {
  for (const std::string& s : stmts) out += indent + s + "\n";
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `s` with every whole-word occurrence of a name in `names` followed by `suffix`.
std::string rename(const std::string& s, const std::set<std::string>& names,
                   const std::string& suffix) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (ident_char(s[i]) && (i == 0 || !ident_char(s[i - 1]))) {
      size_t e = i;
      while (e < s.size() && ident_char(s[e])) ++e;
      const std::string word = s.substr(i, e - i);
      out += names.count(word) ? word + suffix : word;
      i = e;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// The vectorised transcendental functions (kF32Vmath): a loop body that calls one is a long
// dependency chain of arithmetic.
bool calls_vmath(const std::vector<std::string>& stmts) {
  static const char* const fns[] = {"sp_exp(", "sp_log(", "sp_tanh(", "sp_erf(", "sp_sigmoid(",
                                    "sp_gelu("};
  for (const std::string& s : stmts)
    for (const char* f : fns)
      if (s.find(f) != std::string::npos) return true;
  return false;
}

// An elementwise inner loop whose body is a long dependency chain (a transcendental function:
// 40-60 vector instructions, two of them divisions) runs two halves of [j0, j1) interleaved,
// statement by statement, so independent chains sit side by side in the instruction stream
// (unrolling whole iterations did not help). W5's chain: 1.02-1.06x faster at one thread
// (backends/codegen/README.md, "Interleaved halves and a dynamic schedule"). The values of
// the body and the decoded inner coordinates get a suffix per half; row values are shared.
void interleaved_loop(std::string& out, const std::vector<std::string>& setup,
                      const std::vector<std::string>& stmts, const std::string& simd_clauses) {
  const std::string I2 = "    ", I3 = "      ";
  std::vector<std::string> all = setup;
  all.insert(all.end(), stmts.begin(), stmts.end());
  std::set<std::string> names = {"j"};
  for (const std::string& s : all) {
    // "const <type> <name> = ...": the body's own values.
    if (s.rfind("const ", 0) != 0) continue;
    const size_t eq = s.find(" = ");
    const size_t sp = eq == std::string::npos ? eq : s.rfind(' ', eq - 1);
    if (sp != std::string::npos && sp > 6) names.insert(s.substr(sp + 1, eq - sp - 1));
  }
  out += I2 + "const int64_t sp_h = (j1 - j0) / 2;\n";
  out += fmt::format("{}#pragma omp simd{}\n", I2, simd_clauses);
  out += I2 + "for (int64_t sp_k = 0; sp_k < sp_h; ++sp_k) {\n";
  out += I3 + "const int64_t j_a = j0 + sp_k, j_b = j0 + sp_h + sp_k;\n";
  for (const std::string& s : all) {
    out += I3 + rename(s, names, "_a") + "\n";
    out += I3 + rename(s, names, "_b") + "\n";
  }
  out += I2 + "}\n";
  out += I2 + "for (int64_t j = j0 + 2 * sp_h; j < j1; ++j) {  // the odd element\n";
  lines(out, all, I3);
  out += I2 + "}\n";
}

// ---- explicit AVX-512 loops ----------------------------------------------------------------

// One statement of a body avx512_loop can write: a contiguous f32 load, an arithmetic
// operation of values and f32 literals, tanh or gelu, a contiguous f32 store. Contiguous: at
// index j, or (r * N + j) in a buffer with a row per task.
struct VecStmt {
  enum Kind { load, binary, call, store } kind;
  std::string name, a, b, fn;  // binary: a op b; call: fn(a); store: out<k>[j] = a
  char op = 0;
  std::string k;    // load / store: the buffer
  std::string off;  // load / store: "" or "r * N + "
};

// "" for the index `j`, "r * N + " for `(r * N + j)`.
std::string row_offset(const std::string& index) {
  return index == "j" ? "" : index.substr(1, index.size() - 3);
}

// The body as VecStmts, or nothing when a statement is of another form (or calls neither
// tanh nor gelu: then GCC's own vectorisation of the loop is as good).
std::optional<std::vector<VecStmt>> vector_body(const std::vector<std::string>& stmts) {
  static const std::string lit = R"(\(?-?[0-9][0-9.eE+-]*f\)?)";
  static const std::string index = R"((j|\(r \* \d+ \+ j\)))";
  static const std::regex load("^const float (\\w+) = in(\\d+)\\[" + index + "\\];$");
  static const std::regex bin("^const float (\\w+) = \\((\\w+|" + lit + ") ([-+*/]) (\\w+|" + lit +
                              ")\\);$");
  static const std::regex call(R"(^const float (\w+) = sp_(tanh|gelu)\((\w+)\);$)");
  static const std::regex store("^out(\\d+)\\[" + index + "\\] = (\\w+);$");
  static const std::regex literal("^" + lit + "$");
  std::set<std::string> vals;  // defined so far
  auto operand = [&](const std::string& x) {
    return vals.count(x) > 0 || std::regex_match(x, literal);
  };
  std::vector<VecStmt> out;
  bool transcendental = false;
  for (const std::string& s : stmts) {
    std::smatch m;
    VecStmt v{};
    if (std::regex_match(s, m, load)) {
      v = {VecStmt::load, m[1], "", "", "", 0, m[2], row_offset(m[3])};
    } else if (std::regex_match(s, m, bin) && operand(m[2]) && operand(m[4])) {
      v = {VecStmt::binary, m[1], m[2], m[4], "", m[3].str()[0], "", ""};
    } else if (std::regex_match(s, m, call) && vals.count(m[3])) {
      v = {VecStmt::call, m[1], m[3], "", m[2], 0, "", ""};
      transcendental = true;
    } else if (std::regex_match(s, m, store) && vals.count(m[3])) {
      v = {VecStmt::store, "", m[3], "", "", 0, m[1], row_offset(m[2])};
    } else {
      return std::nullopt;
    }
    if (!v.name.empty()) vals.insert(v.name);
    out.push_back(v);
  }
  if (!transcendental) return std::nullopt;
  return out;
}

// One VecStmt for the 16 elements at `at` (values named with `sfx`); `masked`: only the lanes
// of the mask sp_m (loads of the others give 0, their results are not stored).
std::string vector_stmt(const VecStmt& v, const std::string& sfx, const std::string& at,
                        bool masked) {
  auto val = [&](const std::string& x) {
    return std::isdigit(static_cast<unsigned char>(x[0])) || x[0] == '('
               ? "_mm512_set1_ps(" + x + ")"
               : x + sfx;
  };
  switch (v.kind) {
    case VecStmt::load:
      return fmt::format("const __m512 {}{} = {}in{} + {}{});", v.name, sfx,
                         masked ? "_mm512_maskz_loadu_ps(sp_m, " : "_mm512_loadu_ps(", v.k, v.off,
                         at);
    case VecStmt::binary: {
      const char* f = v.op == '+' ? "add" : v.op == '-' ? "sub" : v.op == '*' ? "mul" : "div";
      return fmt::format("const __m512 {}{} = _mm512_{}_ps({}, {});", v.name, sfx, f, val(v.a),
                         val(v.b));
    }
    case VecStmt::call:
      return fmt::format("const __m512 {}{} = spora::cpu::vm::{}16({});", v.name, sfx, v.fn,
                         val(v.a));
    case VecStmt::store:
      return masked ? fmt::format("_mm512_mask_storeu_ps(out{} + {}{}, sp_m, {});", v.k, v.off,
                                  at, val(v.a))
                    : fmt::format("_mm512_storeu_ps(out{} + {}{}, {});", v.k, v.off, at, val(v.a));
  }
  return "";
}

// A flat f32 body of loads, arithmetic, tanh, gelu and stores (vector_body) as explicit
// AVX-512 code: tanh and gelu are vmath's table forms (no division, 16 lanes per table lookup),
// which GCC's vectorised loop cannot express. Two vectors per iteration, their statements side
// by side; then one vector; the last n % 16 elements by one masked vector, so every element
// gets the same operations (results do not depend on where an element falls). Kernels compiled
// without AVX-512 run `fallback` (the loop GCC vectorises). W5's chain: 1.3x the GCC loop at
// two threads (backends/codegen/README.md, "Explicit AVX-512 loops").
void avx512_loop(std::string& out, const std::vector<VecStmt>& v, const std::string& fallback) {
  const std::string I2 = "    ", I3 = "      ", I4 = "        ";
  out += "#ifdef SP_AVX512\n";
  out += I2 + "{\n" + I3 + "int64_t j = j0;\n";
  out += I3 + "for (; j + 32 <= j1; j += 32) {\n";
  for (const VecStmt& s : v) {
    out += I4 + vector_stmt(s, "_a", "j", false) + "\n";
    out += I4 + vector_stmt(s, "_b", "j + 16", false) + "\n";
  }
  out += I3 + "}\n" + I3 + "for (; j + 16 <= j1; j += 16) {\n";
  for (const VecStmt& s : v) out += I4 + vector_stmt(s, "", "j", false) + "\n";
  out += I3 + "}\n" + I3 + "if (j < j1) {\n";
  out += I4 + "const __mmask16 sp_m = (__mmask16)((1u << (j1 - j)) - 1u);\n";
  for (const VecStmt& s : v) out += I4 + vector_stmt(s, "", "j", true) + "\n";
  out += I3 + "}\n" + I2 + "}\n";
  out += "#else\n" + fallback + "#endif\n";
}

}  // namespace

const std::string& cpp_prelude() {
  static const std::string p = std::string(kPrelude) +
                               (kHaveVmath ? std::string(kVmath) + "\n" + kF32Vmath : kF32Libm);
  return p;
}

KernelSource emit_cpp(const KernelPlan& plan) {
  std::string body;
  const std::string I1 = "  ", I2 = "    ", I3 = "      ";
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const std::string t = buffer_type(plan.inputs[k].dtype);
    body += fmt::format("{}const {}* in{} = static_cast<const {}*>(in_[{}]);\n", I1, t, k, t, k);
  }
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    const std::string t = buffer_type(plan.outputs[k].dtype);
    body += fmt::format("{}{}* out{} = static_cast<{}*>(out_[{}]);\n", I1, t, k, t, k);
  }
  body += I1 + "int err = 0;\n";
  std::vector<const Accumulator*> totals;
  for (const Accumulator& t : plan.totals) {
    declare(body, t, I1);
    totals.push_back(&t);
  }
  // Tasks: rows, each row's inner loop split into chunks when rows alone are too few.
  int64_t chunk = plan.inner, chunks = 1;
  if (plan.splittable && plan.rows < 64 && plan.inner >= 16384) {
    chunk = 8192;
    chunks = (plan.inner + chunk - 1) / chunk;
  }
  const int64_t tasks = plan.rows * chunks;
  const int64_t work = plan.rows * plan.inner;
  std::string err_clause = plan.checks ? " reduction(|:err)" : "";
  (void)work;
  // Tasks are handed out dynamically (a few per grab): on a shared machine one core often runs
  // slower than the other, and a static split waits for it (W5: medians 3-10% lower).
  // Totals are summed per fixed block of tasks, and the blocks' partials added in block order
  // after the loop: their bits depend neither on the team's size (OMP_NUM_THREADS, one thread
  // on a busy machine) nor on which thread ran which block.
  const int64_t blocks = totals.empty() ? 0 : std::min<int64_t>(tasks, 256);
  if (blocks > 0) {
    for (const Accumulator* t : totals) {
      body += fmt::format("{}{} {}_part[{}];\n", I1, t->ctype, t->var, blocks);
      if (t->op == ReduceOp::Max || t->op == ReduceOp::Min)
        body += fmt::format("{}int {}n_part[{}];\n", I1, t->var, blocks);
    }
    body += fmt::format(
        "{}#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_threads){} if(sp_threads > "
        "1)\n",
        I1, err_clause);
    body += fmt::format("{}for (int64_t sp_block = 0; sp_block < {}; ++sp_block) {{\n", I1, blocks);
    for (const Accumulator* t : totals) declare(body, *t, I2);  // this block's
    body += fmt::format(
        "{}for (int64_t task = sp_block * {} / {}; task < (sp_block + 1) * {} / {}; ++task) {{\n",
        I2, tasks, blocks, tasks, blocks);
  } else {
    const std::string schedule = tasks > 1
                                     ? fmt::format("dynamic, {}", std::max<int64_t>(1, tasks / 64))
                                     : std::string("static");
    body += fmt::format(
        "{}#pragma omp parallel for schedule({}) num_threads(sp_threads){} if(sp_threads > 1)\n",
        I1, schedule, err_clause);
    body += fmt::format("{}for (int64_t task = 0; task < {}; ++task) {{\n", I1, tasks);
  }
  if (chunks == 1) {
    body += I2 + "const int64_t r = task;\n";
    body += fmt::format("{}const int64_t j0 = 0, j1 = {};\n", I2, plan.inner);
  } else {
    body += fmt::format("{}const int64_t r = task / {};\n", I2, chunks);
    body += fmt::format("{}const int64_t j0 = (task % {}) * {};\n", I2, chunks, chunk);
    body += fmt::format("{}const int64_t j1 = j0 + {} < {} ? j0 + {} : {};\n", I2, chunk,
                        plan.inner, chunk, plan.inner);
  }
  body += I2 + "(void)r;\n";
  lines(body, plan.row_setup, I2);
  for (const passes::KernelPass& pass : plan.passes) {
    lines(body, pass.pre, I2);
    std::vector<const Accumulator*> in_loop;
    for (const Accumulator& a : pass.accs) {
      declare(body, a, I2);
      in_loop.push_back(&a);
    }
    for (size_t t : pass.body_totals) in_loop.push_back(&plan.totals[t]);
    const bool interleave = plan.inner_nest.empty() && in_loop.empty() &&
                            plan.passes.size() == 1 && chunk >= 256 && calls_vmath(pass.body);
    const auto vec = interleave && kHaveVmath && plan.inner_setup.empty()
                         ? vector_body(pass.body)
                         : std::nullopt;
    if (vec) {
      std::string fallback;
      interleaved_loop(fallback, plan.inner_setup, pass.body, err_clause);
      avx512_loop(body, *vec, fallback);
    } else if (interleave) {
      interleaved_loop(body, plan.inner_setup, pass.body, err_clause);
    } else if (!pass.body.empty() || !pass.accs.empty() || !pass.body_totals.empty()) {
      std::string ind = I2;
      if (plan.inner_nest.empty()) {
        body += fmt::format("{}#pragma omp simd{}{}\n", ind, clauses(in_loop), err_clause);
        body += ind + "for (int64_t j = j0; j < j1; ++j) {\n";
      } else {
        // Nested loops over the inner coordinates, the last one vectorised.
        for (size_t k = 0; k < plan.inner_nest.size(); ++k) {
          const auto& [var, extent] = plan.inner_nest[k];
          if (k + 1 == plan.inner_nest.size())
            body += fmt::format("{}#pragma omp simd{}{}\n", ind, clauses(in_loop), err_clause);
          body += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", ind, var, var, extent,
                              var);
          ind += "  ";
        }
        body += fmt::format("{}const int64_t j = {};\n{}(void)j;\n", ind, plan.inner_index, ind);
      }
      const std::string in = plan.inner_nest.empty() ? I3 : ind;
      if (plan.inner_nest.empty()) lines(body, plan.inner_setup, in);
      lines(body, pass.body, in);
      for (const Accumulator& a : pass.accs) body += in + update(a) + "\n";
      for (size_t t : pass.body_totals) body += in + update(plan.totals[t]) + "\n";
      if (plan.inner_nest.empty()) {
        body += I2 + "}\n";
      } else {
        for (size_t k = plan.inner_nest.size(); k-- > 0;)
          body += std::string(I2.size() + 2 * k, ' ') + "}\n";
      }
    }
    for (const Accumulator& a : pass.accs) finish(body, a, I2);
    lines(body, pass.post, I2);
    for (size_t t : pass.post_totals) body += I2 + update(plan.totals[t]) + "\n";
  }
  body += (blocks > 0 ? I2 : I1) + "}\n";
  if (blocks > 0) {
    for (const Accumulator* t : totals) {
      body += fmt::format("{}{}_part[sp_block] = {};\n", I2, t->var, t->var);
      if (t->op == ReduceOp::Max || t->op == ReduceOp::Min)
        body += fmt::format("{}{}n_part[sp_block] = {}n;\n", I2, t->var, t->var);
    }
    body += I1 + "}\n";
    body += fmt::format("{}for (int64_t sp_block = 0; sp_block < {}; ++sp_block) {{\n", I1, blocks);
    for (const Accumulator* t : totals) body += I2 + merge_part(*t) + "\n";
    body += I1 + "}\n";
  }
  for (const Accumulator& t : plan.totals) finish(body, t, I1);
  lines(body, plan.epilogue, I1);
  body += I1 + "return err != 0;\n";

  KernelSource k;
  k.name = "spora_k" + hash_hex(body).substr(0, 16);
  k.text = "// " + source_comment(plan.describe) + "\n" + "extern \"C\" int " + k.name +
           "(const void* const* in_, void* const* out_, int sp_threads) {\n" + body + "}\n";
  return k;
}

std::string cpp_unit(const std::vector<KernelSource>& kernels) {
  // vmath's table forms (and <immintrin.h>) only where an explicit AVX-512 loop uses them.
  bool tables = false;
  for (const KernelSource& k : kernels)
    tables |= k.text.find("#ifdef SP_AVX512") != std::string::npos;
  std::string out = tables ? "" : "#define SPORA_VM_NO_TABLE_FORMS 1\n";
  out += cpp_prelude();
  std::set<std::string> seen;
  for (const KernelSource& k : kernels)
    if (seen.insert(k.name).second) out += "\n" + k.text;
  return out;
}

}  // namespace spora::codegen
