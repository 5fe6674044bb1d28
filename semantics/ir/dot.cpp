// Graphviz output (see dot.h).
#include "semantics/ir/dot.h"

#include <unordered_map>

#include "semantics/ir/printer.h"

namespace spora::ir {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

class Dot {
 public:
  explicit Dot(const Module& m) : m_(m), names_(m) {
    for (const auto& g : m.graphs()) {
      graph_ids_[g.get()] = static_cast<int>(graph_ids_.size());
      if (g->parent) children_[g->parent].push_back(g.get());
    }
  }

  std::string run() {
    out_ =
        "digraph spora {\n  compound=true;\n  rankdir=TB;\n"
        "  node [fontname=\"monospace\", fontsize=10];\n  edge [fontsize=9];\n";
    for (const auto& g : m_.graphs())
      if (!g->parent) cluster(*g, 1);
    out_ += edges_;
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  const Module& m_;
  NodeNames names_;
  std::unordered_map<const Graph*, int> graph_ids_;
  std::unordered_map<const Graph*, std::vector<const Graph*>> children_;
  std::unordered_map<const Node*, std::string> ids_;
  std::string out_, edges_;

  std::string id(const Node* n) {
    auto it = ids_.find(n);
    if (it != ids_.end()) return it->second;
    return ids_[n] = "n" + std::to_string(ids_.size());
  }

  // Every cluster has an invisible anchor node, so edges can point at the cluster.
  std::string anchor(const Graph* g) { return "g" + std::to_string(graph_ids_.at(g)); }

  static std::string signature(const Graph& g, const NodeNames& names) {
    std::string s = graph_ref(g) + "(";
    for (size_t i = 0; i < g.params.size(); ++i) {
      if (i) s += ", ";
      s += names(g.params[i]) + ": " + (g.params[i]->type ? g.params[i]->type->str() : "?");
    }
    return s + ") -> " + g.result_type()->str();
  }

  void cluster(const Graph& g, int depth) {
    std::string pad(2 * depth, ' ');
    out_ += pad + "subgraph cluster_" + std::to_string(graph_ids_.at(&g)) + " {\n";
    out_ += pad + "  label=\"" + escape(signature(g, names_)) + "\";\n";
    out_ += pad + "  style=rounded;\n";
    out_ += pad + "  " + anchor(&g) + " [shape=point, style=invis];\n";
    for (const Node* p : g.params) box(g, *p, pad + "  ");
    for (const Node* n : g.nodes)
      if (!n->graph_value) box(g, *n, pad + "  ");
    if (g.output && g.output->graph != &g && !g.output->graph_value)  // a parent's value
      edges_ += "  " + id(g.output) + " -> " + anchor(&g) + " [style=dashed, lhead=cluster_" +
                std::to_string(graph_ids_.at(&g)) + ", label=\"return\"];\n";
    auto kids = children_.find(&g);
    if (kids != children_.end())
      for (const Graph* c : kids->second) cluster(*c, depth + 1);
    out_ += pad + "}\n";
  }

  void box(const Graph& g, const Node& n, const std::string& pad) {
    std::string label = names_(&n);
    std::string shape = "box";
    std::string style;
    if (n.is_param()) {
      shape = "ellipse";
    } else if (n.is_constant()) {
      label += " = constant";
    } else {
      label += " = " + (n.callee ? "call " + graph_ref(*n.callee) : n.prim ? n.prim->name : "?");
      style = "rounded";
    }
    label += " : " + (n.type ? n.type->str() : std::string("<untyped>"));
    if (g.output == &n) style += style.empty() ? "bold" : ",bold";
    out_ += pad + id(&n) + " [shape=" + shape + (style.empty() ? "" : ", style=\"" + style + "\"") +
            ", label=\"" + escape(label) + "\"];\n";
    if (!n.is_apply()) return;
    for (const Node* in : n.inputs) {
      if (!in) continue;
      if (in->graph_value && graph_ids_.count(in->graph_value)) {
        edges_ += "  " + anchor(in->graph_value) + " -> " + id(&n) +
                  " [style=dotted, ltail=cluster_" +
                  std::to_string(graph_ids_.at(in->graph_value)) + "];\n";
      } else {
        edges_ +=
            "  " + id(in) + " -> " + id(&n) + (in->graph == &g ? "" : " [style=dashed]") + ";\n";
      }
    }
    if (n.callee && graph_ids_.count(n.callee))
      edges_ += "  " + anchor(n.callee) + " -> " + id(&n) + " [style=dotted, ltail=cluster_" +
                std::to_string(graph_ids_.at(n.callee)) + "];\n";
  }
};

}  // namespace

std::string to_dot(const Module& m) { return Dot(m).run(); }

}  // namespace spora::ir
