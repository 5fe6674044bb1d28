#include "semantics/passes/kernel_stats.h"

#include <set>
#include <string_view>

#include "semantics/passes/fusion.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::passes {

namespace {

double tensor_bytes(const sem::TypeP& t) {
  if (!t) return 0;
  if (t->kind == sem::Type::Kind::Tuple) {
    double b = 0;
    for (const sem::TypeP& e : t->elems) b += tensor_bytes(e);
    return b;
  }
  if (!t->is_tensor()) return 0;
  double n = 1;
  for (int64_t d : t->shape) n *= static_cast<double>(d < 0 ? 0 : d);
  return n * static_cast<double>(spora::dtype_size(t->dtype));
}

// Primitives the CPU backend runs without touching data (a view or a handle).
bool moves_no_data(std::string_view name) {
  static const std::set<std::string_view> kNone = {
      "reshape",       "flatten",    "squeeze",        "unsqueeze",  "expand_dims", "identity",
      "stop_gradient", "shard_hint", "stage_boundary", "make_tuple", "tuple_get"};
  return kNone.count(name) > 0;
}

void count(const ir::Graph& g, KernelStats& s, int depth);

void count_node(const ir::Node& n, KernelStats& s, int depth) {
  if (!n.is_apply()) return;
  double in = 0;
  for (const ir::Node* x : n.inputs) in += tensor_bytes(x->type);
  if (n.callee) {
    if (!is_fused_graph(*n.callee)) {
      if (depth < 64) count(*n.callee, s, depth + 1);
      return;
    }
    ++s.kernels;
    ++s.fused_calls;
    s.bytes_read += in;
    s.bytes_written += tensor_bytes(n.type);
    for (const ir::Node* m : n.callee->nodes)
      if (m->is_apply() && m->prim &&
          fusion_kind(*m->prim, m->attrs) == FusionKind::OutputFusable) {
        // The anchor's own GEMM: reads its inputs (already counted as the group's inputs when
        // they are parameters of the group), writes its result, which the loop nest reads.
        ++s.kernels;
        s.bytes_written += tensor_bytes(m->type);
        s.bytes_read += tensor_bytes(m->type);
        break;
      }
    return;
  }
  if (!n.prim) return;
  bool nested = false;
  for (const ir::Node* x : n.inputs)
    if (x->is_constant() && x->graph_value) {
      nested = true;
      if (depth < 64) count(*x->graph_value, s, depth + 1);
    }
  if (nested) {
    ++s.loops;
    return;
  }
  if (moves_no_data(n.prim->name)) return;
  ++s.kernels;
  s.bytes_read += in;
  s.bytes_written += tensor_bytes(n.type);
}

void count(const ir::Graph& g, KernelStats& s, int depth) {
  for (const ir::Node* n : g.nodes) count_node(*n, s, depth);
}

}  // namespace

KernelStats kernel_stats(const ir::Graph& g) {
  KernelStats s;
  count(g, s, 0);
  return s;
}

}  // namespace spora::passes
