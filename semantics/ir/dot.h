// Graphviz pictures of the IR (`spora ir --dot`), for teaching and debugging.
//
//   - one cluster per graph, nested graphs as clusters inside their parent's cluster, labelled
//     with the graph's signature (`@body(%i: i64, %acc: i64) -> (i64,)`)
//   - one box per parameter (ellipse), constant (plain box) and apply (rounded box), labelled
//     like its printed line without the inputs: `%3 = add : f32[2]`
//   - solid edges for data flow inside a graph; dashed edges for free variables (a value of an
//     enclosing graph used inside a nested one); dotted edges from a graph operand (`@body`)
//     or a call to the cluster of the graph it names; a bold border marks each graph's output
//
// Node names agree with print_module. The text is deterministic.
#pragma once

#include <string>

#include "semantics/ir/ir.h"

namespace spora::ir {

std::string to_dot(const Module& m);

}  // namespace spora::ir
