// print_ast (lang/ast_printer.h): the indented one-node-per-line tree.
#include "lang/ast_printer.h"

#include <fmt/format.h>

namespace spora::lang {

namespace {

class TreePrinter {
 public:
  explicit TreePrinter(const AstPrintOptions& options) : options_(options) {}

  std::string take() { return std::move(out_); }

  void module(const Module& m) {
    line(0, "", "module", {});
    for (const Import& im : m.imports) import_decl(im);
    for (auto [kind, index] : m.order) {
      auto i = static_cast<size_t>(index);
      if (kind == 0) func(*m.functions.at(i), 1, "");
      if (kind == 1) model(*m.models.at(i));
      if (kind == 2) stmt(*m.globals.at(i), 1, "");
    }
  }

  void expr(const Expr& e, int depth, const std::string& label) {
    switch (e.kind) {
      case ExprKind::Int:
        line(depth, label, "int " + e.text, e.range);
        return;
      case ExprKind::Float:
        line(depth, label, "float " + e.text, e.range);
        return;
      case ExprKind::Bool:
        line(depth, label, e.bool_value ? "bool true" : "bool false", e.range);
        return;
      case ExprKind::String:
        line(depth, label, "string " + quote_string(e.string_value), e.range);
        return;
      case ExprKind::None:
        line(depth, label, "none", e.range);
        return;
      case ExprKind::Name:
        line(depth, label, "name " + e.name, e.range);
        return;
      case ExprKind::List:
      case ExprKind::Tuple:
        line(depth, label, e.kind == ExprKind::List ? "list" : "tuple", e.range);
        for (const ExprPtr& elem : e.elems) expr(*elem, depth + 1, "");
        return;
      case ExprKind::Call:
        line(depth, label, "call", e.range);
        expr(*e.callee, depth + 1, "");
        arguments(e.args, e.kwargs, depth + 1);
        return;
      case ExprKind::Attribute:
        line(depth, label, "attr " + e.name, e.range);
        expr(*e.object, depth + 1, "");
        return;
      case ExprKind::Index:
        line(depth, label, "index", e.range);
        expr(*e.object, depth + 1, "");
        for (const IndexItem& item : e.indices) index_item(item, depth + 1);
        return;
      case ExprKind::Unary:
        line(depth, label, std::string("unary ") + to_string(e.unary_op), e.range);
        expr(*e.operand, depth + 1, "");
        return;
      case ExprKind::Binary:
        line(depth, label, std::string("binary ") + to_string(e.binary_op), e.range);
        expr(*e.lhs, depth + 1, "");
        expr(*e.rhs, depth + 1, "");
        return;
      case ExprKind::Conditional:
        line(depth, label, "cond", e.range);
        expr(*e.then_expr, depth + 1, "then: ");
        expr(*e.cond, depth + 1, "if: ");
        expr(*e.else_expr, depth + 1, "else: ");
        return;
      case ExprKind::Lambda:
        line(depth, label, "lambda", e.range);
        for (const Param& p : e.params) param(p, depth + 1);
        if (e.body_expr) expr(*e.body_expr, depth + 1, "body: ");
        if (e.body_block) block(*e.body_block, depth + 1, "body: ");
        return;
    }
  }

  void stmt(const Stmt& s, int depth, const std::string& label) {
    switch (s.kind) {
      case StmtKind::Let: {
        std::string head = (s.is_var ? "var " : "let ") + to_source(s.pattern);
        if (s.type) head += ": " + to_source(*s.type);
        line(depth, label, head, s.range);
        expr(*s.value, depth + 1, "");
        return;
      }
      case StmtKind::Assign:
        line(depth, label, "assign " + to_source(s.pattern), s.range);
        expr(*s.value, depth + 1, "");
        return;
      case StmtKind::AugAssign:
        line(depth, label, fmt::format("assign {} {}=", to_source(s.pattern), to_string(s.aug_op)),
             s.range);
        expr(*s.value, depth + 1, "");
        return;
      case StmtKind::Expr:
        line(depth, label, "expr", s.range);
        expr(*s.value, depth + 1, "");
        return;
      case StmtKind::Return:
        line(depth, label, "return", s.range);
        if (s.value) expr(*s.value, depth + 1, "");
        return;
      case StmtKind::If:
        line(depth, label, "if", s.range);
        expr(*s.cond, depth + 1, "cond: ");
        block(*s.then_block, depth + 1, "then: ");
        if (s.else_block) block(*s.else_block, depth + 1, "else: ");
        return;
      case StmtKind::For:
        line(depth, label, "for " + to_source(s.pattern), s.range);
        expr(*s.value, depth + 1, "in: ");
        block(*s.body, depth + 1, "body: ");
        return;
      case StmtKind::While:
        line(depth, label, "while", s.range);
        expr(*s.cond, depth + 1, "cond: ");
        block(*s.body, depth + 1, "body: ");
        return;
      case StmtKind::Assert:
        line(depth, label, "assert", s.range);
        expr(*s.cond, depth + 1, "cond: ");
        if (s.message) expr(*s.message, depth + 1, "message: ");
        return;
      case StmtKind::Pass:
        line(depth, label, "pass", s.range);
        return;
    }
  }

 private:
  void line(int depth, const std::string& label, const std::string& text,
            const SourceRange& range) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += label;
    out_ += text;
    if (options_.ranges && range.valid()) {
      out_ += fmt::format(" @{}:{}-{}:{}", range.begin.line, range.begin.col, range.end.line,
                          range.end.col);
    }
    out_ += '\n';
  }

  void import_decl(const Import& im) {
    std::string path;
    for (const std::string& part : im.path) path += (path.empty() ? "" : ".") + part;
    line(1, "", "import " + path + (im.alias.empty() ? "" : " as " + im.alias), im.range);
  }

  void arguments(const std::vector<ExprPtr>& args, const std::vector<KeywordArg>& kwargs,
                 int depth) {
    for (const ExprPtr& a : args) expr(*a, depth, "");
    for (const KeywordArg& kw : kwargs) expr(*kw.value, depth, "kwarg " + kw.name + ": ");
  }

  void index_item(const IndexItem& item, int depth) {
    if (!item.is_slice) {
      expr(*item.index, depth, "");
      return;
    }
    line(depth, "", "slice", item.range);
    if (item.start) expr(*item.start, depth + 1, "start: ");
    if (item.stop) expr(*item.stop, depth + 1, "stop: ");
    if (item.step) expr(*item.step, depth + 1, "step: ");
  }

  void param(const Param& p, int depth) {
    line(depth, "", "param " + p.name + (p.type ? ": " + to_source(*p.type) : ""), p.range);
    if (p.default_value) expr(*p.default_value, depth + 1, "default: ");
  }

  void decorators(const std::vector<Decorator>& ds, int depth) {
    for (const Decorator& d : ds) {
      line(depth, "", "decorator " + d.name, d.range);
      arguments(d.args, d.kwargs, depth + 1);
    }
  }

  void block(const Block& b, int depth, const std::string& label) {
    line(depth, label, "block", b.range);
    for (const StmtPtr& s : b.stmts) stmt(*s, depth + 1, "");
  }

  void func(const FuncDef& f, int depth, const std::string& label) {
    line(depth, label, "def " + f.name, f.range);
    decorators(f.decorators, depth + 1);
    for (const Param& p : f.params) param(p, depth + 1);
    if (f.return_type)
      line(depth + 1, "returns: ", to_source(*f.return_type), f.return_type->range);
    if (f.body) block(*f.body, depth + 1, "body: ");
    if (f.body_expr) expr(*f.body_expr, depth + 1, "body: ");
  }

  void model(const ModelDef& m) {
    line(1, "", "model " + m.name, m.range);
    decorators(m.decorators, 2);
    for (const Param& p : m.params) param(p, 2);
    for (const FieldDecl& f : m.fields) {
      std::string head = std::string("field ") + (f.is_param ? "param " : "let ") + f.name;
      if (f.type) head += ": " + to_source(*f.type);
      line(2, "", head, f.range);
      decorators(f.decorators, 3);
      if (f.init) expr(*f.init, 3, "init: ");
    }
    for (const auto& method : m.methods) func(*method, 2, "");
  }

  const AstPrintOptions& options_;
  std::string out_;
};

}  // namespace

std::string print_ast(const Module& module, const AstPrintOptions& options) {
  TreePrinter p(options);
  p.module(module);
  return p.take();
}

std::string print_ast(const Stmt& stmt, const AstPrintOptions& options) {
  TreePrinter p(options);
  p.stmt(stmt, 0, "");
  return p.take();
}

std::string print_ast(const Expr& expr, const AstPrintOptions& options) {
  TreePrinter p(options);
  p.expr(expr, 0, "");
  return p.take();
}

}  // namespace spora::lang
