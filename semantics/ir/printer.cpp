// The IR printer (format in printer.h). One Printer object walks the module in printing order,
// naming nodes as their lines are written; NodeNames runs the same walk and keeps the names.
#include "semantics/ir/printer.h"

#include <cstdio>
#include <unordered_map>
#include <unordered_set>

namespace spora::ir {

namespace {

bool plain_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool all_digits(const std::string& s) {
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return !s.empty();
}

// Elements of a tensor as nested brackets (rank 0: the bare element).
void print_tensor(const sem::Tensor& t, size_t axis, int64_t& flat, std::string& out) {
  if (axis == t.shape().size()) {
    out += sem::format_scalar(t, flat++);
    return;
  }
  out += '[';
  for (int64_t i = 0; i < t.shape()[axis]; ++i) {
    if (i) out += ", ";
    print_tensor(t, axis + 1, flat, out);
  }
  out += ']';
}

void print_value(const Value& v, std::string& out) {
  switch (v.kind) {
    case Value::Kind::None:
      out += "none";
      return;
    case Value::Kind::Tensor: {
      int64_t flat = 0;
      if (!v.tensor.defined()) throw lang::InternalError("printing an undefined tensor constant");
      print_tensor(v.tensor, 0, flat, out);
      return;
    }
    case Value::Kind::String:
      out += quote_string(v.str);
      return;
    case Value::Kind::Tuple:
    case Value::Kind::Record: {
      out += '(';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ", ";
        print_value(v.items()[i], out);
      }
      out += ')';
      return;
    }
    case Value::Kind::Opaque:
      out += "<opaque " + (v.opaque ? v.opaque->describe() : std::string("null")) + ">";
      return;
  }
}

class Printer {
 public:
  std::unordered_map<const Node*, std::string> names;
  std::string out;
  // Whether constants' values are written out (NodeNames wants the names only: an eager
  // program's module holds its tensors as constants, 4M floats for W5's input).
  bool values = true;

  // Graphs nested in each graph, in module order (empty when printing a lone graph).
  std::unordered_map<const Graph*, std::vector<const Graph*>> children;

  void module(const Module& m) {
    for (const auto& g : m.graphs())
      if (g->parent) children[g->parent].push_back(g.get());
    if (m.entry && m.entry->name != "main") out += "entry " + graph_ref(*m.entry) + "\n\n";
    bool first = true;
    for (const auto& g : m.graphs()) {
      if (g->parent) continue;
      if (!first) out += '\n';
      first = false;
      used_.clear();  // parameter names only need to be unique within one top-level graph
      graph(*g, 0);
    }
    // Nested graphs whose parent is missing from the module cannot be reached otherwise.
    for (const auto& g : m.graphs())
      if (g->parent && !printed_.count(g.get()) && !printed_.count(g->parent)) {
        out += '\n';
        graph(*g, 0);
      }
  }

  void lone_graph(const Graph& g) {
    for (const Node* fv : free_variables(&g))
      if (!fv->graph_value) names[fv] = fv->is_param() ? param_name(fv->name) : number();
    graph(g, 0);
  }

  void graph(const Graph& g, int indent) {
    printed_.insert(&g);
    std::string pad(indent, ' ');
    out += pad;
    for (const std::string& f : g.flags) out += quote_name('@', f) + " ";
    out += "graph " + graph_ref(g) + "(";
    for (size_t i = 0; i < g.params.size(); ++i) {
      const Node* p = g.params[i];
      names[p] = param_name(p->name);
      if (i) out += ", ";
      out += names[p] + ": " + type_str(p->type);
    }
    out += ") -> " + type_str(g.result_type()) + " {\n";
    for (const Node* n : g.nodes) {
      if (n->graph_value) continue;
      for (const Node* in : n->inputs)
        if (in) nested_before_use(g, in->graph_value, indent);
      nested_before_use(g, n->callee, indent);
      node(*n, indent + 2);
    }
    if (g.output) nested_before_use(g, g.output->graph_value, indent);
    auto kids = children.find(&g);
    if (kids != children.end())
      for (const Graph* c : kids->second)
        if (!printed_.count(c)) graph(*c, indent + 2);
    out += pad + "  return";
    if (g.output) out += " " + ref(g.output);
    out += "\n" + pad + "}\n";
  }

 private:
  std::unordered_set<std::string> used_;
  std::unordered_map<std::string, int> next_suffix_;  // param_name's last suffix per base
  std::unordered_set<const Graph*> printed_;
  int counter_ = 0;

  std::string number() {
    std::string n = "%" + std::to_string(counter_++);
    used_.insert(n);
    return n;
  }

  // `base`, else the first of base.1, base.2, ... not yet used. The search for a base starts
  // where its last one ended (every suffix below it is used, and names are never freed), so
  // many parameters of one name cost linear time, not quadratic.
  std::string param_name(const std::string& base) {
    if (base.empty()) return number();
    std::string name = quote_name('%', all_digits(base) ? base + ".1" : base);
    for (int& i = next_suffix_[base]; used_.count(name);)
      name = quote_name('%', base + "." + std::to_string(++i));
    used_.insert(name);
    return name;
  }

  static std::string type_str(const TypeP& t) { return t ? t->str() : "<untyped>"; }

  std::string ref(const Node* n) const {
    if (!n) return "%<null>";
    if (n->graph_value) return graph_ref(*n->graph_value);
    auto it = names.find(n);
    return it != names.end() ? it->second : "%<undefined>";
  }

  void nested_before_use(const Graph& g, const Graph* target, int indent) {
    if (target && target->parent == &g && !printed_.count(target)) graph(*target, indent + 2);
  }

  void node(const Node& n, int indent) {
    names[&n] = number();
    out += std::string(indent, ' ') + names[&n] + " = ";
    if (n.is_constant()) {
      out += "constant ";
      if (values) print_value(n.value, out);
    } else if (n.is_param()) {
      out += "<parameter in node list>";
    } else {
      out += n.callee ? "call " + graph_ref(*n.callee) : n.prim ? n.prim->name : "<no callee>";
      out += '(';
      bool first = true;
      for (const Node* in : n.inputs) {
        if (!first) out += ", ";
        first = false;
        out += ref(in);
      }
      attrs(n, first);
      out += ')';
    }
    out += " : " + type_str(n.type) + "\n";
  }

  void attrs(const Node& n, bool first) {
    std::unordered_set<std::string> done;
    auto emit = [&](const std::string& name, const sem::Attr& a) {
      if (!first) out += ", ";
      first = false;
      out += name + "=" + sem::attr_str(a);
      done.insert(name);
    };
    if (n.prim)
      for (const sem::ParamSpec& p : n.prim->params)
        if (p.kind == sem::ParamSpec::Kind::Attr)
          if (const sem::Attr* a = n.attrs.find(p.name)) emit(p.name, *a);
    for (const auto& [name, a] : n.attrs.items())
      if (!done.count(name)) emit(name, a);
  }
};

}  // namespace

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string quote_name(char sigil, const std::string& name) {
  return std::string(1, sigil) + (plain_name(name) ? name : quote_string(name));
}

std::string graph_ref(const Graph& g) { return quote_name('@', g.name); }

std::string print_module(const Module& m) {
  Printer p;
  p.module(m);
  return std::move(p.out);
}

std::string print_graph(const Graph& g) {
  Printer p;
  p.lone_graph(g);
  return std::move(p.out);
}

NodeNames::NodeNames(const Module& m) {
  Printer p;
  p.values = false;
  p.module(m);
  names_ = std::move(p.names);
}

NodeNames::NodeNames(const Graph& g) {
  Printer p;
  p.values = false;
  p.lone_graph(g);
  names_ = std::move(p.names);
}

std::string NodeNames::operator()(const Node* n) const {
  if (!n) return "%<null>";
  if (n->graph_value) return graph_ref(*n->graph_value);
  auto it = names_.find(n);
  return it != names_.end() ? it->second : "%<detached>";
}

}  // namespace spora::ir
