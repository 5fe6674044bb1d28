// The data-parallel cut of data the program holds whole (batch_cut.h).
#include "backends/distributed/batch_cut.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "backends/distributed/program_pipeline.h"
#include "lang/diagnostics.h"
#include "semantics/ad_hooks.h"
#include "semantics/registry.h"

namespace spora::distributed {

BatchCut::BatchCut(const SpmdPlan& plan) {
  if (plan.data_axis < 0 || !plan.pipeline.empty() || plan.mesh.axis_size(plan.data_axis) < 2)
    return;
  sem::AutodiffHooks& hooks = sem::autodiff_hooks();
  if (!hooks.reverse) throw lang::InternalError("autodiff is not installed (autodiff::install())");
  active_ = true;
  saved_ = hooks.reverse;
  axis_ = plan.mesh.axis_name(plan.data_axis);
  ranks_ = plan.mesh.axis_size(plan.data_axis);
  hooks.reverse = [this](ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                         const std::vector<ir::Node*>& inputs, ir::Node* output, ir::Node* dout) {
    if (!is_unit_seed(dout) || !output || !output->type || !output->type->is_tensor() ||
        output->type->rank() != 0)
      return saved_(m, region, into, inputs, output, dout);
    const std::unordered_set<const ir::Node*> inside(region.begin(), region.end()),
        differentiated(inputs.begin(), inputs.end());
    const sem::Primitive* hint = sem::Registry::instance().find("shard_hint");
    std::vector<std::pair<ir::Node*, ir::Node*>> cut_of;  // external value -> its cut
    for (ir::Node* n : region)
      for (ir::Node*& in : n->inputs) {
        if (inside.count(in) || differentiated.count(in) || !in->graph ||
            !ir::is_within(into, in->graph) || !in->type || !in->type->is_tensor() ||
            in->type->rank() < 1 || in->is_prim("shard_hint"))
          continue;
        const int64_t rows = in->type->shape[0];
        if (rows <= 0 || rows % ranks_ != 0) continue;
        auto it = std::find_if(cut_of.begin(), cut_of.end(),
                               [&](const auto& p) { return p.first == in; });
        if (it == cut_of.end()) {
          std::string layout = "[" + axis_;
          for (int64_t d = 1; d < in->type->rank(); ++d) layout += ", -";
          sem::Attrs a;
          a.set("layout", layout + "]");
          a.set("data", int64_t{1});  // not a parameter: ZeRO does not place it
          // In the value's own graph, right after it: cut once, also when the derivative is
          // taken in a loop body.
          ir::Graph* g = in->graph;
          ir::Node* cut = m.add_apply(g, hint, {in}, a, in->type, in->loc);
          g->nodes.pop_back();
          auto at = std::find(g->nodes.begin(), g->nodes.end(), in);
          g->nodes.insert(at == g->nodes.end() ? g->nodes.begin() : at + 1, cut);
          cut_of.emplace_back(in, cut);
          it = std::prev(cut_of.end());
          ++hinted_;
        }
        in = it->second;
      }
    return saved_(m, region, into, inputs, output, dout);
  };
}

BatchCut::~BatchCut() {
  if (active_) sem::autodiff_hooks().reverse = saved_;
}

}  // namespace spora::distributed
