// The compute cost facet: what one application of a primitive costs, as a function of its
// types (ops/ fills it in each primitive's row, under the key "cost").
//
//   OpCost c = (*prim->facet<CostRule>(kCostFacet))(input_types, output_type, attrs);
//   c.flops     arithmetic operations (a multiply-add is 2)
//   c.bytes     bytes read and written in device memory, each tensor once (no caches)
//   c.op_class  which efficiency and launch overhead of the cluster spec apply
//
// The simulator turns it into a time on a device (sim/cost_model.h):
//   max(flops / peak_flops[dtype], bytes / memory_bandwidth) / efficiency[op_class]
//     + launch_overhead[op_class]
// The op classes:
//   matmul       matrix products (BLAS / cuBLAS GEMM)
//   conv         convolutions and their derivative helpers
//   elementwise  unary and binary math, comparisons, where, cast, one_hot
//   reduction    sum mean prod max min argmax argmin all any, logsumexp
//   norm         softmax log_softmax cross_entropy layer_norm batch_norm dropout
//   pool         max/avg pooling and their derivative helpers
//   copy         data movement: transpose permute broadcast_to concat stack slice gather ...
//   creation     zeros ones full arange normal uniform (writes only)
//   view         no kernel at all: reshape and its kin, tuple/record plumbing, identity;
//                zero time and no launch overhead
//   host         effects on the host (print, assert, tape lists): no device time
//   comm         collectives (all_reduce, all_gather, reduce_scatter, all_to_all): the local
//                memory traffic and reduction arithmetic only; the network part is the
//                simulator's, from the collective schedule
// (sim::op_class_names() in sim/cluster_spec.h lists them for the spec reader.)
// Control-flow rows (if, while, for_range, for_each) have no cost facet: the simulator expands
// their bodies instead.
//
// It sits in semantics/ with the registry because ops/ fills it and both the simulator and the
// strategy search (parallel/search/from_ir.cpp) read it; the rule builders below are the shapes
// most rows share.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "semantics/registry.h"
#include "semantics/types.h"

namespace spora::sem {

inline constexpr const char* kCostFacet = "cost";

struct OpCost {
  double flops = 0;
  double bytes = 0;
  std::string op_class = "elementwise";
  // Matrix products and convolutions: the (m, n, k) of one GEMM, m x k times k x n (for a
  // convolution the GEMM of one image and group that the CPU kernel runs, backends/cpu/conv.cpp);
  // flops / (2 m n k) of them make the op. Zero elsewhere. The cost model looks the GEMM's rate up
  // in a measured table (sim/measured_tables.h) when the spec has one.
  std::array<double, 3> gemm{};
  // The measured table that prices the op where it is not its class's (sim/measured_tables.h):
  // for a matmul or convolution a GEMM table (conv_input_grad, conv_weight_grad), for another
  // class a bandwidth table (pool_grad). Empty, or absent from the spec: the class's table (gemm,
  // conv, bandwidth[op_class]).
  std::string table{};
};

using CostRule = std::function<OpCost(const std::vector<TypeP>& inputs, const TypeP& output,
                                      const Attrs& attrs)>;

// Elements of a tensor type (0 for a dynamic size or a non-tensor).
inline double elements(const TypeP& t) {
  if (!t || !t->is_tensor()) return 0;
  const int64_t n = t->numel();
  return n < 0 ? 0 : static_cast<double>(n);
}

// Bytes of a value of type t: tensors, and the tensor leaves of tuples and records.
inline double type_bytes(const TypeP& t) {
  if (!t) return 0;
  if (t->is_tensor()) return elements(t) * static_cast<double>(dtype_size(t->dtype));
  if (t->kind == Type::Kind::Tuple || t->kind == Type::Kind::Record) {
    double b = 0;
    for (const TypeP& e : t->elems) b += type_bytes(e);
    return b;
  }
  return 0;
}

inline double input_bytes(const std::vector<TypeP>& inputs) {
  double b = 0;
  for (const TypeP& t : inputs) b += type_bytes(t);
  return b;
}

// Every input read once and the output written once; `flops_per_element` per output element.
inline CostRule elementwise_cost(double flops_per_element, std::string op_class = "elementwise") {
  return [flops_per_element, op_class](const std::vector<TypeP>& in, const TypeP& out,
                                       const Attrs&) {
    return OpCost{flops_per_element * elements(out), input_bytes(in) + type_bytes(out), op_class};
  };
}

// A reduction: `flops_per_element` per element of the first input; inputs read, output written.
inline CostRule reduction_cost(double flops_per_element, std::string op_class = "reduction") {
  return
      [flops_per_element, op_class](const std::vector<TypeP>& in, const TypeP& out, const Attrs&) {
        const double n = in.empty() ? 0 : elements(in[0]);
        return OpCost{flops_per_element * n, input_bytes(in) + type_bytes(out), op_class};
      };
}

// Pure data movement: the output written, and as much read (a slice reads only what it keeps,
// a transpose or a concatenation reads everything once).
inline CostRule copy_cost() {
  return [](const std::vector<TypeP>&, const TypeP& out, const Attrs&) {
    return OpCost{0, 2 * type_bytes(out), "copy"};
  };
}

// No kernel: metadata only.
inline CostRule view_cost() {
  return [](const std::vector<TypeP>&, const TypeP&, const Attrs&) { return OpCost{0, 0, "view"}; };
}

// Host-side effects: no device time.
inline CostRule host_cost() {
  return [](const std::vector<TypeP>&, const TypeP&, const Attrs&) { return OpCost{0, 0, "host"}; };
}

// Writes its output only; `flops_per_element` per element (random number generation).
inline CostRule creation_cost(double flops_per_element) {
  return [flops_per_element](const std::vector<TypeP>&, const TypeP& out, const Attrs&) {
    return OpCost{flops_per_element * elements(out), type_bytes(out), "creation"};
  };
}

// Sets the cost facet of a row; returns false (and does nothing) when there is no such row, so
// a renamed primitive never stops start-up: the row then lacks a cost, which the test of
// every row's facets reports.
inline bool set_cost(Registry& r, const std::string& name, CostRule rule) {
  Primitive* p = r.find_mutable(name);
  if (!p) return false;
  p->facets[kCostFacet] = std::move(rule);
  return true;
}

}  // namespace spora::sem
