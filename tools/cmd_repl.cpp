// `spora repl`: read-eval-print in eager mode over an eager session (semantics/session.h).
//
// Input is read a line at a time; a cell ends at the end of a line whose brackets are all
// closed (strings and comments skipped), so a `def` or a loop spans lines until its `}`.
// Commands: `:type EXPR` (its type and shape), `:ir EXPR` (the graph IR its evaluation ran),
// `:history` (this session's cells), `:help`, `:quit`. Each cell is also appended to
// $SPORA_HISTORY (default ~/.spora_history). Prompts and errors go to stderr, what the
// program prints to stdout, so a piped session's stdout is its output alone.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "semantics/interpreter.h"
#include "semantics/session.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {

// The bracket depth after `line`, starting from `depth` (strings and comments skipped).
int bracket_depth(const std::string& line, int depth) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '#') break;
    if (c == '"' || c == '\'') quote = c;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
  }
  return depth;
}

std::string history_path() {
  if (const char* p = std::getenv("SPORA_HISTORY")) return p;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.spora_history";
  return "";
}

const char* kHelp =
    "Spora eager session: definitions (def, model, import) and statements run as they are\n"
    "entered, and their names persist; an expression prints its value.\n"
    "  :type EXPR   its type and shape        :ir EXPR   the IR its evaluation ran\n"
    "  :history     this session's cells      :quit      leave (also end of input)\n";

// Runs `f`, reporting the run-time errors of a cell on stderr (the session goes on).
template <class F>
void guarded(F&& f) {
  try {
    f();
  } catch (const sem::RuntimeError& e) {
    std::cout.flush();
    std::cerr << fmt::format("runtime error: {}\n", e.what());
  } catch (const lang::UserError& e) {
    std::cout.flush();
    std::cerr << fmt::format("error: {}\n", e.what());
  }
}

}  // namespace

CLI::App* add_repl_subcommand(CLI::App& app) {
  return app.add_subcommand("repl",
                            "Read-eval-print in eager mode: definitions and statements run as "
                            "entered, names persist (:type, :ir, :history, :help, :quit)");
}

int run_repl_subcommand() {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  diags.set_error_limit(1 << 30);
  sem::Session session(sources, diags);
  const bool tty = ::isatty(STDIN_FILENO);
  if (tty) std::cerr << "spora repl (:help for help)\n";
  size_t shown = 0;  // diagnostics printed so far
  auto flush_diagnostics = [&] {
    std::cout.flush();
    for (; shown < diags.diagnostics().size(); ++shown)
      std::cerr << diags.format(diags.diagnostics()[shown]);
  };
  const std::string hist = history_path();
  std::vector<std::string> cells;
  std::string cell, line;
  int depth = 0;
  for (;;) {
    if (tty) std::cerr << (cell.empty() ? ">>> " : "... ") << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (cell.empty()) {
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos) continue;
      if (line[first] == ':') {
        const std::string cmd = line.substr(first);
        const size_t space = cmd.find(' ');
        const std::string name = cmd.substr(0, space);
        const std::string arg = space == std::string::npos ? "" : cmd.substr(space + 1);
        if (name == ":quit" || name == ":q") break;
        guarded([&] {
          if (name == ":help") {
            std::cerr << kHelp;
          } else if (name == ":history") {
            for (const std::string& c : cells) std::cout << c << "\n";
          } else if (name == ":type" && !arg.empty()) {
            const std::string t = session.type_of(arg);
            if (!t.empty()) std::cout << arg << ": " << t << "\n";
          } else if (name == ":ir" && !arg.empty()) {
            std::cout << session.ir_of(arg);
          } else {
            std::cerr << fmt::format("unknown command {} (:help lists them)\n", cmd);
          }
        });
        flush_diagnostics();
        std::cout.flush();
        continue;
      }
    }
    cell += (cell.empty() ? "" : "\n") + line;
    depth = bracket_depth(line, depth);
    if (depth > 0) continue;
    depth = 0;
    const std::string text = std::move(cell);
    cell.clear();
    cells.push_back(text);
    if (!hist.empty()) std::ofstream(hist, std::ios::app) << text << "\n";
    guarded([&] { session.run(text); });
    flush_diagnostics();
    std::cout.flush();
  }
  if (!cell.empty()) {
    std::cerr << "error: the input ended inside an unclosed bracket\n";
    return 1;
  }
  return 0;
}

}  // namespace spora::tools
