// choose_strategy, forward_strategy, output_scale: see node_strategy.h.
#include "parallel/partition/node_strategy.h"

#include <limits>
#include <optional>

#include "lang/diagnostics.h"

namespace spora::parallel {

using sem::TypeP;

OpStrategy forward_strategy(const ShardingRule& rule, const ir::Node& n,
                            const std::vector<TypeP>& in_types, std::vector<Layout> in, Layout out,
                            const Mesh& mesh) {
  if (rule.enumerate)
    for (OpStrategy& s : rule.enumerate(in_types, n.type, n.attrs, mesh))
      if (s.inputs == in && s.output == out) return s;
  OpStrategy s;
  s.inputs = std::move(in);
  s.output = std::move(out);
  s.name = "forward";
  s.output_scale = 0;  // unknown: output_scale() derives it
  return s;
}

OpStrategy choose_strategy(const ir::Node& n, const std::vector<Layout>& in,
                           const std::vector<TypeP>& in_types, const Mesh& mesh,
                           const CommModel& comm) {
  const ShardingRule* rule = sharding_rule(*n.prim);
  if (!rule || !rule->enumerate) return replicated_strategy(in_types, n.type);
  if (rule->forward) {
    if (std::optional<Layout> out = rule->forward(in, in_types, n.type, n.attrs, mesh))
      return forward_strategy(*rule, n, in_types, in, *out, mesh);
    // Pending partial sums the op cannot take are all-reduced where they are first needed
    // (Megatron's all-reduce after the row-split matmul, GSPMD's propagation).
    std::vector<Layout> summed = in;
    bool any = false;
    for (Layout& l : summed) {
      any |= l.is_partial();
      l.partial.clear();
    }
    if (any)
      if (std::optional<Layout> out = rule->forward(summed, in_types, n.type, n.attrs, mesh)) {
        // A reshape of a partial sum is the partial sum of the reshapes: the sum stays
        // pending (a bias gradient, summed over the batch as [1, n] and reshaped to [n],
        // reaches its output layout partial, so ZeRO-1 reduce-scatters it).
        if (n.is_prim("reshape") && in.size() == 1 && !out->is_partial()) {
          Layout pending = *out;
          pending.partial = in[0].partial;
          try {
            pending.validate(mesh);
            return forward_strategy(*rule, n, in_types, in, pending, mesh);
          } catch (const lang::UserError&) {
            // a partial axis that splits the output: sum first
          }
        }
        return forward_strategy(*rule, n, in_types, summed, *out, mesh);
      }
  }
  std::optional<OpStrategy> best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (OpStrategy& s : rule->enumerate(in_types, n.type, n.attrs, mesh)) {
    if (s.inputs.size() != in.size()) continue;
    double cost = 0;
    bool feasible = true;
    for (size_t i = 0; i < in.size() && feasible; ++i) {
      if (!in_types[i] || !in_types[i]->is_tensor() || in[i] == s.inputs[i]) continue;
      try {
        cost += plan_redistribution(in[i], s.inputs[i], in_types[i]->shape,
                                    static_cast<int>(dtype_size(in_types[i]->dtype)), mesh, comm)
                    .seconds;
      } catch (const lang::UserError&) {
        feasible = false;
      }
    }
    if (!feasible) continue;
    // A partial sum the strategy leaves pending is reduced later (rule b): priced as the
    // all-reduce of the output, so a strategy that saves a small gather by leaving a large
    // sum pending (a weight gradient contracted over a sharded sequence) does not win.
    if (s.output.is_partial() && n.type && n.type->is_tensor()) {
      Layout summed = s.output;
      summed.partial.clear();
      try {
        cost += plan_redistribution(s.output, summed, n.type->shape,
                                    static_cast<int>(dtype_size(n.type->dtype)), mesh, comm)
                    .seconds;
      } catch (const lang::UserError&) {
      }
    }
    // Ties: less local work wins (1e-15 s per unit of the work fraction breaks them only).
    cost += 1e-15 * s.local_flops_fraction;
    if (cost < best_cost) {
      best_cost = cost;
      best = std::move(s);
    }
  }
  if (!best) return replicated_strategy(in_types, n.type);
  return *best;
}

double output_scale(const ir::Node& n, const OpStrategy& s, const sem::Attrs& local_attrs,
                    const std::vector<TypeP>& global_in, const std::vector<TypeP>& local_in,
                    const TypeP& local_out) {
  if (s.output_scale != 0) return s.output_scale;
  const bool mean = n.is_prim("mean");
  const bool ce = n.is_prim("cross_entropy") &&
                  (!local_attrs.has("reduction") || local_attrs.get_string("reduction") == "mean");
  if (!mean && !ce) return 1;
  if (!local_out || !local_out->is_tensor() || local_out->numel() <= 0) return 1;
  auto count = [&](const std::vector<TypeP>& in, const TypeP& out) -> double {
    if (mean) return static_cast<double>(in[0]->numel()) / static_cast<double>(out->numel());
    const sem::Type& logits = *in[0];
    const int64_t axis = logits.rank() >= 2 ? 1 : 0;
    return static_cast<double>(logits.numel()) / static_cast<double>(logits.shape[axis]);
  };
  const double global = count(global_in, n.type), here = count(local_in, local_out);
  return global <= 0 ? 1 : here / global;
}

CollectiveCall collective_call(const RedistStep& step, const Mesh& mesh) {
  CollectiveCall c;
  switch (step.kind) {
    case RedistStep::Kind::AllGather:
    case RedistStep::Kind::Slice:
    case RedistStep::Kind::ReduceScatter:
      c.prim = step.kind == RedistStep::Kind::AllGather ? "all_gather"
               : step.kind == RedistStep::Kind::Slice   ? "shard_slice"
                                                        : "reduce_scatter";
      c.attrs.set("dim", int64_t{step.dim});
      c.attrs.set("axis", int64_t{step.axis});
      break;
    case RedistStep::Kind::AllReduce:
      c.prim = "all_reduce";
      c.attrs.set("axes", std::vector<int64_t>{step.axis});
      break;
    case RedistStep::Kind::AllToAll:
      // dim split -> dim2 split: cut dim2 into the group's pieces, concatenate along dim.
      c.prim = "all_to_all";
      c.attrs.set("split_dim", int64_t{step.dim2});
      c.attrs.set("concat_dim", int64_t{step.dim});
      c.attrs.set("axis", int64_t{step.axis});
      break;
  }
  c.attrs.set("mesh", mesh.shape);
  return c;
}

}  // namespace spora::parallel
