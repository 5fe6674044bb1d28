// The textual form of the IR. Deterministic; parse_module (parser.h) reads
// it back, and print(parse(print(m))) == print(m).
//
//   entry @train                                    # only when the entry is not @main
//   @checkpoint graph @loss(%net: MLP{w1: f32[784,512]}, %x: f32[64,784]) -> f32 {
//     %0 = record_get(%net, field="w1") : f32[784,512]
//     %1 = matmul(%x, %0) : f32[64,512]
//     %2 = constant 1.5 : f32
//     %3 = constant [[1.0, 2.0], [3.0, 4.0]] : f32[2,2]
//     %4 = call @square(%1) : f32[64,512]
//     graph @body(%i: i64, %acc: f32) -> (f32,) {   # nested graph, just before its first use
//       %5 = add(%acc, %2) : f32                     # %2: a free variable of @body
//       %6 = make_tuple(%5) : (f32,)
//       return %6
//     }
//     %7 = for_range(%a, %b, %c, @body, %2) : (f32,)
//     return %1
//   }
//
// Rules
//   - Top-level graphs print in module order, separated by a blank line. A nested graph prints
//     inside its parent, indented, just before the first line of the parent that names it (a
//     graph-constant operand or a call); nested graphs nothing names print before `return`.
//   - Parameters keep their names (`%x`); every other printed node is numbered in printing
//     order across the module (`%0`, `%1`, ...). A parameter name already taken in the same
//     top-level graph (nested graphs included), or made of digits only, gets a suffix (`%x.1`).
//     Names and graph names outside [A-Za-z0-9_.] are quoted: `%"a b"`.
//   - Graph constants have no line: an operand naming a graph prints as `@name`.
//   - Attributes follow the inputs as `name=value` (registry attr_str) in the primitive's
//     signature order, then any others in stored order.
//   - Constants print their whole value so it round-trips bit for bit: tensor elements as the
//     `print` primitive writes them (shortest round-trip digits, `1.0`, `1e-08`, `nan`, `-inf`;
//     integers; `true`/`false`), nested brackets for rank >= 1; strings quoted with \" \\ \n
//     \t \r \xHH escapes; tuples and records as `(v, v, ...)` (the type after `:` says which).
//   - Flags prefix the graph: `@jit @checkpoint graph @f(...)`.
//   - A graph without output prints a bare `return`; an untyped node prints `: <untyped>`.
#pragma once

#include <string>
#include <unordered_map>

#include "semantics/ir/ir.h"

namespace spora::ir {

std::string print_module(const Module& m);
// One graph and its nested graphs (the ones it names). Numbering starts at 0; the free
// variables of g are named first (parameters by name, other nodes numbered), so the text
// refers to values it does not define and is not parseable on its own.
std::string print_graph(const Graph& g);

// The names print_module (print_graph) gives nodes, so messages can agree with a dump:
// `%x`, `%3`, or `@body` for a graph constant.
class NodeNames {
 public:
  explicit NodeNames(const Module& m);
  explicit NodeNames(const Graph& g);
  // A node the print never reached (not in any graph's list) is `%<detached>`.
  std::string operator()(const Node* n) const;

 private:
  std::unordered_map<const Node*, std::string> names_;
};

// `@name` or `@"odd name"`; `%name` or `%"odd name"`.
std::string graph_ref(const Graph& g);
std::string quote_name(char sigil, const std::string& name);
// A string literal with the printer's escapes.
std::string quote_string(const std::string& s);

}  // namespace spora::ir
