#include "ops/facet_util.h"

#include <algorithm>

#include "ops/families.h"
#include "ops/kernel_util.h"

namespace spora::ops {

namespace facet_util {

std::vector<int> broadcast_map(const TypeP& in, const TypeP& out, const std::vector<int>& out_map) {
  std::vector<int> map;
  const int off = rank(out) - rank(in);
  for (int d = 0; d < rank(in); ++d) {
    const int od = d + off;
    map.push_back(od >= 0 &&
                          in->shape[static_cast<size_t>(d)] == out->shape[static_cast<size_t>(od)]
                      ? out_map[static_cast<size_t>(od)]
                      : -1);
  }
  return map;
}

Spec elementwise_spec(const Types& in, const TypeP& out, const Attrs&) {
  if (!out || !out->is_tensor()) return std::nullopt;
  DimSpec s;
  s.output = s.add_dims(rank(out));
  for (size_t i = 0; i < in.size(); ++i)
    s.inputs.push_back(is_tensor(in, i) ? broadcast_map(in[i], out, s.output) : std::vector<int>{});
  return s;
}

ShardingRule elementwise_rule() { return dim_rule(elementwise_spec); }

parallel::DimSpecFn linear(parallel::DimSpecFn spec, DimSpec::Linear kind,
                           std::vector<int> inputs) {
  return [spec, kind, inputs](const Types& in, const TypeP& out, const Attrs& attrs) -> Spec {
    Spec s = spec(in, out, attrs);
    if (!s) return s;
    s->linear = kind;
    s->linear_inputs = inputs;
    return s;
  };
}

parallel::DimSpecFn reduction_spec(bool sum_like, bool mean) {
  return [sum_like, mean](const Types& in, const TypeP& out, const Attrs& attrs) -> Spec {
    if (!is_tensor(in, 0)) return std::nullopt;
    const Type& x = *in[0];
    std::vector<int64_t> axes = reduction_axes(attrs, "axis", x);
    const bool keep = attrs.has("keepdims") && attrs.get_bool("keepdims");
    DimSpec s;
    std::vector<int> xm;
    for (int d = 0; d < rank(in[0]); ++d) {
      const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (!reduced) {
        const int l = s.add("d" + std::to_string(d));
        xm.push_back(l);
        s.output.push_back(l);
        continue;
      }
      xm.push_back(sum_like ? s.add("r" + std::to_string(d), true, mean) : -1);
      if (keep) s.output.push_back(-1);
    }
    s.inputs = {xm};
    if (out && out->is_tensor() && static_cast<int>(s.output.size()) != rank(out))
      return std::nullopt;  // argmax/argmin over every axis: a flat index
    return s;
  };
}

}  // namespace facet_util

void set_elementwise_sharding(sem::Registry& r, const std::string& name) {
  facet_util::set_sharding(r, name, facet_util::elementwise_rule());
}

}  // namespace spora::ops
