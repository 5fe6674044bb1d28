// Internal to lang/: builds the AST (lang/ast.h) from a Spora parse tree.
//
// Runs only on trees without syntax errors, so every child the grammar requires is there.
// It is a plain recursive walk over the generated contexts (no ANTLR visitor: the 4.9
// visitor returns antlrcpp::Any, which is awkward with unique_ptr). Along the way it
// reports what the grammar accepts but the language does not (see lang/parser.h) and
// converts literal spellings into values. Ranges: a node covers its context's first to
// last token; a parenthesised expression keeps the range of what is inside the parentheses.
//
// Depth: build() walks at most kMaxNestingDepth levels of expressions, types, blocks and ifs;
// beyond that it reports "... nested too deeply" once and gives up (returns nullptr), so the
// tree it returns can be walked and destroyed recursively without exhausting the stack.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "SporaParser.h"
#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"

namespace spora::lang {

class AstBuilder {
 public:
  using P = spora_antlr::SporaParser;

  AstBuilder(const std::string& source, int file, DiagnosticEngine& diags)
      : source_(source), file_(file), diags_(diags) {}

  // The module, or nullptr if building it reported an error.
  std::unique_ptr<Module> build(P::File_Context* ctx);

 private:
  struct Abandon {};  // thrown past the nesting limit, caught in build()
  class Nesting;      // RAII depth counter

  // declarations (ast_builder_decl.cpp)
  Import import_decl(P::ImportDeclContext* ctx);
  std::unique_ptr<FuncDef> func_def(P::FuncDefContext* ctx);
  std::unique_ptr<ModelDef> model_def(P::ModelDefContext* ctx);
  FieldDecl field_decl(P::FieldDeclContext* ctx);
  std::vector<Decorator> decorators(const std::vector<P::DecoratorContext*>& ctxs);
  std::vector<Param> params(P::ParamListContext* ctx);  // ctx may be null: no parameters
  TypeExprPtr type(P::TypeContext* ctx);

  // statements (ast_builder_stmt.cpp)
  std::unique_ptr<Block> block(P::BlockContext* ctx);
  StmtPtr stmt(P::StmtContext* ctx);
  StmtPtr let_stmt(P::LetStmtContext* ctx);
  StmtPtr if_stmt(P::IfStmtContext* ctx);
  StmtPtr expr_stmt(P::ExprStatementContext* ctx);
  Pattern pattern(P::PatternContext* ctx);
  // The assignment target an expression spells, or nullopt (after reporting why not).
  std::optional<Pattern> target_pattern(const Expr& e);

  // expressions (ast_builder_expr.cpp)
  ExprPtr expr(P::ExprContext* ctx);
  ExprPtr primary(P::PrimaryContext* ctx);
  ExprPtr binary(BinaryOp op, P::ExprContext* ctx, P::ExprContext* lhs, P::ExprContext* rhs);
  ExprPtr int_literal(antlr4::Token* token, SourceRange range, bool negated = false);
  ExprPtr float_literal(antlr4::Token* token, SourceRange range);
  ExprPtr string_literal(antlr4::Token* token, SourceRange range);
  void arguments(P::ArgListContext* ctx, std::vector<ExprPtr>& args,
                 std::vector<KeywordArg>& kwargs);
  IndexItem subscript(P::SubscriptContext* ctx);
  ExprPtr optional_expr(P::ExprContext* ctx) { return ctx ? expr(ctx) : nullptr; }

  // helpers (ast_builder.cpp)
  SourceRange range(antlr4::ParserRuleContext* ctx) const;
  SourceRange range(antlr4::Token* token) const;
  SourceRange span(antlr4::Token* first, antlr4::Token* last) const;
  std::string text(antlr4::Token* token) const;
  std::string text(P::NameContext* ctx) const { return text(ctx->getStart()); }
  ExprPtr make(ExprKind kind, antlr4::ParserRuleContext* ctx) const;
  void error(SourceRange range, std::string message);
  [[noreturn]] void too_deep(antlr4::ParserRuleContext* ctx);

  const std::string& source_;
  int file_;
  DiagnosticEngine& diags_;
  int depth_ = 0;
  bool failed_ = false;
};

class AstBuilder::Nesting {
 public:
  Nesting(AstBuilder& builder, antlr4::ParserRuleContext* ctx) : builder_(builder) {
    if (++builder_.depth_ > kMaxNestingDepth) builder_.too_deep(ctx);
  }
  ~Nesting() { --builder_.depth_; }
  Nesting(const Nesting&) = delete;
  Nesting& operator=(const Nesting&) = delete;

 private:
  AstBuilder& builder_;
};

}  // namespace spora::lang
