// Tokens, types and literals of the IR text (the pieces parser.cpp assembles into a Module).
//
//   tokens    %name %"quoted"  @name @"quoted"  ident (letters, digits, _ and .)  123  1.5e-3
//             "string" (escapes \" \\ \n \t \r \xHH)  -> and one-character punctuation;
//             `#` starts a comment to the end of the line
//   types     the syntax of types.h (parse_type)
//   literals  untyped trees (Lit) that parser.cpp converts once it knows the type they must have
//
// Errors are ParseError exceptions carrying the offending range; the parser turns the first one
// into a diagnostic.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lang/diagnostics.h"
#include "semantics/types.h"

namespace spora::ir::text {

struct ParseError : std::runtime_error {
  ParseError(lang::SourceRange r, const std::string& message)
      : std::runtime_error(message), range(r) {}
  lang::SourceRange range;
};

struct Token {
  enum class Kind { End, Ident, Local, Global, Int, Float, String, Punct, Arrow };
  Kind kind = Kind::End;
  std::string text;  // Local/Global/String: the unescaped name; Punct: the character
  lang::SourceRange range;
  bool is(Kind k, std::string_view t) const { return kind == k && text == t; }
  bool punct(char c) const { return kind == Kind::Punct && text.size() == 1 && text[0] == c; }
  std::string describe() const;  // for "expected X, found Y"
};

std::vector<Token> lex(std::string_view source, int file);

// Brackets ('(', '[', '{') open at once past this are an error, before the recursive parse of
// types and literals can exhaust the stack (the front end's limit, lang/token_source.h).
inline constexpr int kMaxIrBracketDepth = 200;

class TokenStream {
 public:
  explicit TokenStream(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool at_end() const { return peek().kind == Token::Kind::End; }
  // Where the last consumed token ends (for ranges spanning several tokens).
  lang::SourceLoc last_end() const {
    return pos_ > 0 ? tokens_[pos_ - 1].range.end : peek().range.begin;
  }
  bool accept_punct(char c);
  bool accept_ident(std::string_view word);
  const Token& expect_punct(char c);
  const Token& expect_ident(std::string_view word);  // "" = any identifier
  const Token& expect(Token::Kind kind, const char* what);
  [[noreturn]] void fail(const Token& at, const std::string& message) const;
  // A recursive rule's levels (types written `fn() -> fn() -> ...` or `list<list<...>>` nest
  // without brackets): past kMaxIrBracketDepth levels, an error at `at`.
  void enter(const Token& at);
  void leave() { --levels_; }

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;   // brackets open
  int levels_ = 0;  // recursive rules entered
};

sem::TypeP parse_type(TokenStream& ts);

// A literal before it is given a type.
struct Lit {
  enum class Kind { Number, Word, String, List, Tuple };  // Word: true false none inf nan f32...
  Kind kind = Kind::Number;
  std::string text;       // Number: with its sign ("-1.5"); Word: the word with its sign ("-inf")
  bool is_float = false;  // Number written with '.' or an exponent
  std::vector<Lit> elems;
  lang::SourceRange range;
};

Lit parse_literal(TokenStream& ts);

}  // namespace spora::ir::text
