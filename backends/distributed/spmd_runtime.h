// The distributed runtime: every rank runs the user's own program (graph mode, the module
// `spora run` compiles) on its shards of the values, and the ranks together compute what one
// device computes (MindSpore's one expression for one device
// and for many, PyTorch's DTensor).
//
//   SpmdRuntime rt(world, plan);   // plan: a mesh, parameter layouts, the data-parallel axis
//   rt.install();                  // hooks the interpreter (semantics/interpreter.h)
//   sem::Interpreter(module).call(module.entry, {});   // main(), on every rank
//
// How a run stays one program:
//   1. Placement. Every tensor this rank holds has a layout (parallel/layout: each dimension cut
//      over a mesh axis or whole, partial sums pending over some axes), kept in a table by its
//      buffer and shape while the buffer lives; a tensor not in the table is whole, as on one
//      device.
//   2. Sources of shards.
//      - Data: the tensors each batch of `batches(...)` / `fashion_mnist(...)` yields are cut
//        along dimension 0 over the data-parallel axis: rank r (coordinate r on that axis)
//        holds rows [r B/p, (r+1) B/p) of the same global batch that one device would see
//        (same order, same seed), and reads only those rows (the dataset gathers this rank's
//        shard, runtime/data/dataset.h set_shard). A batch the axis does not divide (a short
//        last batch) is read whole on every rank and stays whole.
//      - Parameters: before the passes, pin_parameters wraps every record field at a path the
//        plan names ("net.l1.w" names path l1.w) in shard_hint (parallel/partition/
//        pin_fields.h): wherever the program builds its model, its gradients or its optimizer
//        state, the hint cuts a whole tensor to its layout locally (every rank initialised it
//        alike, so no message is sent) and leaves a cut one alone, so parameters and state
//        stay sharded for the whole run. The record `load` returns is placed the same way.
//        Every model the program constructs is such a record, even one built and used in
//        straight-line code (configure_recompute sets LowerOptions::materialize_models).
//      - Annotations: shard(x, ...) (shard_hint) pins its layout, as in the partitioner.
//   3. Propagation. A primitive whose inputs are all whole runs as on one device. Otherwise its
//      strategy is chosen as the partitioner chooses it (parallel/partition/node_strategy.h:
//      the row's forward rule, partial sums reduced where first needed, else the cheapest
//      enumerated strategy, else replicated), its inputs are redistributed with the collective
//      primitives (all_gather, all_reduce, reduce_scatter, all_to_all, shard_slice), the row's
//      kernel runs with the rule's local attributes, a mean over a cut dimension is rescaled,
//      and the result takes the strategy's output layout. The choice is cached per node and
//      input placements; a redistributed value is cached for the life of its source, so a
//      gradient used twice is all-reduced once.
//   4. The host sees whole values: conditions and loop bounds (semantics/interpreter.h's host
//      value hook) and the inputs of effects are made whole on every rank first (the same
//      collectives on every rank, in program order, so no rank waits forever).
//   5. One output. print, report, log_epoch, save_curves, save, save_idx, save_npy run on rank
//      0 only (every rank with `tag_all_ranks`); a progress bar is drawn by rank 0 only. A
//      checkpoint is written once, by rank 0, from whole tensors: the same file one device
//      writes, so a model trained on 4 ranks loads on 1 and the reverse.
//   6. ZeRO (DeepSpeed's stages, PyTorch's FSDP). With a stage, every tensor field of a model
//      record (a parameter, a gradient, a piece of optimizer state: the records of the same
//      model type the program builds) is placed in its layout split once more over the ZeRO axis
//      (the first dimension the layout leaves whole that the axis divides; a tensor with none
//      keeps its layout) and marked as a ZeRO shard. An elementwise primitive whose ZeRO inputs
//      share one layout and the output's shape (the optimizer's update) runs on the shards, and
//      its result is a ZeRO shard: the state is updated in place on 1/p of it, and a partial
//      gradient meets its shard by a reduce_scatter. Any other use gathers the input over the
//      axis first. The stages differ in when gradients are cut and how long a gathered
//      parameter lives:
//        1  gradients are reduce-scattered where the program builds its gradient record (after
//           the backward pass: every whole local gradient lives until then, as in ZeRO-1's
//           gradient buffer); a gathered parameter is kept while its shard lives (one
//           all_gather per parameter and step, whole parameters in memory as in ZeRO-1);
//        2  as 1, but each gradient is reduce-scattered as soon as it is computed (the hint
//           follows its definition), so whole gradients do not accumulate;
//        3  as 2, and a gathered parameter is not kept: every use gathers it again (forward and
//           backward) and it is freed after the primitive, so only 1/p of each parameter
//           stays in memory between uses.
//   7. Recomputation. A plan's recompute layers are lowered as @checkpoint (semantics/lower.h
//      LowerOptions::recompute, the same hook the training-step builder uses): inside a
//      function being differentiated, the forward of the model field at that path ("net.l1")
//      is its own graph, run again in the backward pass instead of keeping its intermediates.
//      A name that is no layer the program differentiates is an error listing the layers.
//   8. Sequence parallelism (Megatron-LM's, Korthikanti et al. 2022). A pending partial sum over
//      sp_axis (a row-parallel projection's output) that reaches an elementwise primitive, a
//      layer_norm or layer_norm_grad (not normalising sp_dim) or a dropout is reduce-scattered
//      onto dimension sp_dim (the sequence) instead of all-reduced, so the bias, residual add,
//      dropout and layer norm run on sequence shards; the next column-parallel projection
//      gathers its input over the axis (the propagation's cheapest strategy), as Megatron's
//      sequence parallelism does.
//   9. Pipeline stages (GPipe, 1F1B; a strategy's "pipeline" key, parallel/pipeline/pipeline.h).
//      The mesh is the pipeline axis "pp" of S stages followed by the stage's mesh. The program's
//      training step (its first value_and_grad) is compiled as a call of its own
//      (program_pipeline.h); that call runs as the pipeline's schedule: the batch cut into M
//      micro-batches, each stage's forward and backward programs on this rank's stage
//      (stage_runner.h), activations and their cotangents sent between stages, the loss (the
//      mean of the micro-batch losses) made whole on every rank. (A short last batch has a type of
//      its own, so the lowering makes another copy of the loop body for it, whose derivative is
//      not the captured step: it runs as any other code, on every rank, owned values fetched.)
//      A parameter, its gradient and whatever the program computes from them elementwise (the
//      optimizer's state and update) are *owned* by the parameter's stage: only that stage's ranks
//      hold them (in the stage's layout), the others hold an empty placeholder and skip the update.
//      Any other use of an owned value (an evaluation pass, print, save) gets it from its stage
//      first (an all-reduce over the pp axis, the other stages adding zeros), kept while the value
//      lives.
// Every rank runs the same primitives in the same order; only the collectives and shard_slice
// depend on the rank. The collective primitives read the communicator and mesh of the
// calling thread's collective context (backends/comm/collective_context.h), which the caller
// sets.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "parallel/layout/layout.h"
#include "semantics/ir/ir.h"
#include "semantics/lower.h"
#include "semantics/value.h"

namespace spora::comm {
class Communicator;
}
namespace spora::parallel::pipeline {
struct PipelineSetup;
}
namespace spora::runtime {
class RunProfiler;
}

namespace spora::distributed {

// What a run shards: the mesh (its size is the number of ranks), parameter layouts by name
// (layout text, parsed against each tensor's rank when it is placed), the data-parallel axis.
struct SpmdPlan {
  parallel::Mesh mesh;
  std::map<std::string, std::string> params;  // "net.l1.w" -> "[-, tp]" or "(1, 4)"
  int data_axis = -1;                         // mesh axis cutting each batch's dim 0; -1: none
  // ZeRO (step 6): 0 off; 1 optimizer state, 2 and gradients, 3 and parameters sharded over
  // zero_axis.
  int zero_stage = 0;
  int zero_axis = -1;
  // Recomputation (step 7): every layer (one level below a differentiated argument), or these
  // ("net.l1").
  bool recompute_all = false;
  std::vector<std::string> recompute;
  // Sequence parallelism (step 8): activations' dimension sp_dim cut over sp_axis where a
  // row-parallel result meets layer norm, dropout and residual adds; -1: off.
  int sp_axis = -1;
  int sp_dim = 1;
  // Pipeline (step 9): the strategy's JSON text when it has "pipeline"; stages on mesh axis 0.
  std::string pipeline;
  int stages = 1;
  bool tag_all_ranks = false;                 // every rank prints (mpirun --tag-output)
  std::string origin = "strategy";            // where the plan came from, for errors
};

// Counters of a run (for --stats and the tests).
struct SpmdStats {
  int64_t sharded_applications = 0;  // primitives run on shards (not all inputs whole)
  int64_t collectives = 0;           // collective steps run (all_gather, all_reduce, ...)
  int64_t collective_bytes = 0;      // bytes of the local inputs of those steps
  // By collective primitive (all_reduce, reduce_scatter, ...): steps run and their input bytes.
  std::map<std::string, std::pair<int64_t, int64_t>> by_collective;
  int64_t placed_parameters = 0;     // tensors cut to a plan (or ZeRO) layout when placed
  int64_t sharded_batches = 0;       // batches cut over the data-parallel axis
  int64_t whole_batches = 0;         // batches the data-parallel axis did not divide
  int64_t held_cuts = 0;             // values a loss reads without differentiating them, cut
                                     // where it reads them (batch_cut.h; per site in the code)
  int64_t pipeline_steps = 0;        // steps run as a pipeline's schedule (step 9)
  int64_t fused_on_shards = 0;       // fused kernels run with a sharded anchor input
  int64_t fused_local = 0;           // fused kernels run on this rank's shards (their shapes)
  int64_t owned_fetches = 0;         // owned values got from their stage for another use
};

// Writes the plan's parameter layouts (and with ZeRO, every model field) into the program
// (parallel/partition/pin_fields.h): call on the compiled module before the passes. Returns the
// hints inserted. ZeRO with nothing to place is a UserError.
int pin_plan(ir::Module& m, const SpmdPlan& plan);

// Step 7: sets options.recompute for the plan's layers (nothing without any), and
// options.materialize_models (every model record a node, for pin_plan). After the lowering,
// check_recompute throws a UserError for a name no layer matched.
struct RecomputeChoice {
  std::set<std::string> layers, chosen;  // every layer seen; the ones recomputed
};
void configure_recompute(const SpmdPlan& plan, sem::LowerOptions& options,
                         std::shared_ptr<RecomputeChoice> seen);
void check_recompute(const SpmdPlan& plan, const RecomputeChoice& seen);

class SpmdRuntime {
 public:
  SpmdRuntime(comm::Communicator& world, SpmdPlan plan);
  ~SpmdRuntime();  // uninstalls the hooks
  SpmdRuntime(const SpmdRuntime&) = delete;
  SpmdRuntime& operator=(const SpmdRuntime&) = delete;

  // pin_plan(m, plan()).
  int pin_parameters(ir::Module& m) const;
  // Step 9: the pipeline's setup for the program (program_pipeline.h), before install().
  void set_pipeline(std::shared_ptr<const parallel::pipeline::PipelineSetup> setup);
  // --profile: a pipeline's stage passes and receives as spans of this run's timeline (null:
  // none).
  void set_profiler(runtime::RunProfiler* profiler);
  // Hooks the interpreter (process-wide) until destroyed.
  void install();
  int rank() const;
  const SpmdPlan& plan() const { return plan_; }
  const SpmdStats& stats() const { return stats_; }
  void note_batch_cuts(int sites) { stats_.held_cuts += sites; }  // BatchCut::hinted()

  // The whole value of v (tensors gathered and reduced; tuples and records element by
  // element): every rank must call it for the same value.
  sem::Value whole(const sem::Value& v);
  // The layout a placement id stands for (0: whole).
  parallel::Layout layout_of(const sem::Value& v) const;

  struct Impl;

 private:
  SpmdPlan plan_;
  SpmdStats stats_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spora::distributed
