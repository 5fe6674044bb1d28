// The per-rank program of a training step as the simulator sees it (sim/train_step.h,
// sim/spmd_step.h): the step graph of parallel/step/step_graph.h (forward and backward in one
// graph, the trainable parameters, where their gradients are produced; how it is built, with
// batch and recomputation, is described there) flattened to an op list with the cost of every
// op (semantics/cost.h), and the optimizer's update (sgd, momentum, adam) of every parameter
// emitted as primitive applications and costed like every other op. `spora run-dp` runs the same
// program for real.
//
// The op list flattens the optimised graph in execution order: calls of kept graphs
// (@checkpoint, recursion) are expanded, `for_range` with constant bounds repeats its body,
// `if` counts its more expensive branch, `while` and `for_each` count one iteration (noted in
// `warnings`). With recomputation (parallel/step/step_graph.h, "Recomputation") the recomputed
// ops are ordinary ops of the backward pass: activation_peak drops, the compute grows.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "parallel/step/step_graph.h"
#include "semantics/cost.h"
#include "semantics/ir/ir.h"

namespace spora::sim {

enum class Phase { Forward, Backward, Update };
std::string_view phase_name(Phase p);  // "forward", "backward", "update"

// How the optimizer's update of a parameter runs:
//   Ops    one kernel per primitive, update_ops' list: the update `spora train-step` runs
//          (backends/distributed/train_step.cpp, optimizer_update), 12 kernels for adam
//   Fused  one kernel: a single pass that reads the parameter, its gradient and its state and
//          writes the parameter and its state (sgd 3, momentum 5, adam 7 tensors of the
//          parameter's size), as `spora run` runs std.optim's update (the fusion pass makes it
//          one group, semantics/passes/fusion.h) and as fused optimizers do (apex FusedAdam,
//          torch.optim.Adam(fused=True))
enum class UpdateKernel { Ops, Fused };
std::string_view update_kernel_name(UpdateKernel k);     // "ops", "fused"
UpdateKernel parse_update_kernel(const std::string& s);  // throws lang::UserError

// A tensor of the step by its id (sim/reuse.h) and size.
struct TensorRef {
  int id = -1;
  double bytes = 0;
};

// One primitive application of the step, in execution order.
struct StepOp {
  const sem::Primitive* prim = nullptr;
  std::vector<sem::TypeP> inputs;
  sem::TypeP output;
  sem::Attrs attrs;
  sem::OpCost cost;
  DType dtype = DType::f32;
  Phase phase = Phase::Forward;
  bool costed = true;  // false: the row has no cost rule (estimated as elementwise)
  // The tensors it reads and writes (sim/reuse.h); empty where the dataflow is not known.
  std::vector<TensorRef> reads, writes;
  // The name reports give it when it is not prim's (a fused update: "fused_adam").
  std::string label;

  std::string_view name() const { return label.empty() ? std::string_view(prim->name) : label; }
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

// The step graph (module, step, param_names, batch, loss_type, recomputed) with its costed ops.
struct StepProgram : parallel::StepGraph {
  std::vector<StepParam> params;  // the first params.size() parameters of `step`
  std::vector<StepOp> ops;        // forward and backward
  double input_bytes = 0;         // the step's non-parameter inputs (the batch)
  double activation_peak = 0;     // bytes: peak of live intermediates (see .cpp)
  std::vector<std::string> warnings;

  double param_bytes() const;
};

// parallel::build_step_graph, then the op list and the parameters' updates. Throws
// lang::UserError as it does (options.batch: here the per-rank batch of a data-parallel step,
// or the global batch of a step to be partitioned).
StepProgram build_step_program(const std::string& path, const parallel::StepOptions& options,
                               UpdateKernel update = UpdateKernel::Ops);

// The cost of prim(inputs) -> output from its row; when the row has none (costed = false):
// no device time for effectful and I/O rows (family "io"), else the elementwise estimate.
StepOp make_step_op(const sem::Primitive& prim, std::vector<sem::TypeP> inputs,
                    sem::TypeP output, sem::Attrs attrs, Phase phase);

// The optimizer's update (sgd | momentum | adam) of one parameter of type p as primitive
// applications (Phase::Update), or with UpdateKernel::Fused as one op labelled "fused_<name>"
// whose FLOPs are the applications' and whose bytes are the tensors it reads and writes;
// `state` = how many state tensors of p's size it keeps.
std::vector<StepOp> update_ops(const std::string& optimizer, const sem::TypeP& p, int& state,
                               UpdateKernel kernel = UpdateKernel::Ops);

// Peak bytes of live intermediates of a straight-line graph in node order: an Apply allocates
// its output and frees it after its last use; a view aliases its input; the nodes in
// `gradients` are freed as soon as they are made (counted apart); parameters are not counted.
double activation_peak(const ir::Graph& g, const std::unordered_set<const ir::Node*>& gradients);
// The same walk, the gradients either freed as made (activation_peak) or kept live to the end:
// at the moment live intermediates plus kept gradients peak, how much of each.
struct LivePeak {
  double intermediates = 0, gradients = 0;
};
LivePeak live_peak(const ir::Graph& g, const std::unordered_set<const ir::Node*>& gradients,
                   bool keep_gradients);

// The cost rows of one application, FLOPs + bytes (make_step_op; 0 for what is not an
// application of a typed primitive): what a pipeline's "split": "auto" balances
// (parallel::pipeline::NodeCost, passed to the stage split by `spora sim`, `spora search` and
// `spora train-step`).
double node_cost(const ir::Node& n);

}  // namespace spora::sim
