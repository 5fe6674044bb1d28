// SyntaxErrorStrategy and SyntaxErrorListener (lang/syntax_errors.h).
#include "lang/syntax_errors.h"

#include <fmt/format.h>

#include <vector>

#include "SporaParser.h"

namespace spora::lang {

namespace {

using P = spora_antlr::SporaParser;
using antlr4::misc::IntervalSet;

constexpr size_t kMaxListed = 4;

// Tokens that can only continue an expression that is already complete.
const std::vector<size_t> kContinuations = {
    P::LPAREN, P::LBRACK,      P::DOT,          P::POW,         P::STAR,
    P::SLASH,  P::FLOOR_DIV,   P::PERCENT,      P::AT,          P::PLUS,
    P::MINUS,  P::EQ,          P::NE,           P::LT,          P::LE,
    P::GT,     P::GE,          P::AND,          P::OR,          P::IF,
    P::ASSIGN, P::PLUS_ASSIGN, P::MINUS_ASSIGN, P::STAR_ASSIGN, P::SLASH_ASSIGN};
// Tokens that appear in an expected set only after an expression.
const std::vector<size_t> kBinaryOnly = {P::POW, P::STAR, P::SLASH, P::FLOOR_DIV, P::PERCENT,
                                         P::EQ,  P::NE,   P::LT,    P::LE,        P::GT,
                                         P::GE,  P::AND,  P::OR,    P::DOT};
const std::vector<size_t> kExpressionStarts = {
    P::NAME,  P::MODEL, P::PARAM,  P::AS,     P::INT,   P::FLOAT, P::STRING, P::TRUE,
    P::FALSE, P::NONE,  P::LPAREN, P::LBRACK, P::MINUS, P::PLUS,  P::NOT,    P::FN};
const std::vector<size_t> kStatementKeywords = {P::LET,   P::VAR,    P::IF,     P::FOR,
                                                P::WHILE, P::RETURN, P::ASSERT, P::PASS};
const std::vector<size_t> kDeclarationStarts = {P::IMPORT, P::DEF, P::MODEL, P::LET, P::VAR, P::AT};
const std::vector<size_t> kMemberStarts = {P::PARAM, P::LET, P::DEF, P::AT};

bool has(const std::vector<ssize_t>& set, size_t type) {
  for (ssize_t t : set) {
    if (static_cast<size_t>(t) == type) return true;
  }
  return false;
}

void remove_all(std::vector<ssize_t>& set, const std::vector<size_t>& types) {
  std::erase_if(set, [&](ssize_t t) {
    for (size_t type : types) {
      if (static_cast<size_t>(t) == type) return true;
    }
    return false;
  });
}

std::string describe_token_type(size_t type, const antlr4::dfa::Vocabulary& vocabulary) {
  switch (type) {
    case antlr4::Token::EOF:
      return "end of file";
    case P::NEWLINE:
      return "end of line";
    case P::NAME:
      return "a name";
    case P::INT:
      return "an integer";
    case P::FLOAT:
      return "a number";
    case P::STRING:
      return "a string";
    default:
      return vocabulary.getLiteralName(type);
  }
}

// The found token as the user wrote it: 'text' (printable, shortened), or end of line/file.
std::string describe_found(size_t type, const std::string& text) {
  if (type == antlr4::Token::EOF) return "end of file";
  if (type == P::NEWLINE) return "end of line";
  std::string shown;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      shown += fmt::format("\\x{:02x}", u);
    } else {
      shown += c;
    }
  }
  if (shown.size() > 24) shown = shown.substr(0, 21) + "...";
  return "'" + shown + "'";
}

std::string join_alternatives(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string unexpected(antlr4::Token* found, const std::string& source) {
  std::string text = token_text(source, found);
  return "unexpected " + describe_found(found->getType(), text.empty() ? found->getText() : text);
}

}  // namespace

std::string describe_syntax_error(const IntervalSet& expected, antlr4::Token* found,
                                  const std::string& source,
                                  const antlr4::dfa::Vocabulary& vocabulary) {
  std::vector<ssize_t> set = expected.toList();
  std::vector<std::string> words;  // categories first, then single tokens
  const bool block_expected = has(set, P::LBRACE);

  bool after_expression = false;
  for (size_t t : kBinaryOnly) after_expression = after_expression || has(set, t);
  if (after_expression) remove_all(set, kContinuations);

  bool declaration = has(set, P::IMPORT) && has(set, P::DEF);
  bool member = !declaration && has(set, P::PARAM) && has(set, P::DEF) && has(set, P::LET);
  bool statement = has(set, P::WHILE) && has(set, P::RETURN);
  bool expression = has(set, P::NAME) && has(set, P::INT);
  if (declaration) {
    words.push_back("a declaration ('def', 'model', 'let' or 'import')");
    remove_all(set, kDeclarationStarts);
  } else if (member) {
    words.push_back("a model member ('param', 'let' or 'def')");
    remove_all(set, kMemberStarts);
  }
  if (statement) {
    words.push_back("a statement");
    remove_all(set, kStatementKeywords);
    remove_all(set, kExpressionStarts);
  } else if (expression) {
    words.push_back("an expression");
    remove_all(set, kExpressionStarts);
  }
  // Soft keywords are names too; a line break goes without saying before a declaration or a
  // statement, and ';' goes without saying where a line break would do.
  if (has(set, P::NAME)) remove_all(set, {P::MODEL, P::PARAM, P::AS});
  // A NEWLINE next to '{' is the optional one of `NEWLINE? '{'`: not worth a mention.
  bool newline = has(set, P::NEWLINE) && words.empty() && !has(set, P::LBRACE);
  bool end_of_file = has(set, antlr4::Token::EOF);
  remove_all(set, {P::NEWLINE, P::SEMI, antlr4::Token::EOF, antlr4::Token::EPSILON});
  if (newline) words.push_back("end of line");
  if (has(set, P::NAME)) words.push_back("a name");
  remove_all(set, {P::NAME});
  for (ssize_t t : set) words.push_back(describe_token_type(static_cast<size_t>(t), vocabulary));
  if (end_of_file && words.empty()) words.push_back("end of file");

  std::string text = token_text(source, found);
  std::string shown = describe_found(found->getType(), text.empty() ? found->getText() : text);
  // A block opened the way Python opens one (`for i in range(3):`, `def f(x):`).
  const std::string python_block =
      found->getType() == P::COLON && block_expected
          ? " (a block is written in braces, `{ ... }`, not after ':' as in Python)"
          : "";
  if (words.empty() || words.size() > kMaxListed) return "unexpected " + shown + python_block;
  return "expected " + join_alternatives(words) + " but found " + shown + python_block;
}

// ---------------------------------------------------------------- SyntaxErrorStrategy

void SyntaxErrorStrategy::report(antlr4::Parser* parser, antlr4::Token* found,
                                 const IntervalSet& expected, std::exception_ptr e) {
  size_t reported_before = diags_.diagnostics().size();
  parser->notifyErrorListeners(
      found, describe_syntax_error(expected, found, source_, parser->getVocabulary()), e);
  if (diags_.diagnostics().size() == reported_before) return;  // the listener kept quiet

  // Braces are left out: a block's '{' is expected to be lines away from its '}'.
  const OpenBracket* open = tokens_.open_bracket_before(found->getTokenIndex());
  if (open == nullptr || open->type == P::LBRACE) return;
  if (open->range.begin.line == static_cast<int>(found->getLine())) return;
  bool paren = open->type == P::LPAREN;
  if (!expected.contains(static_cast<size_t>(paren ? P::RPAREN : P::RBRACK))) return;
  diags_.note(open->range, paren ? "to match this '('" : "to match this '['");
}

namespace {

// Whether the parser is inside the braces (or the file) of an item list.
bool in_item_list(antlr4::Parser* parser) {
  antlr4::ParserRuleContext* ctx = parser->getContext();
  switch (ctx->getRuleIndex()) {
    case P::RuleFile_:
    case P::RuleBlock:
      return true;
    case P::RuleModelDef:
      return static_cast<P::ModelDefContext*>(ctx)->LBRACE() != nullptr;
    default:
      return false;
  }
}

// Consumes tokens up to the next separator or list-closing '}' outside brackets (or EOF).
void skip_rest_of_item(antlr4::Parser* parser) {
  int depth = 0;
  for (;;) {
    size_t la = parser->getTokenStream()->LA(1);
    if (la == antlr4::Token::EOF) return;
    if (depth == 0 && (la == P::NEWLINE || la == P::SEMI || la == P::RBRACE)) return;
    if (la == P::LPAREN || la == P::LBRACK || la == P::LBRACE) ++depth;
    if ((la == P::RPAREN || la == P::RBRACK || la == P::RBRACE) && depth > 0) --depth;
    parser->consume();
  }
}

}  // namespace

void SyntaxErrorStrategy::sync(antlr4::Parser* parser) {
  if (!in_item_list(parser)) {
    DefaultErrorStrategy::sync(parser);
    return;
  }
  if (inErrorRecoveryMode(parser)) return;
  antlr4::atn::ATNState* state = parser->getATN().states[parser->getState()];
  const IntervalSet& next = parser->getATN().nextTokens(state);
  size_t la = parser->getTokenStream()->LA(1);
  if (next.contains(antlr4::Token::EPSILON) || next.contains(la)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), parser->getExpectedTokens(), nullptr);
  skip_rest_of_item(parser);
}

void SyntaxErrorStrategy::reportNoViableAlternative(antlr4::Parser* parser,
                                                    const antlr4::NoViableAltException& e) {
  antlr4::Token* found = e.getOffendingToken();
  // When prediction failed several tokens after the decision, the expected set of the
  // decision says nothing about the offending token.
  if (e.getStartToken() != found) {
    parser->notifyErrorListeners(found, unexpected(found, source_), std::make_exception_ptr(e));
    return;
  }
  report(parser, found, e.getExpectedTokens(), std::make_exception_ptr(e));
}

void SyntaxErrorStrategy::reportInputMismatch(antlr4::Parser* parser,
                                              const antlr4::InputMismatchException& e) {
  report(parser, e.getOffendingToken(), e.getExpectedTokens(), std::make_exception_ptr(e));
}

void SyntaxErrorStrategy::reportFailedPredicate(antlr4::Parser* parser,
                                                const antlr4::FailedPredicateException& e) {
  antlr4::Token* found = e.getOffendingToken();
  parser->notifyErrorListeners(found, unexpected(found, source_), std::make_exception_ptr(e));
}

void SyntaxErrorStrategy::reportUnwantedToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), getExpectedTokens(parser), nullptr);
}

void SyntaxErrorStrategy::reportMissingToken(antlr4::Parser* parser) {
  if (inErrorRecoveryMode(parser)) return;
  beginErrorCondition(parser);
  report(parser, parser->getCurrentToken(), getExpectedTokens(parser), nullptr);
}

// ---------------------------------------------------------------- SyntaxErrorListener

void SyntaxErrorListener::syntaxError(antlr4::Recognizer*, antlr4::Token* offending, size_t line,
                                      size_t column, const std::string& message,
                                      std::exception_ptr) {
  if (tokens_.stopped()) return;
  if (error_already_on_line(diags_, file_, static_cast<int>(line))) return;
  SourceRange range;
  if (offending != nullptr) {
    range = token_range(file_, offending);
  } else {
    range.begin = {file_, static_cast<int>(line), static_cast<int>(column) + 1};
    range.end = range.begin;
  }
  diags_.error(range, message);
}

}  // namespace spora::lang
