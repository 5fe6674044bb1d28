// matmul with NumPy semantics:
//   - both operands have rank >= 1 and one dtype (not bool);
//   - a 1-D left operand [k] is a row [1,k] and a 1-D right operand [k] a column [k,1]; the
//     added axis is removed from the result ([k] @ [k] is a scalar);
//   - the trailing two axes multiply ([m,k] @ [k,n] -> [m,n]); the leading (batch) axes
//     broadcast: [2,1,m,k] @ [3,k,n] -> [2,3,m,n];
//   - transpose_a / transpose_b (absent: false) swap the last two axes of that operand first
//     (op(a) @ op(b), as BLAS's transa/transb): reverse mode emits them, so no transposed copy
//     of an operand is made; a flagged operand has rank 2 or more.
// Any mismatch is `matmul shapes do not match: f32[2,3] @ f32[4,5]` (`f32[3,2]^T` for a flagged
// operand). The kernel accumulates float products in double (integers in wrapping i64) and
// rounds once.
#include <type_traits>

#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/amp.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

using sem::MatmulFlags;
using sem::MatmulShape;

// The promoted shapes of op(a) @ op(b) (semantics/shape_rules.h); UserError when they do not
// fit.
MatmulShape matmul_shape(const Type& a, const Type& b, MatmulFlags t) {
  const std::string as = a.str() + (t.a ? "^T" : ""), bs = b.str() + (t.b ? "^T" : "");
  if (a.dtype != b.dtype)
    user_error("matmul operand types do not match: " + a.str() + " and " + b.str());
  if (a.dtype == DType::boolean)
    user_error("matmul does not accept bool operands: " + as + " @ " + bs);
  if ((t.a && a.rank() < 2) || (t.b && b.rank() < 2))
    user_error("matmul's transpose_" + std::string(t.a && a.rank() < 2 ? "a" : "b") +
               " needs an operand of rank 2 or more: " + as + " @ " + bs);
  std::optional<MatmulShape> s = sem::matmul_shape(a.shape, b.shape, t);
  if (!s) user_error("matmul shapes do not match: " + as + " @ " + bs);
  return *s;
}

// x with its last two axes swapped, copied (the reference kernel's flagged operands).
Tensor transposed_copy(const Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.rank(); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return permuted(x, perm);
}

template <class T>
void matmul_kernel(const Tensor& a, const Tensor& b, const MatmulShape& s, Tensor& out) {
  Shape ba(s.a3.begin(), s.a3.end() - 2), bb(s.b3.begin(), s.b3.end() - 2);
  std::vector<int64_t> map_a = broadcast_index_map(ba, s.batch);
  std::vector<int64_t> map_b = broadcast_index_map(bb, s.batch);
  int64_t nbatch = numel_of(s.batch);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  int64_t m = s.m, k = s.k, n = s.n;
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  std::vector<Acc> row(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    const T* A = pa + map_a[bi] * m * k;
    const T* B = pb + map_b[bi] * k * n;
    T* O = po + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), Acc(0));
      for (int64_t p = 0; p < k; ++p) {
        if constexpr (std::is_floating_point_v<T>) {
          double av = A[i * k + p];
          for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<double>(B[p * n + j]);
        } else {
          uint64_t av = static_cast<uint64_t>(static_cast<int64_t>(A[i * k + p]));
          for (int64_t j = 0; j < n; ++j)
            row[j] += av * static_cast<uint64_t>(static_cast<int64_t>(B[p * n + j]));
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (std::is_floating_point_v<T>)
          O[i * n + j] = static_cast<T>(row[j]);
        else
          O[i * n + j] = static_cast<T>(static_cast<int64_t>(row[j]));
      }
    }
  }
}

// ---- derivative rules -----------------------------------------------------------------------
//
// With 1-D operands promoted (A = a as [..., m, k], B = b as [..., k, n]) and dout reshaped to
// D = [batch..., m, n]:  dA = D @ B^T,  dB = A^T @ D, each summed over the batch axes its
// operand was broadcast along and reshaped back. jvp: ta @ b + a @ tb.

using ad::Emitter;
using ad::Node;
using ad::Nodes;

// A flagged product, C = op(A) op(B), gives each cotangent as one flagged product in A's (B's)
// own layout:
//   dA = D op(B)^T            (A as it is)     dA = op(B) D^T   (transpose_a)
//   dB = op(A)^T D            (B as it is)     dB = D^T op(A)   (transpose_b)
// An unflagged product's cotangents are written with transposed operands (permute), the form
// the strategy search and the simulator see; the fusion pass (semantics/passes/fusion.h) folds
// such a permute into the flags for the kernels. Eager mode, which runs each node as it is
// emitted (Emitter::runs_at_once), gets the flagged products at once.

// matmul(x, y) with the flags that are set.
Node* flagged_matmul(Emitter& e, Node* x, Node* y, bool ta, bool tb) {
  sem::Attrs attrs;
  if (ta) attrs.set("transpose_a", true);
  if (tb) attrs.set("transpose_b", true);
  return e.op("matmul", {x, y}, std::move(attrs));
}

Nodes matmul_vjp(Emitter& e, const Node& node, const Nodes& in, Node*, Node* dout) {
  Node *a = in[0], *b = in[1];
  if (!ad::diff(a)) return {nullptr, nullptr};
  const MatmulFlags t = sem::matmul_flags(node.attrs);
  MatmulShape s = matmul_shape(*a->type, *b->type, t);
  Shape d_shape = s.batch;
  d_shape.push_back(s.m);
  d_shape.push_back(s.n);
  // The operands' promoted shapes as they are stored.
  const Shape sa = t.a ? sem::swap_last2(s.a3) : s.a3, sb = t.b ? sem::swap_last2(s.b3) : s.b3;
  Node* D = e.reshape(dout, d_shape);
  Node* A = e.reshape(a, sa);
  Node* B = e.reshape(b, sb);
  Node* dA = nullptr;
  Node* dB = nullptr;
  const bool unflagged = !t.a && !t.b && !e.runs_at_once();
  // B without batch axes of its own against a batched A stored as [batch..., m, k] (a layer's
  // weight applied to a batch of sequences): its cotangent, summed over every batch axis, is one
  // product over all the batch's rows, A as [rows, k] and D as [rows, n], rather than one
  // product per batch entry and their sum (which writes and reads a [batch..., k, n]
  // intermediate and contracts only m rows per product).
  const int64_t batch = numel_of(s.batch);
  const bool fold_b = e.wants(1) && !t.a && batch > 1 && numel_of(s.b3) == s.k * s.n;
  if (fold_b) {
    Node* Af = e.reshape(A, {batch * s.m, s.k});
    Node* Df = e.reshape(D, {batch * s.m, s.n});
    Node* g = unflagged ? e.op("matmul", {ad::swap_last2(e, Af), Df})
              : t.b     ? flagged_matmul(e, Df, Af, true, false)
                        : flagged_matmul(e, Af, Df, true, false);
    dB = e.reshape(g, ad::shape_of(b));
  }
  if (unflagged) {
    if (e.wants(0)) dA = e.op("matmul", {D, ad::swap_last2(e, B)});
    if (e.wants(1) && !fold_b) dB = e.op("matmul", {ad::swap_last2(e, A), D});
  } else {
    if (e.wants(0))
      dA = t.a ? flagged_matmul(e, B, D, t.b, true) : flagged_matmul(e, D, B, false, !t.b);
    if (e.wants(1) && !fold_b)
      dB = t.b ? flagged_matmul(e, D, A, true, t.a) : flagged_matmul(e, A, D, !t.a, false);
  }
  if (dB && !fold_b) dB = e.reshape(e.unbroadcast(dB, sb), ad::shape_of(b));
  return {dA ? e.reshape(e.unbroadcast(dA, sa), ad::shape_of(a)) : nullptr, dB};
}

Node* matmul_jvp(Emitter& e, const Node& node, const Nodes& in, Node*, const Nodes& ts) {
  if (!ad::diff(in[0])) return nullptr;
  Node* da = ts[0] ? e.op("matmul", {ts[0], in[1]}, node.attrs) : nullptr;
  Node* db = ts[1] ? e.op("matmul", {in[0], ts[1]}, node.attrs) : nullptr;
  return ad::add_opt(e, da, db);
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void matmul_costs(sem::Registry& r) {
  set_cost(r, "matmul", [](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
    // out holds batch x m x n elements (promoted axes removed), each a dot product over k.
    // The flags transpose the GEMM's operands, not its dimensions.
    const sem::MatmulFlags t = sem::matmul_flags(attrs);
    const auto dim = [](const TypeP& x, int from_end) {
      return x->rank() >= from_end ? static_cast<double>(x->shape[x->rank() - from_end]) : 1.0;
    };
    const double k = in[0]->rank() > 0 ? dim(in[0], t.a ? 2 : 1) : 0;
    OpCost c{2 * k * elements(out), input_bytes(in) + type_bytes(out), "matmul"};
    c.gemm = {in[0]->rank() >= 2 ? dim(in[0], t.a ? 1 : 2) : 1,
              in[1]->rank() >= 2 ? dim(in[1], t.b ? 2 : 1) : 1, k};
    // A batched left operand times one matrix runs as one GEMM with the batches stacked as rows
    // (backends/cpu/matmul.cpp), e.g. f32[8,128,256] @ f32[256,256] as 1024 x 256 x 256.
    const double rows = elements(in[0]) / std::max(k, 1.0);
    if (!t.a && in[0]->rank() > 2 && in[1]->rank() <= 2 && rows > 0) c.gemm[0] = rows;
    return c;
  });
}

// matmul with NumPy semantics: batch dims broadcast, 1-D operands promoted; a flagged operand's
// last two dims swapped.
Spec matmul_spec(const Types& in, const TypeP& out, const Attrs& attrs) {
  if (!is_tensor(in, 0) || !is_tensor(in, 1) || !out || !out->is_tensor()) return std::nullopt;
  const TypeP &a = in[0], &b = in[1];
  const int ra = rank(a), rb = rank(b);
  DimSpec s;
  const int k = s.add("k", true);
  const int m = ra >= 2 ? s.add("m") : -1;
  const int n = rb >= 2 ? s.add("n") : -1;
  const int batch = rank(out) - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
  std::vector<int> out_batch;
  for (int d = 0; d < batch; ++d) out_batch.push_back(s.add("b" + std::to_string(d)));
  auto batch_map = [&](const TypeP& t, int core) {
    std::vector<int> map;
    const int r = rank(t) - core, off = batch - r;
    for (int d = 0; d < r; ++d) {
      const int od = d + off;
      map.push_back(od >= 0 &&
                            t->shape[static_cast<size_t>(d)] == out->shape[static_cast<size_t>(od)]
                        ? out_batch[static_cast<size_t>(od)]
                        : -1);
    }
    return map;
  };
  std::vector<int> am = ra >= 2 ? batch_map(a, 2) : std::vector<int>{};
  if (ra >= 2) am.push_back(m);
  am.push_back(k);
  std::vector<int> bm = rb >= 2 ? batch_map(b, 2) : std::vector<int>{};
  bm.push_back(k);
  if (rb >= 2) bm.push_back(n);
  const sem::MatmulFlags t = sem::matmul_flags(attrs);
  if (t.a && am.size() >= 2) std::swap(am[am.size() - 1], am[am.size() - 2]);
  if (t.b && bm.size() >= 2) std::swap(bm[bm.size() - 1], bm[bm.size() - 2]);
  s.inputs = {am, bm};
  s.output = out_batch;
  if (m >= 0) s.output.push_back(m);
  if (n >= 0) s.output.push_back(n);
  return s;
}

void matmul_rules(sem::Registry& r) {
  set_sharding(r, "matmul", dim_rule(linear(matmul_spec, kOne, {0, 1})));
}

}  // namespace facets

}  // namespace

void register_matmul(sem::Registry& r) {
  Primitive p;
  p.name = "matmul";
  p.facets[passes::kFusionFacet] = passes::FusionKind::OutputFusable;
  p.family = "matmul";
  p.doc = "matrix product a @ b (NumPy: 1-D operands, broadcast batch axes; transpose_a/_b)";
  p.params = {input("a"), input("b"), flag_attr("transpose_a"), flag_attr("transpose_b")};
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 2, 2, "matmul");
    const Type& a = tensor_input(in, 0, "matmul");
    const Type& b = tensor_input(in, 1, "matmul");
    return Type::tensor(a.dtype, matmul_shape(a, b, sem::matmul_flags(attrs)).out);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const MatmulFlags t = sem::matmul_flags(attrs);
    matmul_shape(*in.at(0).tensor.type(), *in.at(1).tensor.type(), t);  // the user's errors
    const Tensor a = t.a ? transposed_copy(in.at(0).tensor) : in.at(0).tensor;
    const Tensor b = t.b ? transposed_copy(in.at(1).tensor) : in.at(1).tensor;
    MatmulShape s = matmul_shape(*a.type(), *b.type(), {});
    Tensor out = Tensor::empty(a.dtype(), s.out);
    dispatch(a.dtype(), "matmul", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, uint8_t>)
        internal_error("matmul on bool");
      else
        matmul_kernel<T>(a, b, s, out);
    });
    return out;
  };
  ad::set_rules(p, matmul_vjp, matmul_jvp);
  p.facets[sem::kAmpFacet] = sem::AmpClass::Low;  // autocast (semantics/amp.h)
  r.add(std::move(p));
  // Cost and sharding rules of the rows above.
  facets::matmul_costs(r);
  facets::matmul_rules(r);
}

}  // namespace spora::ops
