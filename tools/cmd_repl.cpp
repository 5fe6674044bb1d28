// `spora repl`: read-eval-print in eager mode over an eager session (semantics/session.h).
//
// Input is read a line at a time; a cell ends at the end of a line whose brackets are all
// closed (strings and comments skipped), so a `def` or a loop spans lines until its `}`.
// Commands: `:type EXPR` (its type and shape), `:ir EXPR` (the graph IR its evaluation ran),
// `:complete PREFIX` (the names that start with it), `:history` (this session's cells),
// `:help`, `:quit`. Each cell is also appended to
// $SPORA_HISTORY (default ~/.spora_history). Prompts and errors go to stderr, what the
// program prints to stdout, so a piped session's stdout is its output alone.
//
// On a terminal, lines are edited in place (tools/line_editor.h: arrows, Home/End, history on
// Up/Down, loaded from the history file, Tab completion of names) and Ctrl-C while a cell runs stops it between two ops
// (sem::request_interrupt); the session keeps its names.
//
// `--framed` is the protocol of the Jupyter kernel (tools/jupyter/spora_kernel.py): a cell is
// every line up to a line that starts with the record separator (0x1e), followed by the name
// diagnostics give the cell ("In [3]"; none: "<cell N>"), its lines numbered from 1; its
// statements run as above, stopping at the first error; then, after what the cell printed,
// stdout gets one line
// of 0x1e followed by JSON: {"status": "ok"|"error", "error": the error's text, "files": the
// absolute paths of the files the cell wrote}. Errors go into that record, not to stderr.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/runtime/data/files.h"
#include "semantics/interpreter.h"
#include "semantics/session.h"
#include "tools/commands.h"
#include "tools/line_editor.h"

namespace spora::tools {

namespace {

constexpr char kSeparator = '\x1e';

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

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }
bool is_command(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t");
  return first != std::string::npos && line[first] == ':';
}

std::string history_path() {
  if (const char* p = std::getenv("SPORA_HISTORY")) return p;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.spora_history";
  return "";
}

// The last `n` lines of the history file, for Up and Down.
std::vector<std::string> load_history(const std::string& path, size_t n) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!blank(line)) lines.push_back(line);
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  return lines;
}

const char* kHelp =
    "Spora eager session: definitions (def, model, import) and statements run as they are\n"
    "entered, and their names persist; an expression prints its value.\n"
    "  :type EXPR   its type and shape        :ir EXPR   the IR its evaluation ran\n"
    "  :history     this session's cells      :quit      leave (also end of input)\n"
    "  :complete P  the names that start with P\n"
    "On a terminal: arrows, Home/End, Ctrl-A/E/K/U/W edit the line, Tab completes a name,\n"
    "Up/Down recall earlier lines, Ctrl-C drops the line or stops the running cell, Ctrl-D on\n"
    "an empty line leaves.\n";

void on_sigint(int) { sem::request_interrupt(); }

// SIGINT stops the running cell instead of the process (SA_RESTART: a read waits on).
void interrupt_cells_on_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
}

// One session and where its errors go.
class Repl {
 public:
  explicit Repl(std::ostream& err) : diags_(sources_), session_(sources_, diags_), err_(&err) {
    diags_.set_error_limit(1 << 30);
  }
  void set_errors(std::ostream& err) { err_ = &err; }
  std::vector<std::string> complete(const std::string& prefix) const {
    return session_.complete(prefix);
  }
  const std::vector<std::string>& cells() const { return cells_; }

  // Runs one unit: a command line, or a cell whose brackets are closed. False on an error
  // (reported to the error stream).
  bool unit(const std::string& text, const std::string& name = "", int first_line = 1) {
    const int errors = diags_.error_count();
    bool ok = true;
    try {
      ok = is_command(text) ? command(text) : cell(text, name, first_line);
    } catch (const sem::RuntimeError& e) {
      std::cout.flush();
      report_runtime_error(sources_, e.loc, e.what(), *err_);
      ok = false;
    } catch (const lang::UserError& e) {
      std::cout.flush();
      *err_ << fmt::format("error: {}\n", e.what());
      ok = false;
    }
    std::cout.flush();
    for (; shown_ < diags_.diagnostics().size(); ++shown_)
      *err_ << diags_.format(diags_.diagnostics()[shown_]);
    return ok && diags_.error_count() == errors;
  }

 private:
  bool command(const std::string& line) {
    const std::string cmd = line.substr(line.find(':'));
    const size_t space = cmd.find(' ');
    const std::string name = cmd.substr(0, space);
    const std::string arg = space == std::string::npos ? "" : cmd.substr(space + 1);
    if (name == ":help") {
      *err_ << kHelp;
    } else if (name == ":history") {
      for (const std::string& c : cells_) std::cout << c << "\n";
    } else if (name == ":type" && !arg.empty()) {
      const std::string t = session_.type_of(arg);
      if (t.empty()) return false;
      std::cout << arg << ": " << t << "\n";
    } else if (name == ":ir" && !arg.empty()) {
      std::cout << session_.ir_of(arg);
    } else if (name == ":complete") {
      for (const std::string& n : session_.complete(arg)) std::cout << n << "\n";
    } else {
      *err_ << fmt::format("unknown command {} (:help lists them)\n", cmd);
      return false;
    }
    return true;
  }

  bool cell(const std::string& text, const std::string& name, int first_line) {
    cells_.push_back(text);
    if (!history_.empty()) std::ofstream(history_, std::ios::app) << text << "\n";
    return session_.run(text, name, first_line);
  }

  lang::SourceManager sources_;
  lang::DiagnosticEngine diags_;
  sem::Session session_;
  std::ostream* err_;
  size_t shown_ = 0;  // diagnostics printed so far
  std::vector<std::string> cells_;
  std::string history_ = history_path();
};

bool is_quit(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos) return false;
  const size_t end = line.find_last_not_of(" \t\r");
  const std::string word = line.substr(first, end - first + 1);
  return word == ":quit" || word == ":q";
}

// Cuts lines into the units a session runs: a command line (`:type x`), or the lines up to
// one that closes every bracket opened since the unit began; blank lines between units are
// skipped.
class UnitCutter {
 public:
  // The unit `line` completes, if it completes one.
  std::optional<std::string> add(const std::string& line) {
    ++lines_;
    if (unit_.empty()) {
      if (blank(line)) return std::nullopt;
      first_ = lines_;
      if (is_command(line)) return line;
    }
    unit_ += (unit_.empty() ? "" : "\n") + line;
    depth_ = bracket_depth(line, depth_);
    if (depth_ > 0) return std::nullopt;
    depth_ = 0;
    return std::exchange(unit_, std::string());
  }
  bool open() const { return !unit_.empty(); }  // inside a unit that has not ended
  int first_line() const { return first_; }     // the last unit's, counting from 1 since reset
  void reset() { *this = UnitCutter(); }

 private:
  std::string unit_;
  int depth_ = 0, lines_ = 0, first_ = 0;
};

// The interactive session: a line at a time, from the line editor on a terminal.
int run_interactive() {
  Repl repl(std::cerr);
  const bool tty = ::isatty(STDIN_FILENO) != 0;
  const char* term = std::getenv("TERM");
  const bool edit = tty && ::isatty(STDERR_FILENO) && !(term && std::string(term) == "dumb");
  LineEditor editor(edit ? load_history(history_path(), 1000) : std::vector<std::string>{});
  editor.set_completer([&repl](const std::string& prefix) { return repl.complete(prefix); });
  if (tty) {
    std::cerr << "spora repl (:help for help)\n";
    interrupt_cells_on_sigint();
  }
  UnitCutter cutter;
  std::string line;
  for (;;) {
    const std::string prompt = cutter.open() ? "... " : ">>> ";
    if (edit) {
      bool cancelled = false;
      std::optional<std::string> got = read_line(editor, prompt, &cancelled);
      if (!got) break;
      if (cancelled) {
        cutter.reset();
        continue;
      }
      line = *got;
      editor.add_history(line);
    } else {
      if (tty) std::cerr << prompt << std::flush;
      if (!std::getline(std::cin, line)) break;
    }
    if (!cutter.open() && is_quit(line)) break;
    if (std::optional<std::string> unit = cutter.add(line)) {
      sem::clear_interrupt();
      repl.unit(*unit);
    }
  }
  if (cutter.open()) {
    std::cerr << "error: the input ended inside an unclosed bracket\n";
    return 1;
  }
  return 0;
}

// The Jupyter kernel's side (see the top of the file).
int run_framed() {
  std::ostringstream errors;
  Repl repl(errors);
  interrupt_cells_on_sigint();
  std::mutex written_mu;
  std::vector<std::string> written;
  runtime::data::set_write_observer([&](const std::string& path) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(path, ec);
    std::lock_guard<std::mutex> lock(written_mu);
    written.push_back(ec ? path : abs.lexically_normal().string());
  });
  UnitCutter cutter;
  std::vector<std::pair<std::string, int>> units;  // the cell's, with their first lines
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty() || line[0] != kSeparator) {
      if (std::optional<std::string> unit = cutter.add(line))
        units.emplace_back(*unit, cutter.first_line());
      continue;
    }
    const std::string name = line.substr(1);
    const bool unclosed = cutter.open();
    cutter.reset();
    errors.str("");
    {
      std::lock_guard<std::mutex> lock(written_mu);
      written.clear();
    }
    sem::clear_interrupt();
    bool ok = true;
    for (const auto& [text, first_line] : units)
      if (!(ok = repl.unit(text, name, first_line))) break;
    units.clear();
    if (ok && unclosed) {
      errors << "error: the cell ends inside an unclosed bracket\n";
      ok = false;
    }
    nlohmann::json record = {{"status", ok ? "ok" : "error"}, {"error", errors.str()}};
    {
      std::lock_guard<std::mutex> lock(written_mu);
      record["files"] = written;
    }
    std::cout << kSeparator << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n"
              << std::flush;
  }
  runtime::data::set_write_observer(nullptr);
  return 0;
}

bool g_framed = false;

}  // namespace

CLI::App* add_repl_subcommand(CLI::App& app) {
  CLI::App* repl = app.add_subcommand(
      "repl",
      "Read-eval-print in eager mode: definitions and statements run as entered, names persist "
      "(:type, :ir, :history, :help, :quit)");
  repl->add_flag("--framed", g_framed,
                 "The Jupyter kernel's protocol: a cell ends at a line of 0x1e and its name; "
                 "each is answered by a 0x1e line of JSON (status, error, files written)");
  return repl;
}

int run_repl_subcommand() { return g_framed ? run_framed() : run_interactive(); }

}  // namespace spora::tools
