// The static memory plan of graph mode: from the liveness of a graph's
// values (semantics/liveness.h) and the sizes their static types give, every buffer gets an
// offset in one arena, and the arena's size is the planned peak that `spora run --stats`
// reports. The interpreter does not place buffers at these offsets (the caching allocator
// reuses freed blocks dynamically); the plan is the prediction the measured peak is checked
// against.
//
// Algorithm (per graph, positions 0..N-1 in execution order):
//  1. Buffers. A parameter's value is a buffer live from the start; a node whose primitive
//     allocates gets a buffer of its type's bytes (tuples: the sum of their tensors) from its
//     position on. Views and structure (make_tuple, tuple_get, make_record, record_get,
//     identity, stop_gradient, reshape and its family) allocate nothing: they share the
//     buffers of their inputs (a tuple element by element). A node that runs a nested graph
//     (control flow, a call) gets a fresh buffer for its result, may also pass its inputs
//     through, and needs a workspace, live at its position only, of the nested graph's
//     planned workspace: the arena of its buffers but its parameters, which are the node's
//     operands (if: the larger branch; while: the larger of cond and body; for_range and
//     for_each add their index / element). Constants are held by the IR and reported apart.
//  2. Lifetimes. A buffer lives from its definition to the last use (liveness.h) of any value
//     that shares it; the graph's output lives to the end.
//  3. Offsets: greedy by size, best fit (TVM's and XLA's heap simulator): buffers in decreasing
//     size each take the smallest gap, between the buffers already placed whose lifetimes
//     overlap its own, that fits it (64-byte aligned), or go on top.
//  4. The planned peak is the arena size; the lower bound is the most bytes live at one
//     position (no layout can do better).
// Limits: dynamic dims and run-time lists count as 0 bytes (reported as `unsized`); recursion
// is planned without its recursive calls' workspace; kernels' scratch buffers are not seen.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::runtime {

struct PlannedBuffer {
  const ir::Node* node = nullptr;  // the value it holds first (null: a nested run's workspace)
  int64_t bytes = 0;               // 64-byte aligned
  long begin = 0;                  // live at positions [begin, end] (-1: a parameter)
  long end = 0;
  int64_t offset = 0;
};

struct GraphPlan {
  const ir::Graph* graph = nullptr;
  std::vector<PlannedBuffer> buffers;
  int64_t peak_bytes = 0;         // the arena: max(offset + bytes)
  int64_t workspace_bytes = 0;    // the arena of the buffers but the parameters' (laid out alone)
  int64_t lower_bound_bytes = 0;  // the most bytes live at one position
  int64_t param_bytes = 0;        // of the parameters (part of the arena)
  int64_t constant_bytes = 0;     // held by the graph's constants (not in the arena)
  int64_t unsized_values = 0;     // values whose size is not static (counted as 0)
};

struct ModulePlan {
  std::vector<GraphPlan> graphs;  // the root first, then every graph it runs, once each
  const GraphPlan* find(const ir::Graph* g) const;
};

// Plans g alone; `nested_peak` gives the workspace of a graph g runs (0 if unknown).
GraphPlan plan_graph(const ir::Graph& g, const std::function<int64_t(const ir::Graph*)>& nested_peak);
// Plans `root` (default: the entry graph) and every graph it can run.
ModulePlan plan_module(const ir::Module& m, const ir::Graph* root = nullptr);

// "planned peak 12.583 MB for @main (lower bound 12.583 MB, constants 0.004 MB); nested
// graphs' workspaces: @main.body 3.146 MB, ..." (at most max_bodies, the largest first).
std::string describe(const ModulePlan& plan, size_t max_bodies = 4);

}  // namespace spora::runtime
