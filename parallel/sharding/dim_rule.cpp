// Label-based sharding rules (dim_rule.h).
#include "parallel/sharding/dim_rule.h"

#include <fmt/format.h>

#include <algorithm>

namespace spora::parallel {

namespace {

// Every size a label takes (one per carrying dim of the inputs and outputs); an empty result
// for a label carried by a dynamic dim means "never split".
struct LabelSizes {
  std::vector<std::vector<int64_t>> sizes;
  std::vector<bool> dynamic;
  std::vector<bool> in_output;
};

LabelSizes label_sizes(const DimSpec& spec, const std::vector<sem::TypeP>& in,
                       const sem::TypeP& out) {
  LabelSizes ls;
  const size_t n = spec.labels.size();
  ls.sizes.resize(n);
  ls.dynamic.assign(n, false);
  ls.in_output.assign(n, false);
  auto note = [&](const std::vector<int>& map, const sem::TypeP& t, bool is_out) {
    if (!t || !t->is_tensor()) return;
    for (size_t d = 0; d < map.size() && d < t->shape.size(); ++d) {
      const int l = map[d];
      if (l < 0) continue;
      const int64_t s = t->shape[d];
      if (s < 0) ls.dynamic[static_cast<size_t>(l)] = true;
      ls.sizes[static_cast<size_t>(l)].push_back(s);
      if (is_out) ls.in_output[static_cast<size_t>(l)] = true;
    }
  };
  for (size_t i = 0; i < spec.inputs.size() && i < in.size(); ++i)
    note(spec.inputs[i], in[i], false);
  if (spec.tuple_outputs) {
    for (size_t e = 0; e < spec.tuple_outputs->size(); ++e)
      if (out && out->kind == sem::Type::Kind::Tuple && e < out->elems.size())
        note((*spec.tuple_outputs)[e], out->elems[e], true);
  } else {
    note(spec.output, out, true);
  }
  return ls;
}

bool divisible(const LabelSizes& ls, int label, int64_t p) {
  const size_t l = static_cast<size_t>(label);
  if (ls.dynamic[l] || ls.sizes[l].empty()) return false;
  for (int64_t s : ls.sizes[l])
    if (s < p || s % p != 0) return false;
  return true;
}

bool splittable(const DimSpec& spec, const LabelSizes& ls, int label) {
  const size_t l = static_cast<size_t>(label);
  return ls.in_output[l] || spec.labels[l].reduce_sum;
}

Layout map_layout(const std::vector<int>& map, const std::vector<int>& axis_of_label) {
  Layout l;
  for (int lab : map)
    l.tensor_map.push_back(lab < 0 ? -1 : axis_of_label[static_cast<size_t>(lab)]);
  return l;
}

// The strategy for one assignment of mesh axes to labels (-1: not split).
OpStrategy make_strategy(const DimSpec& spec, const LabelSizes& ls,
                         const std::vector<int>& axis_of_label, const std::vector<sem::TypeP>& in,
                         const sem::TypeP& out, const Mesh& m) {
  OpStrategy s;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i < spec.inputs.size() && in[i] && in[i]->is_tensor())
      s.inputs.push_back(map_layout(spec.inputs[i], axis_of_label));
    else
      s.inputs.push_back(replicated_layout(in[i]));
  }
  std::vector<int> partial;
  std::string name;
  for (size_t l = 0; l < axis_of_label.size(); ++l) {
    const int a = axis_of_label[l];
    if (a < 0) continue;
    const double p = static_cast<double>(m.axis_size(a));
    s.local_flops_fraction /= p;
    if (!ls.in_output[l]) {
      partial.push_back(a);
      if (spec.labels[l].mean) s.output_scale /= p;
    }
    name += fmt::format("{}{}:{}", name.empty() ? "" : " ", spec.labels[l].name, m.axis_name(a));
  }
  std::sort(partial.begin(), partial.end());
  s.name = name.empty() ? "replicated" : name;
  if (spec.tuple_outputs) {
    for (const std::vector<int>& map : *spec.tuple_outputs) {
      Layout e = map_layout(map, axis_of_label);
      e.partial = partial;
      s.tuple_outputs.push_back(e);
    }
  } else {
    s.output = out && out->is_tensor() ? map_layout(spec.output, axis_of_label) : Layout{};
    s.output.partial = partial;
  }
  return s;
}

}  // namespace

std::vector<int> DimSpec::add_dims(int rank, const std::string& prefix) {
  std::vector<int> map;
  for (int d = 0; d < rank; ++d) map.push_back(add(fmt::format("{}{}", prefix, d)));
  return map;
}

namespace {

// The variants of strategy `s` whose linear inputs hold partial sums over mesh axes no label
// uses (DimSpec::linear): every non-empty set of such axes, on every listed input (One) or on
// all of them together (Joint). Each device runs the op on its partial piece: the work is not
// split further, so local_flops_fraction stays.
void add_linear_variants(const DimSpec& spec, const OpStrategy& s,
                         const std::vector<int>& axis_of_label, const std::vector<sem::TypeP>& in,
                         const sem::TypeP& out, const Mesh& m, std::vector<OpStrategy>& result) {
  if (spec.linear == DimSpec::Linear::None || !out || !out->is_tensor()) return;
  std::vector<int> free;
  for (int a = 0; a < m.ndim(); ++a)
    if (m.axis_size(a) > 1 &&
        std::find(axis_of_label.begin(), axis_of_label.end(), a) == axis_of_label.end())
      free.push_back(a);
  std::vector<int> inputs;
  for (int i : spec.linear_inputs)
    if (static_cast<size_t>(i) < in.size() && in[static_cast<size_t>(i)] &&
        in[static_cast<size_t>(i)]->is_tensor())
      inputs.push_back(i);
  if (free.empty() || inputs.empty()) return;
  const std::string base = s.name == "replicated" ? "" : s.name + " ";
  for (unsigned mask = 1; mask < (1u << free.size()); ++mask) {
    std::vector<int> axes;
    std::string names;
    for (size_t b = 0; b < free.size(); ++b)
      if (mask & (1u << b)) {
        axes.push_back(free[b]);
        names += (names.empty() ? "" : ", ") + m.axis_name(free[b]);
      }
    auto variant = [&](const std::vector<int>& partial_inputs, const std::string& name) {
      OpStrategy v = s;
      for (int i : partial_inputs) v.inputs[static_cast<size_t>(i)].partial = axes;
      std::vector<int>& p = v.output.partial;
      p.insert(p.end(), axes.begin(), axes.end());
      std::sort(p.begin(), p.end());
      v.name = name;
      result.push_back(std::move(v));
    };
    if (spec.linear == DimSpec::Linear::Joint) {
      variant(inputs, fmt::format("{}partial({})", base, names));
    } else {
      for (int i : inputs) variant({i}, fmt::format("{}in{}:partial({})", base, i, names));
    }
  }
}

}  // namespace

std::vector<OpStrategy> enumerate_dim_spec(const DimSpec& spec, const std::vector<sem::TypeP>& in,
                                           const sem::TypeP& out, const Mesh& m) {
  const LabelSizes ls = label_sizes(spec, in, out);
  std::vector<int> axis_of_label(spec.labels.size(), -1);
  std::vector<OpStrategy> result;
  // Depth-first over the mesh axes; "not used" first, so the replicated strategy comes first.
  std::function<void(int)> go = [&](int axis) {
    if (axis == m.ndim()) {
      const OpStrategy s = make_strategy(spec, ls, axis_of_label, in, out, m);
      result.push_back(s);
      add_linear_variants(spec, s, axis_of_label, in, out, m, result);
      return;
    }
    go(axis + 1);
    const int64_t p = m.axis_size(axis);
    if (p <= 1) return;
    for (size_t l = 0; l < spec.labels.size(); ++l) {
      if (axis_of_label[l] >= 0) continue;
      if (!splittable(spec, ls, static_cast<int>(l)) || !divisible(ls, static_cast<int>(l), p))
        continue;
      axis_of_label[l] = axis;
      go(axis + 1);
      axis_of_label[l] = -1;
    }
  };
  go(0);
  return result;
}

std::optional<Layout> forward_dim_spec(const DimSpec& spec, const std::vector<Layout>& in,
                                       const std::vector<sem::TypeP>& in_types,
                                       const sem::TypeP& out, const Mesh& m) {
  const LabelSizes ls = label_sizes(spec, in_types, out);
  std::vector<int> axis_of_label(spec.labels.size(), -1);
  std::vector<int> label_of_axis(static_cast<size_t>(m.ndim()), -1);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].is_partial()) return std::nullopt;
    const std::vector<int> none;
    const std::vector<int>& map = i < spec.inputs.size() ? spec.inputs[i] : none;
    for (size_t d = 0; d < in[i].tensor_map.size(); ++d) {
      const int a = in[i].tensor_map[d];
      const int l = d < map.size() ? map[d] : -1;
      if (a < 0) continue;
      if (l < 0 || a >= m.ndim()) return std::nullopt;
      int& la = axis_of_label[static_cast<size_t>(l)];
      if (la >= 0 && la != a) return std::nullopt;
      int& al = label_of_axis[static_cast<size_t>(a)];
      if (al >= 0 && al != l) return std::nullopt;
      la = a;
      al = l;
    }
  }
  // A label split in one input must be split alike in every input carrying it.
  for (size_t i = 0; i < in.size() && i < spec.inputs.size(); ++i)
    for (size_t d = 0; d < spec.inputs[i].size() && d < in[i].tensor_map.size(); ++d) {
      const int l = spec.inputs[i][d];
      if (l >= 0 && in[i].tensor_map[d] != axis_of_label[static_cast<size_t>(l)])
        return std::nullopt;
    }
  for (size_t l = 0; l < axis_of_label.size(); ++l) {
    const int a = axis_of_label[l];
    if (a < 0) continue;
    if (!splittable(spec, ls, static_cast<int>(l)) ||
        !divisible(ls, static_cast<int>(l), m.axis_size(a)))
      return std::nullopt;
  }
  OpStrategy s = make_strategy(spec, ls, axis_of_label, in_types, out, m);
  return s.output;
}

ShardingRule dim_rule(DimSpecFn spec, LocalAttrsFn local_attrs) {
  ShardingRule r;
  r.enumerate = [spec](const std::vector<sem::TypeP>& in, const sem::TypeP& out,
                       const sem::Attrs& attrs, const Mesh& m) {
    std::optional<DimSpec> s = spec(in, out, attrs);
    if (!s) return std::vector<OpStrategy>{replicated_strategy(in, out)};
    return enumerate_dim_spec(*s, in, out, m);
  };
  r.forward = [spec](const std::vector<Layout>& in, const std::vector<sem::TypeP>& in_types,
                     const sem::TypeP& out, const sem::Attrs& attrs,
                     const Mesh& m) -> std::optional<Layout> {
    std::optional<DimSpec> s = spec(in_types, out, attrs);
    if (!s) {
      for (const Layout& l : in)
        if (!l.is_replicated()) return std::nullopt;
      return replicated_layout(out);
    }
    return forward_dim_spec(*s, in, in_types, out, m);
  };
  r.local_attrs = std::move(local_attrs);
  return r;
}

LocalAttrsFn local_shape_attr(std::string name) {
  return [name](const sem::Attrs& a, const OpStrategy& s, const std::vector<sem::TypeP>&,
                const sem::TypeP& out, const Mesh& m) {
    if (!out || !out->is_tensor() || s.output.rank() != out->rank()) return a;
    sem::Attrs r;
    for (const auto& [k, v] : a.items())
      r.set(k, k == name ? sem::Attr{s.output.local_shape(out->shape, m)} : v);
    return r;
  };
}

}  // namespace spora::parallel
