// Reuse distances of a step's reads: for every op, how many bytes of other data were touched
// since each of its input tensors was last written or read, in the step's op order. The cost
// model reads the measured tables at that distance (sim/cost_model.h): an input touched a
// moment ago comes from the core's own caches, one touched before a long run of other ops comes
// from the shared cache or memory.
//
// The model is the LRU stack distance (Mattson et al., "Evaluation techniques for storage
// hierarchies", 1970) at the granularity of whole tensors: the distance of a read of tensor t
// is the sum of the bytes of the distinct tensors used since t's last use. A step repeats, so
// the distances are those of the second of two passes over the sequence (the parameters, the
// optimizer's state and the buffers a loop carries were last touched in the previous step); a
// tensor first used in the second pass is at an infinite distance. Tensors are the step's
// values, not its buffers: the allocator handing a freed buffer to a new tensor, and cache
// lines, are not modelled.
//
// Dataflow builds the reads and the write of each op (StepOp::reads, StepOp::writes) while a
// program is flattened: every value gets an id, views and tuples alias what they hold.
#pragma once

#include <array>
#include <unordered_map>
#include <vector>

#include "semantics/ir/ir.h"
#include "sim/cost_model.h"
#include "sim/step_program.h"

namespace spora::sim {

constexpr double kNeverUsed = 1e30;  // the distance of a tensor not used before

// For each op of `ops`, its reads as rows {reuse distance in bytes, bytes} (CostModel::time),
// empty for an op without known reads.
std::vector<std::vector<std::array<double, 2>>> reuse_distances(
    const std::vector<const StepOp*>& ops);

// The cost model's time of each op of `ops` (a step, in order; reuse_distances): its reads at
// their reuse distances.
std::vector<double> op_seconds(const CostModel& model, const std::vector<const StepOp*>& ops);

// The ids of a program's values, filled as its ops are made.
class Dataflow {
 public:
  // A new tensor of type t.
  TensorRef fresh(const sem::TypeP& t);
  // What node n holds (empty: not known, e.g. a constant or a loop body's parameter).
  const std::vector<TensorRef>& refs(const ir::Node* n) const;
  void bind(const ir::Node* n, std::vector<TensorRef> refs) { refs_[n] = std::move(refs); }
  // Fills op.reads and op.writes for op = n's primitive application and binds n: views alias
  // their first input, make_tuple and tuple_get move no data, every other op writes a new
  // tensor (one per element of a tuple result).
  void apply(const ir::Node& n, StepOp& op);

 private:
  std::unordered_map<const ir::Node*, std::vector<TensorRef>> refs_;
  int next_ = 0;
};

// Fills the reads and writes of a parameter's update (update_ops' list for sgd, momentum or
// adam, or its one fused op): the parameter and its gradient as given, new state tensors, a new
// tensor per temporary; the parameter and the state are written in place. Other lists are left as
// they are.
void connect_update(std::vector<StepOp>& update, TensorRef param, TensorRef gradient,
                    Dataflow& flow);

}  // namespace spora::sim
