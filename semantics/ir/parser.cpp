// The IR parser (format in printer.h, grammar and checks in parser.h).
//
// Three steps, so graphs can be named before they are defined:
//   1. syntax: tokens -> GraphDecl trees (types parsed, literals kept untyped)
//   2. declare: every graph of the text, in textual pre-order, with its parameters and flags
//   3. define: each graph's lines in order (a nested graph's lines when the parent reaches it),
//      resolving %names through the scopes of the enclosing graphs and checking types
#include "semantics/ir/parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "semantics/ir/lexer.h"
#include "semantics/ir/literal.h"

namespace spora::ir {

namespace {

using text::Lit;
using text::ParseError;
using text::Token;
using text::TokenStream;

struct Operand {
  bool is_graph = false;
  std::string name;
  lang::SourceRange range;
};

struct LineDecl {
  enum class Kind { Constant, Call, Prim };
  Kind kind = Kind::Prim;
  std::string name;         // the %name it defines
  lang::SourceRange range;  // of the %name
  std::string op;           // primitive or callee name
  lang::SourceRange op_range;
  std::vector<Operand> operands;
  std::vector<std::pair<std::string, Lit>> attrs;
  std::vector<lang::SourceRange> attr_ranges;
  Lit literal;
  TypeP type;
  lang::SourceRange type_range;
};

struct GraphDecl {
  std::vector<std::string> flags;
  std::string name;
  lang::SourceRange range;
  std::vector<std::tuple<std::string, TypeP, lang::SourceRange>> params;
  TypeP result;
  lang::SourceRange result_range;
  // Items in order: a line, or a nested graph (index into `nested`).
  std::vector<std::variant<LineDecl, size_t>> items;
  std::vector<std::unique_ptr<GraphDecl>> nested;
  bool has_output = false;
  Operand output;
  lang::SourceRange return_range;
  GraphDecl* parent = nullptr;
  Graph* graph = nullptr;
};

// ---------------------------------------------------------------- 1. syntax

class Syntax {
 public:
  explicit Syntax(TokenStream& ts) : ts_(ts) {}

  void module(std::vector<std::unique_ptr<GraphDecl>>& graphs, std::optional<Operand>& entry) {
    while (!ts_.at_end()) {
      if (ts_.peek().is(Token::Kind::Ident, "entry")) {
        ts_.next();
        const Token& t = ts_.expect(Token::Kind::Global, "a graph name");
        entry = Operand{true, t.text, t.range};
        continue;
      }
      graphs.push_back(graph(nullptr));
    }
  }

 private:
  TokenStream& ts_;

  std::unique_ptr<GraphDecl> graph(GraphDecl* parent) {
    auto g = std::make_unique<GraphDecl>();
    g->parent = parent;
    while (ts_.peek().kind == Token::Kind::Global) g->flags.push_back(ts_.next().text);
    ts_.expect_ident("graph");
    const Token& name = ts_.expect(Token::Kind::Global, "a graph name");
    g->name = name.text;
    g->range = name.range;
    ts_.expect_punct('(');
    while (!ts_.peek().punct(')')) {
      const Token& p = ts_.expect(Token::Kind::Local, "a parameter name");
      ts_.expect_punct(':');
      g->params.emplace_back(p.text, text::parse_type(ts_), p.range);
      if (!ts_.accept_punct(',')) break;
    }
    ts_.expect_punct(')');
    ts_.expect(Token::Kind::Arrow, "'->'");
    g->result_range = ts_.peek().range;
    g->result = text::parse_type(ts_);
    g->result_range.end = ts_.last_end();
    ts_.expect_punct('{');
    for (;;) {
      const Token& t = ts_.peek();
      if (t.is(Token::Kind::Ident, "return")) break;
      if (t.kind == Token::Kind::Global || t.is(Token::Kind::Ident, "graph")) {
        g->nested.push_back(graph(g.get()));
        g->items.emplace_back(g->nested.size() - 1);
      } else if (t.kind == Token::Kind::Local) {
        g->items.emplace_back(line());
      } else {
        ts_.fail(t, "expected a line, a nested graph or 'return', found " + t.describe());
      }
    }
    g->return_range = ts_.next().range;
    if (!ts_.peek().punct('}')) {
      g->has_output = true;
      g->output = operand();
    }
    ts_.expect_punct('}');
    return g;
  }

  Operand operand() {
    const Token& t = ts_.peek();
    if (t.kind != Token::Kind::Local && t.kind != Token::Kind::Global)
      ts_.fail(t, "expected an operand (%name or @graph), found " + t.describe());
    ts_.next();
    return Operand{t.kind == Token::Kind::Global, t.text, t.range};
  }

  LineDecl line() {
    LineDecl l;
    const Token& name = ts_.next();
    l.name = name.text;
    l.range = name.range;
    ts_.expect_punct('=');
    const Token& op = ts_.peek();
    if (op.is(Token::Kind::Ident, "constant")) {
      ts_.next();
      l.kind = LineDecl::Kind::Constant;
      l.op_range = op.range;
      l.literal = text::parse_literal(ts_);
    } else {
      if (op.is(Token::Kind::Ident, "call")) {
        ts_.next();
        l.kind = LineDecl::Kind::Call;
        const Token& callee = ts_.expect(Token::Kind::Global, "a graph name");
        l.op = callee.text;
        l.op_range = callee.range;
      } else {
        const Token& p = ts_.expect_ident("");
        l.op = p.text;
        l.op_range = p.range;
      }
      ts_.expect_punct('(');
      while (!ts_.peek().punct(')')) {
        if (ts_.peek().kind == Token::Kind::Ident && ts_.peek(1).punct('=')) {
          const Token& a = ts_.next();
          ts_.next();
          l.attr_ranges.push_back(a.range);
          l.attrs.emplace_back(a.text, text::parse_literal(ts_));
        } else {
          if (!l.attrs.empty()) ts_.fail(ts_.peek(), "operands must come before attributes");
          l.operands.push_back(operand());
        }
        if (!ts_.accept_punct(',')) break;
      }
      ts_.expect_punct(')');
    }
    ts_.expect_punct(':');
    l.type_range = ts_.peek().range;
    l.type = text::parse_type(ts_);
    l.type_range.end = ts_.last_end();
    return l;
  }
};

// ---------------------------------------------------------------- 2 and 3. building

[[noreturn]] void fail(lang::SourceRange r, const std::string& message) {
  throw ParseError(r, message);
}

class Builder {
 public:
  explicit Builder(Module& m) : m_(m) {}

  void declare(GraphDecl& d) {
    if (m_.find_graph(d.name)) fail(d.range, "redefinition of graph @" + d.name);
    d.graph = m_.add_graph(d.name, d.parent ? d.parent->graph : nullptr);
    d.graph->loc = d.range.begin;
    d.graph->flags = d.flags;
    std::vector<TypeP> param_types;
    for (auto& [name, type, range] : d.params) {
      // The printer numbers unnamed parameters (`%0`); a named one is never all digits.
      bool unnamed = name.find_first_not_of("0123456789") == std::string::npos;
      Node* p = m_.add_param(d.graph, unnamed ? "" : name, type, range.begin);
      bind(d.graph, name, p, range);
      param_types.push_back(type);
    }
    signature_[d.graph] = sem::Type::function(std::move(param_types), d.result);
    for (auto& n : d.nested) declare(*n);
  }

  void define(GraphDecl& d) {
    Graph* g = d.graph;
    for (auto& item : d.items) {
      if (auto* nested = std::get_if<size_t>(&item)) {
        define(*d.nested[*nested]);
        continue;
      }
      line(g, std::get<LineDecl>(item));
    }
    if (d.has_output) {
      g->output = resolve(g, d.output);
      if (!same_type(g->output->type, d.result))
        fail(d.output.range, "@" + g->name + " returns a value of type " + g->output->type->str() +
                                 " but its header says " + d.result->str());
    } else if (!same_type(d.result, sem::Type::unit())) {
      fail(d.return_range,
           "@" + g->name + " returns nothing but its header says " + d.result->str());
    }
  }

 private:
  Module& m_;
  std::unordered_map<const Graph*, std::unordered_map<std::string, Node*>> scopes_;
  std::unordered_map<const Graph*, TypeP> signature_;
  std::map<std::pair<const Graph*, const Graph*>, Node*> graph_constants_;

  void bind(Graph* g, const std::string& name, Node* n, lang::SourceRange r) {
    for (const Graph* s = g; s; s = s->parent)
      if (scopes_[s].count(name)) fail(r, "redefinition of %" + name);
    scopes_[g][name] = n;
  }

  Node* resolve(Graph* g, const Operand& op) {
    if (op.is_graph) {
      Graph* target = m_.find_graph(op.name);
      if (!target) fail(op.range, "unknown graph @" + op.name);
      if (target->parent && !is_within(g, target->parent))
        fail(op.range, "@" + op.name + " is nested in @" + target->parent->name +
                           " and cannot be used from @" + g->name);
      Node*& c = graph_constants_[{g, target}];
      if (!c) {
        c = m_.add_graph_constant(g, target, op.range.begin);
        c->type = signature_.at(target);
      }
      return c;
    }
    for (const Graph* s = g; s; s = s->parent) {
      auto scope = scopes_.find(s);
      if (scope == scopes_.end()) continue;
      auto it = scope->second.find(op.name);
      if (it != scope->second.end()) return it->second;
    }
    fail(op.range, "use of undefined value %" + op.name);
  }

  void line(Graph* g, const LineDecl& l) {
    Node* n = nullptr;
    lang::SourceLoc loc = l.range.begin;
    if (l.kind == LineDecl::Kind::Constant) {
      n = m_.add_constant(g, text::literal_value(l.literal, l.type), loc);
      n->type = l.type;
    } else {
      std::vector<Node*> inputs;
      std::vector<TypeP> in_types;
      for (const Operand& op : l.operands) {
        inputs.push_back(resolve(g, op));
        in_types.push_back(inputs.back()->type);
      }
      if (l.kind == LineDecl::Kind::Call) {
        n = call(g, l, std::move(inputs), in_types);
      } else {
        n = apply(g, l, std::move(inputs), in_types);
      }
    }
    bind(g, l.name, n, l.range);
  }

  Node* call(Graph* g, const LineDecl& l, std::vector<Node*> inputs,
             const std::vector<TypeP>& in_types) {
    Graph* callee = m_.find_graph(l.op);
    if (!callee) fail(l.op_range, "unknown graph @" + l.op);
    if (callee->parent && !is_within(g, callee->parent))
      fail(l.op_range, "@" + l.op + " is nested in @" + callee->parent->name +
                           " and cannot be called from @" + g->name);
    const sem::Type& sig = *signature_.at(callee);
    if (in_types.size() != sig.elems.size())
      fail(l.op_range, "@" + l.op + " takes " + std::to_string(sig.elems.size()) +
                           " arguments, got " + std::to_string(in_types.size()));
    for (size_t i = 0; i < in_types.size(); ++i)
      if (!same_type(in_types[i], sig.elems[i]))
        fail(l.operands[i].range, "argument " + std::to_string(i + 1) + " of @" + l.op +
                                      " has type " + in_types[i]->str() + ", expected " +
                                      sig.elems[i]->str());
    if (!same_type(l.type, sig.result))
      fail(l.type_range, "@" + l.op + " returns " + sig.result->str() + ", not " + l.type->str());
    return m_.add_call(g, callee, std::move(inputs), l.type, l.range.begin);
  }

  Node* apply(Graph* g, const LineDecl& l, std::vector<Node*> inputs,
              const std::vector<TypeP>& in_types) {
    const sem::Primitive* prim = sem::Registry::instance().find(l.op);
    if (!prim) fail(l.op_range, "unknown primitive '" + l.op + "'");
    Attrs attrs;
    for (size_t i = 0; i < l.attrs.size(); ++i) {
      const auto& [name, lit] = l.attrs[i];
      if (attrs.has(name)) fail(l.attr_ranges[i], "attribute '" + name + "' given twice");
      attrs.set(name, text::attr_value(*prim, name, lit, l.attr_ranges[i]));
    }
    if (prim->infer) {
      TypeP inferred;
      try {
        inferred = prim->infer(in_types, attrs);
      } catch (const lang::UserError& e) {
        fail(l.op_range, e.what());
      } catch (const lang::InternalError& e) {
        // Shape rules assert what the front end always gives them (the number of inputs, the
        // attributes it sets); hand-written text may give anything, so that is its error.
        fail(l.op_range, e.what());
      }
      if (!same_type(inferred, l.type))
        fail(l.type_range, "type mismatch: " + l.op + " gives " +
                               (inferred ? inferred->str() : "<untyped>") + ", the text says " +
                               l.type->str());
    }
    return m_.add_apply(g, prim, std::move(inputs), std::move(attrs), l.type, l.range.begin);
  }
};

std::unique_ptr<Module> parse(std::string_view source, int file) {
  TokenStream ts(text::lex(source, file));
  std::vector<std::unique_ptr<GraphDecl>> decls;
  std::optional<Operand> entry;
  Syntax(ts).module(decls, entry);

  auto m = std::make_unique<Module>();
  Builder b(*m);
  for (auto& d : decls) b.declare(*d);
  for (auto& d : decls) b.define(*d);
  if (entry) {
    m->entry = m->find_graph(entry->name);
    if (!m->entry) fail(entry->range, "unknown graph @" + entry->name);
  } else {
    m->entry = m->find_graph("main");
  }
  if (m->entry && m->entry->parent)
    fail(entry ? entry->range : lang::SourceRange{m->entry->loc, m->entry->loc},
         "the entry graph @" + m->entry->name + " must be top-level");
  return m;
}

}  // namespace

std::unique_ptr<Module> parse_module(const lang::SourceManager& sources, int file,
                                     lang::DiagnosticEngine& diags) {
  try {
    return parse(sources.text(file), file);
  } catch (const ParseError& e) {
    diags.error(e.range, e.what());
    throw lang::CompileError();
  }
}

std::unique_ptr<Module> parse_module(std::string_view source, const std::string& filename) {
  lang::SourceManager sources;
  int file = sources.add(filename, std::string(source));
  lang::DiagnosticEngine diags(sources);
  try {
    return parse_module(sources, file, diags);
  } catch (const lang::CompileError&) {
    std::string message = diags.format(diags.diagnostics().front());
    if (!message.empty() && message.back() == '\n') message.pop_back();
    throw lang::UserError(message);
  }
}

TypeP parse_type(std::string_view source) {
  try {
    TokenStream ts(text::lex(source, -1));
    TypeP t = text::parse_type(ts);
    if (!ts.at_end()) ts.fail(ts.peek(), "unexpected " + ts.peek().describe() + " after the type");
    return t;
  } catch (const ParseError& e) {
    throw lang::UserError("bad type '" + std::string(source) + "': " + e.what() + " (column " +
                          std::to_string(e.range.begin.col) + ")");
  }
}

}  // namespace spora::ir
