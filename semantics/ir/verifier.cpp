// The IR verifier (checks listed in verifier.h).
#include "semantics/ir/verifier.h"

#include <unordered_map>
#include <unordered_set>

#include "semantics/ir/printer.h"

namespace spora::ir {

namespace {

std::string type_str(const TypeP& t) { return t ? t->str() : "<untyped>"; }

bool is_bool_scalar(const TypeP& t) { return t && t->is_scalar() && t->dtype == DType::boolean; }

class Verifier {
 public:
  explicit Verifier(const Module& m) : m_(m), names_(m) {}

  std::vector<std::string> run() {
    index();
    for (const auto& g : m_.graphs()) graph(*g);
    return std::move(problems_);
  }

 private:
  const Module& m_;
  NodeNames names_;
  std::vector<std::string> problems_;
  std::unordered_set<const Graph*> graphs_;
  // Where each listed node sits: its graph and position (params: -1 - index).
  std::unordered_map<const Node*, std::pair<const Graph*, long>> where_;

  void problem(const Graph& g, const Node* n, const std::string& what) {
    std::string prefix = "@" + g.name + ": ";
    if (n) prefix += names_(n) + (n->is_apply() ? " = " + op_name(*n) : "") + ": ";
    problems_.push_back(prefix + what);
  }

  static std::string op_name(const Node& n) {
    if (n.callee) return "call @" + n.callee->name;
    return n.prim ? n.prim->name : "<no callee>";
  }

  void index() {
    std::unordered_set<std::string> names;
    for (const auto& g : m_.graphs()) {
      graphs_.insert(g.get());
      if (!names.insert(g->name).second)
        problems_.push_back("graph name @" + g->name + " is used twice");
    }
    if (m_.entry && (!graphs_.count(m_.entry) || m_.entry->parent))
      problems_.push_back("the entry @" + m_.entry->name +
                          " is not a top-level graph of the module");
    for (const auto& g : m_.graphs()) {
      std::unordered_set<const Graph*> seen;
      for (const Graph* p = g->parent; p; p = p->parent) {
        if (!graphs_.count(p)) {
          problems_.push_back("@" + g->name + ": its parent is not a graph of the module");
          break;
        }
        if (p == g.get() || !seen.insert(p).second) {
          problems_.push_back("@" + g->name + ": its parent chain is a cycle");
          break;
        }
      }
      for (size_t i = 0; i < g->params.size(); ++i)
        place(*g, g->params[i], -1 - static_cast<long>(i));
      for (size_t i = 0; i < g->nodes.size(); ++i) place(*g, g->nodes[i], static_cast<long>(i));
    }
  }

  void place(const Graph& g, const Node* n, long pos) {
    if (!n) {
      problem(g, nullptr, "a null node in its lists");
      return;
    }
    if (!where_.emplace(n, std::make_pair(&g, pos)).second)
      problem(g, n, "listed twice (also in @" + where_[n].first->name + ")");
  }

  // Is `g` allowed to name `target` (as a constant or a callee)?
  bool visible(const Graph& g, const Graph* target) const {
    return !target->parent || is_within(&g, target->parent);
  }

  // Checks that `user` (a node of g at position pos, or g's output when pos == npos) may read `in`.
  void check_use(const Graph& g, const Node* user, long pos, const Node* in, const char* role) {
    if (!in) {
      problem(g, user, std::string("a null ") + role);
      return;
    }
    auto it = where_.find(in);
    if (it == where_.end()) {
      problem(g, user, std::string(role) + " " + names_(in) + " is not in any graph of the module");
      return;
    }
    const Graph* owner = it->second.first;
    if (owner == &g) {
      if (it->second.second >= pos && it->second.second >= 0)
        problem(g, user, std::string(role) + " " + names_(in) + " is used before it is defined");
    } else if (!is_within(&g, owner)) {
      problem(g, user,
              std::string(role) + " " + names_(in) + " belongs to @" + owner->name +
                  ", which does not enclose @" + g.name);
    }
  }

  void graph(const Graph& g) {
    for (const Node* p : g.params) {
      if (!p) continue;
      if (!p->is_param()) problem(g, p, "a non-parameter in the parameter list");
      if (p->graph != &g) problem(g, p, "node->graph is not @" + g.name);
      if (!p->type) problem(g, p, "has no type");
    }
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i]) node(g, *g.nodes[i], static_cast<long>(i));
    if (!g.output)
      problem(g, nullptr, "has no output");
    else
      check_use(g, nullptr, static_cast<long>(g.nodes.size()), g.output, "output");
  }

  void node(const Graph& g, const Node& n, long pos) {
    if (n.graph != &g) problem(g, &n, "node->graph is not @" + g.name);
    if (!n.type) problem(g, &n, "has no type");
    if (n.is_param()) {
      problem(g, &n, "a parameter in the node list");
      return;
    }
    if (n.is_constant()) {
      constant(g, n);
      return;
    }
    for (const Node* in : n.inputs) check_use(g, &n, pos, in, "input");
    if ((n.prim != nullptr) == (n.callee != nullptr)) {
      problem(g, &n, "an apply needs exactly one of a primitive and a callee");
      return;
    }
    for (const Node* in : n.inputs)
      if (!in || !in->type) return;  // reported above; types cannot be checked
    if (n.callee) {
      call(g, n);
    } else if (n.prim->name == "if" || n.prim->name == "while" || n.prim->name == "for_range" ||
               n.prim->name == "for_each") {
      control(g, n);
    } else if (n.prim->infer && n.type) {
      std::vector<TypeP> in_types;
      for (const Node* in : n.inputs) in_types.push_back(in->type);
      try {
        TypeP expected = n.prim->infer(in_types, n.attrs);
        if (!same_type(expected, n.type))
          problem(
              g, &n,
              "has type " + type_str(n.type) + " but its shape rule gives " + type_str(expected));
      } catch (const lang::UserError& e) {
        problem(g, &n, std::string("its shape rule rejects the inputs: ") + e.what());
      }
    }
  }

  void constant(const Graph& g, const Node& n) {
    if (!n.inputs.empty()) problem(g, &n, "a constant with inputs");
    if (n.prim || n.callee) problem(g, &n, "a constant with a callee");
    if (n.graph_value) {
      if (!graphs_.count(n.graph_value)) {
        problem(g, &n, "names a graph that is not in the module");
        return;
      }
      if (!visible(g, n.graph_value))
        problem(g, &n,
                "names @" + n.graph_value->name + ", nested in @" + n.graph_value->parent->name +
                    " and not visible from @" + g.name);
      TypeP expected = n.graph_value->function_type();
      if (n.type && !same_type(n.type, expected))
        problem(g, &n,
                "has type " + type_str(n.type) + " but @" + n.graph_value->name + " is " +
                    type_str(expected));
      return;
    }
    if (n.type && n.value.kind != Value::Kind::None && n.value.kind != Value::Kind::Opaque &&
        !same_type(n.value.type(), n.type))
      problem(g, &n,
              "has type " + type_str(n.type) + " but its value is " + type_str(n.value.type()));
  }

  void call(const Graph& g, const Node& n) {
    const Graph* callee = n.callee;
    if (!graphs_.count(callee)) {
      problem(g, &n, "calls a graph that is not in the module");
      return;
    }
    if (!visible(g, callee))
      problem(g, &n,
              "@" + callee->name + " is nested in @" + callee->parent->name +
                  " and not visible from @" + g.name);
    if (n.inputs.size() != callee->params.size()) {
      problem(g, &n,
              "passes " + std::to_string(n.inputs.size()) + " arguments to @" + callee->name +
                  ", which takes " + std::to_string(callee->params.size()));
      return;
    }
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!same_type(n.inputs[i]->type, callee->params[i]->type))
        problem(g, &n,
                "argument " + std::to_string(i + 1) + " has type " + type_str(n.inputs[i]->type) +
                    " but @" + callee->name + " expects " + type_str(callee->params[i]->type));
    if (n.type && !same_type(n.type, callee->result_type()))
      problem(g, &n,
              "has type " + type_str(n.type) + " but @" + callee->name + " returns " +
                  type_str(callee->result_type()));
  }

  // The graph behind operand i of a control-flow node, or null (reported).
  const Graph* body(const Graph& g, const Node& n, size_t i) {
    const Node* in = n.inputs[i];
    if (!in->graph_value) {
      problem(g, &n, "operand " + std::to_string(i + 1) + " must be a graph constant");
      return nullptr;
    }
    return graphs_.count(in->graph_value) ? in->graph_value : nullptr;
  }

  // body: (prefix..., S...) -> (S...) where S are the types of inputs [from, end).
  void loop_body(const Graph& g, const Node& n, const Graph* b, std::vector<TypeP> params,
                 size_t from) {
    std::vector<TypeP> state;
    for (size_t i = from; i < n.inputs.size(); ++i) state.push_back(n.inputs[i]->type);
    TypeP state_type = sem::Type::tuple(state);
    if (n.type && !same_type(n.type, state_type))
      problem(g, &n,
              "has type " + type_str(n.type) + " but its loop state is " + type_str(state_type));
    if (!b) return;
    params.insert(params.end(), state.begin(), state.end());
    signature(g, n, *b, params, state_type);
  }

  void signature(const Graph& g, const Node& n, const Graph& b, const std::vector<TypeP>& params,
                 const TypeP& result) {
    TypeP expected = sem::Type::function(params, result);
    if (!same_type(b.function_type(), expected))
      problem(g, &n,
              "@" + b.name + " is " + type_str(b.function_type()) + " but " + n.prim->name +
                  " needs " + type_str(expected));
  }

  void control(const Graph& g, const Node& n) {
    const std::string& op = n.prim->name;
    const size_t min_inputs = op == "if" ? 3 : op == "for_range" ? 4 : 2;
    if (n.inputs.size() < min_inputs || (op == "if" && n.inputs.size() != 3)) {
      problem(g, &n, "has " + std::to_string(n.inputs.size()) + " operands");
      return;
    }
    if (op == "if") {
      if (!is_bool_scalar(n.inputs[0]->type))
        problem(g, &n, "the condition is " + type_str(n.inputs[0]->type) + ", not bool");
      for (size_t i : {1, 2})
        if (const Graph* b = body(g, n, i)) signature(g, n, *b, {}, n.type);
    } else if (op == "while") {
      const Graph* cond = body(g, n, 0);
      const Graph* b = body(g, n, 1);
      std::vector<TypeP> state;
      for (size_t i = 2; i < n.inputs.size(); ++i) state.push_back(n.inputs[i]->type);
      if (cond) signature(g, n, *cond, state, sem::Type::scalar(DType::boolean));
      loop_body(g, n, b, {}, 2);
    } else if (op == "for_range") {
      TypeP index = n.inputs[0]->type;
      if (!index->is_scalar() || !is_integer(index->dtype))
        problem(g, &n, "start is " + type_str(index) + ", not an integer scalar");
      for (size_t i : {1, 2})
        if (!same_type(n.inputs[i]->type, index))
          problem(g, &n,
                  (i == 1 ? "stop is " : "step is ") + type_str(n.inputs[i]->type) + ", not " +
                      type_str(index) + " like start");
      loop_body(g, n, body(g, n, 3), {index}, 4);
    } else {  // for_each
      TypeP it = n.inputs[0]->type;
      if (it->kind != sem::Type::Kind::Iterator || it->elems.empty()) {
        problem(g, &n, "iterates over " + type_str(it) + ", not an iterator");
        return;
      }
      // part=k walks the elements of type elems[k] (semantics/iterable.h).
      const int64_t part = n.attrs.has("part") ? n.attrs.get_int("part") : 0;
      if (part < 0 || static_cast<size_t>(part) >= it->elems.size()) {
        problem(g, &n, "part " + std::to_string(part) + " of " + type_str(it) + " does not exist");
        return;
      }
      loop_body(g, n, body(g, n, 1), {it->elems[static_cast<size_t>(part)]}, 2);
    }
  }
};

}  // namespace

std::vector<std::string> verify(const Module& m) { return Verifier(m).run(); }

void verify_or_throw(const Module& m, std::string_view context) {
  std::vector<std::string> problems = verify(m);
  if (problems.empty()) return;
  std::string message = "IR verification failed";
  if (!context.empty()) message += " " + std::string(context);
  message += ":";
  for (const std::string& p : problems) message += "\n  " + p;
  throw lang::InternalError(message);
}

std::map<std::string, int> effectful_counts(const Module& m) {
  std::map<std::string, int> counts;
  for (const auto& g : m.graphs())
    for (const Node* n : g->nodes)
      if (n && n->prim && n->prim->effectful) ++counts[n->prim->name];
  return counts;
}

}  // namespace spora::ir
