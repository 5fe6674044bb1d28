// The sharding-rule facet: how a primitive can run on a device mesh
// (parallel/README.md "Sharding rules"). Each family file of ops/ fills it in its registry rows
// under the key "sharding", beside their "cost":
//
//   const ShardingRule* r = parallel::sharding_rule(*prim);
//   for (const OpStrategy& s : r->enumerate(in_types, out_type, attrs, mesh)) ...
//
// A strategy names the layout each input must have and the layout of the output. Partial sums
// in `output.partial` mean the result still needs an all-reduce (or a reduce-scatter): that is
// how "matmul split on the contracted dim needs an all-reduce" is expressed; the partitioner
// inserts the collective when a consumer wants another layout (plan_redistribution).
//
// Values that are not tensors (tuples, records, strings, lists) have the empty Layout{} (rank 0,
// replicated). An op whose output is a tuple of tensors (batch_norm's (y, running mean, running
// var)) lists one layout per element in `tuple_outputs`; `output` is then Layout{}.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parallel/layout/layout.h"
#include "semantics/registry.h"
#include "semantics/types.h"

namespace spora::parallel {

inline constexpr const char* kShardingFacet = "sharding";

// One valid way to run the op on the mesh. local_flops_fraction = the fraction of the op's
// global FLOPs each device does (1/#devices splitting its work; 1 if replicated).
// output_scale: the local result must be multiplied by it before the partial sums are added
// (mean over a split dimension: each rank's mean of n/p elements, times 1/p; also
// cross_entropy's reduction="mean" with the batch split). 1 for almost every strategy.
struct OpStrategy {
  std::vector<Layout> inputs;
  Layout output;
  double local_flops_fraction = 1;
  double output_scale = 1;
  std::string name;                   // "replicated", "m:m0 k:m1", "batch:m0", ...
  std::vector<Layout> tuple_outputs;  // tuple-valued outputs only: one layout per element
};

struct ShardingRule {
  // Every valid strategy for these global input/output types on this mesh (always includes the
  // fully replicated one, first).
  std::function<std::vector<OpStrategy>(const std::vector<sem::TypeP>& in, const sem::TypeP& out,
                                        const sem::Attrs&, const Mesh&)>
      enumerate;
  // Propagation: the output layout given these input layouts, or nullopt if the inputs are not
  // a valid combination.
  std::function<std::optional<Layout>(const std::vector<Layout>& in,
                                      const std::vector<sem::TypeP>& in_types,
                                      const sem::TypeP& out, const sem::Attrs&, const Mesh&)>
      forward;
  // The attributes of the per-rank (local) application: shape attributes become local shapes
  // (reshape's target, zeros(shape=...), broadcast_to, ...). Identity for most ops.
  std::function<sem::Attrs(const sem::Attrs&, const OpStrategy&, const std::vector<sem::TypeP>& in,
                           const sem::TypeP& out, const Mesh&)>
      local_attrs;
  // Why the rule offers only the replicated strategy, when it does (random ops: every rank
  // would draw the same numbers for different shards; effects; control flow). Empty otherwise.
  std::string replicated_only_reason;
};

// The row's rule, or null.
const ShardingRule* sharding_rule(const sem::Primitive& p);
// Sets the facet of a row; false (and nothing done) when there is no such row (as sem::set_cost).
bool set_sharding(sem::Registry& r, const std::string& name, ShardingRule rule);

// The replicated strategy for these types: every tensor input and the output replicated.
OpStrategy replicated_strategy(const std::vector<sem::TypeP>& in, const sem::TypeP& out);
// The layout of a value of type t that is replicated (Layout{} for a non-tensor).
Layout replicated_layout(const sem::TypeP& t);
// A rule offering only the replicated strategy; forward accepts only replicated inputs.
ShardingRule replicated_only_rule(std::string reason);
// forward derived from enumerate: the output of the strategy whose inputs equal `in`.
std::optional<Layout> forward_by_enumeration(const ShardingRule& r, const std::vector<Layout>& in,
                                             const std::vector<sem::TypeP>& in_types,
                                             const sem::TypeP& out, const sem::Attrs& attrs,
                                             const Mesh& m);
// local_attrs that returns the attributes unchanged.
sem::Attrs identity_local_attrs(const sem::Attrs& a, const OpStrategy&,
                                const std::vector<sem::TypeP>&, const sem::TypeP&, const Mesh&);

// Local types of a strategy: each tensor type with its layout's local shape.
sem::TypeP local_type(const sem::TypeP& global, const Layout& l, const Mesh& m);

}  // namespace spora::parallel
