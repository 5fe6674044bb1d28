// Parallel annotations (semi-auto parallelism): what the front end emits for
// `shard(x, (2, 1))`, `prim(..., shard=(...))` and `@stage(k)`. Both are the identity on values;
// they only carry a decision for the partitioner, the strategy search and the pipeline split.
//
//   shard_hint(x, layout="(2, 1)")  the value x, pinned to a layout: the text as written, either
//                                   MindSpore's partition numbers "(2, 1)" or a tensor map
//                                   "[dp, -]" (parallel/layout/layout.h reads both on the mesh
//                                   of the run, so a program names no mesh).
//   stage_boundary(x, stage=k)      the value x, entering pipeline stage k (the pipeline split
//                                   finds these by name: node->is_prim("stage_boundary")).
//
// Facets (one row each, all here):
//   derivative  the identity: the cotangent passes through (a pin constrains the forward value;
//               the backward layouts are left to propagation)
//   kernels     the reference kernel returns its input; the CPU and CUDA backends register
//               copy-free views (backends/cpu/shape.cpp, backends/cuda/register.cpp) and the
//               memory planner aliases the input's buffer (backends/runtime/memory_plan.cpp)
//   fusion      opaque: a hint is never folded into a fused group (the partitioner and the
//               search read the unfused step graph; passes keep both rows: they are neither
//               `identity` nor constant-foldable)
//   cost        zero (a view)
//   sharding    shard_hint: exactly one strategy, input and output in the pinned layout, so the
//               partitioner redistributes whatever arrives to it (partition.h step 1c) and the
//               search's cost graph has one candidate at the node (a pin); forward accepts only
//               the pinned layout. stage_boundary: every layout passes through (elementwise).
// A pin whose text does not fit the mesh or the tensor is a lang::UserError naming the text.
#include <fmt/format.h>

#include "ops/ad_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "parallel/sharding/dim_rule.h"
#include "parallel/sharding/sharding.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "annotation";
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  p.eval = [](const std::vector<Value>& in, const Attrs&) -> Value { return in.at(0); };
  ad::set_linear_rules(
      p, [](ad::Emitter&, const ad::Node&, ad::Node*, ad::Node* dout) { return dout; });
  return p;
}

// The pinned layout of a shard_hint application on mesh m.
parallel::Layout pinned(const sem::Attrs& attrs, const TypeP& t, const parallel::Mesh& m) {
  const std::string text = attrs.get_string("layout");
  try {
    return parallel::Layout::parse(text, m, static_cast<int>(t->rank()));
  } catch (const lang::UserError& e) {
    user_error(fmt::format("shard layout '{}' does not fit {} on mesh {}: {}", text, t->str(),
                           m.to_string(), e.what()));
  }
}

parallel::ShardingRule pin_rule() {
  parallel::ShardingRule r;
  r.enumerate = [](const std::vector<TypeP>& in, const TypeP& out, const sem::Attrs& attrs,
                   const parallel::Mesh& m) {
    parallel::OpStrategy s;
    s.output = pinned(attrs, out, m);
    s.inputs = {s.output};
    s.local_flops_fraction = s.output.local_fraction(m);
    s.name = "pinned";
    (void)in;
    return std::vector<parallel::OpStrategy>{s};
  };
  r.forward = [](const std::vector<parallel::Layout>& in, const std::vector<TypeP>&,
                 const TypeP& out, const sem::Attrs& attrs,
                 const parallel::Mesh& m) -> std::optional<parallel::Layout> {
    const parallel::Layout want = pinned(attrs, out, m);
    if (in.size() == 1 && in[0] == want) return want;
    return std::nullopt;
  };
  r.local_attrs = parallel::identity_local_attrs;
  return r;
}

// stage_boundary: every dim is its own label, as an elementwise op's.
parallel::ShardingRule pass_through_rule() {
  return parallel::dim_rule([](const std::vector<TypeP>& in, const TypeP& out,
                               const sem::Attrs&) -> std::optional<parallel::DimSpec> {
    if (!out || !out->is_tensor() || in.size() != 1 || !in[0]->is_tensor()) return std::nullopt;
    parallel::DimSpec s;
    s.output = s.add_dims(static_cast<int>(out->rank()));
    s.inputs.push_back(s.output);
    return s;
  });
}

void add_shard_hint(sem::Registry& r) {
  Primitive p = row("shard_hint",
                    "shard_hint(x, layout): x, pinned to a layout (\"(2, 1)\" or \"[dp, -]\") "
                    "for the partitioner; emitted by shard(x, ...) and shard=",
                    {input("x"), attr("layout", AK::String)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "shard_hint");
    tensor_input(in, 0, "shard_hint");
    if (attrs.get_string("layout").empty()) user_error("shard_hint: the layout is empty");
    return in[0];
  };
  p.facets[parallel::kShardingFacet] = pin_rule();
  r.add(std::move(p));
  sem::set_cost(r, "shard_hint", sem::view_cost());
}

void add_stage_boundary(sem::Registry& r) {
  Primitive p = row("stage_boundary",
                    "stage_boundary(x, stage): x, entering pipeline stage `stage`; emitted by "
                    "@stage(k)",
                    {input("x"), attr("stage", AK::Int)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "stage_boundary");
    tensor_input(in, 0, "stage_boundary");
    const int64_t k = attrs.get_int("stage");
    if (k < 0) user_error(fmt::format("stage_boundary: the stage must be 0 or more, got {}", k));
    return in[0];
  };
  p.facets[parallel::kShardingFacet] = pass_through_rule();
  r.add(std::move(p));
  sem::set_cost(r, "stage_boundary", sem::view_cost());
}

}  // namespace

void register_annotation(sem::Registry& r) {
  add_shard_hint(r);
  add_stage_boundary(r);
}

}  // namespace spora::ops
