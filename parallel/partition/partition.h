// The SPMD partitioner: a graph of the whole computation plus a strategy
// -> the one program every rank runs, on its local shards, with collectives inserted.
//
//   Partitioned p = partition(*step_graph, strategy);
//   print_module(*p.module);   // @spmd(%w: f32[784,128], ...) with all_reduce(...) nodes
//
// Input: a top-level, straight-line graph (after passes::optimize: no control flow, no calls),
// typically the training step of parallel/step/step_graph.h, (params..., data...) ->
// (loss, grads...).
// The strategy gives a Layout to (some of) the graph's parameters by name, and optionally the
// OpStrategy of some nodes (by their position in g.nodes).
//
// Algorithm:
//   1. Layouts. Parameters take the strategy's layout (replicated if not named); constants are
//      replicated. Each application, in order, takes a strategy:
//        a. the strategy's choice for that node, if any;
//        b. else its row's sharding rule forward(current input layouts) (inputs kept as they
//           are), when the rule accepts them; else forward of the inputs with their partial
//           sums all-reduced, when that is accepted (a pending sum is reduced where a consumer
//           first needs it: the all-reduce after Megatron's row-split matmul; a reshape, being
//           linear, passes it on instead, so a bias gradient reaches the output still partial);
//        c. else the rule's enumerated strategy needing the cheapest redistribution of the
//           current inputs (parallel/layout's comm model; ties: the smaller local share of the
//           work, then the rule's order);
//        d. else (no rule) everything replicated.
//      make_tuple / tuple_get carry their elements' layouts.
//   2. Emission, node by node, into a new module: inputs whose layout differs from what the
//      chosen strategy needs are redistributed first (plan_redistribution; each step becomes a
//      collective primitive: all_gather, shard_slice, all_reduce, reduce_scatter, all_to_all
//      from ops/collective.cpp; one redistribution of a value to a layout is shared by all its
//      consumers). The node is re-emitted with the rule's local_attrs and its type re-inferred
//      from the local input types by the row's shape rule, then checked against the layout's
//      local shape.
//   3. Means over a split dimension. A mean (`mean`; cross_entropy with reduction "mean")
//      whose reduced dimensions are split computes the mean of the local shard; its output is
//      partial, and the partial terms must be shard_sum / global_count. The local result is
//      multiplied by the strategy's output_scale (local_count / global_count when a bare
//      forward result does not carry one).
//   4. Outputs. The graph's output tuple is returned in the declared layouts: each element
//      replicated unless `output_layouts` says otherwise (the step's caller declares the loss
//      replicated and each gradient in its parameter's layout); partial sums left at the end
//      are all-reduced here.
// Every rank runs the same program: rank-dependent behaviour is only inside the collective
// and shard_slice kernels.
//
// Errors (lang::UserError): a layout that does not fit its tensor (a dimension that does not
// split evenly), a parameter named by the strategy that the graph lacks, control flow.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallel/layout/layout.h"
#include "parallel/sharding/sharding.h"
#include "semantics/ir/ir.h"

namespace spora::parallel {

struct Strategy {
  Mesh mesh;
  std::map<std::string, Layout> layouts;  // graph parameter name -> layout
  std::map<size_t, OpStrategy> ops;       // index in g.nodes -> the node's strategy
  // ZeRO-1 (README.md, "optimizer_shard"): the mesh axis the optimizer state is sharded over,
  // -1 for none. Only partition_training_step reads it (optimizer_shards below).
  int optimizer_shard = -1;
  // Recomputation (README.md, "recompute"): every layer, or these ("net.l1"). It changes how
  // the step is built, so the step's builder reads it (parallel/step/step_graph.h, StepOptions).
  bool recompute_all = false;
  std::vector<std::string> recompute;
  // The file it was read from and its text (parse_strategy), for errors found after parsing
  // (check_ranks); empty for a strategy built in code.
  std::string origin, source;
};

// ZeRO-1's choice for one trainable parameter of a training step: its gradient comes back
// reduce-scattered (split along `dim` over the strategy's optimizer_shard axis), the optimizer
// updates that shard with state of the shard's size, and the updated shard is all-gathered
// into the parameter (the caller's part: backends/distributed/train_step.h, sim/spmd_step.h).
struct OptimizerShard {
  int dim = -1;        // -1: the parameter's update stays whole (replicated)
  std::string reason;  // why it stays whole, for --verbose ("already split over dp", ...)
};

struct PartitionOptions {
  // Layouts of the output tuple's elements (or of the single output); missing entries are
  // replicated.
  std::vector<std::optional<Layout>> output_layouts;
  CommModel comm;  // prices the redistributions in step 1c
};

struct Partitioned {
  std::unique_ptr<ir::Module> module;  // module->entry is the per-rank graph "spmd"
  ir::Graph* graph = nullptr;
  std::vector<Layout> param_layouts;   // of each parameter of the input graph
  std::vector<Layout> output_layouts;  // of each returned element
  int collectives = 0;                 // collective applications inserted
  // partition_training_step with an optimizer_shard axis: one per trainable parameter.
  std::vector<OptimizerShard> optimizer_shards;
  // The strategy each application ran with (step 1), by its index in the input graph's nodes:
  // what `spora search --evaluate` prices in the analytic oracle (search::assignment_of).
  std::map<size_t, OpStrategy> strategies;
};

Partitioned partition(const ir::Graph& g, const Strategy& s, const PartitionOptions& o = {});

// A training step (params..., data...) -> (loss, gradients of the first `trainable`
// parameters...), as parallel/step/step_graph.h builds it: the loss comes back replicated and
// each gradient in its parameter's layout, or with the strategy's optimizer_shard (ZeRO-1) in
// that layout split further along optimizer_shards(...)'s dim over that axis (a reduce_scatter
// instead of the all_reduce of data parallelism). What `spora train-step --strategy`, `spora
// sim --strategy`, `spora search` and `spora ir --stage partitioned` all partition.
Partitioned partition_training_step(const ir::Graph& step, std::size_t trainable,
                                    const Strategy& s);

// ZeRO-1: for each of the first `trainable` parameters of `step`, the dimension its optimizer
// update is split along over s.optimizer_shard: the first dimension that the parameter's
// layout does not split and whose size the axis divides, when the parameter is replicated
// over that axis (else none, with the reason). Empty when s.optimizer_shard < 0.
std::vector<OptimizerShard> optimizer_shards(const ir::Graph& step, std::size_t trainable,
                                             const Strategy& s);

// The collectives of a partitioned graph in order, one line each, e.g.
// "all_reduce(axes=[1]) f32[8,32]": what the tests and `spora ir --stage partitioned` check.
std::vector<std::string> collective_summary(const ir::Graph& g);

}  // namespace spora::parallel
