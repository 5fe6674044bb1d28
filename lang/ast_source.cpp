// to_source (lang/ast_printer.h): expressions, types and patterns as one line of Spora.
#include <fmt/format.h>

#include "lang/ast_printer.h"

namespace spora::lang {

namespace {

bool is_compound(const Expr& e) {
  return e.kind == ExprKind::Unary || e.kind == ExprKind::Binary ||
         e.kind == ExprKind::Conditional || e.kind == ExprKind::Lambda;
}

std::string nested(const Expr* e) {
  if (e == nullptr) return "";
  std::string s = to_source(*e);
  return is_compound(*e) ? "(" + s + ")" : s;
}

std::string join(const std::vector<ExprPtr>& exprs) {
  std::string out;
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_source(*exprs[i]);
  }
  return out;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\0':
        out += "\\0";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

std::string param_source(const Param& p) {
  std::string s = p.name;
  if (p.type) s += ": " + to_source(*p.type);
  if (p.default_value) s += " = " + to_source(*p.default_value);
  return s;
}

}  // namespace

std::string quote_string(const std::string& s) { return quote(s); }

std::string to_source(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Float:
      return e.text;
    case ExprKind::Bool:
      return e.bool_value ? "true" : "false";
    case ExprKind::String:
      return quote(e.string_value);
    case ExprKind::None:
      return "none";
    case ExprKind::Name:
      return e.name;
    case ExprKind::List:
      return "[" + join(e.elems) + "]";
    case ExprKind::Tuple:
      return "(" + join(e.elems) + (e.elems.size() == 1 ? ",)" : ")");
    case ExprKind::Call: {
      std::string s = nested(e.callee.get()) + "(" + join(e.args);
      for (size_t i = 0; i < e.kwargs.size(); ++i) {
        if (i > 0 || !e.args.empty()) s += ", ";
        s += e.kwargs[i].name + "=" + to_source(*e.kwargs[i].value);
      }
      return s + ")";
    }
    case ExprKind::Attribute:
      return nested(e.object.get()) + "." + e.name;
    case ExprKind::Index: {
      std::string s = nested(e.object.get()) + "[";
      for (size_t i = 0; i < e.indices.size(); ++i) {
        const IndexItem& item = e.indices[i];
        if (i > 0) s += ", ";
        if (!item.is_slice) {
          s += to_source(*item.index);
          continue;
        }
        s += nested(item.start.get()) + ":" + nested(item.stop.get());
        if (item.step) s += ":" + nested(item.step.get());
      }
      return s + "]";
    }
    case ExprKind::Unary: {
      const char* op = to_string(e.unary_op);
      return std::string(op) + (e.unary_op == UnaryOp::Not ? " " : "") + nested(e.operand.get());
    }
    case ExprKind::Binary:
      return nested(e.lhs.get()) + " " + to_string(e.binary_op) + " " + nested(e.rhs.get());
    case ExprKind::Conditional:
      return nested(e.then_expr.get()) + " if " + nested(e.cond.get()) + " else " +
             nested(e.else_expr.get());
    case ExprKind::Lambda: {
      std::string s = "fn (";
      for (size_t i = 0; i < e.params.size(); ++i) {
        if (i > 0) s += ", ";
        s += param_source(e.params[i]);
      }
      s += ")";
      if (e.body_expr) return s + " => " + nested(e.body_expr.get());
      return s + " { ... }";
    }
  }
  return "?";
}

std::string to_source(const TypeExpr& t) {
  std::string s;
  if (t.kind == TypeExpr::Kind::Tuple) {
    s = "(";
    for (size_t i = 0; i < t.elems.size(); ++i) {
      if (i > 0) s += ", ";
      s += to_source(*t.elems[i]);
    }
    return s + (t.elems.size() == 1 ? ",)" : ")");
  }
  s = t.name;
  if (t.has_dims) s += "[" + join(t.dims) + "]";
  return s;
}

std::string to_source(const Pattern& p) {
  if (!p.is_tuple) return p.name;
  std::string s = "(";
  for (size_t i = 0; i < p.elems.size(); ++i) {
    if (i > 0) s += ", ";
    s += to_source(p.elems[i]);
  }
  return s + (p.elems.size() == 1 ? ",)" : ")");
}

}  // namespace spora::lang
