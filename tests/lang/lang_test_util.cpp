#include "lang_test_util.h"

namespace spora::lang::testing {

namespace {

using Visit = std::function<void(const std::string&, const SourceRange&)>;

void walk_expr(const Expr& e, const Visit& v);
void walk_block(const Block& b, const Visit& v);

void walk_type(const TypeExpr& t, const Visit& v) {
  v("type " + to_source(t), t.range);
  for (const ExprPtr& d : t.dims) walk_expr(*d, v);
  for (const TypeExprPtr& e : t.elems) walk_type(*e, v);
}

void walk_pattern(const Pattern& p, const Visit& v) {
  v("pattern " + to_source(p), p.range);
  for (const Pattern& e : p.elems) walk_pattern(e, v);
}

void walk_param(const Param& p, const Visit& v) {
  v("param " + p.name, p.range);
  if (p.type) walk_type(*p.type, v);
  if (p.default_value) walk_expr(*p.default_value, v);
}

void walk_args(const std::vector<ExprPtr>& args, const std::vector<KeywordArg>& kwargs,
               const Visit& v) {
  for (const ExprPtr& a : args) walk_expr(*a, v);
  for (const KeywordArg& k : kwargs) {
    v("kwarg " + k.name, k.name_range);
    walk_expr(*k.value, v);
  }
}

void walk_expr(const Expr& e, const Visit& v) {
  v("expr " + to_source(e), e.range);
  for (const ExprPtr& x : e.elems) walk_expr(*x, v);
  for (const ExprPtr* x : {&e.callee, &e.object, &e.operand, &e.lhs, &e.rhs, &e.cond, &e.then_expr,
                           &e.else_expr, &e.body_expr}) {
    if (*x) walk_expr(**x, v);
  }
  walk_args(e.args, e.kwargs, v);
  for (const IndexItem& i : e.indices) {
    v("index item", i.range);
    for (const ExprPtr* x : {&i.index, &i.start, &i.stop, &i.step}) {
      if (*x) walk_expr(**x, v);
    }
  }
  for (const Param& p : e.params) walk_param(p, v);
  if (e.body_block) walk_block(*e.body_block, v);
}

void walk_stmt(const Stmt& s, const Visit& v) {
  v("stmt", s.range);
  if (s.kind == StmtKind::Let || s.kind == StmtKind::Assign || s.kind == StmtKind::AugAssign ||
      s.kind == StmtKind::For) {
    walk_pattern(s.pattern, v);
  }
  if (s.type) walk_type(*s.type, v);
  for (const ExprPtr* x : {&s.value, &s.cond, &s.message}) {
    if (*x) walk_expr(**x, v);
  }
  for (const std::unique_ptr<Block>* b : {&s.then_block, &s.else_block, &s.body}) {
    if (*b) walk_block(**b, v);
  }
}

void walk_block(const Block& b, const Visit& v) {
  v("block", b.range);
  for (const StmtPtr& s : b.stmts) walk_stmt(*s, v);
}

void walk_decorators(const std::vector<Decorator>& ds, const Visit& v) {
  for (const Decorator& d : ds) {
    v("decorator " + d.name, d.range);
    walk_args(d.args, d.kwargs, v);
  }
}

void walk_func(const FuncDef& f, const Visit& v) {
  v("def " + f.name, f.range);
  v("def name " + f.name, f.name_range);
  walk_decorators(f.decorators, v);
  for (const Param& p : f.params) walk_param(p, v);
  if (f.return_type) walk_type(*f.return_type, v);
  if (f.body) walk_block(*f.body, v);
  if (f.body_expr) walk_expr(*f.body_expr, v);
}

}  // namespace

void for_each_range(const Module& m, const Visit& v) {
  for (const Import& i : m.imports) v("import", i.range);
  for (const auto& f : m.functions) walk_func(*f, v);
  for (const auto& model : m.models) {
    v("model " + model->name, model->range);
    v("model name " + model->name, model->name_range);
    walk_decorators(model->decorators, v);
    for (const Param& p : model->params) walk_param(p, v);
    for (const FieldDecl& f : model->fields) {
      v("field " + f.name, f.range);
      walk_decorators(f.decorators, v);
      if (f.type) walk_type(*f.type, v);
      if (f.init) walk_expr(*f.init, v);
    }
    for (const auto& method : model->methods) walk_func(*method, v);
  }
  for (const StmtPtr& s : m.globals) walk_stmt(*s, v);
}

}  // namespace spora::lang::testing
