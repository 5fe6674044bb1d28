// ByteStream and TokenSource (lang/token_source.h).
#include "lang/token_source.h"

#include <fmt/format.h>

namespace spora::lang {

using spora_antlr::SporaLexer;

ByteStream::ByteStream(const std::string& bytes, const std::string& source_name) {
  _data.reserve(bytes.size());
  for (char c : bytes) _data.push_back(static_cast<char32_t>(static_cast<unsigned char>(c)));
  p = 0;
  name = source_name;
}

SourceRange token_range(int file, const antlr4::Token* token) {
  SourceRange r;
  if (token == nullptr) return r;
  r.begin = {file, static_cast<int>(token->getLine()),
             static_cast<int>(token->getCharPositionInLine()) + 1};
  r.end = r.begin;
  size_t start = token->getStartIndex(), stop = token->getStopIndex();
  bool has_extent = start != INVALID_INDEX && stop != INVALID_INDEX && stop >= start;
  if (has_extent && token->getType() != antlr4::Token::EOF) {
    r.end.col += static_cast<int>(stop - start + 1);
  }
  return r;
}

bool error_already_on_line(const DiagnosticEngine& diags, int file, int line) {
  const std::vector<Diagnostic>& earlier = diags.diagnostics();
  for (size_t i = earlier.size(); i-- > 0;) {
    if (earlier[i].severity == Severity::Note) continue;  // it explains the error before it
    return earlier[i].severity == Severity::Error && earlier[i].range.begin.file == file &&
           earlier[i].range.begin.line == line;
  }
  return false;
}

std::string token_text(const std::string& source, const antlr4::Token* token) {
  size_t start = token->getStartIndex(), stop = token->getStopIndex();
  if (start == INVALID_INDEX || stop == INVALID_INDEX || stop < start || stop >= source.size()) {
    return "";
  }
  return source.substr(start, stop - start + 1);
}

TokenSource::TokenSource(ByteStream* input, const std::string& source, int file,
                         DiagnosticEngine& diags)
    : SporaLexer(input), source_(source), file_(file), diags_(diags) {
  removeErrorListeners();  // ERROR_CHAR catches every character: the lexer cannot fail
}

bool TokenSource::newline_is_significant() const {
  return open_brackets_.empty() || open_brackets_.back().type == SporaLexer::LBRACE;
}

bool TokenSource::can_end_statement(size_t type) {
  switch (type) {
    case SporaLexer::NAME:
    case SporaLexer::MODEL:
    case SporaLexer::PARAM:
    case SporaLexer::AS:
    case SporaLexer::INT:
    case SporaLexer::FLOAT:
    case SporaLexer::STRING:
    case SporaLexer::TRUE:
    case SporaLexer::FALSE:
    case SporaLexer::NONE:
    case SporaLexer::RPAREN:
    case SporaLexer::RBRACK:
    case SporaLexer::RBRACE:
    case SporaLexer::RETURN:
    case SporaLexer::PASS:
      return true;
    default:
      return false;
  }
}

void TokenSource::track_brackets(const antlr4::Token& t) {
  size_t type = t.getType();
  if (type == SporaLexer::LPAREN || type == SporaLexer::LBRACK || type == SporaLexer::LBRACE) {
    open_brackets_.push_back({type, token_range(file_, &t)});
    return;
  }
  size_t opener = type == SporaLexer::RPAREN   ? SporaLexer::LPAREN
                  : type == SporaLexer::RBRACK ? SporaLexer::LBRACK
                  : type == SporaLexer::RBRACE ? SporaLexer::LBRACE
                                               : 0;
  if (opener == 0) return;
  // Close the nearest matching opener (a mismatched closer is the parser's to report).
  for (size_t i = open_brackets_.size(); i-- > 0;) {
    if (open_brackets_[i].type == opener) {
      open_brackets_.resize(i);
      return;
    }
  }
}

std::unique_ptr<antlr4::Token> TokenSource::hand_out(std::unique_ptr<antlr4::Token> t,
                                                     const OpenBracket& open_before) {
  open_before_.push_back(open_before);
  return t;
}

const OpenBracket* TokenSource::open_bracket_before(size_t token_index) const {
  if (token_index >= open_before_.size() || open_before_[token_index].type == 0) return nullptr;
  return &open_before_[token_index];
}

// A byte no token can start with. A well-formed multi-byte UTF-8 character is reported once,
// as a character; any other byte that is not printable ASCII is reported by its value.
void TokenSource::report_stray_character(const antlr4::Token& t) {
  size_t at = t.getStartIndex();
  if (at < skip_until_) return;  // continuation bytes of a character already reported
  unsigned char lead = static_cast<unsigned char>(source_[at]);
  size_t length = lead >= 0xF0 && lead <= 0xF4   ? 4
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                                                 : 1;
  bool valid_sequence = length > 1 && at + length <= source_.size();
  for (size_t i = 1; valid_sequence && i < length; ++i) {
    valid_sequence = (static_cast<unsigned char>(source_[at + i]) & 0xC0) == 0x80;
  }
  SourceRange range = token_range(file_, &t);
  std::string message;
  if (lead >= 0x21 && lead <= 0x7E) {
    message = fmt::format("unexpected character '{}'", static_cast<char>(lead));
  } else if (valid_sequence) {
    message = fmt::format("unexpected character '{}'", source_.substr(at, length));
    skip_until_ = at + length;
    range.end.col = range.begin.col + static_cast<int>(length);
  } else {
    message = fmt::format("unexpected byte 0x{:02x}", lead);
  }
  had_errors_ = true;
  if (!error_already_on_line(diags_, file_, range.begin.line)) {
    diags_.error(range, std::move(message));
  }
}

std::unique_ptr<antlr4::Token> TokenSource::stop(const antlr4::Token& at, std::string message) {
  SourceRange range = token_range(file_, &at);
  if (!error_already_on_line(diags_, file_, range.begin.line)) {
    diags_.error(range, std::move(message));
  }
  had_errors_ = true;
  stopped_ = true;
  open_brackets_.clear();
  _input->seek(_input->size());
  return hand_out(SporaLexer::nextToken(), OpenBracket{});  // EOF
}

std::unique_ptr<antlr4::Token> TokenSource::nextToken() {
  for (;;) {
    std::unique_ptr<antlr4::Token> t = SporaLexer::nextToken();
    size_t type = t->getType();
    if (type == SporaLexer::NEWLINE || type == SporaLexer::SEMI) {
      bool bracketed_newline = type == SporaLexer::NEWLINE && !newline_is_significant();
      if (bracketed_newline || !last_can_end_statement_) continue;
      last_can_end_statement_ = false;
      return hand_out(std::move(t), innermost_open());
    }
    if (type == SporaLexer::ERROR_CHAR) {
      report_stray_character(*t);
      continue;
    }
    if (type == SporaLexer::UNTERMINATED_STRING) {
      // It swallowed the rest of its line, closing brackets included: what the parser
      // would say next is noise.
      return stop(*t, "unterminated string");
    }
    OpenBracket open_before = innermost_open();
    track_brackets(*t);
    if (open_brackets_.size() > static_cast<size_t>(kMaxBracketDepth)) {
      return stop(*t, fmt::format("brackets are nested too deeply (the limit is {} levels)",
                                  kMaxBracketDepth));
    }
    last_can_end_statement_ = can_end_statement(type);
    return hand_out(std::move(t), open_before);
  }
}

}  // namespace spora::lang
