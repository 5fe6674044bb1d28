// Eager (PyNative-style) execution: every node the lowering emits into the entry graph runs
// at once, so control flow sees concrete values and the emitted nodes form the op-by-op tape
// that reverse mode walks. Attach one to a module before lowering in eager mode.
//
// Memory: the executor holds the value of every node that has run until the lowering says it
// is no longer needed (collect()): the lowering marks the nodes its abstract values still
// refer to (variables in scope, temporaries of the statements in progress, the tape of a
// vjp pullback) at statement boundaries, and the executor drops the values of the other nodes
// and takes them out of the entry graph, so a training loop runs in bounded memory and the
// entry graph does not grow with the number of steps. Buffers then die by reference count.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"
#include "semantics/value.h"

namespace spora::sem {

// Counters of one eager run (`spora run --mode eager --stats`).
struct EagerStats {
  int64_t ops_run = 0;             // nodes run (a call of a compiled graph counts once)
  int64_t collections = 0;         // collect() calls
  int64_t nodes_removed = 0;       // nodes taken out of the entry graph
  int64_t peak_graph_nodes = 0;    // the most nodes the entry graph held at once
  int64_t peak_values_held = 0;    // the most node values held at once
  int64_t final_graph_nodes = 0;   // when the executor was destroyed
};
// The counters of the most recent executor (updated while it runs).
EagerStats last_eager_stats();

// Process-wide: every node an eager executor runs from now on is reported to `hook` after it
// ran, at depth 0, with its wall time (the nodes of a compiled graph it calls at depth 1), as
// Interpreter::set_trace reports graph mode's (`spora run --mode eager --profile`). An empty
// hook turns it off.
void set_eager_trace(TraceHook hook);

class EagerExecutor {
 public:
  // Runs nodes added to `graph` (the entry graph) of `m` from now on.
  EagerExecutor(ir::Module& m, ir::Graph* graph);
  ~EagerExecutor();
  EagerExecutor(const EagerExecutor&) = delete;
  EagerExecutor& operator=(const EagerExecutor&) = delete;

  // The value of a node that has run (null if it has not, or belongs to another graph).
  const Value* value(const ir::Node* n) const;
  size_t values_held() const { return values_.size(); }

  // Nodes of the entry graph are numbered in the order they run: clock() is the number the
  // next one gets, seq(n) the number n got (UINT64_MAX for a node that has not run).
  uint64_t clock() const { return clock_; }
  uint64_t seq(const ir::Node* n) const;

  // Keeps the nodes of `live` and forgets every other node of the entry graph: its value is
  // dropped, it leaves the graph's node list and is destroyed (one that names a graph is only
  // emptied), so no pointer to it may be used again. A kept apply node
  // becomes a constant holding its value (its inputs may be gone), except the nodes of
  // `keep_inputs`, which stay applies (a tape that autodiff may still walk); their inputs must
  // be in `live`. Returns the number of nodes removed.
  size_t collect(const std::unordered_set<const ir::Node*>& live,
                 const std::unordered_set<const ir::Node*>& keep_inputs);

  const EagerStats& stats() const { return stats_; }

 private:
  void run(ir::Node* n);
  void note_sizes();
  ir::Module& m_;
  ir::Graph* graph_;
  struct Held {
    Value value;
    uint64_t seq = 0;
  };
  std::unordered_map<const ir::Node*, Held> values_;
  uint64_t clock_ = 0;
  std::unique_ptr<Interpreter> interp_;  // runs calls of compiled graphs (@jit)
  EagerStats stats_;
};

}  // namespace spora::sem
