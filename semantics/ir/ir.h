// The Spora graph IR: a Module of Graphs; a Graph has Parameters,
// Constants and Apply nodes, kept in execution order (like a jaxpr: the order is a valid
// schedule, and effectful nodes such as print keep their relative order).
//
// - An Apply's callee is a primitive of the registry or a Graph (a direct call).
// - A node may use nodes of an enclosing graph (its `parent` chain): that is a closure. The
//   bodies of structured control flow are such nested graphs.
// - A Constant holds a Value (tensor, string) or names a Graph (then its type is a Function).
// - Every node has a type and the source location it came from.
//
// Structured control flow is four primitives whose graph operands are Constant graph nodes:
//   if(%c, @then, @else)                 then/else: () -> T; the result is T
//   while(@cond, @body, %s0, %s1, ...)   cond: (S...) -> bool, body: (S...) -> (S...);
//                                         the result is the tuple (S...)
//   for_range(%start, %stop, %step, @body, %s0, ...)   body: (I, S...) -> (S...); result (S...)
//                                         (I: the integer dtype of start/stop/step, i32 or i64)
//   for_each(%iter, @body, %s0, ...)      body: (E, S...) -> (S...); result (S...)
// Recursion is a graph calling itself (directly or through others).
//
// Nodes and graphs are owned by the Module (arena); pointers stay valid for its lifetime.
// Passes that rewrite build new nodes in the same module (or a copy made with clone_module).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/registry.h"
#include "semantics/types.h"
#include "semantics/value.h"

namespace spora::ir {

using sem::Attrs;
using sem::TypeP;
using sem::Value;

struct Graph;

enum class NodeKind { Parameter, Constant, Apply };

struct Node {
  NodeKind kind = NodeKind::Apply;
  TypeP type;
  lang::SourceLoc loc;
  Graph* graph = nullptr;          // the graph this node belongs to
  std::string name;                // optional debug name (parameters: their source name)

  // Constant
  Value value;                     // tensor or string constant
  Graph* graph_value = nullptr;    // a constant naming a graph

  // Apply: exactly one of prim / callee is set.
  const sem::Primitive* prim = nullptr;
  Graph* callee = nullptr;
  std::vector<Node*> inputs;
  Attrs attrs;

  bool is_param() const { return kind == NodeKind::Parameter; }
  bool is_constant() const { return kind == NodeKind::Constant; }
  bool is_apply() const { return kind == NodeKind::Apply; }
  bool is_prim(std::string_view n) const { return prim && prim->name == n; }
};

struct Graph {
  std::string name;                // unique in the module, printed as @name
  Graph* parent = nullptr;         // lexical parent (for closures); null for top-level graphs
  std::vector<Node*> params;
  std::vector<Node*> nodes;        // constants and applies, in execution order
  Node* output = nullptr;          // the returned node (may be a param or a parent's node)
  lang::SourceLoc loc;
  std::vector<std::string> flags;  // decorators carried to later layers: "jit", "checkpoint", ...

  TypeP result_type() const { return output ? output->type : sem::Type::unit(); }
  TypeP function_type() const;
  bool has_flag(std::string_view f) const;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Graphs are created with a name that is made unique ("f", "f.1", ...).
  Graph* add_graph(std::string name, Graph* parent = nullptr);
  Node* add_param(Graph* g, std::string name, TypeP type, lang::SourceLoc loc = {});
  Node* add_constant(Graph* g, Value value, lang::SourceLoc loc = {});  // appended to g->nodes
  Node* add_graph_constant(Graph* g, Graph* target, lang::SourceLoc loc = {});
  Node* add_apply(Graph* g, const sem::Primitive* prim, std::vector<Node*> inputs, Attrs attrs,
                  TypeP type, lang::SourceLoc loc = {});
  Node* add_call(Graph* g, Graph* callee, std::vector<Node*> inputs, TypeP type,
                 lang::SourceLoc loc = {});

  const std::vector<std::unique_ptr<Graph>>& graphs() const { return graphs_; }
  Graph* find_graph(std::string_view name) const;
  // Removes a graph (and its nested graphs) that nothing refers to any more.
  void remove_graph(Graph* g);
  // Destroys nodes that no graph lists any more and that nothing will use again (eager mode's
  // collected nodes, semantics/eager.h).
  void erase_nodes(const std::unordered_set<const Node*>& dead);
  // Graphs whose parent is g, in creation order.
  std::vector<Graph*> children(const Graph* g) const;

  Graph* entry = nullptr;          // the graph `spora run` executes (main), if any

  // Per-module bookkeeping of later layers (autodiff keeps its taped loops and generated
  // backward graphs here), keyed by the layer's name. Not printed.
  std::map<std::string, std::shared_ptr<void>> annotations;

  // Called after every constant, apply and call node is added (eager mode runs each node
  // as soon as the lowering emits it).
  std::function<void(Node*)> on_add;

 private:
  std::vector<std::unique_ptr<Graph>> graphs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  // Graph names -> graphs (a cache: a renamed graph is found by a scan and re-indexed), and
  // the next suffix to try per base name, so that naming many copies stays linear.
  mutable std::unordered_map<std::string, Graph*> name_index_;
  std::unordered_map<std::string, int> next_suffix_;
  std::string unique_name(std::string base);
};

// Is `g` equal to `ancestor` or nested in it?
bool is_within(const Graph* g, const Graph* ancestor);
// Nodes used by g (or its nested graphs) that belong to graphs enclosing g: its free variables,
// in first-use order.
std::vector<Node*> free_variables(const Graph* g);

}  // namespace spora::ir
