// What the simplification passes share (not a pass): effect analysis, use lists, node
// substitution, copying a graph's body into another graph, and tuple-valued control flow.
//
// Conventions every pass of this folder follows:
//   - A pass rewrites the Module in place. A node it replaces is taken out of its graph's list
//     (it stays in the module's arena, detached); nodes that only the replaced one used are
//     left for eliminate_dead_code.
//   - A replacement is always defined before, and visible from, every use of the node it
//     replaces (an operand of it, a node of an enclosing graph, or a new node inserted right
//     before it), so scoping (ir/verifier.h) holds after every pass.
//   - Effects: a node *has an effect* when its primitive is effectful (print, assert) or it
//     runs a graph (a call, or control flow over graph operands) that contains such a node,
//     transitively. Those nodes are never removed, merged, duplicated or reordered.
//   - Values of stateful types (tape lists, which list_push grows in place, and iterators,
//     which keep a cursor) are never shared between two nodes that were distinct, nor
//     evaluated at compile time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::passes {

using ir::Graph;
using ir::Module;
using ir::Node;

// ---- the shape of nodes and graphs ---------------------------------------------------------

// Does a call of g stay a call? Graphs flagged "checkpoint" (recomputed in backward),
// "custom_grad=<graph>" (their own derivative) or "noinline".
bool keeps_call(const Graph& g);
// The graphs g names in its flags ("custom_grad=<name>"): they live as long as g does.
std::vector<Graph*> flag_targets(const Module& m, const Graph& g);

bool is_control_flow(const Node& n);  // if, while, for_range, for_each
bool is_loop(const Node& n);          // while, for_range, for_each
// Loops: the operand index of state element 0 (while 2, for_range 4, for_each 2), the
// operand index of the body graph (1, 3, 1), and the body parameter of state element 0
// (while 0; for_range and for_each 1, after the index/element).
size_t loop_state_operand(const Node& loop);
size_t loop_body_operand(const Node& loop);
// The value of an integral scalar constant; none for anything else.
std::optional<int64_t> int_constant(const Node* n);
// The iterations of a for_range whose bounds are constants; none otherwise.
std::optional<int64_t> constant_trip_count(const Node& loop);
size_t loop_state_param(const Node& loop);
// The graph behind an operand that is a graph constant, or null.
Graph* graph_operand(const Node& n, size_t i);

// Lists and iterators (anywhere inside the type): values with identity, see above.
bool is_stateful_type(const sem::TypeP& t);
// Does n read or produce a stateful value?
bool touches_state(const Node& n);

// A tensor-valued constant node's value, or null (graph constants, strings, tuples: null).
const sem::Value* tensor_constant(const Node& n);

size_t node_count(const Module& m);  // parameters not included

// ---- effects --------------------------------------------------------------------------------

class Effects {
 public:
  explicit Effects(const Module& m);
  // Running g may have an effect.
  bool graph(const Graph* g) const { return effectful_graphs_.count(g) > 0; }
  // n is effectful, or runs (calls, or takes as an operand) a graph that may have an effect.
  bool node(const Node* n) const;

 private:
  std::unordered_set<const Graph*> effectful_graphs_;
};

// ---- uses -----------------------------------------------------------------------------------

// Who reads each node: the applies that take it as an input (once per applying node) and the
// graphs that return it. A snapshot: stale after the module changes.
class Uses {
 public:
  explicit Uses(const Module& m);
  const std::vector<Node*>& users(const Node* n) const;
  bool returned(const Node* n) const { return returned_.count(n) > 0; }
  bool unused(const Node* n) const { return users(n).empty() && !returned(n); }
  // How many nodes name g (graph constants and calls).
  int references(const Graph* g) const;

 private:
  std::unordered_map<const Node*, std::vector<Node*>> users_;
  std::unordered_set<const Node*> returned_;
  std::unordered_map<const Graph*, int> references_;
};

// ---- substitution ---------------------------------------------------------------------------

// old -> new node replacements, resolved transitively (a -> b, b -> c gives a -> c).
class Substitution {
 public:
  void replace(Node* old_node, Node* new_node);
  Node* operator()(Node* n) const;
  bool empty() const { return map_.empty(); }
  // Points n's inputs through the substitution.
  void rewrite_inputs(Node& n) const;
  // Points every input and every graph output of m through the substitution, then takes the
  // replaced nodes out of their graphs' lists (they no longer have uses).
  void apply(Module& m) const;

 private:
  mutable std::unordered_map<const Node*, Node*> map_;
};

// Takes the nodes in `doomed` out of their graphs' lists (one sweep over the module).
void erase_nodes(Module& m, const std::unordered_set<const Node*>& doomed);

// ---- graphs ---------------------------------------------------------------------------------

// Every graph of m, each parent before its children (module order otherwise).
std::vector<Graph*> parents_first(const Module& m);

// Copies graph bodies into other graphs (inlining a call, taking a branch).
//
// splice(dst, body, args) appends to dst's list copies of body's nodes, body's parameters bound
// to `args`, and copies the graphs nested in body that they reach under dst. It returns what
// the copy computes: the copy of body's output, an argument, or a free variable of body (free
// variables are read as they are: they must be visible from dst). Like ir/clone.h, but it
// keeps an index of the module's graph names, so that the n-th copy of a nested graph `f.body`
// is named `f.body.n` in constant time (Module::add_graph alone probes f.body.1, f.body.2, ...
// one linear search each).
class Splicer {
 public:
  explicit Splicer(Module& m);
  Node* splice(Graph* dst, const Graph& body, const std::vector<Node*>& args);

 private:
  Module& m_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_;  // base name -> next suffix to try
  std::string fresh_name(const std::string& base);
};

// ---- tuple-valued control flow --------------------------------------------------------------

// Is g run by n alone: named by exactly one graph constant of the module, which n alone reads
// (once), and nested in n's graph (so g sees what n's graph computed before n)?
bool runs_privately(const Graph* g, const Node& n, const Uses& uses);

// A control-flow node whose tuple result is built by make_tuple nodes of graphs only it runs,
// so elements can be removed from it:
//   if(c, @t, @e)          producers {t, e}
//   loops                  producers {body}; the state parameters of body (and cond) follow
// `elements` is the arity; `gets[k]` the tuple_get(node, k) users (negative indices
// normalised). Null from `inspect` when the shape does not fit: the result used otherwise
// than by tuple_get, a graph not private to the node or not nested in the node's graph, an
// output that is not a make_tuple of the graph itself.
struct TupleFlow {
  Node* node = nullptr;
  std::vector<Graph*> producers;  // graphs whose output make_tuple is the result (or state)
  Graph* body = nullptr;          // loops
  Graph* cond = nullptr;          // while
  size_t elements = 0;
  std::vector<std::vector<Node*>> gets;

  static bool inspect(const Node& n, const Uses& uses, TupleFlow& out);
  // Element k of the body's output make_tuple (loops).
  Node* body_result(size_t k) const;
  // The state parameter of element k in body / cond (loops).
  Node* body_param(size_t k) const;
  Node* cond_param(size_t k) const;
  Node* init(size_t k) const;  // the state operand (loops)

  // Removes the elements marked in `drop`: from the producers' make_tuples (new make_tuple
  // nodes), the loop's state operands and parameters, and the node's type; renumbers the
  // remaining tuple_gets. The caller has replaced every use of a dropped parameter and of a
  // dropped tuple_get (or knows there is none).
  void drop(Module& m, const std::vector<bool>& drop) const;
};

}  // namespace spora::passes
