// Liveness of the values of one graph: where each value is used for the last time, so the
// interpreter can release it right after (and move it into its last user), and the memory
// planner (backends/runtime/memory_plan.h) can lay buffers out over their lifetimes.
//
// Algorithm (one pass over the node list, positions 0..N-1 in execution order):
//  1. Every input x of node i that belongs to g is used at i.
//  2. A nested graph B run by node i (a graph operand of if/while/for_range/for_each, or a
//     direct callee nested in g) may read nodes of g while it runs: every node of g used by B,
//     by the graphs B names (graph constants, callees) and so on, recursively, is used at i.
//     Such a use is *nested*: the value must stay in g's frame until node i has finished, so
//     it is not moved into node i.
//  3. A graph constant used other than as a control-flow operand (its value escapes), and
//     g's output, keep what they need until g returns (last use = N, "forever").
//  4. A value nothing uses dies right where it is defined (parameters: at the start).
//  5. Node i may take input k by move when i is the input's last use, k is its last
//     occurrence among i's inputs and the use is not nested: then a kernel sees the only
//     reference and may write its result into that buffer.
//  6. A value is long-lived (the allocator's long pool) when it stays alive across a node that
//     runs a nested graph (parameters and data used by a training loop) or, in a nested graph,
//     when it is the graph's output or an element of it (the next loop state).
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::sem {

struct Liveness {
  size_t num_params = 0;
  size_t num_nodes = 0;
  long forever = 0;  // == num_nodes: a last use that means "until the graph returns"
  // Slots: parameters first (0..P-1), then nodes (P..P+N-1) in list order.
  std::unordered_map<const ir::Node*, size_t> slot;
  // Per slot: the position of the last node that needs the value; -1 when nothing does.
  std::vector<long> last_use;
  // Per slot: long-lived (rule 6).
  std::vector<bool> long_lived;
  // Per node position: the slots that die right after the node has run (its own slot when
  // nothing uses it).
  std::vector<std::vector<size_t>> release_after;
  // Parameters nothing uses.
  std::vector<size_t> release_at_start;
  // Per node position, per input: take the input by move (rule 5).
  std::vector<std::vector<bool>> move_input;
  // Per node position: the node runs a nested graph or calls a graph.
  std::vector<bool> runs_graph;

  // Position of the node (or -1 for a parameter) that defines slot s.
  long defined_at(size_t s) const {
    return s < num_params ? -1 : static_cast<long>(s - num_params);
  }
};

Liveness analyze_liveness(const ir::Graph& g);

// Is this a structured control-flow primitive (if, while, for_range, for_each)?
bool is_control_flow(const ir::Node& n);

}  // namespace spora::sem
