// Reads the IR's textual form (printer.h) back into a Module, and the type syntax of types.h.
// print_module(*parse_module(print_module(m))) == print_module(m) for every module the
// printer can print; hand-written IR (`spora run file.ir`, entry graph @main) uses the same
// syntax, plus `# comments`.
//
// Grammar (tokens: %name, @name, %"quoted", @"quoted", identifiers, numbers, strings):
//   module     := ('entry' @name | graph)*
//   graph      := @flag* 'graph' @name '(' [%name ':' type {',' ...}] ')' '->' type
//                 '{' (graph | line)* 'return' [operand] '}'
//   line       := %name '=' ( 'constant' literal | 'call' @name '(' operands ')'
//                           | prim '(' operands [',' attr=literal ...] ')' ) ':' type
//   operand    := %name | @name          (@name: the graph as a value, e.g. a loop body)
//   literal    := number | -number | true | false | none | inf | nan | "string" | dtype
//                 | '[' literal, ... ']' | '(' literal, ... ')'
//
// Meaning
//   - Graphs may be used before their definition (mutual recursion); nodes may not. A %name
//     resolves in its graph, then in the enclosing graphs (closures); a graph operand must be
//     top-level or nested in the current graph or one enclosing it.
//   - Every @name operand becomes one graph-constant node per (using graph, named graph),
//     placed before its first use. Nodes get the location of their line in the text.
//   - The written types are checked: a primitive's shape rule is re-run (prim->infer) and must
//     give the written type, a call's arguments must match the callee's parameters and its
//     type the callee's `->` type, a graph's output the `->` type of its header, and a constant
//     must fit its type. Attributes convert by the primitive's ParamSpec (`1` is a float for
//     a Float attribute); attributes of a primitive with parameter specs must be declared.
//   - The entry is `entry @name` when given, else the graph named main (if any).
//
// Errors are user errors at the offending token (`file.ir:3:12: error: unknown primitive
// 'ad'`); the first one ends the parse.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "lang/diagnostics.h"
#include "semantics/ir/ir.h"

namespace spora::ir {

// Parses file `file` of `sources`. Reports the error to diags and throws lang::CompileError.
std::unique_ptr<Module> parse_module(const lang::SourceManager& sources, int file,
                                     lang::DiagnosticEngine& diags);
// Convenience for tests and tools: throws lang::UserError whose message is the formatted
// diagnostic ("<filename>:line:col: error: ...", the line, a caret). Node locations refer to
// file 0 (a private SourceManager holding only this text).
std::unique_ptr<Module> parse_module(std::string_view text, const std::string& filename = "<ir>");

// `f32[64,784]`, `(f32, i32[3])`, `MLP{w: f32[2]}`, `str`, `iter<f32>`, `fn(f32) -> f32`.
// Throws lang::UserError on malformed text.
TypeP parse_type(std::string_view text);

}  // namespace spora::ir
