// C++ source of fused kernels (codegen.h): the prelude, and a printer of the kernel IR
// (semantics/kernel_ir/) as one OpenMP loop nest per kernel.
//
//   extern "C" int spora_k<hash>(const void* const* in_, void* const* out_, int sp_threads) {
//     const float* in0 = (const float*)in_[0]; ...   float* out0 = (float*)out_[0]; ...
//     int sp_failed = 0; double t0 = 0;               // totals
//     if (sp_threads > 1) {
//       #pragma omp parallel for num_threads(sp_threads)   // rows (x chunks)
//       for (int64_t task = 0; task < TASKS; ++task) {
//         int err = 0; const int64_t r = ...; row setup
//         pre; accumulators; #pragma omp simd ... for (j ...) { body } post  // each pass
//         if (err) { #pragma omp atomic write  sp_failed = 1; }
//       }
//     } else {
//       the same loop, outside any OpenMP region
//     }
//     int err = sp_failed; epilogue; return err != 0;
//   }
//
// A failed check (SP_CHECK: an index out of range) sets the task's own `err`; the task then
// raises the shared flag with an atomic write. Neither an OpenMP reduction over one shared `err`
// nor plain writes to it: compiled by clang 14 at -O2 or -O3, both lose the failure where a
// dynamic schedule runs on one thread, and the kernel returns 0 for an out-of-range label
// (Codegen.AKernelsFailedCheckRunsTheGroupNodeByNode compiles with clang++ as well).
//
// Inner loops carry `omp simd`: iterations are independent (an output may share its buffer
// with an input read at the same index only, fusion_plan.h in_place_ok). Reductions
// accumulate floats in double; max/min track nan apart so that they vectorise.
//
// Before printing, the target's schedule transforms the kernel (semantics/kernel_ir/
// transform.h): tiles of 8192 iterations for a few long rows, two interleaved halves for a
// body that calls a transcendental function, and vector width 16 (explicit AVX-512 code, a
// printer strategy over the typed statements: avx512_form) where every statement has a 16-lane
// form and one of them is a table form of vmath (tanh, gelu).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "backends/codegen/c_syntax.h"
#include "backends/codegen/cache.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"
#include "semantics/kernel_ir/transform.h"

namespace spora::codegen {

using kir::Accumulator;
using kir::Kernel;
using kir::ReduceOp;
using kir::Stmt;

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
#ifdef SP_AVX512
// 16-lane forms of elementwise primitives for the explicit loops: the same bits as the scalar
// sp_* functions (neg flips the sign bit; abs, relu, maximum and minimum keep their
// comparisons, so -0 and nan come out as in the scalar code).
namespace {
SP_FN __m512 sp_neg16(__m512 x) { return _mm512_xor_ps(x, _mm512_set1_ps(-0.0f)); }
SP_FN __m512 sp_abs16(__m512 x) {
  return _mm512_mask_xor_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x,
                            _mm512_set1_ps(-0.0f));
}
SP_FN __m512 sp_square16(__m512 x) { return _mm512_mul_ps(x, x); }
SP_FN __m512 sp_relu16(__m512 x) { return _mm512_max_ps(x, _mm512_setzero_ps()); }
SP_FN __m512 sp_sqrt16(__m512 x) { return _mm512_sqrt_ps(x); }
SP_FN __m512 sp_rsqrt16(__m512 x) { return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(x)); }
SP_FN __m512 sp_reciprocal16(__m512 x) { return _mm512_div_ps(_mm512_set1_ps(1.0f), x); }
SP_FN __m512 sp_maximum16(__m512 a, __m512 b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), _mm512_max_ps(a, b),
                              _mm512_set1_ps(SP_NAN_F));
}
SP_FN __m512 sp_minimum16(__m512 a, __m512 b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), _mm512_min_ps(a, b),
                              _mm512_set1_ps(SP_NAN_F));
}
}  // namespace
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


std::string init_value(const Accumulator& a) {
  switch (a.op) {
    case ReduceOp::Sum:
    case ReduceOp::Any:
      return "0";
    case ReduceOp::Prod:
    case ReduceOp::All:
      return "1";
    case ReduceOp::Max:
      return a.dtype == DType::f32 ? "(-SP_INF_F)" : "(-SP_INF_D)";
    case ReduceOp::Min:
      return a.dtype == DType::f32 ? "SP_INF_F" : "SP_INF_D";
  }
  return "0";
}

// The OpenMP reduction clauses of some accumulators.
std::string clauses(const std::vector<const Accumulator*>& accs) {
  std::string out;
  for (const Accumulator* a : accs) {
    const std::string v = c_acc_name(*a);
    switch (a->op) {
      case ReduceOp::Sum:
        out += " reduction(+:" + v + ")";
        break;
      case ReduceOp::Prod:
        out += " reduction(*:" + v + ")";
        break;
      case ReduceOp::Max:
        out += " reduction(max:" + v + ") reduction(|:" + v + "n)";
        break;
      case ReduceOp::Min:
        out += " reduction(min:" + v + ") reduction(|:" + v + "n)";
        break;
      case ReduceOp::All:
        out += " reduction(&:" + v + ")";
        break;
      case ReduceOp::Any:
        out += " reduction(|:" + v + ")";
        break;
    }
  }
  return out;
}

void declare(std::string& out, const Accumulator& a, const std::string& indent) {
  out += fmt::format("{}{} {} = {};\n", indent, c_acc_type(a.dtype), c_acc_name(a), init_value(a));
  if (a.op == ReduceOp::Max || a.op == ReduceOp::Min)
    out += indent + "int " + c_acc_name(a) + "n = 0;\n";
}

std::string update(const Accumulator& a) {
  const std::string var = c_acc_name(a), value = c_operand(a.value);
  const std::string v = "(" + c_acc_type(a.dtype) + ")(" + value + ")";
  switch (a.op) {
    case ReduceOp::Sum:
      return var + " += " + v + ";";
    case ReduceOp::Prod:
      return var + " *= " + v + ";";
    case ReduceOp::Max:
      return fmt::format("{0} = {1} > {0} ? {1} : {0}; {0}n |= {1} != {1};", var, v);
    case ReduceOp::Min:
      return fmt::format("{0} = {1} < {0} ? {1} : {0}; {0}n |= {1} != {1};", var, v);
    case ReduceOp::All:
      return var + " &= (" + value + ") ? 1 : 0;";
    case ReduceOp::Any:
      return var + " |= (" + value + ") ? 1 : 0;";
  }
  return "";
}

// Adds a block's partial (`<var>_part[sp_block]`) into the total.
std::string merge_part(const Accumulator& a) {
  const std::string var = c_acc_name(a), p = var + "_part[sp_block]";
  switch (a.op) {
    case ReduceOp::Sum:
      return var + " += " + p + ";";
    case ReduceOp::Prod:
      return var + " *= " + p + ";";
    case ReduceOp::Max:
      return fmt::format("{0} = {1} > {0} ? {1} : {0}; {0}n |= {0}n_part[sp_block];", var, p);
    case ReduceOp::Min:
      return fmt::format("{0} = {1} < {0} ? {1} : {0}; {0}n |= {0}n_part[sp_block];", var, p);
    case ReduceOp::All:
      return var + " &= " + p + ";";
    case ReduceOp::Any:
      return var + " |= " + p + ";";
  }
  return "";
}

void finish(std::string& out, const Accumulator& a, const std::string& indent) {
  if (a.op == ReduceOp::Max || a.op == ReduceOp::Min)
    out += fmt::format("{0}if ({1}n) {1} = {2};\n", indent, c_acc_name(a),
                       a.dtype == DType::f32 ? "SP_NAN_F" : "SP_NAN_D");
}

void lines(std::string& out, const std::vector<Stmt>& stmts, const std::string& indent) {
  for (const Stmt& s : stmts) out += indent + c_stmt(s) + "\n";
}

// ---- the schedule: transformations of the kernel for this target ----------------------------

// Tasks: rows, each row's inner loop split into tiles when rows alone are too few.
constexpr int64_t kTile = 8192;
// An interleaved or explicitly vectorised loop needs tasks of at least this many iterations.
constexpr int64_t kMinInterleave = 256;

void schedule(Kernel& k) {
  if (k.splittable && k.rows < 64 && k.inner >= 16384) kir::tile_inner(k, kTile);
  // An elementwise inner loop whose body is a long dependency chain (a transcendental function:
  // 40-60 vector instructions, two of them divisions) runs two halves of its task interleaved,
  // so independent chains sit side by side in the instruction stream (unrolling whole
  // iterations did not help). W5's chain: 1.02-1.06x faster at one thread
  // (backends/codegen/README.md, "Interleaved halves and a dynamic schedule").
  for (kir::Pass& p : k.passes) {
    const bool interleave = k.inner_nest.empty() && p.accs.empty() && p.body_totals.empty() &&
                            k.passes.size() == 1 && kir::task_extent(k) >= kMinInterleave &&
                            kir::calls_transcendental(p);
    if (interleave) kir::interleave(k, p, 2);
  }
}

// ---- explicit AVX-512 loops (vector width 16) -------------------------------------------------

// How an f32 primitive is written for 16 lanes: an intrinsic of two operands, a table form of
// vmath (backends/cpu/vmath.h: tanh16, gelu16) or an exact helper of the prelude (sp_*16).
struct LaneForm {
  const char* name;
  bool table;  // a vmath table form (the reason to write the loop explicitly)
};
const std::map<std::string, LaneForm>& lane_forms() {
  static const std::map<std::string, LaneForm> m = {
      {"add", {"_mm512_add_ps", false}},   {"sub", {"_mm512_sub_ps", false}},
      {"mul", {"_mm512_mul_ps", false}},   {"div", {"_mm512_div_ps", false}},
      {"maximum", {"sp_maximum16", false}}, {"minimum", {"sp_minimum16", false}},
      {"tanh", {"spora::cpu::vm::tanh16", true}}, {"gelu", {"spora::cpu::vm::gelu16", true}},
      {"neg", {"sp_neg16", false}},        {"abs", {"sp_abs16", false}},
      {"square", {"sp_square16", false}},  {"relu", {"sp_relu16", false}},
      {"sqrt", {"sp_sqrt16", false}},      {"rsqrt", {"sp_rsqrt16", false}},
      {"reciprocal", {"sp_reciprocal16", false}},
  };
  return m;
}

// A contiguous index of the inner loop: j, or a sum whose last term is j and whose other terms
// do not depend on the inner loop (r * N + j where a task is a row).
bool contiguous(const kir::Ix& x) {
  const kir::Ix j = kir::Ix::var(kir::Var::inner_index());
  if (x == j) return true;
  if (x.op() != kir::Ix::Op::Sum || !(x.args().back() == j)) return false;
  for (size_t i = 0; i + 1 < x.args().size(); ++i)
    if (x.args()[i].depends_inner()) return false;
  return true;
}

// Can pass p be written as explicit 16-lane code? Every statement a contiguous f32 load, an f32
// primitive with a lane form whose operands are f32 values or literals, or a contiguous f32
// store; at least one table form (else GCC's own vectorisation is as good); no inner setup.
bool avx512_form(const Kernel& k, const kir::Pass& p) {
  if (!k.inner_setup.empty() || p.loop.interleave < 2) return false;
  bool table = false;
  auto f32 = [](const kir::Operand& o) { return o.dtype == DType::f32; };
  for (const Stmt& s : p.body) {
    if (s.kind == Stmt::Kind::Store) {
      if (!contiguous(s.index) || !f32(s.value) ||
          k.outputs[static_cast<size_t>(s.buffer)].dtype != DType::f32)
        return false;
      continue;
    }
    if (s.kind != Stmt::Kind::Define || s.expr.dtype != DType::f32) return false;
    const kir::Expr& e = s.expr;
    if (e.op == kir::Expr::Op::Load) {
      if (!contiguous(e.index)) return false;
      continue;
    }
    if (e.op != kir::Expr::Op::Unary && e.op != kir::Expr::Op::Binary) return false;
    auto form = lane_forms().find(e.fn);
    if (form == lane_forms().end()) return false;
    for (const kir::Operand& a : e.args)
      if (!f32(a)) return false;
    table = table || form->second.table;
  }
  return table;
}

// One statement for the 16 elements at `at` (values named with `sfx`); `masked`: only the lanes
// of the mask sp_m (loads of the others give 0, their results are not stored). Values defined
// outside the body (row values) and literals are broadcast.
std::string vector_stmt(const Stmt& s, const std::set<int>& body, const std::string& sfx,
                        const std::string& at, bool masked) {
  auto val = [&](const kir::Operand& o) {
    if (o.is_value() && body.count(o.id)) return c_operand(o) + sfx;
    return "_mm512_set1_ps(" + c_operand(o) + ")";
  };
  if (s.kind == Stmt::Kind::Store) {
    const std::string off = c_index_prefix(s.index);
    return masked ? fmt::format("_mm512_mask_storeu_ps(out{} + {}{}, sp_m, {});", s.buffer, off,
                                at, val(s.value))
                  : fmt::format("_mm512_storeu_ps(out{} + {}{}, {});", s.buffer, off, at,
                                val(s.value));
  }
  const kir::Expr& e = s.expr;
  const std::string name = "v" + std::to_string(s.id) + sfx;
  if (e.op == kir::Expr::Op::Load)
    return fmt::format("const __m512 {} = {}in{} + {}{});", name,
                       masked ? "_mm512_maskz_loadu_ps(sp_m, " : "_mm512_loadu_ps(", e.buffer,
                       c_index_prefix(e.index), at);
  std::string args;
  for (const kir::Operand& a : e.args) args += (args.empty() ? "" : ", ") + val(a);
  return fmt::format("const __m512 {} = {}({});", name, lane_forms().at(e.fn).name, args);
}

// The interleaved loop of a pass (kir::interleave): the parts side by side, then the
// remainder with the plain body.
void interleaved_loop(std::string& out, const Kernel& k, const kir::Pass& p,
                      const std::string& simd_clauses) {
  const std::string I2 = "    ", I3 = "      ";
  const int ways = p.loop.interleave;
  out += fmt::format("{}const int64_t sp_h = (j1 - j0) / {};\n", I2, ways);
  out += fmt::format("{}#pragma omp simd{}\n", I2, simd_clauses);
  out += I2 + "for (int64_t sp_k = 0; sp_k < sp_h; ++sp_k) {\n";
  std::string starts;
  for (int c = 1; c <= ways; ++c)
    starts += fmt::format("{}j{} = j0 + {}sp_k", c == 1 ? "" : ", ", c_copy_suffix(c),
                          c == 1 ? "" : c == 2 ? "sp_h + " : fmt::format("{} * sp_h + ", c - 1));
  out += I3 + "const int64_t " + starts + ";\n";
  lines(out, p.loop.interleaved, I3);
  out += I2 + "}\n";
  out += fmt::format("{}for (int64_t j = j0 + {} * sp_h; j < j1; ++j) {{  // the {}\n", I2, ways,
                     ways == 2 ? "odd element" : "remainder");
  lines(out, k.inner_setup, I3);
  lines(out, p.body, I3);
  out += I2 + "}\n";
}

// A pass of vector width 16 as explicit AVX-512 code: tanh and gelu are vmath's table forms
// (no division, 16 lanes per table lookup), which GCC's vectorised loop cannot express. Two
// vectors per iteration, their statements side by side; then one vector; the last n % 16
// elements by one masked vector, so every element gets the same operations (results do not
// depend on where an element falls). Kernels compiled without AVX-512 run the interleaved
// loop. Why (W5's chain against the GCC loop): benchmarks/results/w5_fused_kernel_history.md.
void avx512_loop(std::string& out, const Kernel& k, const kir::Pass& p,
                 const std::string& err_clause) {
  const std::string I2 = "    ", I3 = "      ", I4 = "        ";
  std::set<int> body;
  for (const Stmt& s : p.body)
    if (s.kind == Stmt::Kind::Define) body.insert(s.id);
  out += "#ifdef SP_AVX512\n";
  out += I2 + "{\n" + I3 + "int64_t j = j0;\n";
  out += I3 + "for (; j + 32 <= j1; j += 32) {\n";
  for (const Stmt& s : p.body) {
    out += I4 + vector_stmt(s, body, "_a", "j", false) + "\n";
    out += I4 + vector_stmt(s, body, "_b", "j + 16", false) + "\n";
  }
  out += I3 + "}\n" + I3 + "for (; j + 16 <= j1; j += 16) {\n";
  for (const Stmt& s : p.body) out += I4 + vector_stmt(s, body, "", "j", false) + "\n";
  out += I3 + "}\n" + I3 + "if (j < j1) {\n";
  out += I4 + "const __mmask16 sp_m = (__mmask16)((1u << (j1 - j)) - 1u);\n";
  for (const Stmt& s : p.body) out += I4 + vector_stmt(s, body, "", "j", true) + "\n";
  out += I3 + "}\n" + I2 + "}\n";
  out += "#else\n";
  interleaved_loop(out, k, p, err_clause);
  out += "#endif\n";
}

// The inner loop of a pass at vector width 1: one loop over j or the nested loops of
// inner_nest, the last one vectorised by the compiler.
void simd_loop(std::string& out, const Kernel& k, const kir::Pass& p,
               const std::vector<const Accumulator*>& in_loop, const std::string& err_clause) {
  const std::string I2 = "    ", I3 = "      ";
  std::string ind = I2;
  if (k.inner_nest.empty()) {
    out += fmt::format("{}#pragma omp simd{}{}\n", ind, clauses(in_loop), err_clause);
    out += ind + "for (int64_t j = j0; j < j1; ++j) {\n";
  } else {
    for (size_t n = 0; n < k.inner_nest.size(); ++n) {
      const std::string var = c_var(k.inner_nest[n].first);
      if (n + 1 == k.inner_nest.size())
        out += fmt::format("{}#pragma omp simd{}{}\n", ind, clauses(in_loop), err_clause);
      out += fmt::format("{}for (int64_t {} = 0; {} < {}; ++{}) {{\n", ind, var, var,
                         k.inner_nest[n].second, var);
      ind += "  ";
    }
    out += fmt::format("{}const int64_t j = {};\n{}(void)j;\n", ind, c_index(k.inner_index), ind);
  }
  const std::string in = k.inner_nest.empty() ? I3 : ind;
  if (k.inner_nest.empty()) lines(out, k.inner_setup, in);
  lines(out, p.body, in);
  for (const Accumulator& a : p.accs) out += in + update(a) + "\n";
  for (size_t t : p.body_totals) out += in + update(k.totals[t]) + "\n";
  if (k.inner_nest.empty()) {
    out += I2 + "}\n";
  } else {
    for (size_t n = k.inner_nest.size(); n-- > 0;) out += std::string(I2.size() + 2 * n, ' ') + "}\n";
  }
}

}  // namespace

const std::string& cpp_prelude() {
  static const std::string p = std::string(kPrelude) +
                               (kHaveVmath ? std::string(kVmath) + "\n" + kF32Vmath : kF32Libm);
  return p;
}

Kernel cpp_schedule(const Kernel& plan) {
  Kernel k = plan;
  schedule(k);
  if (kHaveVmath)
    for (kir::Pass& p : k.passes)
      if (avx512_form(k, p)) p.loop.vector_width = 16;
  return k;
}

KernelSource emit_cpp(const Kernel& plan) {
  const Kernel k = cpp_schedule(plan);
  std::string body;
  const std::string I1 = "  ", I2 = "    ";
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const std::string t = c_buffer_type(k.inputs[i].dtype);
    body += fmt::format("{}const {}* in{} = static_cast<const {}*>(in_[{}]);\n", I1, t, i, t, i);
  }
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    const std::string t = c_buffer_type(k.outputs[i].dtype);
    body += fmt::format("{}{}* out{} = static_cast<{}*>(out_[{}]);\n", I1, t, i, t, i);
  }
  body += I1 + (k.checks ? "int sp_failed = 0;\n" : "int err = 0;\n");
  std::vector<const Accumulator*> totals;
  for (const Accumulator& t : k.totals) {
    declare(body, t, I1);
    totals.push_back(&t);
  }
  const int64_t chunk = kir::task_extent(k);
  const int64_t chunks = (k.inner + chunk - 1) / chunk;
  const int64_t tasks = k.rows * chunks;
  const std::string err_clause = k.checks ? " reduction(|:err)" : "";  // the task's own err
  // Tasks are handed out dynamically (a few per grab): on a shared machine one core often runs
  // slower than the other, and a static split waits for it (W5: medians 3-10% lower).
  // Totals are summed per fixed block of tasks, and the blocks' partials added in block order
  // after the loop: their bits depend neither on the team's size (OMP_NUM_THREADS, one thread
  // on a busy machine) nor on which thread ran which block.
  const int64_t blocks = totals.empty() ? 0 : std::min<int64_t>(tasks, 256);
  size_t par_begin = 0;  // where the parallel loop's pragma starts
  std::string pragma;
  if (blocks > 0) {
    for (const Accumulator* t : totals) {
      body += fmt::format("{}{} {}_part[{}];\n", I1, c_acc_type(t->dtype), c_acc_name(*t), blocks);
      if (t->op == ReduceOp::Max || t->op == ReduceOp::Min)
        body += fmt::format("{}int {}n_part[{}];\n", I1, c_acc_name(*t), blocks);
    }
    pragma = fmt::format(
        "{}#pragma omp parallel for schedule(dynamic, 1) num_threads(sp_threads) if(sp_threads > "
        "1)\n",
        I1);
    par_begin = body.size();
    body += pragma;
    body += fmt::format("{}for (int64_t sp_block = 0; sp_block < {}; ++sp_block) {{\n", I1, blocks);
    for (const Accumulator* t : totals) declare(body, *t, I2);  // this block's
    body += fmt::format(
        "{}for (int64_t task = sp_block * {} / {}; task < (sp_block + 1) * {} / {}; ++task) {{\n",
        I2, tasks, blocks, tasks, blocks);
  } else {
    const std::string schedule = tasks > 1
                                     ? fmt::format("dynamic, {}", std::max<int64_t>(1, tasks / 64))
                                     : std::string("static");
    pragma = fmt::format(
        "{}#pragma omp parallel for schedule({}) num_threads(sp_threads) if(sp_threads > 1)\n", I1,
        schedule);
    par_begin = body.size();
    body += pragma;
    body += fmt::format("{}for (int64_t task = 0; task < {}; ++task) {{\n", I1, tasks);
  }
  if (k.checks) body += I2 + "int err = 0;\n";
  if (chunks == 1) {
    body += I2 + "const int64_t r = task;\n";
    body += fmt::format("{}const int64_t j0 = 0, j1 = {};\n", I2, k.inner);
  } else {
    body += fmt::format("{}const int64_t r = task / {};\n", I2, chunks);
    body += fmt::format("{}const int64_t j0 = (task % {}) * {};\n", I2, chunks, chunk);
    body += fmt::format("{}const int64_t j1 = j0 + {} < {} ? j0 + {} : {};\n", I2, chunk, k.inner,
                        chunk, k.inner);
  }
  body += I2 + "(void)r;\n";
  lines(body, k.row_setup, I2);
  for (const kir::Pass& pass : k.passes) {
    lines(body, pass.pre, I2);
    std::vector<const Accumulator*> in_loop;
    for (const Accumulator& a : pass.accs) {
      declare(body, a, I2);
      in_loop.push_back(&a);
    }
    for (size_t t : pass.body_totals) in_loop.push_back(&k.totals[t]);
    if (pass.loop.vector_width == 16)
      avx512_loop(body, k, pass, err_clause);
    else if (pass.loop.interleave > 1)
      interleaved_loop(body, k, pass, err_clause);
    else if (pass.has_inner_loop())
      simd_loop(body, k, pass, in_loop, err_clause);
    for (const Accumulator& a : pass.accs) finish(body, a, I2);
    lines(body, pass.post, I2);
    for (size_t t : pass.post_totals) body += I2 + update(k.totals[t]) + "\n";
  }
  if (k.checks)
    body += I2 + "if (err) {\n" + I2 + "  #pragma omp atomic write\n" + I2 + "  sp_failed = 1;\n" +
            I2 + "}\n";
  body += (blocks > 0 ? I2 : I1) + "}\n";
  if (blocks > 0) {
    for (const Accumulator* t : totals) {
      body += fmt::format("{}{}_part[sp_block] = {};\n", I2, c_acc_name(*t), c_acc_name(*t));
      if (t->op == ReduceOp::Max || t->op == ReduceOp::Min)
        body += fmt::format("{}{}n_part[sp_block] = {}n;\n", I2, c_acc_name(*t), c_acc_name(*t));
    }
    body += I1 + "}\n";
  }
  // On one thread the same loop runs outside any OpenMP region: a region the if clause
  // serialises still goes through libgomp; without it W1's step (two small epilogues on one
  // thread) took 0.973-0.979 of its time
  // (benchmarks/results/fused_serial_branch_ab_intel_xeon.txt).
  {
    const std::string loop = body.substr(par_begin + pragma.size());
    body.resize(par_begin);
    body += I1 + "if (sp_threads > 1) {\n" + pragma + loop + I1 + "} else {\n" + loop + I1 + "}\n";
  }
  if (blocks > 0) {
    body += fmt::format("{}for (int64_t sp_block = 0; sp_block < {}; ++sp_block) {{\n", I1, blocks);
    for (const Accumulator* t : totals) body += I2 + merge_part(*t) + "\n";
    body += I1 + "}\n";
  }
  for (const Accumulator& t : k.totals) finish(body, t, I1);
  if (k.checks) body += I1 + "int err = sp_failed;\n";
  lines(body, k.epilogue, I1);
  body += I1 + "return err != 0;\n";

  const std::string defs = c_loop_expr_defs(k);
  KernelSource src;
  src.name = "spora_k" + hash_hex(defs + body).substr(0, 16);
  src.text = defs + "// " + source_comment(k.describe) + "\n" + "extern \"C\" int " + src.name +
             "(const void* const* in_, void* const* out_, int sp_threads) {\n" + body + "}\n";
  return src;
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
