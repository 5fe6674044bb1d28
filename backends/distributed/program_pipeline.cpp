// The pipelined step's compile (program_pipeline.h).
#include "backends/distributed/program_pipeline.h"

#include <fmt/format.h>

#include "lang/diagnostics.h"
#include "semantics/ad_hooks.h"
#include "semantics/passes/util.h"
#include "semantics/registry.h"

namespace spora::distributed {

bool is_unit_seed(const ir::Node* dout) {
  if (!dout || !dout->is_constant() || dout->graph_value) return false;
  const sem::Value& v = dout->value;
  return v.is_tensor() && v.tensor.numel() == 1 && v.tensor.item() == 1.0;
}

StepCapture::StepCapture() {
  sem::AutodiffHooks& hooks = sem::autodiff_hooks();
  if (!hooks.reverse) throw lang::InternalError("autodiff is not installed (autodiff::install())");
  saved_ = hooks.reverse;
  hooks.reverse = [this](ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                         const std::vector<ir::Node*>& inputs, ir::Node* output, ir::Node* dout) {
    if (done_ || inputs.empty() || !output || output->graph != into || !is_unit_seed(dout) ||
        !output->type || !output->type->is_tensor() || output->type->rank() != 0)
      return saved_(m, region, into, inputs, output, dout);
    done_ = true;
    std::vector<std::string> names;
    std::vector<ir::Node*> externals;
    ir::Graph* step = parallel::copy_step_region(m, parallel::StepRegion{region, inputs, output},
                                                 saved_, kPipelineStepGraph, names, &externals);
    step->flags.push_back("noinline");
    std::vector<ir::Node*> args(inputs);
    args.insert(args.end(), externals.begin(), externals.end());
    ir::Node* call = m.add_call(into, step, args, step->output->type, output->loc);
    const sem::Primitive* get = sem::Registry::instance().find("tuple_get");
    auto item = [&](int64_t i) {
      sem::Attrs a;
      a.set("index", i);
      return m.add_apply(into, get, {call}, a, step->output->type->elems.at(static_cast<size_t>(i)),
                         output->loc);
    };
    output_ = output;
    loss_ = item(0);
    std::vector<ir::Node*> adjoints;
    for (size_t i = 0; i < inputs.size(); ++i) adjoints.push_back(item(static_cast<int64_t>(i) + 1));
    return adjoints;
  };
}

StepCapture::~StepCapture() { sem::autodiff_hooks().reverse = saved_; }

void StepCapture::finish(ir::Module& m, const std::string& origin) {
  if (!done_)
    throw lang::UserError(fmt::format(
        "{}: a pipeline runs the program's training step, and main takes no derivative it can "
        "pipeline: write value_and_grad(loss)(...) or grad(loss)(...) in main or a loop body",
        origin));
  passes::Substitution s;
  s.replace(output_, loss_);
  s.apply(m);
}

std::shared_ptr<const parallel::pipeline::PipelineSetup> program_pipeline_setup(
    const std::string& path, const std::string& json_text, const std::string& origin) {
  parallel::StepOptions options;  // the program's own batch; its optimizer is its own
  options.batch_use = fmt::format(
      "the pipeline of {} sets it to the micro-batch to build the stages' programs (write the "
      "training data's batch as `batch=batch`)",
      origin);
  return std::make_shared<const parallel::pipeline::PipelineSetup>(
      parallel::pipeline::setup_pipeline(path, options, json_text, origin));
}

}  // namespace spora::distributed
