// AstBuilder: the module walk and the shared helpers (lang/ast_builder.h).
#include "lang/ast_builder.h"

#include <fmt/format.h>

#include "lang/token_source.h"

namespace spora::lang {

std::unique_ptr<Module> AstBuilder::build(P::File_Context* ctx) {
  auto module = std::make_unique<Module>();
  module->file = file_;
  try {
    for (P::TopItemContext* item : ctx->topItem()) {
      if (auto* c = item->importDecl()) {
        module->imports.push_back(import_decl(c));
      } else if (auto* c = item->funcDef()) {
        module->order.emplace_back(0, static_cast<int>(module->functions.size()));
        module->functions.push_back(func_def(c));
      } else if (auto* c = item->modelDef()) {
        module->order.emplace_back(1, static_cast<int>(module->models.size()));
        module->models.push_back(model_def(c));
      } else if (auto* c = item->letStmt()) {
        StmtPtr s = let_stmt(c);
        if (s->is_var) {
          error(range(c->kind), "module-level 'var' is not allowed; use 'let' for a constant");
        }
        module->order.emplace_back(2, static_cast<int>(module->globals.size()));
        module->globals.push_back(std::move(s));
      }
    }
  } catch (const Abandon&) {
    return nullptr;
  }
  if (failed_) return nullptr;
  return module;
}

SourceRange AstBuilder::range(antlr4::Token* token) const { return token_range(file_, token); }

SourceRange AstBuilder::span(antlr4::Token* first, antlr4::Token* last) const {
  SourceRange r = range(first);
  if (last != nullptr && last->getTokenIndex() >= first->getTokenIndex()) r.end = range(last).end;
  return r;
}

SourceRange AstBuilder::range(antlr4::ParserRuleContext* ctx) const {
  return span(ctx->getStart(), ctx->getStop());
}

std::string AstBuilder::text(antlr4::Token* token) const { return token_text(source_, token); }

ExprPtr AstBuilder::make(ExprKind kind, antlr4::ParserRuleContext* ctx) const {
  auto e = std::make_unique<Expr>(kind);
  e->range = range(ctx);
  return e;
}

void AstBuilder::error(SourceRange range, std::string message) {
  diags_.error(range, std::move(message));
  failed_ = true;
}

void AstBuilder::too_deep(antlr4::ParserRuleContext* ctx) {
  SourceRange r = range(ctx->getStart());
  error(r, fmt::format("code is nested too deeply (the limit is {} levels)", kMaxNestingDepth));
  throw Abandon{};
}

}  // namespace spora::lang
