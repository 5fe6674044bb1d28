// Eager (PyNative-style) execution: every node the lowering emits into the entry graph runs
// at once, so control flow sees concrete values and the emitted nodes form the op-by-op tape
// that reverse mode walks. Attach one to a module before lowering in eager mode.
#pragma once

#include <memory>
#include <unordered_map>

#include "semantics/ir/ir.h"
#include "semantics/value.h"

namespace spora::sem {

class EagerExecutor {
 public:
  // Runs nodes added to `graph` (the entry graph) of `m` from now on.
  EagerExecutor(ir::Module& m, ir::Graph* graph);
  ~EagerExecutor();
  // The value of a node that has run (null if it has not, or belongs to another graph).
  const Value* value(const ir::Node* n) const;
  // Forgets the values of nodes not in `keep` (a memory bound for long eager programs).
  size_t values_held() const { return values_.size(); }

 private:
  void run(ir::Node* n);
  ir::Module& m_;
  ir::Graph* graph_;
  std::unordered_map<const ir::Node*, Value> values_;
};

}  // namespace spora::sem
