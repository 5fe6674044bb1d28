// Source files, locations and the one diagnostics engine of Spora.
//
// Every user-facing error (lexer, parser, semantic, runtime shape checks) goes through
// DiagnosticEngine and prints as
//
//   model.sp:12:18: error: matmul shapes do not match: f32[64,784] @ f32[512,10]
//       return x @ w
//              ^~~~~
//
// Messages start lowercase, have no trailing period and state the actual values.
// Internal errors (bugs in Spora) are not diagnostics: they are InternalError exceptions.
#pragma once

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace spora::lang {

// A position in a source file. line and col are 1-based; col counts bytes. file indexes the
// SourceManager; -1 means "no location" (generated code).
struct SourceLoc {
  int file = -1;
  int line = 0;
  int col = 0;
  bool valid() const { return file >= 0 && line > 0; }
};

// A half-open range [begin, end) on one or more lines; end.col is one past the last character.
struct SourceRange {
  SourceLoc begin, end;
  bool valid() const { return begin.valid(); }
};

// Owns the text of every file read in one run, so diagnostics can quote source lines.
class SourceManager {
 public:
  // Registers a file's contents; returns its id. The first `hidden_lines` lines are generated
  // text around the user's (a REPL cell's `def cell() {`): locations count them, diagnostics
  // number the lines after them from 1.
  int add(std::string path, std::string text, int hidden_lines = 0);
  // The line number a diagnostic shows for `line` of `file`.
  int shown_line(int file, int line) const { return line - files_.at(file).hidden; }
  // Reads a file from disk and registers it; throws std::runtime_error if it cannot be read.
  int load(const std::string& path);
  const std::string& path(int file) const { return files_.at(file).path; }
  const std::string& text(int file) const { return files_.at(file).text; }
  // The text of a 1-based line without its newline ("" when out of range).
  std::string_view line_text(int file, int line) const;
  int file_count() const { return static_cast<int>(files_.size()); }

 private:
  struct File {
    std::string path, text;
    std::vector<size_t> line_starts;
    int hidden = 0;
  };
  std::vector<File> files_;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
};

// Collects diagnostics; a phase reports every independent error it finds, then the driver
// checks has_errors() and stops before the next phase.
class DiagnosticEngine {
 public:
  explicit DiagnosticEngine(const SourceManager& sources) : sources_(sources) {}

  void error(SourceRange range, std::string message);
  void warning(SourceRange range, std::string message);
  void note(SourceRange range, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  // Every error reported, repeats included (a phase compares it before and after a step).
  int error_count() const { return error_count_; }
  // Errors a reader sees: an error repeated at the same place with the same message (a
  // function lowered twice, say for a call and for grad) is stored and counted once, and the
  // notes that follow a repeat are dropped with it.
  int distinct_error_count() const { return error_count_ - repeated_; }
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  // Stops accepting errors after this many (the rest are counted, not stored).
  void set_error_limit(int limit) { error_limit_ = limit; }

  // While one is alive, errors and notes are neither stored nor counted: a phase probing
  // whether something resolves (a type annotation with a symbolic dimension, say) before it
  // reports anything.
  class Quiet {
   public:
    explicit Quiet(DiagnosticEngine& d) : d_(d) { ++d_.quiet_; }
    ~Quiet() { --d_.quiet_; }
    Quiet(const Quiet&) = delete;
    Quiet& operator=(const Quiet&) = delete;

   private:
    DiagnosticEngine& d_;
  };

  // "file:line:col: error: message\n<source line>\n<caret line>\n"
  std::string format(const Diagnostic& d) const;
  void print(std::ostream& os) const;
  const SourceManager& sources() const { return sources_; }

 private:
  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
  int error_count_ = 0;
  int repeated_ = 0;
  bool dropping_notes_ = false;
  int error_limit_ = 50;
  int quiet_ = 0;
};

// Thrown to abandon a phase after its errors have been reported to a DiagnosticEngine.
struct CompileError : std::runtime_error {
  CompileError() : std::runtime_error("compilation failed") {}
};

// A user error raised where no DiagnosticEngine is at hand (a shape rule, a kernel at run
// time); the caller that knows the location reports it.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A bug in Spora itself.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

// The single-character insertions, deletions, substitutions and swaps of neighbours that turn
// a into b (the optimal string alignment distance): how near a misspelt name is to a known
// one, for "did you mean" (unknown names, strategy JSON keys, cluster YAML fields).
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace spora::lang
