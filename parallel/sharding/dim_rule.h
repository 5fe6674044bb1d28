// Sharding rules described by dimension labels, einsum-style: most primitives' rules are "these
// dims of the inputs and of the output are the same index space; these others may not be cut".
// A label names one index space (matmul's m, n and k; a batch dimension; an elementwise op's
// dim d); every dimension carrying it is split over the same mesh axis. A label that is split
// but missing from the output was summed over (matmul's k, sum's reduced axes, conv2d's input
// channels): each rank computes a partial sum, so the output is partial over that axis. Labels
// of -1 are never split (a softmax axis, a broadcast size-1 dim, conv's spatial dims).
//
//   matmul a[m,k] @ b[k,n] -> [m,n]:  inputs {{m,k},{k,n}}, output {m,n}, k reduce_sum
//
// dim_rule() turns a spec function into a ShardingRule whose enumerate tries every assignment
// of the mesh axes (of more than one device) to labels (each label at most one axis) where
// every carrying dimension is divisible, and whose forward derives the labels' axes from the
// input layouts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parallel/sharding/sharding.h"

namespace spora::parallel {

struct DimSpec {
  struct Label {
    std::string name;         // "m", "k", "d0", "batch": strategy names are "m:m0 k:m1"
    bool reduce_sum = false;  // may be split while absent from the output: partial output
    bool mean = false;        // with reduce_sum: the local result is a mean (output_scale 1/p)
  };
  std::vector<Label> labels;
  // Per input, per dim: a label index or -1 (never split). Empty for a non-tensor input.
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;  // per output dim
  // Set when the output is a tuple of tensors: per element, per dim.
  std::optional<std::vector<std::vector<int>>> tuple_outputs;
  // Linearity: the op passes unreduced partial sums through. A strategy may then take some
  // `linear_inputs` partial over mesh axes that no label uses and give an output partial over
  // the same axes (the all-reduce stays pending until a consumer that is not linear needs it:
  // Megatron's one all-reduce after the three q / k / v input gradients are added).
  //   Joint: every listed input partial over the same axes, the others not: f is linear in
  //          them together, sum_r f(x_r, y_r) = f(sum_r x_r, sum_r y_r) (add, sub, concat; any
  //          one-input linear op: reshape, transpose, neg, sum, mean, cast to a float).
  //   One:   exactly one listed input partial, the others not over those axes: f is linear in
  //          each of them alone, sum_r f(x_r, y) = f(sum_r x_r, y) (mul, matmul; div's
  //          numerator). add with one partial input is not linear (y would be added p times).
  enum class Linear { None, Joint, One };
  Linear linear = Linear::None;
  std::vector<int> linear_inputs;

  int add(std::string name, bool reduce_sum = false, bool mean = false) {
    labels.push_back({std::move(name), reduce_sum, mean});
    return static_cast<int>(labels.size()) - 1;
  }
  // Labels 0..rank-1 named d0, d1, ... and the identity map {0, 1, ..., rank-1}.
  std::vector<int> add_dims(int rank, const std::string& prefix = "d");
};

// The spec of an application, or nullopt when only the replicated strategy applies (dynamic
// sizes, an unexpected type).
using DimSpecFn = std::function<std::optional<DimSpec>(const std::vector<sem::TypeP>& in,
                                                       const sem::TypeP& out, const sem::Attrs&)>;
using LocalAttrsFn =
    std::function<sem::Attrs(const sem::Attrs&, const OpStrategy&, const std::vector<sem::TypeP>&,
                             const sem::TypeP&, const Mesh&)>;

ShardingRule dim_rule(DimSpecFn spec, LocalAttrsFn local_attrs = identity_local_attrs);
// The strategies of a spec on a mesh (the replicated one first). With `linear`, each strategy
// is followed by its variants with partial inputs (named "<name> partial(m1)" for Joint,
// "<name> in0:partial(m1)" for One, with "replicated" left out of the name).
std::vector<OpStrategy> enumerate_dim_spec(const DimSpec& spec, const std::vector<sem::TypeP>& in,
                                           const sem::TypeP& out, const Mesh& m);
// The output layout of a spec for these input layouts, or nullopt (a partial input, a split
// -1 dim, two dims of one label split differently, an axis on two labels, an indivisible
// dim, a split label that is neither in the output nor reduce_sum). Partial inputs are refused
// even by a linear spec: the partitioner's own propagation all-reduces a pending sum where a
// consumer first needs it (partition.h step 1b); partial inputs come only from a chosen
// strategy (the search's "ops").
std::optional<Layout> forward_dim_spec(const DimSpec& spec, const std::vector<Layout>& in,
                                       const std::vector<sem::TypeP>& in_types,
                                       const sem::TypeP& out, const Mesh& m);
// local_attrs replacing the int-list attribute `name` by the output's local shape (reshape,
// broadcast_to, zeros, the derivative helpers' `shape`).
LocalAttrsFn local_shape_attr(std::string name);

}  // namespace spora::parallel
