// A pipeline strategy applied to a program (setup.h).
#include "parallel/pipeline/setup.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "lang/diagnostics.h"
#include "parallel/partition/strategy.h"

namespace spora::parallel::pipeline {

bool is_pipeline_strategy(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() && j.contains("pipeline");
}

PipelineSetup setup_pipeline(const std::string& file, const StepOptions& options,
                             const std::string& text, const std::string& origin,
                             const NodeCost& cost) {
  PipelineSetup s;
  s.origin = origin;
  const std::optional<PipelineSpec> spec = parse_pipeline(text, origin);
  if (!spec) throw lang::InternalError("setup of a pipeline without \"pipeline\"");
  s.spec = *spec;
  s.full = build_step_graph(file, options);
  s.batch = s.full.batch;
  const int M = s.spec.micro_batches;
  if (s.batch % M != 0)
    throw lang::UserError(fmt::format("{}: the batch of {} does not split into {} micro-batches",
                                      origin, s.batch, M));
  s.micro_batch = s.batch / M;
  StepOptions mo = options;
  mo.batch = s.micro_batch;
  s.micro = build_step_graph(file, mo);
  const ir::Graph& f = *s.full.step;
  const ir::Graph& m = *s.micro.step;
  if (f.params.size() != m.params.size() || s.full.param_names.size() != s.micro.param_names.size())
    throw lang::UserError(
        "the step of a micro-batch takes other inputs than the step of the batch");
  for (size_t i = 0; i < f.params.size(); ++i) {
    const sem::Type& a = *f.params[i]->type;
    const sem::Type& b = *m.params[i]->type;
    bool ok = a.rank() == b.rank() && a.dtype == b.dtype;
    for (size_t d = 0; ok && d < a.shape.size(); ++d)
      ok = a.shape[d] == b.shape[d] ||
           (d == 0 && a.shape[0] == s.batch && b.shape[0] == s.micro_batch);
    if (!ok || (i < s.full.param_names.size() && a.shape != b.shape))
      throw lang::UserError(
          fmt::format("micro-batching splits the inputs along their first dimension (the batch), "
                      "but '{}' is {} "
                      "with a batch of {} and {} with a micro-batch of {}",
                      f.params[i]->name, a.str(), s.batch, b.str(), s.micro_batch));
  }
  s.inner = parse_strategy(inner_strategy_json(text, origin), m, origin);
  // The stage programs are built and updated by the pipelined runtimes, not by
  // partition_training_step: say what they do not do rather than ignore it.
  if (s.inner.optimizer_shard >= 0 || s.inner.recompute_all || !s.inner.recompute.empty())
    throw lang::UserError(fmt::format(
        "{}: \"optimizer_shard\" and \"recompute\" do not combine with \"pipeline\" yet (the "
        "stages already recompute their forward pass in the backward pass)",
        origin));
  s.program = build_pipeline(m, s.micro.param_names.size(), s.spec, cost);
  s.parts = partition_pipeline(s.program, m, s.inner);
  return s;
}

std::string print_setup(const PipelineSetup& s) {
  return fmt::format("# the step of a micro-batch of {} (batch {}), cut into stages\n",
                     s.micro_batch, s.batch) +
         print_pipeline(s.program, s.parts, s.inner);
}

}  // namespace spora::parallel::pipeline
