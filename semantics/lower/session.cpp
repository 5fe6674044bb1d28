// The eager session of `spora repl` (semantics/session.h) and the Lowerer's part of it.
#include "semantics/session.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "lang/parser.h"
#include "semantics/eager.h"
#include "semantics/ir/printer.h"
#include "semantics/lower/lowerer.h"

namespace spora::sem {

namespace lower {

void Lowerer::begin_session() {
  ir::Graph* g = module_.add_graph("session");
  module_.entry = g;
  graph_ = g;
  module_.annotations["lowered.eager"] = std::make_shared<bool>(true);
  eager_ = true;
  executor_ = std::make_unique<EagerExecutor>(module_, g);
  eager_value = [this](const ir::Node* n) { return executor_->value(n); };
  session_env_ = Env{};
  session_env_.module = 0;
  session_env_.push();
}

bool Lowerer::run_cell(const lang::FuncDef& cell, bool echo) {
  const int errors = diags_.error_count();
  const auto& stmts = cell.body->stmts;
  try {
    if (echo && stmts.size() == 1 && stmts[0]->kind == lang::StmtKind::Expr) {
      const lang::Stmt& s = *stmts[0];
      AV v = eval(*s.value, session_env_);
      if (v->kind != AK::None && v->kind != AK::Error)
        call(lookup_global(0, "print")->value, {Arg{"", v, s.value->range}}, s.value->range);
    } else {
      lower_block(stmts, 0, session_env_);
    }
  } catch (const Abort&) {
    return false;
  }
  return diags_.error_count() == errors;
}

std::vector<std::string> Lowerer::session_names(const std::string& prefix) const {
  std::set<std::string> names;
  for_each_visible_name(session_env_, [&](const std::string& n) {
    if (n.compare(0, prefix.size(), prefix) == 0 && !n.empty() &&
        (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_'))
      names.insert(n);
  });
  return {names.begin(), names.end()};
}

AV Lowerer::eval_in_session(const lang::Expr& e) {
  const int errors = diags_.error_count();
  try {
    AV v = eval(e, session_env_);
    return diags_.error_count() == errors && v->kind != AK::Error ? v : nullptr;
  } catch (const Abort&) {
    return nullptr;
  }
}

}  // namespace lower

struct Session::Impl {
  lang::SourceManager& sources;
  lang::DiagnosticEngine& diags;
  std::string std_dir;
  Program program;
  ir::Module module;
  std::unique_ptr<lower::Lowerer> lowerer;
  std::vector<std::unique_ptr<lang::Module>> cells;  // the declarations' owners
  int count = 0;

  Impl(lang::SourceManager& s, lang::DiagnosticEngine& d, std::string dir)
      : sources(s), diags(d), std_dir(std::move(dir)) {}

  std::string next_name() { return fmt::format("<cell {}>", ++count); }

  // Loads the std modules `imports` name (and theirs) that the program lacks and indexes them
  // as the Lowerer's constructor does; false on errors.
  bool load(const std::vector<lang::Import>& imports) {
    const size_t first = program.modules.size();
    if (!load_std_imports(program, sources, diags, imports, std_dir)) return false;
    for (size_t m = first; m < program.modules.size(); ++m) lowerer->declare_module(m);
    for (size_t m = first; m < program.modules.size(); ++m)
      for (const auto& i : program.modules[m]->imports) lowerer->bind_import(m, i);
    for (size_t m = first; m < program.modules.size(); ++m) lowerer->evaluate_constants(m);
    return true;
  }

  // The text as a cell function's body; diagnostics number its lines from 1 and quote them
  // without the function around them.
  std::unique_ptr<lang::Module> as_statements(const std::string& text, std::string name = "",
                                              int first_line = 1) {
    if (name.empty()) name = next_name();
    const int file = sources.add(name, "def cell() {\n" + text + "\n}\n", 2 - first_line);
    return lang::parse_file(sources, file, diags);
  }
};

Session::Session(lang::SourceManager& sources, lang::DiagnosticEngine& diags,
                 const std::string& std_dir)
    : impl_(std::make_unique<Impl>(sources, diags, std_dir)) {
  impl_->program.modules.push_back(lang::parse_string(sources, "<session>", "", diags));
  impl_->program.module_names.push_back("");
  impl_->lowerer = std::make_unique<lower::Lowerer>(impl_->program, diags, impl_->module);
  impl_->lowerer->begin_session();
}

Session::~Session() = default;

bool Session::run(const std::string& text, const std::string& name, int first_line) {
  Impl& s = *impl_;
  const int errors = s.diags.error_count();
  // A cell of declarations parses as a module with functions, models or imports and no
  // module-level lets (a `let` in a session is a statement).
  {
    lang::DiagnosticEngine probe(s.sources);
    auto mod = lang::parse_string(s.sources, "<cell>", text, probe);
    if (mod && !probe.has_errors() && mod->globals.empty() &&
        (!mod->functions.empty() || !mod->models.empty() || !mod->imports.empty())) {
      const int file = s.sources.add(name.empty() ? s.next_name() : name, text, 1 - first_line);
      mod = lang::parse_file(s.sources, file, s.diags);
      if (!mod || s.diags.error_count() != errors) return false;
      if (!s.load(mod->imports)) return false;
      for (const auto& imp : mod->imports) s.lowerer->bind_import(0, imp);
      for (const auto& f : mod->functions) s.lowerer->declare_function(0, *f, true);
      for (const auto& md : mod->models) s.lowerer->declare_model(0, *md, true);
      s.cells.push_back(std::move(mod));
      return true;
    }
  }
  auto cell = s.as_statements(text, name, first_line);
  if (!cell || s.diags.error_count() != errors || cell->functions.size() != 1) return false;
  const lang::FuncDef& f = *cell->functions[0];
  s.cells.push_back(std::move(cell));
  return s.lowerer->run_cell(f, true);
}

std::string Session::type_of(const std::string& expr) {
  Impl& s = *impl_;
  const int errors = s.diags.error_count();
  auto cell = s.as_statements(expr);
  if (!cell || s.diags.error_count() != errors || cell->functions.size() != 1) return "";
  const lang::FuncDef& f = *cell->functions[0];
  if (f.body->stmts.size() != 1 || f.body->stmts[0]->kind != lang::StmtKind::Expr) {
    s.diags.error(f.range, ":type takes one expression");
    return "";
  }
  lower::AV v = s.lowerer->eval_in_session(*f.body->stmts[0]->value);
  s.cells.push_back(std::move(cell));
  return v ? lower::type_text(v) : "";
}

std::vector<std::string> Session::complete(const std::string& prefix) const {
  return impl_->lowerer->session_names(prefix);
}

std::string Session::ir_of(const std::string& expr) {
  Impl& s = *impl_;
  ir::Graph* g = s.lowerer->session_graph();
  const size_t before = g->nodes.size();
  if (type_of(expr).empty()) return "";
  // The lines of the session graph's dump that define the nodes the evaluation appended.
  const std::string text = ir::print_graph(*g);
  const ir::NodeNames names(*g);
  std::string out;
  for (size_t i = before; i < g->nodes.size(); ++i) {
    const std::string define = names(g->nodes[i]) + " = ";
    for (size_t at = text.find(define); at != std::string::npos; at = text.find(define, at + 1)) {
      const size_t start = text.rfind('\n', at) + 1;
      if (text.find_first_not_of(' ', start) != at) continue;
      const size_t end = text.find('\n', at);
      out += text.substr(at, end == std::string::npos ? std::string::npos : end - at) + "\n";
      break;
    }
  }
  return out;
}

}  // namespace spora::sem
