// AstBuilder: imports, functions, models, fields, decorators, parameters and types.
#include <fmt/format.h>

#include <set>

#include "lang/ast_builder.h"

namespace spora::lang {

Import AstBuilder::import_decl(P::ImportDeclContext* ctx) {
  Import im;
  im.range = range(ctx);
  for (P::NameContext* n : ctx->dottedName()->name()) im.path.push_back(text(n));
  if (ctx->name() != nullptr) im.alias = text(ctx->name());
  return im;
}

std::vector<Decorator> AstBuilder::decorators(const std::vector<P::DecoratorContext*>& ctxs) {
  std::vector<Decorator> out;
  for (P::DecoratorContext* c : ctxs) {
    Decorator d;
    for (P::NameContext* n : c->dottedName()->name()) {
      if (!d.name.empty()) d.name += '.';
      d.name += text(n);
    }
    // `@name(args)` ends at its `)`, `@name` at the name; never at the optional newline.
    antlr4::Token* last =
        c->RPAREN() != nullptr ? c->RPAREN()->getSymbol() : c->dottedName()->getStop();
    d.range = span(c->getStart(), last);
    // The decorators the later layers read (semantics/lower: @jit, @checkpoint, @custom_grad,
    // @inline, @noinline, @stage(k)); any other would be dropped without effect.
    static const std::set<std::string> known = {"jit",    "checkpoint", "custom_grad",
                                                "inline", "noinline",   "stage"};
    if (!known.count(d.name))
      error(d.range, fmt::format("unknown decorator '@{}' (known: @checkpoint, @custom_grad, "
                                 "@inline, @jit, @noinline, @stage)",
                                 d.name));
    arguments(c->argList(), d.args, d.kwargs);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Param> AstBuilder::params(P::ParamListContext* ctx) {
  std::vector<Param> out;
  if (ctx == nullptr) return out;
  std::string first_default;  // name of the first parameter with a default
  for (P::ParamContext* c : ctx->param()) {
    Param p;
    p.name = text(c->name());
    p.range = range(c);
    if (c->type() != nullptr) p.type = type(c->type());
    if (c->expr() != nullptr) p.default_value = expr(c->expr());
    if (p.default_value == nullptr && !first_default.empty()) {
      error(p.range, fmt::format("parameter '{}' has no default but follows parameter '{}' "
                                 "which has one",
                                 p.name, first_default));
    }
    if (p.default_value != nullptr && first_default.empty()) first_default = p.name;
    out.push_back(std::move(p));
  }
  return out;
}

std::unique_ptr<FuncDef> AstBuilder::func_def(P::FuncDefContext* ctx) {
  auto f = std::make_unique<FuncDef>();
  f->name = text(ctx->name());
  f->range = range(ctx);
  f->name_range = range(ctx->name());
  f->decorators = decorators(ctx->decorator());
  f->params = params(ctx->paramList());
  if (ctx->type() != nullptr) f->return_type = type(ctx->type());
  if (ctx->block() != nullptr) {
    f->body = block(ctx->block());
  } else {
    f->body_expr = expr(ctx->expr());
  }
  return f;
}

std::unique_ptr<ModelDef> AstBuilder::model_def(P::ModelDefContext* ctx) {
  auto m = std::make_unique<ModelDef>();
  m->name = text(ctx->name());
  m->range = range(ctx);
  m->name_range = range(ctx->name());
  m->decorators = decorators(ctx->decorator());
  m->params = params(ctx->paramList());
  for (P::MemberContext* member : ctx->member()) {
    if (member->fieldDecl() != nullptr) {
      m->fields.push_back(field_decl(member->fieldDecl()));
    } else {
      m->methods.push_back(func_def(member->funcDef()));
    }
  }
  return m;
}

FieldDecl AstBuilder::field_decl(P::FieldDeclContext* ctx) {
  FieldDecl f;
  f.name = text(ctx->name());
  f.range = range(ctx);
  f.is_param = ctx->kind->getType() == P::PARAM;
  f.decorators = decorators(ctx->decorator());
  if (ctx->type() != nullptr) f.type = type(ctx->type());
  if (ctx->expr() != nullptr) f.init = expr(ctx->expr());
  if (!f.is_param && f.init == nullptr) {
    error(f.range,
          fmt::format("model field 'let {}' needs a value: 'let {} = ...'", f.name, f.name));
  }
  if (f.is_param && f.type == nullptr && f.init == nullptr) {
    error(f.range, fmt::format("parameter '{}' needs a type or an initialiser: "
                               "'param {}: f32[...]' or 'param {} = ...'",
                               f.name, f.name, f.name));
  }
  return f;
}

TypeExprPtr AstBuilder::type(P::TypeContext* ctx) {
  Nesting nesting(*this, ctx);
  if (auto* c = dynamic_cast<P::NamedTypeContext*>(ctx)) {
    auto t = std::make_unique<TypeExpr>();
    t->kind = TypeExpr::Kind::Named;
    t->range = range(c);
    t->name = text(c->name());
    t->has_dims = c->LBRACK() != nullptr;
    for (P::DimContext* d : c->dim()) {
      if (auto* e = dynamic_cast<P::ExprDimContext*>(d)) {
        t->dims.push_back(expr(e->expr()));
      } else {
        auto unknown = make(ExprKind::Name, d);
        unknown->name = "?";
        t->dims.push_back(std::move(unknown));
      }
    }
    return t;
  }
  auto* c = static_cast<P::TupleTypeContext*>(ctx);
  // `(T)` is T; `(T,)`, `()` and `(T, U)` are tuple types.
  if (c->type().size() == 1 && c->COMMA().empty()) return type(c->type(0));
  auto t = std::make_unique<TypeExpr>();
  t->kind = TypeExpr::Kind::Tuple;
  t->range = range(c);
  for (P::TypeContext* elem : c->type()) t->elems.push_back(type(elem));
  return t;
}

}  // namespace spora::lang
