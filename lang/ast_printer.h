// The stable text form of the AST: `spora ir --stage parsed` and the golden tests.
//
// One node per line, children indented by two spaces, a child's role written as a label
// where position alone does not say it ("default:", "cond:", "else:", "kwarg lr:"). Types,
// patterns and type dims print inline in source syntax. Example:
//
//   def affine @1:1-3:2
//     param x: f32[B, I]
//     returns: f32[B, O]
//     body: block
//       return
//         binary +
//           binary @
//             name x
//             name w
//           name b
//
// (the `@line:col-line:col` ranges only with AstPrintOptions::ranges). Node words are the
// source keywords where there is one: def, model, field, param, decorator, import, let, var,
// assign, expr, return, if, for, while, assert, pass, block; expressions are int, float,
// bool, string, none, name, list, tuple, call, attr, index, slice, unary, binary, cond,
// lambda. Floats print as written; strings re-escaped in double quotes.
#pragma once

#include <string>

#include "lang/ast.h"

namespace spora::lang {

struct AstPrintOptions {
  bool ranges = false;  // append " @l:c-l:c" to every node line
};

std::string print_ast(const Module& module, const AstPrintOptions& options = {});
std::string print_ast(const Stmt& stmt, const AstPrintOptions& options = {});
std::string print_ast(const Expr& expr, const AstPrintOptions& options = {});

// Source-like one-line form with every nested operator parenthesised, for messages and
// tests: `-2 ** 2` -> "-(2 ** 2)", `a + b * c @ d` -> "a + ((b * c) @ d)".
std::string to_source(const Expr& expr);
std::string to_source(const TypeExpr& type);
std::string to_source(const Pattern& pattern);
// A string as a Spora literal: double quotes, escapes for \n \t \r \0 \\ \".
std::string quote_string(const std::string& s);

}  // namespace spora::lang
