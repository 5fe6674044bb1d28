// An eager session (`spora repl`): cells of declarations (def, model, import) and statements
// run one after another in eager mode, in one program whose names persist from cell to cell,
// as in a Python or Jupyter session.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lang/diagnostics.h"

namespace spora::sem {

class Session {
 public:
  Session(lang::SourceManager& sources, lang::DiagnosticEngine& diags,
          const std::string& std_dir = "");
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs one cell. A cell of declarations (def, model, import; a later definition of a name
  // replaces the earlier one) defines them; any other cell runs as statements of the session,
  // op by op, and a cell that is one expression prints its value unless it is none. Compile
  // errors go to diags (false); run-time errors propagate as exceptions (lang::RuntimeError,
  // lang::UserError), and the session stays usable either way.
  // Diagnostics name the cell `name` (default "<cell N>") and number its lines from
  // `first_line` (a notebook cell's statement after the cell's first lines).
  bool run(const std::string& text, const std::string& name = "", int first_line = 1);
  // The type of an expression as the compiler sees it (":type"), evaluating it; "" after an
  // error (in diags).
  std::string type_of(const std::string& expr);
  // The IR nodes that evaluating the expression appended to the session's graph (":ir");
  // "" after an error.
  std::string ir_of(const std::string& expr);
  // The names the next cell can use that start with `prefix` (variables, definitions, models,
  // imports, built-ins, primitives), sorted: completion in the REPL and the Jupyter kernel.
  std::vector<std::string> complete(const std::string& prefix) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spora::sem
