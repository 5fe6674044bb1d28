// What the family files of ops/ share to write their rows' cost and sharding rules (each
// family sets them next to the rows' other facets): the cost helpers of semantics/cost.h, the
// helpers of label specs (parallel/sharding/dim_rule.h), the elementwise sharding rule with
// NumPy broadcasting, and the reduction spec. Internal to ops/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parallel/sharding/dim_rule.h"
#include "semantics/cost.h"
#include "semantics/registry.h"

namespace spora::ops::facet_util {

using sem::CostRule;
using sem::elements;
using sem::input_bytes;
using sem::OpCost;
using sem::set_cost;
using sem::type_bytes;
using CostTypes = std::vector<sem::TypeP>;

using parallel::dim_rule;
using parallel::DimSpec;
using parallel::Layout;
using parallel::Mesh;
using parallel::OpStrategy;
using parallel::replicated_only_rule;
using parallel::set_sharding;
using parallel::ShardingRule;
using sem::Attr;
using sem::Attrs;
using sem::Type;
using sem::TypeP;
using Types = std::vector<TypeP>;
using Spec = std::optional<DimSpec>;

constexpr DimSpec::Linear kJoint = DimSpec::Linear::Joint;
constexpr DimSpec::Linear kOne = DimSpec::Linear::One;

inline bool is_tensor(const Types& in, size_t i) {
  return i < in.size() && in[i] && in[i]->is_tensor();
}
inline int rank(const TypeP& t) { return static_cast<int>(t->rank()); }

// Input dims aligned to the right of the output's (NumPy broadcasting): a dim of the output's
// size carries the output dim's label, a broadcast one (size 1 against more) never splits.
std::vector<int> broadcast_map(const TypeP& in, const TypeP& out, const std::vector<int>& out_map);

// Unary and n-ary elementwise ops (with broadcasting): every output dim is a label.
Spec elementwise_spec(const Types& in, const TypeP& out, const Attrs&);
ShardingRule elementwise_rule();

// A spec that also passes partial sums through the inputs it is linear in (DimSpec::linear):
// Joint for sums of inputs and one-input linear maps, One for products (linear in each factor
// alone). The sharding rules test runs every such strategy on random partial pieces.
parallel::DimSpecFn linear(parallel::DimSpecFn spec, DimSpec::Linear kind,
                           std::vector<int> inputs = {0});

// Reductions: kept dims are labels shared with the output; reduced dims are labels that sum and
// mean may split (partial output; mean's local result scaled by 1/p), the others never.
parallel::DimSpecFn reduction_spec(bool sum_like, bool mean);

}  // namespace spora::ops::facet_util
