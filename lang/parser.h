// Source text -> AST (lang/ast.h), the front door of the Spora front end.
//
//   SourceManager sources;
//   DiagnosticEngine diags(sources);
//   auto module = parse_file(sources, sources.load("model.sp"), diags);
//   if (!module) { diags.print(std::cerr); return 1; }
//
// Contract:
//   - Returns the module, or nullptr exactly when this call reported an error. Errors are
//     lexical (unexpected character, unterminated string), syntactic (every independent
//     error ANTLR recovers from, at most one per line: "expected ')' but found 'x'"), or
//     found while building the tree (an integer literal out of int64 range, an unknown
//     string escape, a target that cannot be assigned, a positional argument after a
//     keyword argument, a parameter without a default after one with a default, a
//     module-level `var`, a model `let` without a value).
//   - Every node of the returned tree has a valid SourceRange in `file`.
//   - Safe on any bytes: embedded NULs and invalid UTF-8 are reported, not trusted;
//     nesting deeper than kMaxBracketDepth brackets or kMaxNestingDepth syntactic levels is
//     reported ("... nested too deeply") instead of overflowing the stack.
//   - Newlines end statements as grammar/Spora.g4 explains ("Newlines").
#pragma once

#include <memory>
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"

namespace spora::lang {

// Nesting limit of the tree, in levels: each expression node, type, block and `if` is one
// (`-x` is two, a chain `a + b + ... + z` is as deep as it is long, an `if` inside a block
// two more). Passes that recurse over the tree can count on it. Brackets have their own
// limit (kMaxBracketDepth in token_source.h), and the parser one on its own recursion.
inline constexpr int kMaxNestingDepth = 256;

// Parses file `file` of `sources`.
std::unique_ptr<Module> parse_file(SourceManager& sources, int file, DiagnosticEngine& diags);

// Registers `text` under `path` in `sources`, then parses it.
std::unique_ptr<Module> parse_string(SourceManager& sources, std::string path, std::string text,
                                     DiagnosticEngine& diags);

}  // namespace spora::lang
