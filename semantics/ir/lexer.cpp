// Lexer, type parser and literal parser of the IR text (see lexer.h).
#include "semantics/ir/lexer.h"

#include <cctype>
#include <charconv>

namespace spora::ir::text {

namespace {

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

class Lexer {
 public:
  Lexer(std::string_view src, int file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.range.begin = here();
      if (i_ >= src_.size()) {
        t.range.end = here();
        out.push_back(std::move(t));
        return out;
      }
      lex_one(t);
      t.range.end = here();
      out.push_back(std::move(t));
    }
  }

 private:
  std::string_view src_;
  int file_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;

  lang::SourceLoc here() const { return {file_, line_, col_}; }
  char peek(size_t k = 0) const { return i_ + k < src_.size() ? src_[i_ + k] : '\0'; }
  char advance() {
    char c = src_[i_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  [[noreturn]] void fail(lang::SourceLoc at, const std::string& message) const {
    lang::SourceLoc end = here();
    if (end.line != at.line || end.col <= at.col) end = {at.file, at.line, at.col + 1};
    throw ParseError({at, end}, message);
  }

  void skip_space() {
    while (i_ < src_.size()) {
      char c = peek();
      if (c == '#') {
        while (i_ < src_.size() && peek() != '\n') advance();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance();
      } else {
        return;
      }
    }
  }

  std::string name_or_quoted(lang::SourceLoc start) {
    if (peek() == '"') return string_body(start);
    std::string s;
    while (name_char(peek())) s += advance();
    if (s.empty()) fail(start, "expected a name after '" + std::string(1, src_[i_ - 1]) + "'");
    return s;
  }

  std::string string_body(lang::SourceLoc start) {
    advance();  // opening quote
    std::string s;
    for (;;) {
      if (i_ >= src_.size() || peek() == '\n') fail(start, "unterminated string");
      char c = advance();
      if (c == '"') return s;
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = i_ < src_.size() ? advance() : '\0';
      switch (e) {
        case 'n':
          s += '\n';
          break;
        case 't':
          s += '\t';
          break;
        case 'r':
          s += '\r';
          break;
        case '"':
          s += '"';
          break;
        case '\\':
          s += '\\';
          break;
        case 'x': {
          std::string hex;
          while (hex.size() < 2 && std::isxdigit(static_cast<unsigned char>(peek())))
            hex += advance();
          if (hex.size() != 2) fail(start, "bad \\x escape in string");
          s += static_cast<char>(std::stoi(hex, nullptr, 16));
          break;
        }
        default:
          fail(start, std::string("unknown escape \\") + e + " in string");
      }
    }
  }

  void lex_one(Token& t) {
    lang::SourceLoc start = here();
    char c = peek();
    if (c == '%' || c == '@') {
      advance();
      t.kind = c == '%' ? Token::Kind::Local : Token::Kind::Global;
      t.text = name_or_quoted(start);
    } else if (c == '"') {
      t.kind = Token::Kind::String;
      t.text = string_body(start);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number(t);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.kind = Token::Kind::Ident;
      while (name_char(peek())) t.text += advance();
    } else if (c == '-' && peek(1) == '>') {
      advance();
      advance();
      t.kind = Token::Kind::Arrow;
      t.text = "->";
    } else if (std::string_view("()[]{},:=<>?-").find(c) != std::string_view::npos) {
      t.kind = Token::Kind::Punct;
      t.text = std::string(1, advance());
    } else {
      fail(start, std::string("unexpected character '") + c + "'");
    }
  }

  void lex_number(Token& t) {
    t.kind = Token::Kind::Int;
    auto digits = [&] {
      while (std::isdigit(static_cast<unsigned char>(peek()))) t.text += advance();
    };
    digits();
    if (peek() == '.' && std::isdigit(static_cast<unsigned char>(peek(1)))) {
      t.kind = Token::Kind::Float;
      t.text += advance();
      digits();
    }
    if ((peek() == 'e' || peek() == 'E') && (std::isdigit(static_cast<unsigned char>(peek(1))) ||
                                             ((peek(1) == '+' || peek(1) == '-') &&
                                              std::isdigit(static_cast<unsigned char>(peek(2)))))) {
      t.kind = Token::Kind::Float;
      t.text += advance();
      if (peek() == '+' || peek() == '-') t.text += advance();
      digits();
    }
  }
};

}  // namespace

std::string Token::describe() const {
  switch (kind) {
    case Kind::End:
      return "end of input";
    case Kind::Local:
      return "'%" + text + "'";
    case Kind::Global:
      return "'@" + text + "'";
    case Kind::String:
      return "a string";
    default:
      return "'" + text + "'";
  }
}

std::vector<Token> lex(std::string_view source, int file) { return Lexer(source, file).run(); }

const Token& TokenStream::peek(size_t ahead) const {
  size_t i = pos_ + ahead;
  return i < tokens_.size() ? tokens_[i] : tokens_.back();
}

const Token& TokenStream::next() {
  const Token& t = peek();
  if (t.punct('(') || t.punct('[') || t.punct('{')) {
    if (++depth_ > kMaxIrBracketDepth)
      fail(t, "brackets nested deeper than " + std::to_string(kMaxIrBracketDepth) + " levels");
  } else if ((t.punct(')') || t.punct(']') || t.punct('}')) && depth_ > 0) {
    --depth_;
  }
  if (pos_ < tokens_.size() && t.kind != Token::Kind::End) ++pos_;
  return t;
}

void TokenStream::enter(const Token& at) {
  if (++levels_ > kMaxIrBracketDepth)
    fail(at, "a type nested deeper than " + std::to_string(kMaxIrBracketDepth) + " levels");
}

bool TokenStream::accept_punct(char c) {
  if (!peek().punct(c)) return false;
  next();
  return true;
}

bool TokenStream::accept_ident(std::string_view word) {
  if (!peek().is(Token::Kind::Ident, word)) return false;
  next();
  return true;
}

void TokenStream::fail(const Token& at, const std::string& message) const {
  throw ParseError(at.range, message);
}

const Token& TokenStream::expect_punct(char c) {
  if (!peek().punct(c))
    fail(peek(), std::string("expected '") + c + "', found " + peek().describe());
  return next();
}

const Token& TokenStream::expect_ident(std::string_view word) {
  if (peek().kind != Token::Kind::Ident || (!word.empty() && peek().text != word))
    fail(peek(), "expected " +
                     (word.empty() ? std::string("a name") : "'" + std::string(word) + "'") +
                     ", found " + peek().describe());
  return next();
}

const Token& TokenStream::expect(Token::Kind kind, const char* what) {
  if (peek().kind != kind)
    fail(peek(), std::string("expected ") + what + ", found " + peek().describe());
  return next();
}

namespace {

std::vector<sem::TypeP> type_list(TokenStream& ts, char close, bool& trailing_comma) {
  std::vector<sem::TypeP> out;
  trailing_comma = false;
  while (!ts.peek().punct(close)) {
    out.push_back(parse_type(ts));
    trailing_comma = ts.accept_punct(',');
    if (!trailing_comma) break;
  }
  ts.expect_punct(close);
  return out;
}

sem::TypeP record_body(TokenStream& ts, std::string name) {
  ts.expect_punct('{');
  std::vector<std::string> names;
  std::vector<sem::TypeP> elems;
  while (!ts.peek().punct('}')) {
    names.push_back(ts.expect_ident("").text);
    ts.expect_punct(':');
    elems.push_back(parse_type(ts));
    if (!ts.accept_punct(',')) break;
  }
  ts.expect_punct('}');
  return sem::Type::record(std::move(name), std::move(names), std::move(elems));
}

}  // namespace

namespace {

sem::TypeP parse_type_at_level(TokenStream& ts);

}  // namespace

sem::TypeP parse_type(TokenStream& ts) {
  ts.enter(ts.peek());
  sem::TypeP type = parse_type_at_level(ts);
  ts.leave();
  return type;
}

namespace {

sem::TypeP parse_type_at_level(TokenStream& ts) {
  const Token& t = ts.peek();
  bool comma = false;
  if (t.punct('(')) {
    ts.next();
    return sem::Type::tuple(type_list(ts, ')', comma));
  }
  if (t.punct('{')) return record_body(ts, "");
  if (t.kind != Token::Kind::Ident) ts.fail(t, "expected a type, found " + t.describe());
  Token word = ts.next();
  if (word.text == "str") return sem::Type::string();
  if (word.text == "iter" && ts.peek().punct('<')) {
    // iter<E> or, for an iterator walked in parts (semantics/iterable.h), iter<E0, E1, ...>.
    ts.next();
    std::vector<sem::TypeP> elems{parse_type(ts)};
    while (ts.accept_punct(',')) elems.push_back(parse_type(ts));
    ts.expect_punct('>');
    return sem::Type::iterator("", std::move(elems));
  }
  if (word.text == "list" && ts.peek().punct('<')) {
    ts.next();
    sem::TypeP elem = parse_type(ts);
    ts.expect_punct('>');
    return sem::Type::list(elem);
  }
  if (word.text == "fn" && ts.peek().punct('(')) {
    ts.next();
    std::vector<sem::TypeP> params = type_list(ts, ')', comma);
    ts.expect(Token::Kind::Arrow, "'->'");
    return sem::Type::function(std::move(params), parse_type(ts));
  }
  if (auto dtype = parse_dtype(word.text)) {
    sem::Shape shape;
    if (ts.accept_punct('[')) {
      while (!ts.peek().punct(']')) {
        if (ts.accept_punct('?')) {
          shape.push_back(sem::kDynamicDim);
        } else {
          const Token& d = ts.expect(Token::Kind::Int, "a dimension");
          int64_t n = 0;
          const char* end = d.text.data() + d.text.size();
          const auto r = std::from_chars(d.text.data(), end, n);
          if (r.ec != std::errc() || r.ptr != end)
            ts.fail(d, "dimension " + d.text + " does not fit in 64 bits");
          shape.push_back(n);
        }
        if (!ts.accept_punct(',')) break;
      }
      ts.expect_punct(']');
    }
    return sem::Type::tensor(*dtype, std::move(shape));
  }
  if (ts.peek().punct('{')) return record_body(ts, word.text);
  ts.fail(word, "unknown type '" + word.text + "'");
}

}  // namespace

Lit parse_literal(TokenStream& ts) {
  Lit lit;
  const Token& first = ts.peek();
  lit.range = first.range;
  bool negative = ts.accept_punct('-');
  const Token& t = ts.next();
  lit.range.end = t.range.end;
  std::string sign = negative ? "-" : "";
  switch (t.kind) {
    case Token::Kind::Int:
    case Token::Kind::Float:
      lit.kind = Lit::Kind::Number;
      lit.text = sign + t.text;
      lit.is_float = t.kind == Token::Kind::Float;
      return lit;
    case Token::Kind::Ident:
      lit.kind = Lit::Kind::Word;
      lit.text = sign + t.text;
      if (negative && t.text != "inf" && t.text != "nan") ts.fail(t, "expected a number after '-'");
      return lit;
    case Token::Kind::String:
      if (negative) ts.fail(t, "expected a number after '-'");
      lit.kind = Lit::Kind::String;
      lit.text = t.text;
      return lit;
    default:
      break;
  }
  if (negative) ts.fail(t, "expected a number after '-', found " + t.describe());
  char close;
  if (t.punct('[')) {
    lit.kind = Lit::Kind::List;
    close = ']';
  } else if (t.punct('(')) {
    lit.kind = Lit::Kind::Tuple;
    close = ')';
  } else {
    ts.fail(t, "expected a value, found " + t.describe());
  }
  while (!ts.peek().punct(close)) {
    lit.elems.push_back(parse_literal(ts));
    if (!ts.accept_punct(',')) break;
  }
  lit.range.end = ts.expect_punct(close).range.end;
  return lit;
}

}  // namespace spora::ir::text
