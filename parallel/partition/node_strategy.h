// How one application runs on a mesh, given the layouts its inputs arrive in: the decision the
// SPMD partitioner makes for every node of a straight-line graph (partition.h, steps 1 and 3),
// and the distributed runtime makes at run time for every primitive a program applies
// (backends/distributed/spmd_runtime.h), so the two place collectives alike.
//
//   OpStrategy s = choose_strategy(node, in_layouts, in_types, mesh, comm);
//   // redistribute input i to s.inputs[i], run the row's kernel with
//   // rule->local_attrs(node.attrs, s, in_types, node.type, mesh), then multiply the result by
//   // output_scale(node, s, local_attrs, in_types, local_in_types, local_out_type)
#pragma once

#include <string>
#include <vector>

#include "parallel/layout/layout.h"
#include "parallel/sharding/sharding.h"
#include "semantics/ir/ir.h"

namespace spora::parallel {

// The strategy of `n` (an application of a primitive) whose inputs have layouts `in` and
// global types `in_types`:
//   a. the row's forward(in), when it accepts the inputs as they are;
//   b. else forward of the inputs with their partial sums all-reduced (a pending sum is reduced
//      where a consumer first needs it; a reshape passes it on instead);
//   c. else the enumerated strategy whose redistribution of the inputs, plus the all-reduce of
//      a partial output, costs least under `comm` (ties: the smaller local share of the work,
//      then the rule's order);
//   d. else (no rule) everything replicated.
OpStrategy choose_strategy(const ir::Node& n, const std::vector<Layout>& in,
                           const std::vector<sem::TypeP>& in_types, const Mesh& mesh,
                           const CommModel& comm);

// The strategy forward() describes for these layouts: the rule's enumerated one with these
// input and output layouts when there is one (it carries the name and output_scale), else a
// bare one named "forward" with output_scale 0 (output_scale() derives it).
OpStrategy forward_strategy(const ShardingRule& rule, const ir::Node& n,
                            const std::vector<sem::TypeP>& in_types, std::vector<Layout> in,
                            Layout out, const Mesh& mesh);

// The factor the local result of `n` under `s` is multiplied by (partition.h step 3): the
// strategy's output_scale, or when it is 0 (a bare forward result) the ratio of the local to
// the global count of a mean or a cross_entropy with reduction "mean" (1 for anything else).
double output_scale(const ir::Node& n, const OpStrategy& s, const sem::Attrs& local_attrs,
                    const std::vector<sem::TypeP>& global_in,
                    const std::vector<sem::TypeP>& local_in, const sem::TypeP& local_out);

// The collective primitive (ops/collective.cpp) that runs one redistribution step on `mesh`,
// and its attributes: all_gather / shard_slice / reduce_scatter (dim, axis), all_reduce (axes),
// all_to_all (split_dim, concat_dim, axis), each with the mesh.
struct CollectiveCall {
  std::string prim;
  sem::Attrs attrs;
};
CollectiveCall collective_call(const RedistStep& step, const Mesh& mesh);

}  // namespace spora::parallel
