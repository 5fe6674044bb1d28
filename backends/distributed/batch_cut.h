// Data parallelism over data the program holds whole (spmd_runtime.h step 2): what the compile
// does.
//
// A dataset's batches (`batches(...)`, `fashion_mnist(...)`) are cut by the runtime as they are
// read. A program that computes its loss on tensors it made itself, as in
//
//   let x = normal(shape=(batch, 784), seed=1)
//   let (l, g) = value_and_grad(loss)(net, x, y)
//
// gets the same cut from BatchCut, alive while the program is lowered under a plan with a
// data-parallel axis (and no pipeline, whose step cuts its own micro-batches): at every
// reverse-mode derivative with a seed of 1 and a scalar output (a loss), each value the
// differentiated region reads from outside itself without differentiating it (the data:
// x and y above, not net), a tensor whose static dim 0 the axis divides, is read through
// shard_hint(value, "[dp, -, ...]") placed right after the value (cut once, also when the
// derivative is taken in a loop), which the runtime runs as the cut. The runtime keeps every
// value's global meaning whatever its placement, so a value cut here that is not a batch (a
// table the loss reads whole) costs a redistribution, never a wrong result.
#pragma once

#include <string>

#include "backends/distributed/spmd_runtime.h"
#include "parallel/step/step_graph.h"

namespace spora::distributed {

class BatchCut {
 public:
  // Swaps the process-wide autodiff hook (semantics/ad_hooks.h) when the plan has a
  // data-parallel axis of more than one rank and no pipeline; else does nothing.
  explicit BatchCut(const SpmdPlan& plan);
  ~BatchCut();  // restores it
  BatchCut(const BatchCut&) = delete;
  BatchCut& operator=(const BatchCut&) = delete;

  int hinted() const { return hinted_; }  // values read through a cut

 private:
  bool active_ = false;
  parallel::ReverseHook saved_;
  std::string axis_;
  int64_t ranks_ = 1;
  int hinted_ = 0;
};

}  // namespace spora::distributed
