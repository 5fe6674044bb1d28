// CUDA source of fused kernels (codegen.h), from the same loop nests as the C++ ones.
//
//   elementwise groups   grid-stride loop over rows x inner (one thread per element)
//   row reductions       one block per row (grid-stride over rows): each pass strides the
//                        block's threads over the row, then a block reduction (warp shuffles,
//                        one shared slot per warp) gives every thread the row value; row stores
//                        are made by thread 0
//   totals               per-thread partials, block-reduced, combined into sp_totals[k] (double)
//                        with atomics; NAME_init sets them, NAME_finish runs the epilogue
//   SP_CHECK             sets *sp_err
// A printer of the kernel IR (semantics/kernel_ir/; statements spelled by c_syntax.h): the
// prelude defines the sp_* helpers for
// float and double with the CUDA math library (erff, tanhf, expf: accurate, not the fast
// intrinsics).
#include <fmt/format.h>

#include <set>

#include "backends/codegen/c_syntax.h"
#include "backends/codegen/cache.h"
#include "backends/codegen/codegen.h"
#include "backends/codegen/hash.h"

namespace spora::codegen {

using kir::Accumulator;
using kir::Kernel;
using kir::ReduceOp;
using kir::Stmt;

namespace {

const char* const kPrelude = R"SPORA(// Spora fused kernels (backends/codegen): generated CUDA.
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef unsigned char uint8_t;
#define SP_INF_F __int_as_float(0x7f800000)
#define SP_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define SP_NAN_F __int_as_float(0x7fc00000)
#define SP_NAN_D __longlong_as_double(0x7ff8000000000000LL)
#define SP_CHECK(cond) do { if (cond) *sp_err = 1; } while (0)
#define SP_FN static __device__ __forceinline__
template <class T> SP_FN T sp_neg(T x) { return -x; }
template <class T> SP_FN T sp_abs(T x) { return x < T(0) ? -x : x; }
template <class T> SP_FN T sp_sign(T x) { return x != x ? x : (x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0))); }
template <class T> SP_FN T sp_square(T x) { return x * x; }
template <class T> SP_FN T sp_relu(T x) { return x > T(0) ? x : T(0); }
template <class T> SP_FN T sp_reciprocal(T x) { return T(1) / x; }
template <class T> SP_FN T sp_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <class T> SP_FN T sp_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <class T> SP_FN T sp_finite_or_zero(T x) { return x - x == T(0) ? x : T(0); }
SP_FN float sp_floor(float x) { return floorf(x); }
SP_FN double sp_floor(double x) { return floor(x); }
SP_FN float sp_ceil(float x) { return ceilf(x); }
SP_FN double sp_ceil(double x) { return ceil(x); }
SP_FN float sp_round(float x) { return rintf(x); }
SP_FN double sp_round(double x) { return rint(x); }
SP_FN float sp_sqrt(float x) { return sqrtf(x); }
SP_FN double sp_sqrt(double x) { return sqrt(x); }
SP_FN float sp_rsqrt(float x) { return 1.0f / sqrtf(x); }
SP_FN double sp_rsqrt(double x) { return 1.0 / sqrt(x); }
SP_FN float sp_exp(float x) { return expf(x); }
SP_FN double sp_exp(double x) { return exp(x); }
SP_FN float sp_log(float x) { return logf(x); }
SP_FN double sp_log(double x) { return log(x); }
SP_FN float sp_tanh(float x) { return tanhf(x); }
SP_FN double sp_tanh(double x) { return tanh(x); }
SP_FN float sp_erf(float x) { return erff(x); }
SP_FN double sp_erf(double x) { return erf(x); }
SP_FN float sp_sin(float x) { return sinf(x); }
SP_FN double sp_sin(double x) { return sin(x); }
SP_FN float sp_cos(float x) { return cosf(x); }
SP_FN double sp_cos(double x) { return cos(x); }
SP_FN float sp_log1p(float x) { return log1pf(x); }
SP_FN double sp_log1p(double x) { return log1p(x); }
SP_FN float sp_expm1(float x) { return expm1f(x); }
SP_FN double sp_expm1(double x) { return expm1(x); }
SP_FN float sp_pow(float x, float y) { return powf(x, y); }
SP_FN double sp_pow(double x, double y) { return pow(x, y); }
SP_FN float sp_sigmoid(float x) { return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x)); }
SP_FN double sp_sigmoid(double x) { return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
SP_FN float sp_gelu(float x) { return 0.5f * x * erfcf(-x * 0.70710678118654752440f); }
SP_FN double sp_gelu(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }
template <class T> SP_FN T sp_floordiv(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return copysign(T(0), a / b);
  T fl = floor(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}
template <class T> SP_FN T sp_mod(T a, T b) {
  if (b == T(0)) return fmod(a, b);
  T m = fmod(a, b);
  if (m != T(0)) {
    if ((b < T(0)) != (m < T(0))) m += b;
  } else {
    m = copysign(T(0), b);
  }
  return m;
}
SP_FN uint64_t sp_rng_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
SP_FN double sp_uniform01(uint64_t seed, uint64_t i) {
  const uint64_t g = 0x9E3779B97F4A7C15ull;
  uint64_t bits = sp_rng_finalize(sp_rng_finalize(seed + g) + (i + 1) * g);
  return (double)(bits >> 11) * 1.1102230246251565e-16;
}
template <class T> SP_FN T sp_dropout(T x, uint64_t seed, uint64_t i, double p, double scale) {
  return sp_uniform01(seed, i) >= p ? (T)((double)x * scale) : T(0);
}
// Combining partial results (nan wins in max and min, like the reference).
template <class T> SP_FN T sp_comb_sum(T a, T b) { return a + b; }
template <class T> SP_FN T sp_comb_prod(T a, T b) { return a * b; }
template <class T> SP_FN T sp_comb_max(T a, T b) { return sp_maximum(a, b); }
template <class T> SP_FN T sp_comb_min(T a, T b) { return sp_minimum(a, b); }
template <class T> SP_FN T sp_comb_all(T a, T b) { return a & b; }
template <class T> SP_FN T sp_comb_any(T a, T b) { return a | b; }
// Every thread of the block gets the combination of all threads' v (blockDim a multiple of 32).
// The second level combines only the lanes that hold a warp's part (lane l takes l + o while
// that is below the warp count), so sums stay right for blocks of fewer than 32 warps.
#define SP_BLOCK_REDUCE(T, COMB, v)                                                   \
  do {                                                                                \
    __shared__ T sp_part[32];                                                         \
    for (int o = 16; o > 0; o >>= 1) v = COMB(v, __shfl_down_sync(0xffffffffu, v, o)); \
    if ((threadIdx.x & 31) == 0) sp_part[threadIdx.x >> 5] = v;                       \
    __syncthreads();                                                                  \
    if (threadIdx.x < 32) {                                                           \
      const unsigned sp_nw = blockDim.x >> 5;                                         \
      v = sp_part[threadIdx.x < sp_nw ? threadIdx.x : 0];                             \
      for (unsigned o = 16; o > 0; o >>= 1) {                                         \
        T sp_w = __shfl_down_sync(0xffffffffu, v, o);                                 \
        if (threadIdx.x + o < sp_nw) v = COMB(v, sp_w);                               \
      }                                                                               \
      if (threadIdx.x == 0) sp_part[0] = v;                                           \
    }                                                                                 \
    __syncthreads();                                                                  \
    v = sp_part[0];                                                                   \
    __syncthreads();                                                                  \
  } while (0)
// Combines v into *slot atomically (a compare-and-swap loop; sums use atomicAdd).
#define SP_ATOMIC_COMBINE(COMB, slot, v)                                                   \
  do {                                                                                     \
    unsigned long long* sp_a = (unsigned long long*)(slot);                                \
    unsigned long long sp_old = *sp_a, sp_seen;                                            \
    do {                                                                                   \
      sp_seen = sp_old;                                                                    \
      double sp_new = COMB(__longlong_as_double((long long)sp_seen), (double)(v));         \
      sp_old = atomicCAS(sp_a, sp_seen, (unsigned long long)__double_as_longlong(sp_new)); \
    } while (sp_old != sp_seen);                                                           \
  } while (0)
)SPORA";

const char* comb(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sp_comb_sum";
    case ReduceOp::Prod:
      return "sp_comb_prod";
    case ReduceOp::Max:
      return "sp_comb_max";
    case ReduceOp::Min:
      return "sp_comb_min";
    case ReduceOp::All:
      return "sp_comb_all";
    case ReduceOp::Any:
      return "sp_comb_any";
  }
  return "sp_comb_sum";
}

std::string init_value(const Accumulator& a) {
  const bool single = a.dtype == DType::f32;
  switch (a.op) {
    case ReduceOp::Sum:
    case ReduceOp::Any:
      return "0";
    case ReduceOp::Prod:
    case ReduceOp::All:
      return "1";
    case ReduceOp::Max:
      return single ? "(-SP_INF_F)" : "(-SP_INF_D)";
    case ReduceOp::Min:
      return single ? "SP_INF_F" : "SP_INF_D";
  }
  return "0";
}

std::string update(const Accumulator& a) {
  return fmt::format("{0} = {1}({0}, ({2})({3}));", c_acc_name(a), comb(a.op), c_acc_type(a.dtype),
                     c_operand(a.value));
}

void lines(std::string& out, const std::vector<Stmt>& stmts, const std::string& indent,
           bool stores_by_thread0) {
  for (const Stmt& s : stmts) {
    if (stores_by_thread0 && s.kind == Stmt::Kind::Store)
      out += indent + "if (threadIdx.x == 0) " + c_stmt(s) + "\n";
    else
      out += indent + c_stmt(s) + "\n";
  }
}

}  // namespace

const std::string& cuda_prelude() {
  static const std::string p = kPrelude;
  return p;
}

KernelSource emit_cuda(const Kernel& plan) {
  const bool rowwise = !plan.splittable;
  std::string params;
  for (size_t k = 0; k < plan.inputs.size(); ++k)
    params += fmt::format("const {}* in{}, ", c_buffer_type(plan.inputs[k].dtype), k);
  for (size_t k = 0; k < plan.outputs.size(); ++k)
    params += fmt::format("{}* out{}, ", c_buffer_type(plan.outputs[k].dtype), k);
  params += "int* sp_err, double* sp_totals";

  const std::string I1 = "  ", I2 = "    ", I3 = "      ";
  std::string body;
  body += I1 + "(void)sp_err; (void)sp_totals;\n";
  for (const Accumulator& t : plan.totals)
    body += fmt::format("{}{} {} = {};\n", I1, c_acc_type(t.dtype), c_acc_name(t), init_value(t));
  if (!rowwise) {
    // One thread per (row, inner) element.
    body += fmt::format(
        "{}for (int64_t sp_t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; sp_t < {}LL; "
        "sp_t += (int64_t)gridDim.x * blockDim.x) {{\n",
        I1, plan.rows * plan.inner);
    body += fmt::format("{}const int64_t r = sp_t / {}LL; const int64_t j = sp_t % {}LL;\n", I2,
                        plan.inner, plan.inner);
    body += I2 + "(void)r; (void)j;\n";
    lines(body, plan.row_setup, I2, false);
    lines(body, plan.inner_setup, I2, false);
    for (const kir::Pass& pass : plan.passes) {
      lines(body, pass.pre, I2, false);
      lines(body, pass.body, I2, false);
      for (size_t t : pass.body_totals) body += I2 + update(plan.totals[t]) + "\n";
      lines(body, pass.post, I2, false);
      for (size_t t : pass.post_totals) body += I2 + update(plan.totals[t]) + "\n";
    }
    body += I1 + "}\n";
  } else {
    // One block per row.
    body += fmt::format("{}for (int64_t r = blockIdx.x; r < {}LL; r += gridDim.x) {{\n", I1,
                        plan.rows);
    lines(body, plan.row_setup, I2, false);
    for (const kir::Pass& pass : plan.passes) {
      lines(body, pass.pre, I2, false);
      for (const Accumulator& a : pass.accs)
        body += fmt::format("{}{} {} = {};\n", I2, c_acc_type(a.dtype), c_acc_name(a), init_value(a));
      if (pass.has_inner_loop()) {
        body += fmt::format("{}for (int64_t j = threadIdx.x; j < {}LL; j += blockDim.x) {{\n", I2,
                            plan.inner);
        lines(body, plan.inner_setup, I3, false);
        lines(body, pass.body, I3, false);
        for (const Accumulator& a : pass.accs) body += I3 + update(a) + "\n";
        for (size_t t : pass.body_totals) body += I3 + update(plan.totals[t]) + "\n";
        body += I2 + "}\n";
      }
      for (const Accumulator& a : pass.accs)
        body += fmt::format("{}SP_BLOCK_REDUCE({}, {}, {});\n", I2, c_acc_type(a.dtype), comb(a.op),
                            c_acc_name(a));
      lines(body, pass.post, I2, true);
      for (size_t t : pass.post_totals)
        body += I2 + "if (threadIdx.x == 0) " + update(plan.totals[t]) + "\n";
    }
    body += I1 + "}\n";
  }
  // Totals: block partials into the global slots.
  for (size_t k = 0; k < plan.totals.size(); ++k) {
    const Accumulator& t = plan.totals[k];
    body += fmt::format("{}SP_BLOCK_REDUCE({}, {}, {});\n", I1, c_acc_type(t.dtype), comb(t.op),
                        c_acc_name(t));
    if (t.op == ReduceOp::Sum)
      body += fmt::format("{}if (threadIdx.x == 0) atomicAdd(&sp_totals[{}], (double){});\n", I1,
                          k, c_acc_name(t));
    else
      body += fmt::format("{}if (threadIdx.x == 0) SP_ATOMIC_COMBINE({}, &sp_totals[{}], {});\n",
                          I1, comb(t.op), k, c_acc_name(t));
  }

  const std::string defs = c_loop_expr_defs(plan);
  KernelSource k;
  k.name = "spora_g" + hash_hex(defs + params + body).substr(0, 16);
  k.text = defs + "// " + source_comment(plan.describe) + "\n";
  k.text += "extern \"C\" __global__ void " + k.name + "(" + params + ") {\n" + body + "}\n";
  if (!plan.totals.empty() || !plan.epilogue.empty()) {
    std::string init, fin;
    for (size_t t = 0; t < plan.totals.size(); ++t)
      init += fmt::format("  sp_totals[{}] = {};\n", t, init_value(plan.totals[t]));
    k.text += "extern \"C\" __global__ void " + k.name + "_init(double* sp_totals) {\n" +
              "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + init + "  }\n}\n";
    for (size_t t = 0; t < plan.totals.size(); ++t)
      fin += fmt::format("    const {0} {1} = ({0})sp_totals[{2}];\n",
                         c_acc_type(plan.totals[t].dtype), c_acc_name(plan.totals[t]), t);
    std::string epilogue;
    lines(epilogue, plan.epilogue, I2, false);
    k.text += "extern \"C\" __global__ void " + k.name + "_finish(" + params + ") {\n" +
              "  (void)sp_err;\n  if (blockIdx.x == 0 && threadIdx.x == 0) {\n" + fin + epilogue +
              "  }\n}\n";
  }
  return k;
}

std::string cuda_unit(const std::vector<KernelSource>& kernels) {
  std::string out = cuda_prelude();
  std::set<std::string> seen;
  for (const KernelSource& k : kernels)
    if (seen.insert(k.name).second) out += "\n" + k.text;
  return out;
}

}  // namespace spora::codegen
