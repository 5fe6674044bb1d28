// The per-rank program of a data-parallel training step, as the simulator (sim/train_step.h)
// and the real runner (`spora run-dp`) both see it: one IR graph for forward and backward, the
// trainable parameters and where their gradients are produced, and the optimizer's update.
//
// Which function, which shapes (the contract of `spora sim` and `spora run-dp`):
//   1. The program is lowered from its entry function (`--fn`, default `main`, no parameters)
//      with the module-level constant `batch` (`let batch = 64`; the name is an option) set to
//      the per-rank batch. The program builds its data from `batch`, so every shape that
//      depends on it follows, exactly as the type checker would have it.
//   2. The first reverse-mode derivative the entry takes (`value_and_grad(loss)(net, x, y)`,
//      `grad(...)`, also inside a loop body) is the step: the lowering hands autodiff the
//      forward region of that call, and we capture it (semantics/ad_hooks.h).
//   3. That region is copied into a graph of its own, `sim.step`, whose parameters are what
//      it reads from outside (the differentiated leaves first, then data and constants), its
//      reverse-mode derivative is emitted again there, and the module is optimised with it
//      as the entry (inline, fold, CSE, DCE: what `spora run` executes). The graph returns
//      (loss, gradient of every differentiated leaf...).
//   4. The differentiated leaves are the trainable parameters (the float tensors of the
//      model); their update is the optimizer's (sgd, momentum, adam), emitted as primitive
//      applications per parameter and costed like every other op.
//
// Recomputation (@checkpoint, and StepOptions::recompute, which lowers the named layers' forward
// as @checkpoint graphs): autodiff keeps the call of a checkpointed graph G in the forward and
// differentiates it with a backward graph that recomputes G's forward. After the optimisation
// of step 3, those calls are inlined too (without another CSE round, which would merge the
// recomputation back into the forward), so the step is one straight-line graph that the
// partitioner takes and in which the recomputed ops are ordinary nodes of the backward pass:
// G's intermediates die in the forward pass (activation_peak drops) and are made again
// where the backward needs them (more ops, more compute time).
//
// The op list flattens the optimised graph in execution order: calls of kept graphs
// (@checkpoint, recursion) are expanded, `for_range` with constant bounds repeats its body,
// `if` counts its more expensive branch, `while` and `for_each` count one iteration (noted in
// `warnings`).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "semantics/ir/ir.h"
#include "sim/cost.h"

namespace spora::sim {

struct StepOptions {
  std::string entry = "main";
  std::string batch_name = "batch";
  std::optional<int64_t> batch;  // per-rank batch; unset: the program's own
  std::string optimizer = "sgd";  // sgd | momentum | adam
  double lr = 0.01;
  // Recomputation (a strategy's "recompute", parallel/partition/README.md): the model fields
  // whose forward is recomputed in the backward pass instead of keeping its intermediates
  // ("net.l1"), or with recompute_all every layer (each model-valued field of a differentiated
  // argument, "net.l1", "net.l2", ...). See "Recomputation" above.
  bool recompute_all = false;
  std::vector<std::string> recompute;
};

enum class Phase { Forward, Backward, Update };
std::string_view phase_name(Phase p);  // "forward", "backward", "update"

// One primitive application of the step, in execution order.
struct StepOp {
  const sem::Primitive* prim = nullptr;
  std::vector<sem::TypeP> inputs;
  sem::TypeP output;
  sem::Attrs attrs;
  OpCost cost;
  DType dtype = DType::f32;
  Phase phase = Phase::Forward;
  bool costed = true;  // false: the row has no cost rule (estimated as elementwise)
};

struct StepParam {
  std::string name;  // "net.l1.w", from the record fields it was read through
  sem::TypeP type;
  double bytes = 0;
  int grad_op = -1;  // the op after which its gradient is complete (-1: before any op)
  // The optimizer's update of this parameter (Phase::Update), and how many state tensors of
  // the parameter's size it keeps (momentum 1, adam 2).
  std::vector<StepOp> update;
  int state_tensors = 0;
};

struct StepProgram {
  std::unique_ptr<ir::Module> module;  // owns the graph
  const ir::Graph* step = nullptr;     // (params..., others...) -> (loss, grads...)
  std::vector<StepParam> params;       // the first params.size() parameters of `step`
  int64_t batch = 0;                   // per rank
  std::string loss_type;               // the loss's type, e.g. "f32"
  std::vector<StepOp> ops;             // forward and backward
  double input_bytes = 0;              // the step's non-parameter inputs (the batch)
  double activation_peak = 0;          // bytes: peak of live intermediates (see .cpp)
  std::vector<std::string> warnings;
  std::vector<std::string> recomputed;  // the layers lowered for recomputation (sorted)

  double param_bytes() const;
};

// Throws lang::UserError with a message for people (no `batch` constant, no derivative in the
// entry, a batch that is not positive...), with the lowering's diagnostics in the message.
StepProgram build_step_program(const std::string& path, const StepOptions& options);

// The cost of prim(inputs) -> output from its row; when the row has none (costed = false):
// no device time for effectful and I/O rows (family "io"), else the elementwise estimate.
StepOp make_step_op(const sem::Primitive& prim, std::vector<sem::TypeP> inputs,
                    sem::TypeP output, sem::Attrs attrs, Phase phase);

// The optimizer's update (sgd | momentum | adam) of one parameter of type p as primitive
// applications (Phase::Update); `state` = how many state tensors of p's size it keeps.
std::vector<StepOp> update_ops(const std::string& optimizer, const sem::TypeP& p, int& state);

// Peak bytes of live intermediates of a straight-line graph in node order: an Apply allocates
// its output and frees it after its last use; a view aliases its input; the nodes in
// `gradients` are freed as soon as they are made (counted apart); parameters are not counted.
double activation_peak(const ir::Graph& g, const std::unordered_set<const ir::Node*>& gradients);

}  // namespace spora::sim
