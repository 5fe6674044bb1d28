// AstBuilder: expressions, literals, call arguments and subscripts.
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "lang/ast_builder.h"
#include "lang/token_source.h"

namespace spora::lang {

namespace {

using P = spora_antlr::SporaParser;

BinaryOp binary_op_of(size_t token_type) {
  switch (token_type) {
    case P::POW:
      return BinaryOp::Pow;
    case P::STAR:
      return BinaryOp::Mul;
    case P::SLASH:
      return BinaryOp::Div;
    case P::FLOOR_DIV:
      return BinaryOp::FloorDiv;
    case P::PERCENT:
      return BinaryOp::Mod;
    case P::AT:
      return BinaryOp::MatMul;
    case P::PLUS:
      return BinaryOp::Add;
    case P::MINUS:
      return BinaryOp::Sub;
    case P::EQ:
      return BinaryOp::Eq;
    case P::NE:
      return BinaryOp::Ne;
    case P::LT:
      return BinaryOp::Lt;
    case P::LE:
      return BinaryOp::Le;
    case P::GT:
      return BinaryOp::Gt;
    case P::GE:
      return BinaryOp::Ge;
    case P::AND:
      return BinaryOp::And;
    default:
      return BinaryOp::Or;
  }
}

bool fits_int64(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// The INT literal `ctx` is, if it is one whose digits only fit in int64 when negated
// (`-9223372036854775808`, which is folded into one literal).
antlr4::Token* int64_min_literal(P::ExprContext* ctx, const std::string& source) {
  auto* primary = dynamic_cast<P::PrimaryExprContext*>(ctx);
  if (primary == nullptr) return nullptr;
  auto* literal = dynamic_cast<P::IntLiteralContext*>(primary->primary());
  if (literal == nullptr) return nullptr;
  antlr4::Token* token = literal->INT()->getSymbol();
  std::string digits = token_text(source, token);
  return !fits_int64(digits) && fits_int64("-" + digits) ? token : nullptr;
}

}  // namespace

ExprPtr AstBuilder::expr(P::ExprContext* ctx) {
  Nesting nesting(*this, ctx);
  if (auto* c = dynamic_cast<P::PrimaryExprContext*>(ctx)) return primary(c->primary());
  if (auto* c = dynamic_cast<P::CallExprContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Call, ctx);
    e->callee = expr(c->expr());
    arguments(c->argList(), e->args, e->kwargs);
    return e;
  }
  if (auto* c = dynamic_cast<P::AttributeExprContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Attribute, ctx);
    e->object = expr(c->expr());
    e->name = text(c->name());
    return e;
  }
  if (auto* c = dynamic_cast<P::IndexExprContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Index, ctx);
    e->object = expr(c->expr());
    for (P::SubscriptContext* s : c->subscript()) e->indices.push_back(subscript(s));
    return e;
  }
  if (auto* c = dynamic_cast<P::PowerExprContext*>(ctx)) {
    return binary(BinaryOp::Pow, ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::UnaryExprContext*>(ctx)) {
    bool negative = c->op->getType() == P::MINUS;
    if (antlr4::Token* digits = int64_min_literal(c->expr(), source_);
        negative && digits != nullptr) {
      return int_literal(digits, range(ctx), /*negated=*/true);
    }
    ExprPtr e = make(ExprKind::Unary, ctx);
    e->unary_op = negative ? UnaryOp::Neg : UnaryOp::Pos;
    e->operand = expr(c->expr());
    return e;
  }
  if (auto* c = dynamic_cast<P::MulExprContext*>(ctx)) {
    return binary(binary_op_of(c->op->getType()), ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::AddExprContext*>(ctx)) {
    return binary(binary_op_of(c->op->getType()), ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::CompareExprContext*>(ctx)) {
    // Comparisons do not chain: `a < b < c` would order the bool `a < b` against c. (`a < b == c`
    // compares two bools, `(a < b) == c`, and stays.)
    const size_t op = c->op->getType();
    const bool ordering = op == P::LT || op == P::LE || op == P::GT || op == P::GE;
    if (auto* left = dynamic_cast<P::CompareExprContext*>(c->expr(0)); left && ordering)
      error(range(c->op), fmt::format("comparisons do not chain: this '{}' compares the bool "
                                      "result of '{}' with what follows; write "
                                      "'a {} b and b {} c', or parenthesise to compare the bool",
                                      c->op->getText(), left->op->getText(),
                                      left->op->getText(), c->op->getText()));
    return binary(binary_op_of(c->op->getType()), ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::NotExprContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Unary, ctx);
    e->unary_op = UnaryOp::Not;
    e->operand = expr(c->expr());
    return e;
  }
  if (auto* c = dynamic_cast<P::AndExprContext*>(ctx)) {
    return binary(BinaryOp::And, ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::OrExprContext*>(ctx)) {
    return binary(BinaryOp::Or, ctx, c->expr(0), c->expr(1));
  }
  if (auto* c = dynamic_cast<P::ConditionalExprContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Conditional, ctx);
    e->then_expr = expr(c->expr(0));
    e->cond = expr(c->expr(1));
    e->else_expr = expr(c->expr(2));
    return e;
  }
  auto* c = static_cast<P::LambdaExprContext*>(ctx);
  ExprPtr e = make(ExprKind::Lambda, ctx);
  e->params = params(c->paramList());
  e->body_expr = expr(c->expr());
  return e;
}

ExprPtr AstBuilder::binary(BinaryOp op, P::ExprContext* ctx, P::ExprContext* lhs,
                           P::ExprContext* rhs) {
  ExprPtr e = make(ExprKind::Binary, ctx);
  e->binary_op = op;
  e->lhs = expr(lhs);
  e->rhs = expr(rhs);
  return e;
}

ExprPtr AstBuilder::primary(P::PrimaryContext* ctx) {
  if (auto* c = dynamic_cast<P::IntLiteralContext*>(ctx)) {
    return int_literal(c->INT()->getSymbol(), range(ctx));
  }
  if (auto* c = dynamic_cast<P::FloatLiteralContext*>(ctx)) {
    return float_literal(c->FLOAT()->getSymbol(), range(ctx));
  }
  if (auto* c = dynamic_cast<P::StringLiteralContext*>(ctx)) {
    return string_literal(c->STRING()->getSymbol(), range(ctx));
  }
  if (auto* c = dynamic_cast<P::BoolLiteralContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Bool, ctx);
    e->bool_value = c->TRUE() != nullptr;
    return e;
  }
  if (dynamic_cast<P::NoneLiteralContext*>(ctx) != nullptr) return make(ExprKind::None, ctx);
  if (auto* c = dynamic_cast<P::NameAtomContext*>(ctx)) {
    ExprPtr e = make(ExprKind::Name, ctx);
    e->name = text(c->name());
    return e;
  }
  if (auto* c = dynamic_cast<P::ParenAtomContext*>(ctx)) {
    // `(e)` is e; `()`, `(e,)` and `(a, b)` are tuples.
    if (c->expr().size() == 1 && c->COMMA().empty()) return expr(c->expr(0));
    ExprPtr e = make(ExprKind::Tuple, ctx);
    for (P::ExprContext* elem : c->expr()) e->elems.push_back(expr(elem));
    return e;
  }
  if (auto* c = dynamic_cast<P::ListAtomContext*>(ctx)) {
    ExprPtr e = make(ExprKind::List, ctx);
    for (P::ExprContext* elem : c->expr()) e->elems.push_back(expr(elem));
    return e;
  }
  auto* c = static_cast<P::LambdaBlockContext*>(ctx);
  ExprPtr e = make(ExprKind::Lambda, ctx);
  e->params = params(c->paramList());
  e->body_block = block(c->block());
  return e;
}

ExprPtr AstBuilder::int_literal(antlr4::Token* token, SourceRange where, bool negated) {
  auto e = std::make_unique<Expr>(ExprKind::Int);
  e->range = where;
  std::string digits = text(token);
  e->text = negated ? "-" + digits : digits;
  int64_t value = 0;
  std::from_chars(e->text.data(), e->text.data() + e->text.size(), value);
  if (!fits_int64(e->text)) {
    error(where, fmt::format("integer literal {} does not fit in 64 bits (the range is "
                             "-9223372036854775808 to 9223372036854775807)",
                             e->text));
  }
  e->int_value = value;
  return e;
}

ExprPtr AstBuilder::float_literal(antlr4::Token* token, SourceRange where) {
  auto e = std::make_unique<Expr>(ExprKind::Float);
  e->range = where;
  e->text = text(token);
  errno = 0;
  // strtod: the program never changes LC_NUMERIC, so '.' is the decimal point.
  double value = std::strtod(e->text.c_str(), nullptr);
  if (errno == ERANGE && std::isinf(value)) {
    error(where, fmt::format("float literal {} is too large for a 64-bit float", e->text));
  }
  e->float_value = value;
  return e;
}

// Escapes: \n \t \r \0 \\ \" \' ; anything else after a backslash is an error.
ExprPtr AstBuilder::string_literal(antlr4::Token* token, SourceRange where) {
  auto e = std::make_unique<Expr>(ExprKind::String);
  e->range = where;
  std::string raw = text(token);
  char quote = raw.empty() ? '"' : raw.front();
  size_t end = raw.size();
  if (end >= 2 && raw.back() == quote) --end;  // an unterminated string has no closing quote
  for (size_t i = 1; i < end; ++i) {
    char c = raw[i];
    if (c != '\\') {
      e->string_value += c;
      continue;
    }
    if (i + 1 >= end) break;  // a lone trailing backslash (already an unterminated string)
    char next = raw[++i];
    switch (next) {
      case 'n':
        e->string_value += '\n';
        break;
      case 't':
        e->string_value += '\t';
        break;
      case 'r':
        e->string_value += '\r';
        break;
      case '0':
        e->string_value += '\0';
        break;
      case '\\':
        e->string_value += '\\';
        break;
      case '"':
        e->string_value += '"';
        break;
      case '\'':
        e->string_value += '\'';
        break;
      default: {
        SourceRange at = where;
        at.begin.col += static_cast<int>(i) - 1;
        at.end = at.begin;
        at.end.col += 2;
        std::string shown = (next >= 0x20 && next < 0x7F)
                                ? std::string(1, next)
                                : fmt::format("\\x{:02x}", static_cast<unsigned char>(next));
        error(at, fmt::format("unknown escape sequence '\\{}' in string", shown));
      }
    }
  }
  return e;
}

void AstBuilder::arguments(P::ArgListContext* ctx, std::vector<ExprPtr>& args,
                           std::vector<KeywordArg>& kwargs) {
  if (ctx == nullptr) return;
  for (P::ArgContext* a : ctx->arg()) {
    if (a->name() == nullptr) {
      ExprPtr value = expr(a->expr());
      if (!kwargs.empty()) {
        error(value->range, "positional argument follows keyword argument");
      }
      args.push_back(std::move(value));
      continue;
    }
    KeywordArg kw;
    kw.name = text(a->name());
    kw.name_range = range(a->name());
    for (const KeywordArg& earlier : kwargs) {
      if (earlier.name == kw.name) {
        error(kw.name_range, fmt::format("keyword argument '{}' is given twice", kw.name));
      }
    }
    kw.value = expr(a->expr());
    kwargs.push_back(std::move(kw));
  }
}

IndexItem AstBuilder::subscript(P::SubscriptContext* ctx) {
  IndexItem item;
  item.range = range(ctx);
  if (auto* c = dynamic_cast<P::IndexSubscriptContext*>(ctx)) {
    item.index = expr(c->expr());
    return item;
  }
  auto* c = static_cast<P::SliceSubscriptContext*>(ctx);
  item.is_slice = true;
  item.start = optional_expr(c->start);
  item.stop = optional_expr(c->stop);
  item.step = optional_expr(c->step);
  return item;
}

}  // namespace spora::lang
