// The cost graph of a real training step (the IR graph `StepGraph.step` of
// parallel/step/step_graph.h: (params..., data...) -> (loss, grads...)) on a device mesh, for
// the searches of cost_graph.h.
//
//   nodes   one per graph parameter: candidates = every layout of its tensor on the mesh
//           (replicated, and each way to give mesh axes to divisible dimensions); memory = its
//           shard, times (weight + gradient + optimizer states) for a trainable parameter;
//           cost = a trainable parameter's optimizer update of its shard (3 + 2 x states
//           passes over it at memory bandwidth)
//           one per primitive application: candidates = its row's sharding facet
//           (ShardingRule::enumerate; only the replicated strategy when the row has none);
//           cost = the row's cost facet scaled by local_flops_fraction through a roofline,
//           max(flops / peak, bytes / bandwidth) + launch; memory = its output shard
//   edges   producer -> consumer for every tensor an application reads: the seconds of
//           plan_redistribution(producer's output layout, the layout this strategy wants);
//           a tensor with several consumers goes through a fan-out node (candidates: the
//           layouts it is delivered in), so that one redistribution serves them all as in the
//           partitioner. The step's output tuple takes the loss replicated and each gradient
//           through its gradient -> parameter edge (not replicated)
//           gradient -> parameter: the step's i-th gradient goes to the i-th parameter's node,
//           costed as the redistribution of the gradient into the parameter's layout. This is
//           where data parallelism pays: a gradient that is partial over a mesh axis (batch
//           split) needs its all-reduce (or a reduce-scatter for a sharded parameter).
// Constants, calls of kept graphs and non-tensor values get no node: their edges are free.
// A redistribution that cannot exist (a partial sum asked to split back) costs `forbidden`.
//
// The device numbers live in DeviceModel so that parallel/ never includes the simulator:
// tools/ fills it from a cluster spec (peak FLOP/s of the step's dtype, memory bandwidth,
// launch overhead, and per mesh axis the alpha-beta of the links that axis crosses).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parallel/layout/layout.h"
#include "parallel/search/cost_graph.h"
#include "parallel/search/rec.h"
#include "parallel/sharding/sharding.h"
#include "semantics/ir/ir.h"

namespace spora::parallel::search {

struct DeviceModel {
  double peak_flops = 100e12;      // FLOP/s
  double memory_bandwidth = 1e12;  // bytes/s
  double launch_overhead = 0;      // seconds per primitive application
  CommModel comm;                  // per mesh axis
  double forbidden = 1e6;          // seconds for an impossible redistribution
  // The seconds of one application's local work (its cost facet's FLOPs and bytes times the
  // strategy's local_flops_fraction, its op class, its compute dtype), when set. tools/ set it
  // to the simulator's cost model (sim/cost_model.h: per-class efficiencies and launch
  // overheads, the matmul dtype's peak), so that the analytic oracle prices compute as the
  // simulator that re-ranks its picks does; unset, the roofline of the numbers above.
  std::function<double(double flops, double bytes, const std::string& op_class, DType dtype)>
      op_seconds;
  // The seconds of a trainable parameter's optimizer update on a device holding `shard` (its
  // local type), when set: tools/ set it to the simulator's update ops (sim::update_ops, each
  // primitive with its launch overhead: adam on a small tensor is launch-bound, 12 launches);
  // unset, the memory-bound passes described above.
  std::function<double(const sem::TypeP& shard)> update_seconds;
  // Bytes per element of a redistribution relative to the IR's dtype: 0.5 when an f32 program
  // stands for mixed precision's f16 activations (the GPT study halves every collective).
  double comm_bytes_scale = 1;
  // The linear operators' candidates with partial inputs (DimSpec::linear); false drops them
  // (an ablation: the search as it was before they existed).
  bool pass_partial_sums = true;
  // Fan-out nodes for tensors with several consumers (above); false: one edge per consumer.
  bool fanout_nodes = true;
  // true: the step's output tuple wants every gradient replicated (make_tuple's rule), as the
  // graph was built before the gradients were priced through their parameters only.
  bool output_tuple_replicated = false;
};

// The graph sharding propagation (search_propagate, propagate_from_annotations) was tuned on:
// no fan-out nodes, no partial inputs, the output tuple wanting replicated gradients. Its greedy
// breadth-first choices lean on those replicated pulls: on the exact graph it wanders into
// batch slices and all-to-alls on tests/parallel/mlp_megatron.sp instead of Megatron's layouts
// (a known limit; the dynamic programming uses the exact graph).
DeviceModel propagation_device(DeviceModel d);

struct StepCostGraph {
  CostGraph graph;
  Mesh mesh;
  struct Origin {
    const ir::Node* node = nullptr;
    std::string name;  // parameter name, or "<prim>#<index>"
    bool is_param = false;
    bool trainable = false;
    bool fanout = false;  // a tensor read by several consumers (node: its producer): layouts
    std::vector<Layout> layouts;         // parameters and fan-outs: per candidate
    std::vector<OpStrategy> strategies;  // applications: per candidate
  };
  std::vector<Origin> origins;  // per cost-graph node
};

// `param_names`: names of the step's parameters, in order (the first `trainable` are the
// model's parameters, whose gradients the step returns after the loss); missing names become
// "arg<i>". `state_tensors`: optimizer state tensors per parameter (momentum 1, adam 2).
StepCostGraph build_step_cost_graph(const ir::Graph& step,
                                    const std::vector<std::string>& param_names, int trainable,
                                    int state_tensors, const Mesh& mesh, const DeviceModel& device);

// search_dp, first without the memory limit (when top_k is 1): the cheapest assignment
// regardless of memory is the answer when it fits, and carrying memory as a second label
// (Pareto cells of cost and memory) is what makes dp slow on a step's graph (a GPT block under
// a stage's share of 80 GB: up to two minutes instead of a second). Only when it does not fit,
// search_dp under the limit.
SearchResult search_dp_fitting(const CostGraph& g, const SearchOptions& o);

// dp (search_dp_fitting) on the step's cost graph `g`, with a second start: dp on the same step's
// graph without the linear operators' partial inputs (`without`, built with
// pass_partial_sums = false: fewer candidates, and dp's cutset conditioning leaves less to its
// greedy fallback), its pick carried over to `g` by candidate name and polished by coordinate
// descent there. The cheaper of the two comes first (the result's notes say which). On the GPT
// block (18.4B, t = 8) dp alone priced its pick 0.7% above the second start's.
SearchResult search_dp_two_starts(const StepCostGraph& g, const StepCostGraph& without,
                                  const SearchOptions& o);

// Every layout of a tensor of this shape on the mesh (replicated first): each mesh axis of more
// than one device splits at most one dimension, that divides by it.
std::vector<Layout> enumerate_layouts(const std::vector<int64_t>& shape, const Mesh& mesh);

// The strategy file of the partitioner: {"mesh": [2, 2], "layouts": {"<param>": "(1, 2)", ...},
// "ops": {"<prim>#<i>": "<strategy name>", ...}} with MindSpore partition numbers per dim.
std::string strategy_json(const StepCostGraph& g, const Assignment& a);

// Semi-auto parallelism (sharding propagation from user annotations).
// The step's shard_hint applications (`shard(x, (2, 1))`, `shard=` in the source;
// ops/annotation.cpp) have one candidate each, their pinned layout: as SearchOptions::fixed entries
// they are the seeds of search_propagate. Empty when the program has no annotation.
std::map<int, int> annotation_pins(const StepCostGraph& g);

// Sharding propagation from the annotations (plus `fixed`, e.g. from --fix): the strategy file
// of the best assignment's parameter and input layouts (no "ops": the partitioner propagates
// the operators' strategies from these layouts). Without any annotation or fixed node,
// propagation seeds itself at the heaviest operator (search_propagate).
std::string propagate_from_annotations(const StepCostGraph& g, std::map<int, int> fixed = {});

// The assignment of a strategy as the partitioner ran it: each parameter in its layout
// (`param_layouts`, per step parameter, as Partitioned::param_layouts) and each application in
// the strategy the partitioner chose for it (Partitioned::strategies, by index in step.nodes),
// matched to the cost graph's candidates by input and output layouts. An application whose
// strategy is not a candidate (a bare forward result the rule does not enumerate) takes the
// candidate with its output layout and the fewest differing inputs; it is listed in
// `unmatched` (node name and the partitioner's layouts). `spora search --evaluate`.
Assignment assignment_of(const StepCostGraph& g, const ir::Graph& step,
                         const std::vector<Layout>& param_layouts,
                         const std::map<size_t, OpStrategy>& strategies,
                         std::vector<std::string>* unmatched = nullptr);

// The analytic step of an assignment term by term, largest first: "node <name> [<candidate>]"
// (compute, a parameter's update) and "edge <from> -> <to>" (a redistribution), with the totals
// of both kinds. What `spora search --explain` prints.
struct CostTerm {
  double seconds = 0;
  std::string what;
};
struct CostTerms {
  double nodes = 0, edges = 0;
  std::vector<CostTerm> terms;  // largest first; edges of zero cost left out
};
CostTerms cost_terms(const StepCostGraph& g, const Assignment& a);

// One line per parameter: "name (1, 2)".
std::vector<std::string> parameter_layouts(const StepCostGraph& g, const Assignment& a);

// Recursive programming on a real step: the forward operators (up to the loss, as MindSpore's
// rec_core searches the forward graph) as a RecGraph. The iteration dimensions of an operator
// are read off its sharding facet on a 1-D mesh of 2 devices: each non-replicated strategy
// splits one index space (a label: matmul's m, n or k, a batch dim...), whose dimensions are
// the ones its layouts split, summed over when its output is partial. Tensor dims that no
// strategy splits are not iteration dims (their size goes into element_bytes).
struct StepRecGraph {
  RecGraph graph;
  struct ParamUse {
    std::string name;
    int op = -1;            // the first forward operator reading it
    std::vector<int> dims;  // per tensor dim: that operator's iteration dim, or -1
  };
  std::vector<ParamUse> params;  // trainable parameters and data inputs, in step order
};
StepRecGraph build_step_rec_graph(const ir::Graph& step,
                                  const std::vector<std::string>& param_names, int trainable);
// "name (c0, c1)" per parameter from a rec result (cuts of the dims; 1 for unsplit dims).
std::vector<std::string> rec_parameter_layouts(const StepRecGraph& g, const RecResult& r);
// The strategy file for a rec result: a 1-D mesh of all the devices (the cuts of one tensor may
// need more than one axis of a 2-D mesh) and each parameter's partition numbers.
std::string rec_strategy_json(const StepRecGraph& g, const RecResult& r, int64_t devices);

}  // namespace spora::parallel::search
