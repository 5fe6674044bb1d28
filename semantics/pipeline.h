// The front half of the compiler as one call: read a .sp file (and its imports), parse,
// lower to typed IR; or read a hand-written .ir file. Used by the command line and the tests.
#pragma once

#include <memory>
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "semantics/ir/ir.h"
#include "semantics/lower.h"

namespace spora::sem {

struct Compiled {
  std::unique_ptr<Program> program;      // null for .ir input
  std::unique_ptr<ir::Module> module;    // null on errors
};

// Compiles `path` (.sp or .ir). Diagnostics go to `diags`; module is null when there were
// errors. Internal errors propagate as lang::InternalError.
Compiled compile_file(lang::SourceManager& sources, lang::DiagnosticEngine& diags, const std::string& path,
                      const LowerOptions& options = {});

}  // namespace spora::sem
