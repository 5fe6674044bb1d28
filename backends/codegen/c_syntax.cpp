// The C spelling of kernel IR nodes (c_syntax.h).
#include "backends/codegen/c_syntax.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "backends/codegen/loop_expr.h"
#include "semantics/registry.h"

namespace spora::codegen {

using kir::Expr;
using kir::Ix;
using kir::Operand;
using kir::Stmt;

std::string c_type(DType d) {
  switch (d) {
    case DType::f32:
      return "float";
    case DType::f64:
      return "double";
    case DType::i32:
      return "int32_t";
    case DType::i64:
      return "int64_t";
    case DType::boolean:
      return "bool";
    default:
      throw std::logic_error("kernel value of dtype " + std::string(dtype_name(d)));
  }
}

std::string c_buffer_type(DType d) { return d == DType::boolean ? "uint8_t" : c_type(d); }

std::string c_acc_type(DType d) { return d == DType::i32 ? "int" : c_type(d); }

std::string c_literal(double v, DType d) {
  if (d == DType::boolean) return v != 0 ? "true" : "false";
  if (d == DType::i32) return fmt::format("((int32_t){})", static_cast<int64_t>(v));
  if (d == DType::i64) return fmt::format("((int64_t){}LL)", static_cast<int64_t>(v));
  const bool single = d == DType::f32;
  if (std::isnan(v)) return single ? "SP_NAN_F" : "SP_NAN_D";
  if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (single ? "SP_INF_F" : "SP_INF_D") + ")";
  std::string s = single ? fmt::format("{:.9g}", static_cast<float>(v)) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (single) s += "f";
  return v < 0 || s[0] == '-' ? "(" + s + ")" : s;
}

std::string c_copy_suffix(int copy) {
  return copy == 0 ? "" : "_" + std::string(1, static_cast<char>('a' + copy - 1));
}

std::string c_var(const kir::Var& v) {
  std::string s = v.kind == kir::Var::Kind::Row     ? "r"
                  : v.kind == kir::Var::Kind::Inner ? "j"
                                                    : "c" + std::to_string(v.axis);
  return s + c_copy_suffix(v.copy);
}

namespace {

// A term of a sum: a product without its own parentheses.
std::string term(const Ix& t) {
  if (t.op() == Ix::Op::Scale) return fmt::format("{} * {}", c_index(t.args()[0]), t.k());
  return c_index(t);
}

}  // namespace

std::string c_index(const Ix& x) {
  switch (x.op()) {
    case Ix::Op::Const:
      return std::to_string(x.k());
    case Ix::Op::Var:
      return c_var(x.v());
    case Ix::Op::Sum: {
      std::string s;
      for (const Ix& t : x.args()) s += (s.empty() ? "" : " + ") + term(t);
      return "(" + s + ")";
    }
    case Ix::Op::Scale:
      return "(" + term(x) + ")";
    case Ix::Op::Div:
      return fmt::format("({} / {})", c_index(x.args()[0]), x.k());
    case Ix::Op::Mod:
      return fmt::format("({} % {})", c_index(x.args()[0]), x.k());
  }
  return "0";
}

std::string c_index_prefix(const Ix& x) {
  if (x.op() != Ix::Op::Sum) return "";
  std::string s;
  for (size_t i = 0; i + 1 < x.args().size(); ++i) s += term(x.args()[i]) + " + ";
  return s;
}

std::string c_operand(const Operand& o) {
  if (o.kind == Operand::Kind::Literal) return c_literal(o.lit, o.dtype);
  return "v" + std::to_string(o.id) + c_copy_suffix(o.copy);
}

std::string c_acc_name(const kir::Accumulator& a) {
  return (a.total ? "t" : "a") + std::to_string(a.id);
}

std::string c_expr(const Expr& e) {
  auto arg = [&](size_t i) { return c_operand(e.args.at(i)); };
  const std::string t = c_type(e.dtype);
  switch (e.op) {
    case Expr::Op::Load: {
      std::string s = fmt::format("in{}[{}]", e.buffer, c_index(e.index));
      return e.dtype == DType::boolean ? "(" + s + " != 0)" : s;
    }
    case Expr::Op::Unary:
      return "sp_" + e.fn + "(" + arg(0) + ")";
    case Expr::Op::Binary: {
      static const std::map<std::string, std::string> infix = {
          {"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}};
      auto op = infix.find(e.fn);
      return op != infix.end() ? "(" + arg(0) + " " + op->second + " " + arg(1) + ")"
                               : "sp_" + e.fn + "(" + arg(0) + ", " + arg(1) + ")";
    }
    case Expr::Op::Compare: {
      static const std::map<std::string, std::string> sym = {
          {"eq", "=="}, {"ne", "!="}, {"lt", "<"}, {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
      return "(" + arg(0) + " " + sym.at(e.fn) + " " + arg(1) + ")";
    }
    case Expr::Op::And:
      return "(" + arg(0) + " && " + arg(1) + ")";
    case Expr::Op::Or:
      return "(" + arg(0) + " || " + arg(1) + ")";
    case Expr::Op::Not:
      return "(!" + arg(0) + ")";
    case Expr::Op::Select:
      return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
    case Expr::Op::Cast:
      return e.dtype == DType::boolean ? "(" + arg(0) + " != 0)" : "((" + t + ")(" + arg(0) + "))";
    case Expr::Op::FiniteOrZero:
      return "sp_finite_or_zero(" + arg(0) + ")";
    case Expr::Op::ClassMatch:
      return fmt::format("((int64_t)({}) == {} ? ({})1 : ({})0)", arg(0), c_index(e.index), t, t);
    case Expr::Op::Dropout:
      return fmt::format("sp_dropout({}, (uint64_t){}ULL, (uint64_t)({}), {}, {})", arg(0), e.seed,
                         c_index(e.index), c_literal(e.p, DType::f64),
                         c_literal(e.scale, DType::f64));
    case Expr::Op::Reduced: {
      const std::string acc = (e.total ? "t" : "a") + std::to_string(e.acc);
      if (e.red == kir::ReduceOp::All || e.red == kir::ReduceOp::Any) return "(" + acc + " != 0)";
      if (e.mean)
        return fmt::format("(({})({} / {}))", t, acc,
                           c_literal(static_cast<double>(e.count), DType::f64));
      return "((" + t + ")(" + acc + "))";
    }
  }
  return "";
}

std::string c_stmt(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::Define:
      return "const " + c_type(s.expr.dtype) + " v" + std::to_string(s.id) +
             c_copy_suffix(s.copy) + " = " + c_expr(s.expr) + ";";
    case Stmt::Kind::Coord:
      return "const int64_t " + c_var(s.coord) + " = " + c_index(s.index) + ";";
    case Stmt::Kind::Store: {
      const std::string v = c_operand(s.value);
      return fmt::format("out{}[{}] = {};", s.buffer, c_index(s.index),
                         s.value.dtype == DType::boolean ? "(uint8_t)(" + v + ")" : v);
    }
    case Stmt::Kind::Check:
      return fmt::format("SP_CHECK((int64_t)({0}) < 0 || (int64_t)({0}) >= {1});",
                         c_operand(s.value), s.limit);
  }
  return "";
}

std::string c_loop_expr_defs(const kir::Kernel& k) {
  std::string out;
  for (const std::string& name : kir::loop_form_calls(k)) {
    const LoopExpr* row = sem::Registry::instance().find(name)->facet<LoopExpr>(kLoopExprFacet);
    if (!row) throw std::runtime_error(name + " has a loop form but no C expression (loop_expr)");
    const LoopExpr& e = *row;
    const std::string params = e.arity == 1 ? "{0} a" : "{0} a, {0} b";
    out +=
        fmt::format("#ifndef SP_LOOP_EXPR_{0}\n#define SP_LOOP_EXPR_{0} 1\nnamespace {{\n", name);
    for (const auto& [type, text] : {std::pair{"float", &e.f32}, std::pair{"double", &e.f64}})
      out += fmt::format("SP_FN {} sp_{}({}) {{ return {}; }}\n", type, name,
                         fmt::format(fmt::runtime(params), type), *text);
    out += "}  // namespace\n#endif\n";
  }
  return out;
}

}  // namespace spora::codegen
