// Pipeline parallelism (parallel/pipeline/README.md): the forward part of a
// training step cut into S stages, each stage's forward and backward programs, and their SPMD
// partitioning inside the stage.
//
//   PipelineSpec spec = *parse_pipeline(json_text, "pp2.json");
//   PipelineProgram p = build_pipeline(*micro_step, trainable, spec);   // f_k, b_k per stage
//   std::vector<PartitionedStage> ps = partition_pipeline(p, inner_strategy);
//
// Strategy JSON: a "pipeline" key next to the usual ones (parallel/partition/strategy.h):
//   "pipeline": {"stages": 2, "micro_batches": 4, "split": ["net.l2"] | "auto",
//                "schedule": "1f1b" | "gpipe"}
// The pipeline axis leads the device mesh: ranks = stages x product("mesh"); rank r is stage
// r / product("mesh") and runs the rest of the strategy (layouts) inside its stage.
//
// Stage assignment (of the nodes the loss depends on, in the step graph's order):
//   1. A trainable parameter's stage is the number of `split` prefixes at or before it in
//      parameter order ("net.l2" starts a stage at the first parameter named net.l2 or
//      net.l2.*). Data inputs, constants and whatever depends only on them are *free*: every
//      stage has the data and recomputes them where used.
//   2. A node's stage is the largest stage of its inputs; a `stage_boundary(x, stage=k)` node
//      (the language's @stage(k)) has at least stage k.
//   3. Checks: exactly one activation (a non-free value) crosses each boundary, produced by
//      the stage just before it; the loss is on the last stage; every stage computes something;
//      a parameter is used on one stage only.
//   "auto" instead: the nodes in order are cut at S-1 places by dynamic programming
//   (best[s][i] = min over j of max(best[s-1][j], cost(j, i])), only where one activation
//   crosses, minimising the most expensive stage (cost: the registry's cost rows via a
//   NodeCost the caller passes; by default a FLOP estimate).
//
// Stage programs (each in a module of its own, straight-line, optimised):
//   f_k(params_k..., [act], data...) -> a_k          (the last stage: the micro-batch's loss)
//   b_k(params_k..., [act], data..., ct) -> ([d act], d params_k...)
// b_k recomputes f_k from its input `act` before running reverse-mode AD over it (GPipe's
// rematerialisation): a stage keeps only the activations it received, never its residuals.
// The last stage's ct is the scalar seed of the loss's gradient (1/M: the step's loss is the
// mean of the micro-batch losses).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallel/partition/partition.h"
#include "parallel/pipeline/schedule.h"
#include "semantics/ir/ir.h"

namespace spora::parallel::pipeline {

struct PipelineSpec {
  int stages = 1;
  int micro_batches = 1;
  bool auto_split = false;
  bool split_given = false;        // the strategy names "split"; without it, a program's
                                   // @stage marks (stage_boundary) decide, else "auto"
  std::vector<std::string> split;  // parameter name prefixes, each starting a stage
  Schedule schedule = Schedule::OneFOneB;
};

// The "pipeline" object of a strategy JSON text; nullopt when the text has none. Throws
// lang::UserError naming `origin` for a malformed one.
std::optional<PipelineSpec> parse_pipeline(const std::string& json_text,
                                           const std::string& origin = "strategy");
// The JSON text without its "pipeline" key: the strategy inside each stage (strategy.h).
std::string inner_strategy_json(const std::string& json_text,
                                const std::string& origin = "strategy");

// The cost of one forward node (for "auto").
using NodeCost = std::function<double(const ir::Node&)>;
double default_node_cost(const ir::Node& n);

struct StageAssignment {
  std::vector<int> stage;                 // per node of the step graph: -1 free or not forward
  std::vector<bool> forward;              // per node: the loss depends on it
  std::vector<const ir::Node*> boundary;  // S-1 activations: boundary[k] leaves stage k
  std::vector<int> param_stage;           // per trainable parameter
  std::vector<double> stage_cost;         // per stage (NodeCost summed)
};

// Throws lang::UserError for a split that does not fit the graph (see above).
StageAssignment assign_stages(const ir::Graph& step, size_t trainable, const PipelineSpec& spec,
                              const NodeCost& cost = default_node_cost);

struct StageProgram {
  int stage = 0;
  std::unique_ptr<ir::Module> forward_module, backward_module;
  ir::Graph* forward = nullptr;
  ir::Graph* backward = nullptr;
  std::vector<size_t> params;  // the step's trainable parameters (indices) this stage owns
  bool takes_activation = false;
};

struct PipelineProgram {
  PipelineSpec spec;
  StageAssignment assignment;
  std::vector<StageProgram> stages;
  std::vector<size_t> data;  // the step's non-trainable parameters (indices), every stage's
};

// The stage programs of a training step (params..., data...) -> (loss, grads...) as
// parallel/step/step_graph.h builds it for one micro-batch.
PipelineProgram build_pipeline(const ir::Graph& step, size_t trainable, const PipelineSpec& spec,
                               const NodeCost& cost = default_node_cost);

// One stage's programs partitioned over the stage's mesh (`inner`, the strategy without the
// pipeline): every rank of stage k runs forward.graph and backward.graph on its shards.
struct PartitionedStage {
  Partitioned forward, backward;
  std::optional<Layout> act_in;       // of the received activation (and of the cotangent sent back)
  std::optional<Layout> act_out;      // of the sent activation (and of the cotangent received)
  std::vector<Layout> param_layouts;  // of StageProgram::params, in order
  // Per parameter: the mesh axes (the data's batch axes) over which backward returns its
  // gradient as partial sums; the runtime adds them over the micro-batches and all-reduces once.
  std::vector<std::vector<int64_t>> grad_partial;
  std::vector<Layout> data_layouts;  // of PipelineProgram::data, in order
};

// The activations between stages keep the batch split of the data: dimension 0 is split like
// the first data input that splits its dimension 0 of the same size (else replicated).
std::vector<PartitionedStage> partition_pipeline(const PipelineProgram& p, const ir::Graph& step,
                                                 const Strategy& inner);

// The stage graphs as text: what `spora ir --stage partitioned` prints for a pipeline.
std::string print_pipeline(const PipelineProgram& p, const std::vector<PartitionedStage>& parts,
                           const Strategy& inner);

}  // namespace spora::parallel::pipeline
