// The "kernel.cuda" facet of every registry row (cuda.h): the native kernels (kernels.cu and
// cuBLAS) for the rows and cases they handle, and the host fallback for everything else.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "backends/cpu/kernels.h"
#include "backends/cuda/context.h"
#include "backends/cuda/cublas_api.h"
#include "backends/cuda/launch.h"
#include "lang/diagnostics.h"
#include "semantics/registry.h"
#include "semantics/shape_rules.h"

namespace spora::cuda {

using sem::Attrs;

using sem::Primitive;
using sem::RefKernel;
using sem::Shape;
using sem::Tensor;
using sem::TypeP;
using sem::Value;

namespace {

// A native kernel: the result, or nullopt for a case it leaves to the fallback (a dtype it has
// no kernel for, attributes it does not handle).
using Native =
    std::function<std::optional<Value>(const std::vector<Value>& in, const Attrs& attrs)>;

// ---- bookkeeping ----------------------------------------------------------------------------

std::mutex g_mu;
std::map<std::string, Coverage> g_coverage;
std::set<std::string> g_fallbacks_used;

// The host fallback: inputs to the host, the CPU kernel (or the reference kernel) there, the
// result back on the device. Warns once per row (the first time it runs).
Value run_on_host(const Primitive& p, const std::vector<Value>& in, const Attrs& attrs,
                  bool warn = true) {
  // Host memory cannot be part of a CUDA graph: the capture is given up (graphs.cpp).
  capture_guard(("the host fallback of '" + p.name + "'").c_str());
  if (warn) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_fallbacks_used.insert(p.name).second)
      std::fprintf(stderr,
                   "spora: warning: '%s' has no CUDA kernel for these inputs; it runs on the CPU "
                   "(copies to the host and back)\n",
                   p.name.c_str());
  }
  std::vector<Value> host;
  host.reserve(in.size());
  for (const Value& v : in) host.push_back(to_host(v));
  const RefKernel* cpu = p.facet<RefKernel>(sem::kCpuKernelFacet);
  Value out = cpu ? (*cpu)(host, attrs) : p.eval(host, attrs);
  return to_device(out);
}

// Rows that compute nothing on tensor data (the front end's tuple and record plumbing and the
// tape lists): their reference kernels run as they are, with the tensors wherever they live.
const std::set<std::string> kPlumbing = {
    "make_tuple", "tuple_get", "make_record", "record_get",  "list_empty",       "list_push",
    "list_get",   "list_len",  "list_add",    "list_add_at", "list_get_or_zeros"};

// What a row's native kernel does with f16 / bf16 tensors.
enum class Low {
  Host,    // leaves them to the host fallback
  ViaF32,  // computes in f32: the inputs cast up, the kernel, the result rounded once (to
           // nearest even) to the row's result dtype, the host's "compute in f32, round once"
  Native,  // takes them as they are (copies, views, casts, fills; matmul with cublasGemmEx)
};
// The words of a space-separated list.
std::set<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

Low low_policy(const std::string& name) {
  static const std::set<std::string> via = words(
      "neg abs sign square relu floor ceil round exp log sqrt rsqrt tanh sigmoid gelu sin cos erf "
      "log1p expm1 reciprocal add sub mul div floordiv mod pow maximum minimum eq ne lt le gt ge "
      "sum mean prod max min argmax argmin softmax log_softmax cross_entropy layer_norm "
      "layer_norm_grad conv2d "
      "conv2d_input_grad conv2d_weight_grad");
  static const std::set<std::string> native = words(
      "matmul where cast transpose permute broadcast_to reshape flatten squeeze unsqueeze "
      "expand_dims identity stop_gradient shard_hint stage_boundary zeros ones full one_hot");
  if (via.count(name)) return Low::ViaF32;
  if (native.count(name)) return Low::Native;
  return Low::Host;
}

bool is_low(DType d) { return d == DType::f16 || d == DType::bf16; }
bool has_low(const std::vector<Value>& in) {
  for (const Value& v : in)
    if (v.is_tensor() && v.tensor.defined() && is_low(v.tensor.dtype())) return true;
  return false;
}
Tensor cast_dev(const Tensor& x, DType to);  // below
TypeP infer(const std::string& name, const std::vector<Value>& in, const Attrs& attrs);

// The ViaF32 policy: k on the inputs cast to f32, its tensor result rounded to `want`.
std::optional<Value> via_f32(const Native& k, const std::vector<Value>& in, const Attrs& attrs,
                             const TypeP& want) {
  std::vector<Value> up;
  up.reserve(in.size());
  for (const Value& v : in)
    up.push_back(v.is_tensor() && v.tensor.defined() && is_low(v.tensor.dtype())
                     ? Value(cast_dev(v.tensor, DType::f32))
                     : v);
  std::optional<Value> out = k(up, attrs);
  if (!out) return out;
  if (out->is_tensor() && want && is_low(want->dtype) && out->tensor.dtype() == DType::f32)
    return Value(cast_dev(out->tensor, want->dtype));
  return out;
}

void set_native(const std::string& name, Native k, std::string note = "") {
  Primitive* p = sem::Registry::instance().find_mutable(name);
  if (!p || !p->eval) return;  // a row another build leaves out: nothing to accelerate
  const Primitive* row = p;
  const Low low = low_policy(name);
  p->facets[sem::kCudaKernelFacet] =
      RefKernel([row, k, low, name](const std::vector<Value>& in, const Attrs& attrs) -> Value {
        std::optional<Value> out;
        const bool lowp = has_low(in);
        if (lowp && low == Low::Host) return run_on_host(*row, in, attrs);
        try {
          if (lowp && low == Low::ViaF32)
            out = via_f32(k, in, attrs, infer(name, in, attrs));  // the reference's errors first
          else
            out = k(in, attrs);
        } catch (const lang::UserError&) {
          // Invalid inputs (the shape rule said so): the host kernels raise the reference's
          // own message, which tests compare word for word.
          return run_on_host(*row, in, attrs, /*warn=*/false);
        }
        if (out) return std::move(*out);
        return run_on_host(*row, in, attrs);
      });
  if (low != Low::Host) note += note.empty() ? "" : "; ";
  if (low == Low::ViaF32) note += "f16/bf16 computed in f32";
  if (low == Low::Native) note += "f16/bf16 native";
  g_coverage[name] = Coverage{name, Coverage::Kind::Native, std::move(note)};
}

// ---- helpers --------------------------------------------------------------------------------

int code(DType d) {
  switch (d) {
    case DType::f32:
      return k::F32;
    case DType::f64:
      return k::F64;
    case DType::i32:
      return k::I32;
    case DType::i64:
      return k::I64;
    case DType::boolean:
      return k::B8;
    case DType::f16:
      return k::F16;
    case DType::bf16:
      return k::BF16;
    default:
      return -1;
  }
}

void launch_check(cudaError_t e, const char* what) {
  check(e, what);
  note_launch();
}

Tensor dev(const Value& v) { return to_device(v.tensor); }
Tensor dev_empty(DType dt, const Shape& s) { return Tensor::empty(dt, s, sem::Device::cuda()); }
bool all_tensors(const std::vector<Value>& in, size_t n) {
  if (in.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (!in[i].is_tensor()) return false;
  return true;
}

Tensor cast_dev(const Tensor& x, DType to) {
  Tensor d = dev(Value(x));
  if (d.dtype() == to) return d;
  Tensor out = dev_empty(to, d.shape());
  launch_check(k::cast(code(d.dtype()), code(to), d.raw(), out.raw(), d.numel(), stream()), "cast");
  return out;
}

// The row's shape rule on the inputs' types: the reference's user errors for invalid inputs,
// and the result type.
TypeP infer(const std::string& name, const std::vector<Value>& in, const Attrs& attrs) {
  const Primitive* p = sem::Registry::instance().find(name);
  std::vector<TypeP> types;
  for (const Value& v : in) types.push_back(v.kind == Value::Kind::None ? nullptr : v.type());
  return p->infer(types, attrs);
}

// A kernels.cu plan of operands broadcast over `out` (axes collapsed by the CPU backend's
// planner); nullopt when it needs more than k::kMaxDims axes.
std::optional<k::Strided> plan_of(const std::vector<const Shape*>& ins, const Shape& out) {
  cpu::BroadcastPlan bp = cpu::plan_broadcast(ins, out);
  if (bp.dims.size() > static_cast<size_t>(k::kMaxDims)) return std::nullopt;
  k::Strided s;
  s.rank = static_cast<int>(bp.dims.size());
  for (size_t d = 0; d < bp.dims.size(); ++d) {
    s.dims[d] = bp.dims[d];
    for (size_t j = 0; j < ins.size(); ++j) s.st[j][d] = bp.st[j][d];
  }
  return s;
}

// x with its axes permuted (result axis i is input axis perm[i]) on the device.
std::optional<Tensor> permute_dev(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t a : perm) out.push_back(x.shape()[static_cast<size_t>(a)]);
  if (out.size() > static_cast<size_t>(k::kMaxDims)) return std::nullopt;
  std::vector<int64_t> st = cpu::strides_of(x.shape());
  k::Strided s;
  s.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    s.dims[d] = out[d];
    s.st[0][d] = st[static_cast<size_t>(perm[d])];
  }
  if (s.rank == 0) {
    s.rank = 1;
    s.dims[0] = 1;
    s.st[0][0] = 0;
  }
  Tensor y = dev_empty(x.dtype(), out);
  launch_check(
      k::gather(static_cast<int>(dtype_size(x.dtype())), x.raw(), y.raw(), y.numel(), s, stream()),
      "permute");
  return y;
}

// [outer, len, inner] around axis a of shape s.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisView view_of(const Shape& s, int64_t a) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < a)
      v.outer *= s[i];
    else if (i == a)
      v.len = s[i];
    else
      v.inner *= s[i];
  }
  return v;
}

int64_t norm_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

// ---- elementwise ----------------------------------------------------------------------------

void register_elementwise() {
  const std::pair<const char*, int> unary[] = {
      {"neg", k::neg},       {"abs", k::abs_},        {"sign", k::sign},
      {"square", k::square}, {"relu", k::relu},       {"floor", k::floor_},
      {"ceil", k::ceil_},    {"round", k::round_},    {"exp", k::exp_},
      {"log", k::log_},      {"sqrt", k::sqrt_},      {"rsqrt", k::rsqrt},
      {"tanh", k::tanh_},    {"sigmoid", k::sigmoid}, {"gelu", k::gelu},
      {"sin", k::sin_},      {"cos", k::cos_},        {"erf", k::erf_},
      {"log1p", k::log1p_},  {"expm1", k::expm1_},    {"reciprocal", k::reciprocal}};
  for (auto [name, op] : unary) {
    set_native(
        name,
        [op = op](const std::vector<Value>& in, const Attrs&) -> std::optional<Value> {
          if (!all_tensors(in, 1) || !is_float(in[0].tensor.dtype())) return std::nullopt;
          // In place when the caller gave a device input up (the CPU backend's contract).
          const bool reuse =
              in[0].tensor.device().kind == sem::Device::Kind::cuda && in[0].tensor.unique();
          Tensor x = dev(in[0]);
          Tensor y = reuse ? x : dev_empty(x.dtype(), x.shape());
          launch_check(k::unary(op, code(x.dtype()), x.raw(), y.raw(), x.numel(), stream()),
                       "unary");
          return Value(y);
        },
        "f32, f64 (integers: host)");
  }
  const std::pair<const char*, int> binary[] = {{"add", k::add},
                                                {"sub", k::sub},
                                                {"mul", k::mul},
                                                {"div", k::div_},
                                                {"floordiv", k::floordiv},
                                                {"mod", k::mod},
                                                {"pow", k::pow_},
                                                {"maximum", k::maximum},
                                                {"minimum", k::minimum},
                                                {"eq", k::eq},
                                                {"ne", k::ne},
                                                {"lt", k::lt},
                                                {"le", k::le},
                                                {"gt", k::gt},
                                                {"ge", k::ge}};
  for (auto [name, op] : binary) {
    const std::string row = name;
    const bool compare = op >= k::eq;
    set_native(
        name,
        [op = op, row, compare](const std::vector<Value>& in,
                                const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 2)) return std::nullopt;
          const DType dt = in[0].tensor.dtype();
          if (!is_float(dt) || in[1].tensor.dtype() != dt) return std::nullopt;
          const TypeP t = infer(row, in, attrs);
          Tensor a = dev(in[0]), b = dev(in[1]);
          auto plan = plan_of({&a.shape(), &b.shape()}, t->shape);
          if (!plan) return std::nullopt;
          Tensor out = dev_empty(compare ? DType::boolean : dt, t->shape);
          launch_check(
              k::binary(op, code(dt), a.raw(), b.raw(), out.raw(), out.numel(), *plan, stream()),
              "binary");
          return Value(out);
        },
        "f32, f64 operands with broadcasting (integers: host)");
  }
  set_native(
      "where",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 3) || in[0].tensor.dtype() != DType::boolean) return std::nullopt;
        const TypeP t = infer("where", in, attrs);
        Tensor c = dev(in[0]), a = dev(in[1]), b = dev(in[2]);
        auto plan = plan_of({&c.shape(), &a.shape(), &b.shape()}, t->shape);
        if (!plan) return std::nullopt;
        Tensor out = dev_empty(t->dtype, t->shape);
        launch_check(
            k::where(static_cast<int>(dtype_size(t->dtype)), static_cast<const uint8_t*>(c.raw()),
                     a.raw(), b.raw(), out.raw(), out.numel(), *plan, stream()),
            "where");
        return Value(out);
      },
      "every dtype");
  set_native(
      "cast",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 1)) return std::nullopt;
        const TypeP t = infer("cast", in, attrs);
        const int from = code(in[0].tensor.dtype()), to = code(t->dtype);
        if (from < 0 || to < 0) return std::nullopt;
        Tensor x = dev(in[0]);
        if (x.dtype() == t->dtype) return Value(x);
        Tensor out = dev_empty(t->dtype, t->shape);
        launch_check(k::cast(from, to, x.raw(), out.raw(), x.numel(), stream()), "cast");
        return Value(out);
      },
      "f16 bf16 f32 f64 i32 i64 bool (to f16/bf16: nearest even, through f32)");
}

// ---- reductions -----------------------------------------------------------------------------

// The reduced axes (sorted, normalised) of a reduction's `axis` attribute; nullopt when out of
// range (the shape rule has raised already) or repeated.
std::optional<std::vector<int64_t>> reduced_axes(const Attrs& attrs, int64_t rank) {
  std::vector<int64_t> axes;
  if (attrs.is_none("axis")) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  const sem::Attr* a = attrs.find("axis");
  if (auto* i = std::get_if<int64_t>(a))
    axes.push_back(*i);
  else if (auto* v = std::get_if<std::vector<int64_t>>(a))
    axes = *v;
  else
    return std::nullopt;
  for (int64_t& x : axes) {
    x = norm_axis(x, rank);
    if (x < 0 || x >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// x arranged as [O, R, I] with the reduced axes as R (permuted first when they are not next to
// each other).
struct Arranged {
  Tensor x;
  int64_t O = 1, R = 1, I = 1;
};
std::optional<Arranged> arrange(const Tensor& x, const std::vector<int64_t>& axes) {
  Arranged r;
  const int64_t rank = x.rank();
  const bool contiguous =
      axes.empty() || axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (contiguous) {
    r.x = x;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t d = x.shape()[static_cast<size_t>(i)];
      if (!axes.empty() && i >= axes.front() && i <= axes.back())
        r.R *= d;
      else if (axes.empty() || i < axes.front())
        r.O *= d;
      else
        r.I *= d;
    }
    return r;
  }
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i);
  for (int64_t a : axes) perm.push_back(a);
  auto p = permute_dev(x, perm);
  if (!p) return std::nullopt;
  r.x = *p;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x.shape()[static_cast<size_t>(i)];
    (std::binary_search(axes.begin(), axes.end(), i) ? r.R : r.O) *= d;
  }
  return r;
}

void register_reduction() {
  const std::pair<const char*, int> ops[] = {{"sum", k::r_sum},
                                             {"mean", k::r_mean},
                                             {"prod", k::r_prod},
                                             {"max", k::r_max},
                                             {"min", k::r_min}};
  for (auto [name, op] : ops) {
    const std::string row = name;
    set_native(
        name,
        [row, op = op](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 1) || !is_float(in[0].tensor.dtype())) return std::nullopt;
          const TypeP t = infer(row, in, attrs);  // the reference's errors (empty max...)
          auto axes = reduced_axes(attrs, in[0].tensor.rank());
          if (!axes) return std::nullopt;
          auto a = arrange(dev(in[0]), *axes);
          if (!a) return std::nullopt;
          Tensor out = dev_empty(t->dtype, t->shape);
          if (a->O * a->I != out.numel()) return std::nullopt;  // never write past the result
          if (a->R == 0 && (op == k::r_sum || op == k::r_prod || op == k::r_mean)) {
            const double v = op == k::r_prod ? 1.0 : (op == k::r_mean ? std::nan("") : 0.0);
            launch_check(k::fill(code(t->dtype), out.raw(), out.numel(), v, stream()), "fill");
            return Value(out);
          }
          launch_check(
              k::reduce(op, code(t->dtype), a->x.raw(), out.raw(), a->O, a->R, a->I, stream()),
              "reduce");
          return Value(out);
        },
        "f32, f64 over any axes (integers, bool: host)");
  }
  for (bool want_max : {true, false}) {
    const std::string row = want_max ? "argmax" : "argmin";
    set_native(
        row,
        [row, want_max](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 1) || !is_float(in[0].tensor.dtype())) return std::nullopt;
          const TypeP t = infer(row, in, attrs);
          Tensor x = dev(in[0]);
          int64_t O = 1, R = x.numel(), I = 1;
          if (!attrs.is_none("axis")) {
            const int64_t a = norm_axis(attrs.get_int("axis"), x.rank());
            const AxisView v = view_of(x.shape(), a);
            O = v.outer, R = v.len, I = v.inner;
          }
          Tensor out = dev_empty(DType::i32, t->shape);
          if (O * I != out.numel()) return std::nullopt;
          launch_check(k::arg_reduce(want_max, code(x.dtype()), x.raw(),
                                     static_cast<int32_t*>(out.raw()), O, R, I, stream()),
                       "arg_reduce");
          return Value(out);
        },
        "f32, f64 (integers: host)");
  }
}

// ---- matmul (cuBLAS) ------------------------------------------------------------------------

// Row-major C[m,n] = op(A)[m,k] op(B)[k,n] is column-major C^T = op(B)^T op(A)^T: cuBLAS
// multiplies the operands as they lie, B first; a transposed operand (matmul's transpose_a/_b)
// is stored [k,m] (A) or [n,k] (B) and read with CUBLAS_OP_T, as gemm_t below does.
void gemm_batched(DType dt, bool ta, bool tb, const void* a, const void* b, void* c, int64_t m,
                  int64_t n, int64_t kk, int64_t batch, int64_t sa, int64_t sb, int64_t sc) {
  cublasHandle_t h = context().blas;
  note_launch();
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(kk);
  const int lda = ta ? M : K, ldb = tb ? K : N;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (dt == DType::f16 || dt == DType::bf16) {
    // f16/bf16 storage, f32 accumulation, the result rounded once (the host's rule).
    const cudaDataType_t ty = dt == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
    const float one = 1, zero = 0;
    check(cublas().gemm_strided_batched_ex(h, ob, oa, N, M, K, &one, b, ty, ldb, sb, a, ty, lda, sa,
                                           &zero, c, ty, N, sc, static_cast<int>(batch),
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  } else if (dt == DType::f32) {
    const float one = 1, zero = 0;
    check(cublas().sgemm_strided_batched(h, ob, oa, N, M, K, &one, static_cast<const float*>(b),
                                         ldb, sb, static_cast<const float*>(a), lda, sa, &zero,
                                         static_cast<float*>(c), N, sc, static_cast<int>(batch)),
          "cublasSgemmStridedBatched");
  } else {
    const double one = 1, zero = 0;
    check(cublas().dgemm_strided_batched(h, ob, oa, N, M, K, &one, static_cast<const double*>(b),
                                         ldb, sb, static_cast<const double*>(a), lda, sa, &zero,
                                         static_cast<double*>(c), N, sc, static_cast<int>(batch)),
          "cublasDgemmStridedBatched");
  }
}

// C = op(A) op(B) for row-major matrices with transposes (the conv gradients).
void gemm_t(DType dt, bool ta, bool tb, const void* a, const void* b, void* c, int64_t m, int64_t n,
            int64_t kk) {
  cublasHandle_t h = context().blas;
  note_launch();
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(kk);
  const int lda = ta ? M : K, ldb = tb ? K : N;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (dt == DType::f32) {
    const float one = 1, zero = 0;
    check(cublas().sgemm(h, ob, oa, N, M, K, &one, static_cast<const float*>(b), ldb,
                      static_cast<const float*>(a), lda, &zero, static_cast<float*>(c), N),
          "cublasSgemm");
  } else {
    const double one = 1, zero = 0;
    check(cublas().dgemm(h, ob, oa, N, M, K, &one, static_cast<const double*>(b), ldb,
                      static_cast<const double*>(a), lda, &zero, static_cast<double*>(c), N),
          "cublasDgemm");
  }
}

constexpr int64_t kIntMax = 2147483647;

void register_matmul() {
  set_native(
      "matmul",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 2)) return std::nullopt;
        const DType dt = in[0].tensor.dtype();
        if (!is_float(dt) || in[1].tensor.dtype() != dt) return std::nullopt;
        const TypeP t = infer("matmul", in, attrs);
        if (is_low(dt) && t->dtype != dt) return std::nullopt;
        const sem::MatmulFlags tr = sem::matmul_flags(attrs);
        Tensor a = dev(in[0]), b = dev(in[1]);
        Shape as = a.shape(), bs = b.shape();
        if (as.size() == 1) as.insert(as.begin(), 1);
        if (bs.size() == 1) bs.push_back(1);
        // op(A) is [m, kk], op(B) [kk, n] (infer above checked the flags' ranks).
        const int64_t m = tr.a ? as.back() : as[as.size() - 2];
        const int64_t kk = tr.a ? as[as.size() - 2] : as.back();
        const int64_t n = tr.b ? bs[bs.size() - 2] : bs.back();
        const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
        const int64_t na = cpu::numel_of(ab), nb = cpu::numel_of(bb);
        // Batches: equal, or one side a single matrix reused (stride 0); other broadcasts go
        // to the host.
        int64_t batch;
        if (na == nb && (ab == bb || na == 1))
          batch = na;
        else if (nb == 1)
          batch = na;
        else if (na == 1)
          batch = nb;
        else
          return std::nullopt;
        if (m > kIntMax || n > kIntMax || kk > kIntMax || batch > kIntMax) return std::nullopt;
        Tensor out = dev_empty(dt, t->shape);
        if (out.numel() == 0) return Value(out);
        if (kk == 0) {
          launch_check(k::fill(code(dt), out.raw(), out.numel(), 0.0, stream()), "fill");
          return Value(out);
        }
        gemm_batched(dt, tr.a, tr.b, a.raw(), b.raw(), out.raw(), m, n, kk, batch,
                     na == 1 ? 0 : m * kk, nb == 1 ? 0 : kk * n, m * n);
        return Value(out);
      },
      "f32, f64 through cuBLAS, f16/bf16 through cublasGemmStridedBatchedEx with f32 "
      "accumulation, transpose_a/_b as cuBLAS's operations (batches equal or one side "
      "unbatched; integers: host)");
}

// ---- nn -------------------------------------------------------------------------------------

// layer_norm's rows: the last ndim axes are one row of `cols` values.
std::pair<int64_t, int64_t> norm_rows(const Tensor& x, const Attrs& attrs) {
  int64_t cols = 1;
  for (int64_t d = x.rank() - attrs.get_int("ndim"); d < x.rank(); ++d)
    cols *= x.shape()[static_cast<size_t>(d)];
  return {cols ? x.numel() / cols : 0, cols};
}

void register_nn() {
  for (bool log : {false, true}) {
    const std::string row = log ? "log_softmax" : "softmax";
    set_native(
        row,
        [row, log](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 1) || !is_float(in[0].tensor.dtype())) return std::nullopt;
          infer(row, in, attrs);
          Tensor x = dev(in[0]);
          const AxisView v = view_of(x.shape(), norm_axis(attrs.get_int("axis"), x.rank()));
          Tensor y = dev_empty(x.dtype(), x.shape());
          launch_check(
              k::softmax(log, code(x.dtype()), x.raw(), y.raw(), v.outer, v.len, v.inner, stream()),
              "softmax");
          return Value(y);
        },
        "f32, f64 along any axis");
  }
  set_native(
      "cross_entropy",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 2) || !is_float(in[0].tensor.dtype())) return std::nullopt;
        const DType ldt = in[1].tensor.dtype();
        if (ldt != DType::i32 && ldt != DType::i64) return std::nullopt;  // soft labels: host
        const TypeP t = infer("cross_entropy", in, attrs);
        const std::string& red = attrs.get_string("reduction");
        Tensor x = dev(in[0]), labels = dev(in[1]);
        const AxisView v = view_of(x.shape(), x.rank() >= 2 ? 1 : 0);
        Shape lshape = x.shape();
        lshape.erase(lshape.begin() + (x.rank() >= 2 ? 1 : 0));
        Tensor loss = dev_empty(x.dtype(), lshape);
        Tensor err = dev_empty(DType::i32, {});
        SPORA_CUDA_CHECK(cudaMemsetAsync(err.raw(), 0, sizeof(int), stream()));
        launch_check(
            k::cross_entropy(code(x.dtype()), code(ldt), x.raw(), labels.raw(), loss.raw(),
                             static_cast<int*>(err.raw()), v.outer, v.len, v.inner, stream()),
            "cross_entropy");
        if (capturing()) {
          defer_check(err);  // read after each replay: a bad label reruns the call uncaptured
        } else {
          int bad = 0;
          copy_to_host(&bad, err.raw(), sizeof(int));
          if (bad) return std::nullopt;  // the reference raises its label error
        }
        if (red == "none") return Value(loss);
        Tensor out = dev_empty(t->dtype, {});
        const int64_t n = loss.numel();
        if (n == 0) {
          launch_check(
              k::fill(code(t->dtype), out.raw(), 1, red == "sum" ? 0.0 : std::nan(""), stream()),
              "fill");
        } else {
          launch_check(k::reduce(red == "sum" ? k::r_sum : k::r_mean, code(t->dtype), loss.raw(),
                                 out.raw(), 1, n, 1, stream()),
                       "reduce");
        }
        return Value(out);
      },
      "f32, f64 logits with i32/i64 class labels (soft labels: host)");
  set_native(
      "layer_norm",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (in.empty() || !in[0].is_tensor() || !is_float(in[0].tensor.dtype()))
          return std::nullopt;
        infer("layer_norm", in, attrs);
        Tensor x = dev(in[0]);
        const bool has_g = in.size() > 1 && in[1].is_tensor(),
                   has_b = in.size() > 2 && in[2].is_tensor();
        Tensor g = has_g ? dev(in[1]) : Tensor(), b = has_b ? dev(in[2]) : Tensor();
        const auto [rows, cols] = norm_rows(x, attrs);
        Tensor y = dev_empty(x.dtype(), x.shape());
        launch_check(k::layer_norm(code(x.dtype()), x.raw(), has_g ? g.raw() : nullptr,
                                   has_b ? b.raw() : nullptr, y.raw(), rows, cols,
                                   attrs.get_float("eps"), stream()),
                     "layer_norm");
        return Value(y);
      },
      "f32, f64");
  set_native(
      "layer_norm_grad",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (in.size() != 2 || !in[0].is_tensor() || !in[1].is_tensor() ||
            !is_float(in[0].tensor.dtype()))
          return std::nullopt;
        infer("layer_norm_grad", in, attrs);
        Tensor x = dev(in[0]), g = dev(in[1]);
        const auto [rows, cols] = norm_rows(x, attrs);
        Tensor dx = dev_empty(x.dtype(), x.shape());
        launch_check(k::layer_norm_grad(code(x.dtype()), x.raw(), g.raw(), dx.raw(), rows, cols,
                                        attrs.get_float("eps"), stream()),
                     "layer_norm_grad");
        return Value(dx);
      },
      "f32, f64");
}

// ---- conv2d (im2col + cuBLAS) ---------------------------------------------------------------

std::pair<int64_t, int64_t> pair_attr(const Attrs& attrs, const char* name) {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  if (v.size() == 1) return {v[0], v[0]};
  return {v.at(0), v.at(1)};
}

struct Geom {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw;
};
Geom geom(const Shape& x, const Shape& w, const Shape& out, const Attrs& attrs) {
  auto [sh, sw] = pair_attr(attrs, "stride");
  auto [ph, pw] = pair_attr(attrs, "padding");
  auto [dh, dw] = pair_attr(attrs, "dilation");
  return Geom{x[0], x[1], x[2], x[3], w[0], w[2], w[3], out[2], out[3], sh, sw, ph, pw, dh, dw};
}

Tensor im2col(const Tensor& x, const Geom& g) {
  Tensor col = dev_empty(x.dtype(), {g.C * g.KH * g.KW, g.N * g.OH * g.OW});
  launch_check(k::im2col(code(x.dtype()), x.raw(), col.raw(), g.N, g.C, g.H, g.W, g.KH, g.KW, g.OH,
                         g.OW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, stream()),
               "im2col");
  return col;
}

void register_conv() {
  // conv2d: Y[O, (n, oh, ow)] = W[O, C kh kw] col; then to NCHW and + bias.
  set_native(
      "conv2d",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 2) || !is_float(in[0].tensor.dtype()) || attrs.get_int("groups") != 1)
          return std::nullopt;
        const TypeP t = infer("conv2d", in, attrs);
        Tensor x = dev(in[0]), w = dev(in[1]);
        const Geom g = geom(x.shape(), w.shape(), t->shape, attrs);
        Tensor out = dev_empty(x.dtype(), t->shape);
        if (out.numel() == 0) return Value(out);
        const int64_t K = g.C * g.KH * g.KW, cols = g.N * g.OH * g.OW;
        Tensor ym = dev_empty(x.dtype(), {g.O, cols});
        if (K == 0) {
          launch_check(k::fill(code(x.dtype()), ym.raw(), ym.numel(), 0.0, stream()), "fill");
        } else {
          Tensor col = im2col(x, g);
          gemm_t(x.dtype(), false, false, w.raw(), col.raw(), ym.raw(), g.O, cols, K);
        }
        // [O, N, OH*OW] -> [N, O, OH*OW]
        auto y = permute_dev(ym.reshaped({g.O, g.N, g.OH * g.OW}), {1, 0, 2});
        if (!y) return std::nullopt;
        out = y->reshaped(t->shape);
        if (in.size() > 2 && in[2].is_tensor()) {
          Tensor b = dev(in[2]).reshaped({1, g.O, 1, 1});
          auto plan = plan_of({&out.shape(), &b.shape()}, out.shape());
          Tensor sum = dev_empty(x.dtype(), out.shape());
          launch_check(k::binary(k::add, code(x.dtype()), out.raw(), b.raw(), sum.raw(),
                                 sum.numel(), *plan, stream()),
                       "bias");
          out = sum;
        }
        return Value(out);
      },
      "f32, f64, groups=1 (grouped: host)");
  // conv2d_input_grad(g, w): col = W^T G (G as [O, (n, oh, ow)]), then col2im.
  set_native(
      "conv2d_input_grad",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 2) || !is_float(in[0].tensor.dtype()) || attrs.get_int("groups") != 1)
          return std::nullopt;
        const TypeP t = infer("conv2d_input_grad", in, attrs);
        Tensor gr = dev(in[0]), w = dev(in[1]);
        const Geom g = geom(t->shape, w.shape(), gr.shape(), attrs);
        Tensor dx = dev_empty(gr.dtype(), t->shape);
        if (dx.numel() == 0) return Value(dx);
        const int64_t K = g.C * g.KH * g.KW, cols = g.N * g.OH * g.OW;
        auto gm = permute_dev(gr.reshaped({g.N, g.O, g.OH * g.OW}), {1, 0, 2});  // [O, N, OH*OW]
        if (!gm) return std::nullopt;
        Tensor col = dev_empty(gr.dtype(), {K, cols});
        if (g.O == 0 || cols == 0)
          launch_check(k::fill(code(gr.dtype()), col.raw(), col.numel(), 0.0, stream()), "fill");
        else
          gemm_t(gr.dtype(), true, false, w.raw(), gm->raw(), col.raw(), K, cols, g.O);
        launch_check(k::col2im(code(gr.dtype()), col.raw(), dx.raw(), g.N, g.C, g.H, g.W, g.KH,
                               g.KW, g.OH, g.OW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, stream()),
                     "col2im");
        return Value(dx);
      },
      "f32, f64, groups=1 (grouped: host)");
  // conv2d_weight_grad(x, g): dW[O, C kh kw] = G [O, cols] col^T.
  set_native(
      "conv2d_weight_grad",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 2) || !is_float(in[0].tensor.dtype()) || attrs.get_int("groups") != 1)
          return std::nullopt;
        const TypeP t = infer("conv2d_weight_grad", in, attrs);
        Tensor x = dev(in[0]), gr = dev(in[1]);
        const Geom g = geom(x.shape(), t->shape, gr.shape(), attrs);
        Tensor dw = dev_empty(x.dtype(), t->shape);
        if (dw.numel() == 0) return Value(dw);
        const int64_t K = g.C * g.KH * g.KW, cols = g.N * g.OH * g.OW;
        if (cols == 0) {
          launch_check(k::fill(code(x.dtype()), dw.raw(), dw.numel(), 0.0, stream()), "fill");
          return Value(dw);
        }
        auto gm = permute_dev(gr.reshaped({g.N, g.O, g.OH * g.OW}), {1, 0, 2});
        if (!gm) return std::nullopt;
        Tensor col = im2col(x, g);
        gemm_t(x.dtype(), false, true, gm->raw(), col.raw(), dw.raw(), g.O, K, cols);
        return Value(dw);
      },
      "f32, f64, groups=1 (grouped: host)");
}

// ---- shape and creation ---------------------------------------------------------------------

void register_shape() {
  // Views: the shape rule gives the result; the storage is shared (no copy).
  for (const char* name :
       {"reshape", "flatten", "squeeze", "unsqueeze", "expand_dims", "identity", "stop_gradient",
        "shard_hint", "stage_boundary"}) {
    const std::string row = name;
    set_native(
        name,
        [row](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 1)) return std::nullopt;
          const TypeP t = infer(row, in, attrs);
          return Value(dev(in[0]).reshaped(t->shape));
        },
        "a view (no copy)");
  }
  for (const char* name : {"transpose", "permute"}) {
    const std::string row = name;
    set_native(
        name,
        [row](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
          if (!all_tensors(in, 1)) return std::nullopt;
          infer(row, in, attrs);
          const int64_t r = in[0].tensor.rank();
          std::vector<int64_t> perm;
          if (attrs.is_none("axes")) {
            for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
          } else {
            for (int64_t a : attrs.get_ints("axes")) perm.push_back(norm_axis(a, r));
          }
          auto y = permute_dev(dev(in[0]), perm);
          if (!y) return std::nullopt;
          return Value(*y);
        },
        "every dtype, rank <= 8");
  }
  set_native(
      "broadcast_to",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 1)) return std::nullopt;
        const TypeP t = infer("broadcast_to", in, attrs);
        Tensor x = dev(in[0]);
        auto plan = plan_of({&x.shape()}, t->shape);
        if (!plan) return std::nullopt;
        Tensor y = dev_empty(x.dtype(), t->shape);
        launch_check(k::gather(static_cast<int>(dtype_size(x.dtype())), x.raw(), y.raw(), y.numel(),
                               *plan, stream()),
                     "broadcast_to");
        return Value(y);
      },
      "every dtype, rank <= 8");
}

void register_one_hot() {
  // The cross-entropy gradient's one-hot targets: on the device, so a training step has no
  // host fallback (and can be captured as a CUDA graph).
  set_native(
      "one_hot",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        if (!all_tensors(in, 1)) return std::nullopt;
        const TypeP t = infer("one_hot", in, attrs);
        const DType ldt = in[0].tensor.dtype();
        if (code(t->dtype) < 0 || (ldt != DType::i32 && ldt != DType::i64)) return std::nullopt;
        Tensor labels = dev(in[0]);
        Tensor out = dev_empty(t->dtype, t->shape);
        Tensor err = dev_empty(DType::i32, {});
        SPORA_CUDA_CHECK(cudaMemsetAsync(err.raw(), 0, sizeof(int), stream()));
        launch_check(k::one_hot(code(ldt), code(t->dtype), labels.raw(), out.raw(),
                                static_cast<int*>(err.raw()), labels.numel(),
                                attrs.get_int("num_classes"), stream()),
                     "one_hot");
        if (capturing()) {
          defer_check(err);
        } else {
          int bad = 0;
          copy_to_host(&bad, err.raw(), sizeof(int));
          if (bad) return std::nullopt;  // the reference raises its label error
        }
        return Value(out);
      },
      "i32/i64 labels, every result dtype");
}

void register_creation() {
  for (auto [name, value] : {std::pair<const char*, double>{"zeros", 0.0}, {"ones", 1.0}}) {
    const std::string row = name;
    set_native(
        name,
        [row, value = value](const std::vector<Value>& in,
                             const Attrs& attrs) -> std::optional<Value> {
          const TypeP t = infer(row, in, attrs);
          if (code(t->dtype) < 0) return std::nullopt;
          Tensor y = dev_empty(t->dtype, t->shape);
          launch_check(k::fill(code(t->dtype), y.raw(), y.numel(), value, stream()), "fill");
          return Value(y);
        },
        "f32 f64 i32 i64 bool");
  }
  set_native(
      "full",
      [](const std::vector<Value>& in, const Attrs& attrs) -> std::optional<Value> {
        const TypeP t = infer("full", in, attrs);
        // Integers and bool take the host's conversion rule (truncation, clamping): host.
        if (!is_float(t->dtype)) return std::nullopt;
        Tensor y = dev_empty(t->dtype, t->shape);
        launch_check(
            k::fill(code(t->dtype), y.raw(), y.numel(), attrs.get_float("value"), stream()),
            "fill");
        return Value(y);
      },
      "f32, f64");
}

std::once_flag g_registered;

}  // namespace

void register_kernels() {
  std::call_once(g_registered, [] {
    register_elementwise();
    register_reduction();
    register_matmul();
    register_nn();
    register_conv();
    register_shape();
    register_one_hot();
    register_creation();
    // Every other row with a reference kernel: plumbing runs as it is, the rest on the host.
    for (const Primitive* cp : sem::Registry::instance().all()) {
      if (!cp->eval || g_coverage.count(cp->name)) continue;
      Primitive* p = sem::Registry::instance().find_mutable(cp->name);
      if (kPlumbing.count(p->name)) {
        p->facets[sem::kCudaKernelFacet] = p->eval;
        g_coverage[p->name] =
            Coverage{p->name, Coverage::Kind::Native, "plumbing (no tensor data)"};
        continue;
      }
      const Primitive* row = p;
      p->facets[sem::kCudaKernelFacet] =
          RefKernel([row](const std::vector<Value>& in, const Attrs& attrs) {
            return run_on_host(*row, in, attrs);
          });
      g_coverage[p->name] = Coverage{p->name, Coverage::Kind::Host, "host fallback"};
    }
  });
}

std::vector<Coverage> coverage() {
  std::vector<Coverage> out;
  for (auto& [name, c] : g_coverage) out.push_back(c);
  return out;
}

std::vector<std::string> fallbacks_used() {
  std::lock_guard<std::mutex> lock(g_mu);
  return {g_fallbacks_used.begin(), g_fallbacks_used.end()};
}

}  // namespace spora::cuda
