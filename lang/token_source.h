// Internal to lang/: the character and token streams the generated Spora parser reads.
//
// ByteStream feeds ANTLR one code point per source byte. Columns therefore count bytes, as
// SourceLoc promises, and any input is acceptable: embedded NULs and invalid UTF-8 become
// ordinary (if unexpected) characters instead of a decoding exception. Token text is read
// back from the original bytes (token_text), never through ANTLR's UTF-32 -> UTF-8 getText.
//
// TokenSource is the generated lexer plus three jobs the grammar cannot do itself:
//   1. separator filtering (grammar/Spora.g4, "Newlines"): inside ( ) and [ ] every NEWLINE
//      is dropped; elsewhere a NEWLINE or ';' is kept only right after a token that can end
//      a statement, so separators never come in runs;
//   2. lexical errors: a stray character is reported ("unexpected character '$'") and
//      dropped; an unterminated string is reported and ends the stream (it swallowed the
//      rest of its line, closing brackets included, so what follows cannot be trusted);
//   3. the nesting limit: more than kMaxBracketDepth open brackets is reported once, and the
//      stream ends there too.
// After the stream has ended early, stopped() is true and the parser's errors are noise.
// It also remembers, for every token it hands out, the innermost bracket still open before
// it, so an error about a missing ')' can point at the '(' it would close.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "SporaLexer.h"
#include "antlr4-runtime.h"
#include "lang/diagnostics.h"

namespace spora::lang {

// Python's limit too; deep enough for any real program, shallow enough that ANTLR's
// recursion stays well inside an 8 MiB stack even in an AddressSanitizer build.
inline constexpr int kMaxBracketDepth = 200;

class ByteStream : public antlr4::ANTLRInputStream {
 public:
  ByteStream(const std::string& bytes, const std::string& source_name);
};

// The range a token covers in `file` ([begin, end), 1-based byte columns). A zero-length
// token (EOF, or a token conjured up by error recovery) gets an empty range at its start.
SourceRange token_range(int file, const antlr4::Token* token);

// Whether the last diagnostic (notes aside) is an error on this line of this file. Lexer and parser
// report at most one error per line: the first is the one to fix, the rest are mostly
// echoes of it during recovery.
bool error_already_on_line(const DiagnosticEngine& diags, int file, int line);

// The token's original source bytes.
std::string token_text(const std::string& source, const antlr4::Token* token);

// An opening bracket: its token type (LPAREN, LBRACK, LBRACE) and where it is.
struct OpenBracket {
  size_t type = 0;
  SourceRange range;
};

class TokenSource : public spora_antlr::SporaLexer {
 public:
  TokenSource(ByteStream* input, const std::string& source, int file, DiagnosticEngine& diags);

  std::unique_ptr<antlr4::Token> nextToken() override;

  bool stopped() const { return stopped_; }
  // The innermost bracket open before the token with this index (as CommonTokenStream
  // numbers them), or nullptr.
  const OpenBracket* open_bracket_before(size_t token_index) const;
  bool had_errors() const { return had_errors_; }

 private:
  bool newline_is_significant() const;
  static bool can_end_statement(size_t type);
  void track_brackets(const antlr4::Token& t);
  OpenBracket innermost_open() const {
    return open_brackets_.empty() ? OpenBracket{} : open_brackets_.back();
  }
  // Every token leaves through here, so open_before_ stays aligned with token indices.
  std::unique_ptr<antlr4::Token> hand_out(std::unique_ptr<antlr4::Token> t,
                                          const OpenBracket& open_before);
  void report_stray_character(const antlr4::Token& t);
  // Reports a fatal lexical error at `at` and returns the EOF token that ends the stream.
  std::unique_ptr<antlr4::Token> stop(const antlr4::Token& at, std::string message);

  const std::string& source_;
  int file_;
  DiagnosticEngine& diags_;
  std::vector<OpenBracket> open_brackets_;  // the unclosed ( [ {, innermost last
  std::vector<OpenBracket> open_before_;    // per token handed out (type 0: none)
  bool last_can_end_statement_ = false;
  size_t skip_until_ = 0;  // byte offset: rest of a multi-byte stray character
  bool stopped_ = false;
  bool had_errors_ = false;
};

}  // namespace spora::lang
