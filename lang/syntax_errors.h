// Internal to lang/: turns ANTLR's syntax errors into Spora diagnostics.
//
// SyntaxErrorStrategy keeps ANTLR's recovery (single-token insertion and deletion, resync
// at loop boundaries; in item lists, skipping the rest of a bad line) but words every
// report the same way, in terms a user knows:
//
//   expected ')' but found 'x'                   one missing / mismatched / extra token
//   expected ',' or ')' but found end of line     several possibilities (at most 4 listed)
//   expected an expression but found ')'          expression starters collapse into one word,
//   expected a statement or '}' but found 'else'  as do statement, declaration, member starts
//   unexpected 'x'                                anything longer, or a lookahead failure
//
// When the missing token is the ')' or ']' that closes a bracket opened on an earlier line,
// a note points at the opening bracket ("to match this '('").
//
// Tokens that could only continue an expression (binary operators, `(`, `[`, `.`, `if`,
// assignment operators) are left out of the list when the error is after an expression.
//
// SyntaxErrorListener sends them to the DiagnosticEngine with the offending token's range.
// It keeps one error per line (the rest are usually the same mistake seen again during
// recovery) and falls silent once the TokenSource has stopped at the nesting limit.
#pragma once

#include <string>

#include "antlr4-runtime.h"
#include "lang/diagnostics.h"
#include "lang/token_source.h"

namespace spora::lang {

class SyntaxErrorStrategy : public antlr4::DefaultErrorStrategy {
 public:
  SyntaxErrorStrategy(const std::string& source, int file, DiagnosticEngine& diags,
                      const TokenSource& tokens)
      : source_(source), file_(file), diags_(diags), tokens_(tokens) {}

  // In the item lists (statements of a block, members of a model, top-level items) a token
  // that cannot start or separate an item is reported, then skipped together with the rest
  // of its line (brackets balanced), and the list goes on. ANTLR's default would end the
  // list there, and the closing brace that follows would be reported again.
  void sync(antlr4::Parser* parser) override;

 protected:
  void reportNoViableAlternative(antlr4::Parser* parser,
                                 const antlr4::NoViableAltException& e) override;
  void reportInputMismatch(antlr4::Parser* parser,
                           const antlr4::InputMismatchException& e) override;
  void reportFailedPredicate(antlr4::Parser* parser,
                             const antlr4::FailedPredicateException& e) override;
  void reportUnwantedToken(antlr4::Parser* parser) override;
  void reportMissingToken(antlr4::Parser* parser) override;

 private:
  void report(antlr4::Parser* parser, antlr4::Token* found,
              const antlr4::misc::IntervalSet& expected, std::exception_ptr e);

  const std::string& source_;
  int file_;
  DiagnosticEngine& diags_;
  const TokenSource& tokens_;
};

class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  SyntaxErrorListener(const std::string& source, int file, DiagnosticEngine& diags,
                      const TokenSource& tokens)
      : source_(source), file_(file), diags_(diags), tokens_(tokens) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line,
                   size_t column, const std::string& message, std::exception_ptr e) override;

 private:
  const std::string& source_;
  int file_;
  DiagnosticEngine& diags_;
  const TokenSource& tokens_;
};

// "expected X but found Y" / "unexpected Y" for the token `found` given the expected set.
// `source` is the text the token's indices point into.
std::string describe_syntax_error(const antlr4::misc::IntervalSet& expected, antlr4::Token* found,
                                  const std::string& source,
                                  const antlr4::dfa::Vocabulary& vocabulary);

}  // namespace spora::lang
