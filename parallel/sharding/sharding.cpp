// The sharding facet's shared helpers (the rules themselves are in ops/sharding.cpp).
#include "parallel/sharding/sharding.h"

namespace spora::parallel {

const ShardingRule* sharding_rule(const sem::Primitive& p) {
  return p.facet<ShardingRule>(kShardingFacet);
}

bool set_sharding(sem::Registry& r, const std::string& name, ShardingRule rule) {
  sem::Primitive* p = r.find_mutable(name);
  if (!p) return false;
  p->facets[kShardingFacet] = std::move(rule);
  return true;
}

Layout replicated_layout(const sem::TypeP& t) {
  if (!t || !t->is_tensor()) return Layout{};
  return Layout::replicated(static_cast<int>(t->rank()));
}

OpStrategy replicated_strategy(const std::vector<sem::TypeP>& in, const sem::TypeP& out) {
  OpStrategy s;
  for (const sem::TypeP& t : in) s.inputs.push_back(replicated_layout(t));
  if (out && out->kind == sem::Type::Kind::Tuple) {
    for (const sem::TypeP& e : out->elems) s.tuple_outputs.push_back(replicated_layout(e));
  } else {
    s.output = replicated_layout(out);
  }
  s.name = "replicated";
  return s;
}

sem::Attrs identity_local_attrs(const sem::Attrs& a, const OpStrategy&,
                                const std::vector<sem::TypeP>&, const sem::TypeP&, const Mesh&) {
  return a;
}

std::optional<Layout> forward_by_enumeration(const ShardingRule& r, const std::vector<Layout>& in,
                                             const std::vector<sem::TypeP>& in_types,
                                             const sem::TypeP& out, const sem::Attrs& attrs,
                                             const Mesh& m) {
  for (const OpStrategy& s : r.enumerate(in_types, out, attrs, m))
    if (s.inputs == in) return s.output;
  return std::nullopt;
}

ShardingRule replicated_only_rule(std::string reason) {
  ShardingRule r;
  r.replicated_only_reason = std::move(reason);
  r.enumerate = [](const std::vector<sem::TypeP>& in, const sem::TypeP& out, const sem::Attrs&,
                   const Mesh&) { return std::vector<OpStrategy>{replicated_strategy(in, out)}; };
  r.forward = [](const std::vector<Layout>& in, const std::vector<sem::TypeP>& in_types,
                 const sem::TypeP& out, const sem::Attrs&, const Mesh&) -> std::optional<Layout> {
    for (const Layout& l : in)
      if (!l.is_replicated()) return std::nullopt;
    return replicated_layout(out);
  };
  r.local_attrs = identity_local_attrs;
  return r;
}

sem::TypeP local_type(const sem::TypeP& global, const Layout& l, const Mesh& m) {
  if (!global || !global->is_tensor() || l.rank() == 0) return global;
  return sem::Type::tensor(global->dtype, l.local_shape(global->shape, m));
}

}  // namespace spora::parallel
