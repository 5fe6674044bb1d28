// The training step of a program as one IR graph, as the simulator (sim/step_program.h) and
// real execution (the training-step harness, backends/distributed/train_step.h) both take it:
// forward and backward in one graph, the trainable parameters, where their gradients come out.
//
// Which function, which shapes (the contract of `spora sim`, `spora train-step`, `spora search`):
//   1. The program is lowered from its entry function (`--fn`, default `main`, no parameters)
//      with the module-level constant `batch` (`let batch = 64`; the name is an option) set to
//      StepOptions::batch (the simulator's data-parallel step: the per-rank batch; a step to be
//      partitioned: the global batch). The program builds its data from `batch`, so every shape
//      that depends on it follows, exactly as the type checker would have it.
//   2. The first reverse-mode derivative the entry takes (`value_and_grad(loss)(net, x, y)`,
//      `grad(...)`, also inside a loop body) is the step: the lowering hands autodiff the
//      forward region of that call, and we capture it (semantics/ad_hooks.h).
//   3. That region is copied into a graph of its own, `step`, whose parameters are what
//      it reads from outside (the differentiated leaves first, then data and constants), its
//      reverse-mode derivative is emitted again there, and the module is optimised with it
//      as the entry (inline, fold, CSE, DCE: what `spora run` executes). The graph returns
//      (loss, gradient of every differentiated leaf...).
//   4. The differentiated leaves are the trainable parameters (the float tensors of the
//      model). Their update (sgd, momentum, adam) is not in the graph: the simulator costs it
//      (sim::update_ops), the harness runs it (distributed::optimizer_update).
//
// Recomputation (@checkpoint, and StepOptions::recompute, which lowers the named layers' forward
// as @checkpoint graphs): autodiff keeps the call of a checkpointed graph G in the forward and
// differentiates it with a backward graph that recomputes G's forward. After the optimisation
// of step 3, those calls are inlined too (without another CSE round, which would merge the
// recomputation back into the forward), so the step is one straight-line graph that the
// partitioner takes and in which the recomputed ops are ordinary nodes of the backward pass:
// G's intermediates die in the forward pass and are made again where the backward needs them.
//
// Building a step swaps the process-wide autodiff hook for the lowering's duration: two threads
// must not build at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "semantics/ad_hooks.h"
#include "semantics/ir/ir.h"

namespace spora::parallel {

struct StepOptions {
  std::string entry = "main";
  std::string batch_name = "batch";
  std::optional<int64_t> batch;  // the value of the batch constant; unset: the program's own
  // What the batch constant is for, said when the program has none.
  std::string batch_use = "the simulator sets it to the per-rank batch";
  // The optimizer the step trains with (sgd | momentum | adam): checked here, its update is the
  // consumer's (see 4. above); lr likewise.
  std::string optimizer = "sgd";
  double lr = 0.01;
  // Recomputation (a strategy's "recompute", parallel/partition/README.md): the model fields
  // whose forward is recomputed in the backward pass instead of keeping its intermediates
  // ("net.l1"), or with recompute_all every layer (each model-valued field of a differentiated
  // argument, "net.l1", "net.l2", ...). See "Recomputation" above.
  bool recompute_all = false;
  std::vector<std::string> recompute;
};

struct StepGraph {
  std::unique_ptr<ir::Module> module;  // owns the graph
  const ir::Graph* step = nullptr;     // (params..., others...) -> (loss, grads...)
  // The trainable parameters' names ("net.l1.w", from the record fields they were read
  // through): the first param_names.size() parameters of `step`, in order.
  std::vector<std::string> param_names;
  int64_t batch = 0;                    // the batch constant's value
  std::string loss_type;                // the loss's type, e.g. "f32"
  std::vector<std::string> recomputed;  // the layers lowered for recomputation (sorted)
};

// Throws lang::UserError with a message for people (no `batch` constant, no derivative in the
// entry, a batch that is not positive, an unknown optimizer...), with the lowering's
// diagnostics in the message.
StepGraph build_step_graph(const std::string& path, const StepOptions& options);

// A reverse-mode region as the lowering hands it to autodiff (semantics/ad_hooks.h): its nodes,
// the differentiated leaves, the differentiated output.
struct StepRegion {
  std::vector<ir::Node*> region, inputs;
  ir::Node* output = nullptr;
};
using ReverseHook = decltype(sem::AutodiffHooks::reverse);

// Step 3 above: copies the region into a new top-level graph `name` of m, (leaves...,
// externals...) -> (output, gradient of every leaf...), differentiated there with `reverse`.
// leaf_names receives the leaves' names; `externals` (if given) the nodes from outside the
// region that became the parameters after the leaves, in order (constants are copied). Throws
// lang::UserError for what a step cannot take (a graph read from outside, a non-tensor value).
ir::Graph* copy_step_region(ir::Module& m, const StepRegion& region, const ReverseHook& reverse,
                            const std::string& name, std::vector<std::string>& leaf_names,
                            std::vector<ir::Node*>* externals = nullptr);

}  // namespace spora::parallel
