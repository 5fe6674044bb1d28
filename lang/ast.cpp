// Out-of-line pieces of lang/ast.h: operator spellings and Expr's destructor (defined here,
// where Block is complete, so that unique_ptr<Block> can be destroyed).
#include "lang/ast.h"

namespace spora::lang {

const char* to_string(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "-";
    case UnaryOp::Pos:
      return "+";
    case UnaryOp::Not:
      return "not";
  }
  return "?";
}

const char* to_string(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::FloorDiv:
      return "//";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::MatMul:
      return "@";
    case BinaryOp::Pow:
      return "**";
    case BinaryOp::Eq:
      return "==";
    case BinaryOp::Ne:
      return "!=";
    case BinaryOp::Lt:
      return "<";
    case BinaryOp::Le:
      return "<=";
    case BinaryOp::Gt:
      return ">";
    case BinaryOp::Ge:
      return ">=";
    case BinaryOp::And:
      return "and";
    case BinaryOp::Or:
      return "or";
  }
  return "?";
}

Expr::~Expr() = default;

}  // namespace spora::lang
