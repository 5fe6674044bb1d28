// Helpers shared by the lang/ tests: parse a snippet, get its diagnostics, find nodes.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lang/ast.h"
#include "lang/ast_printer.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"

namespace spora::lang::testing {

struct Parsed {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<DiagnosticEngine> diags = std::make_unique<DiagnosticEngine>(*sources);
  std::unique_ptr<Module> module;

  // Messages only, in order.
  std::vector<std::string> messages() const {
    std::vector<std::string> out;
    for (const Diagnostic& d : diags->diagnostics()) out.push_back(d.message);
    return out;
  }
  std::string printed_diagnostics() const {
    std::string out;
    for (const Diagnostic& d : diags->diagnostics()) out += diags->format(d);
    return out;
  }
};

inline Parsed parse(const std::string& text, const std::string& path = "test.sp") {
  Parsed p;
  p.module = parse_string(*p.sources, path, text, *p.diags);
  return p;
}

// Parses text that must be free of errors.
inline Parsed parse_ok(const std::string& text) {
  Parsed p = parse(text);
  EXPECT_TRUE(p.module != nullptr) << text << "\n" << p.printed_diagnostics();
  EXPECT_FALSE(p.diags->has_errors()) << p.printed_diagnostics();
  return p;
}

// The value of `let e = <expression>` at module level, as to_source renders it
// ("" if it does not parse).
inline std::string expr_source(const std::string& expression) {
  Parsed p = parse("let e = " + expression + "\n");
  if (!p.module || p.module->globals.empty()) {
    ADD_FAILURE() << expression << "\n" << p.printed_diagnostics();
    return "";
  }
  return to_source(*p.module->globals[0]->value);
}

// The tree of `let e = <expression>`'s value.
inline std::string expr_tree(const std::string& expression) {
  Parsed p = parse("let e = " + expression + "\n");
  if (!p.module || p.module->globals.empty()) {
    ADD_FAILURE() << expression << "\n" << p.printed_diagnostics();
    return "";
  }
  return print_ast(*p.module->globals[0]->value);
}

// The statements of the body of the first function in `text`.
inline const std::vector<StmtPtr>& body_of(const Parsed& p) {
  static const std::vector<StmtPtr> empty;
  if (!p.module || p.module->functions.empty() || !p.module->functions[0]->body) return empty;
  return p.module->functions[0]->body->stmts;
}

// Every source range in the module, with a label naming what it belongs to.
void for_each_range(const Module& m,
                    const std::function<void(const std::string&, const SourceRange&)>& visit);

}  // namespace spora::lang::testing
