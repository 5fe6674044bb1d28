// AstBuilder: blocks, statements and binding patterns.
#include <fmt/format.h>

#include "lang/ast_builder.h"

namespace spora::lang {

std::unique_ptr<Block> AstBuilder::block(P::BlockContext* ctx) {
  Nesting nesting(*this, ctx);
  auto b = std::make_unique<Block>();
  b->range = range(ctx);
  for (P::StmtContext* s : ctx->stmt()) b->stmts.push_back(stmt(s));
  return b;
}

StmtPtr AstBuilder::stmt(P::StmtContext* ctx) {
  if (auto* c = dynamic_cast<P::LetStatementContext*>(ctx)) return let_stmt(c->letStmt());
  if (auto* c = dynamic_cast<P::IfStatementContext*>(ctx)) return if_stmt(c->ifStmt());
  if (auto* c = dynamic_cast<P::ExprStatementContext*>(ctx)) return expr_stmt(c);

  StmtPtr s;
  if (auto* c = dynamic_cast<P::ForStatementContext*>(ctx)) {
    s = std::make_unique<Stmt>(StmtKind::For);
    s->pattern = pattern(c->pattern());
    s->value = expr(c->expr());
    s->body = block(c->block());
  } else if (auto* c = dynamic_cast<P::WhileStatementContext*>(ctx)) {
    s = std::make_unique<Stmt>(StmtKind::While);
    s->cond = expr(c->expr());
    s->body = block(c->block());
  } else if (auto* c = dynamic_cast<P::ReturnStatementContext*>(ctx)) {
    s = std::make_unique<Stmt>(StmtKind::Return);
    s->value = optional_expr(c->expr());
  } else if (auto* c = dynamic_cast<P::AssertStatementContext*>(ctx)) {
    s = std::make_unique<Stmt>(StmtKind::Assert);
    s->cond = expr(c->expr(0));
    if (c->expr().size() > 1) s->message = expr(c->expr(1));
  } else {
    s = std::make_unique<Stmt>(StmtKind::Pass);
  }
  s->range = range(ctx);
  return s;
}

StmtPtr AstBuilder::let_stmt(P::LetStmtContext* ctx) {
  auto s = std::make_unique<Stmt>(StmtKind::Let);
  s->range = range(ctx);
  s->is_var = ctx->kind->getType() == P::VAR;
  s->pattern = pattern(ctx->pattern());
  if (ctx->type() != nullptr) s->type = type(ctx->type());
  s->value = expr(ctx->expr());
  return s;
}

// `else if` becomes an else block holding the one nested if statement (the block's range is
// the nested statement's).
StmtPtr AstBuilder::if_stmt(P::IfStmtContext* ctx) {
  Nesting nesting(*this, ctx);
  auto s = std::make_unique<Stmt>(StmtKind::If);
  s->range = range(ctx);
  s->cond = expr(ctx->expr());
  std::vector<P::BlockContext*> blocks = ctx->block();
  s->then_block = block(blocks.at(0));
  if (ctx->ifStmt() != nullptr) {
    s->else_block = std::make_unique<Block>();
    s->else_block->range = range(ctx->ifStmt());
    s->else_block->stmts.push_back(if_stmt(ctx->ifStmt()));
  } else if (blocks.size() > 1) {
    s->else_block = block(blocks[1]);
  }
  return s;
}

StmtPtr AstBuilder::expr_stmt(P::ExprStatementContext* ctx) {
  P::AssignOpContext* op = ctx->assignOp();
  if (op == nullptr) {
    auto s = std::make_unique<Stmt>(StmtKind::Expr);
    s->range = range(ctx);
    s->value = expr(ctx->expr(0));
    return s;
  }
  size_t op_type = op->getStart()->getType();
  auto s = std::make_unique<Stmt>(op_type == P::ASSIGN ? StmtKind::Assign : StmtKind::AugAssign);
  s->range = range(ctx);
  ExprPtr target = expr(ctx->expr(0));
  s->value = expr(ctx->expr(1));
  if (op_type == P::ASSIGN) {
    if (auto p = target_pattern(*target)) s->pattern = std::move(*p);
    return s;
  }
  s->aug_op = op_type == P::PLUS_ASSIGN    ? BinaryOp::Add
              : op_type == P::MINUS_ASSIGN ? BinaryOp::Sub
              : op_type == P::STAR_ASSIGN  ? BinaryOp::Mul
                                           : BinaryOp::Div;
  if (target->kind != ExprKind::Name) {
    error(target->range,
          fmt::format("'{}' needs a variable name on its left", text(op->getStart())));
  } else {
    s->pattern.name = target->name;
    s->pattern.range = target->range;
  }
  return s;
}

std::optional<Pattern> AstBuilder::target_pattern(const Expr& e) {
  Pattern p;
  p.range = e.range;
  if (e.kind == ExprKind::Name) {
    p.name = e.name;
    return p;
  }
  if (e.kind == ExprKind::Tuple) {
    p.is_tuple = true;
    bool ok = true;
    for (const ExprPtr& elem : e.elems) {
      if (auto sub = target_pattern(*elem)) {
        p.elems.push_back(std::move(*sub));
      } else {
        ok = false;
      }
    }
    if (ok) return p;
    return std::nullopt;
  }
  const char* what = "this expression";
  switch (e.kind) {
    case ExprKind::Call:
      what = "a function call";
      break;
    case ExprKind::Attribute:
      what = "an attribute";
      break;
    case ExprKind::Index:
      what = "an indexed element";
      break;
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Bool:
    case ExprKind::String:
    case ExprKind::None:
      what = "a literal";
      break;
    case ExprKind::List:
      what = "a list";
      break;
    default:
      break;
  }
  error(e.range, fmt::format("cannot assign to {}; the left side of '=' must be a name or a "
                             "tuple of names",
                             what));
  return std::nullopt;
}

Pattern AstBuilder::pattern(P::PatternContext* ctx) {
  Pattern p;
  p.range = range(ctx);
  if (auto* c = dynamic_cast<P::NamePatternContext*>(ctx)) {
    p.name = text(c->name());
    return p;
  }
  auto* c = static_cast<P::TuplePatternContext*>(ctx);
  // `(p)` is p; `(p,)`, `()` and `(p, q)` are tuples.
  if (c->pattern().size() == 1 && c->COMMA().empty()) return pattern(c->pattern(0));
  p.is_tuple = true;
  for (P::PatternContext* elem : c->pattern()) p.elems.push_back(pattern(elem));
  return p;
}

}  // namespace spora::lang
