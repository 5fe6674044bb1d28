// Common subexpression elimination by scoped value numbering.
//
// Rewrites: a node equivalent to one computed before it, in its own graph or in an enclosing
// graph, is replaced by that earlier node (and taken out of its list). Equivalent means:
//   - constants: the same type and identical bytes (so 0.0 and -0.0 differ; two NaNs with the
//     same bits are one constant), equal strings, equal tuples/records of those;
//   - graph constants naming the same graph;
//   - applies: the same primitive or callee, the same inputs (after replacement) in the same
//     order, equal attributes and the same type.
//
// Never merged: effectful nodes and nodes that run graphs holding effects (util.h Effects),
// and nodes that read or produce stateful values (tape lists, iterators: two list_empty()
// are two lists). Everything else is a pure function of its inputs and attributes, so merging
// is exact. That includes the random primitives: normal/uniform/dropout draw from a
// counter-based generator keyed by their `seed` attribute (semantics/rng.h), so two draws with
// equal attributes ARE the same tensor, and merging them is correct (a program that wants
// fresh samples passes different seeds). Calls of effect-free graphs merge too.
//
// Scoping: a graph nested in G runs while G's activation is live, after G computed the
// nodes listed before the first node naming it (its graph constant, or a call). So a node of
// the nested graph may reuse a node of G listed before that point (or of G's own enclosing
// graphs, under the same rule), never a node of a sibling graph, and never a later one.
// Nothing is moved: only uses change, and a use only moves to a node visible from it.
//
// Assumes a module that verifies; guarantees the module verifies and computes the same
// values and effects. Algorithm:
//   1. Walk each top-level graph's nodes in order with a scoped table (key -> nodes, newest
//      last). For each node: point its inputs through the replacements made so far, build its
//      key, look up the newest equivalent node whose graph encloses this one; found: record
//      the replacement; else (if mergeable) enter the node into the table.
//   2. When a node names a nested graph not yet walked, walk that graph right there (before
//      the node itself enters the table), then drop the table entries it added.
//   3. Point every remaining use through the replacements; take replaced nodes out.
// Nested graphs nothing names are dead and left alone (eliminate_dead_code removes them).
// Cost: expected linear in the module (hashing; constants hash their bytes once).
#pragma once

#include "semantics/ir/ir.h"

namespace spora::passes {

void eliminate_common_subexpressions(ir::Module& m);

}  // namespace spora::passes
