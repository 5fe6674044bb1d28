// Constant folding (what it rewrites: constant_fold.h).
#include "semantics/passes/constant_fold.h"

#include <deque>
#include <exception>
#include <optional>
#include <unordered_map>

#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

bool small_tensor_type(const sem::TypeP& t) {
  if (!t || !t->is_tensor()) return false;
  const int64_t n = t->numel();
  return n >= 0 && n <= kMaxFoldedElements;
}

// Parallel annotations (shard_hint, stage_boundary) are identities whose node is the message:
// folding one into a constant would drop the pin.
bool evaluable(const Node& n) {
  return n.is_apply() && n.prim && n.prim->eval && !n.prim->effectful && !is_control_flow(n) &&
         n.prim->family != "annotation" &&
         !touches_state(n) && small_tensor_type(n.type);
}

class Folder {
 public:
  explicit Folder(Module& m) : m_(m), splicer_(m) {}

  void graph(Graph* g) {
    std::deque<Node*> work(g->nodes.begin(), g->nodes.end());
    g->nodes.clear();
    while (!work.empty()) {
      Node* n = work.front();
      work.pop_front();
      replaced_.rewrite_inputs(*n);
      if (n->is_prim("if")) {
        if (std::optional<bool> c = truth(n->inputs[0])) {
          // Splice the taken branch, then walk its nodes like the rest.
          const size_t before = g->nodes.size();
          Node* result = splicer_.splice(g, *graph_operand(*n, *c ? 1 : 2), {});
          work.insert(work.begin(), g->nodes.begin() + static_cast<long>(before), g->nodes.end());
          g->nodes.resize(before);
          replaced_.replace(n, result);
          continue;
        }
      }
      if (runs_no_iteration(*n)) {
        std::vector<Node*> state(n->inputs.begin() + static_cast<long>(loop_state_operand(*n)),
                                 n->inputs.end());
        replaced_.replace(n, m_.add_apply(g, make_tuple(), std::move(state), {}, n->type, n->loc));
        continue;
      }
      if (!n->inputs.empty() && evaluable(*n)) fold(*n);
      g->nodes.push_back(n);
    }
    g->output = replaced_(g->output);
  }

  const Substitution& replaced() const { return replaced_; }

 private:
  Module& m_;
  Splicer splicer_;
  Substitution replaced_;
  std::unordered_map<const Node*, std::optional<sem::Value>> evaluated_;  // input-less applies

  static const sem::Primitive* make_tuple() {
    static const sem::Primitive* p = sem::Registry::instance().find("make_tuple");
    return p;
  }

  // The value of a constant input, or null.
  const sem::Value* value(const Node* n) {
    if (n->is_constant()) {
      using K = sem::Value::Kind;
      const K k = n->value.kind;
      const bool plain = k == K::Tensor || k == K::String || k == K::Tuple || k == K::Record;
      return !n->graph_value && plain ? &n->value : nullptr;
    }
    if (!n->inputs.empty() || !evaluable(*n)) return nullptr;
    auto [it, fresh] = evaluated_.try_emplace(n);
    if (fresh) it->second = evaluate(*n, {});
    return it->second ? &*it->second : nullptr;
  }

  std::optional<bool> truth(const Node* n) {
    const sem::Value* v = value(n);
    if (!v || !v->is_tensor() || v->tensor.numel() != 1) return std::nullopt;
    return v->tensor.item() != 0.0;
  }

  // The kernel's result when it succeeds and has the node's type: the current backend's kernel
  // (sem::kernel_for), so a folded value is bit for bit the one the program computes at run time.
  static std::optional<sem::Value> evaluate(const Node& n, const std::vector<sem::Value>& in) {
    try {
      sem::Value v = sem::kernel_for(*n.prim)(in, n.attrs);
      // A constant of the IR is host data (printed, hashed, serialised); the backend moves it
      // to its device where it is used.
      if (v.is_tensor() && sem::same_type(v.type(), n.type))
        return sem::Value(sem::host_tensor(v.tensor));
    } catch (const std::exception&) {
      // Raised again at run time, where it has a location and a call stack.
    }
    return std::nullopt;
  }

  void fold(Node& n) {
    std::vector<sem::Value> in;
    for (const Node* x : n.inputs) {
      const sem::Value* v = value(x);
      if (!v) return;
      in.push_back(*v);
    }
    std::optional<sem::Value> v = evaluate(n, in);
    if (!v) return;
    n.kind = ir::NodeKind::Constant;
    n.value = std::move(*v);
    n.prim = nullptr;
    n.inputs.clear();
    n.attrs = {};
  }

  // A while whose condition is constantly false, a for_range over a constant empty range.
  bool runs_no_iteration(const Node& n) {
    if (n.is_prim("while")) {
      const Graph* cond = graph_operand(n, 0);
      std::optional<bool> c = cond ? truth(cond->output) : std::nullopt;
      return c && !*c;
    }
    if (!n.is_prim("for_range") || n.inputs.size() < 4) return false;
    std::optional<double> start = number(n.inputs[0]), stop = number(n.inputs[1]),
                          step = number(n.inputs[2]);
    if (!start || !stop || !step || *step == 0) return false;
    return *step > 0 ? *start >= *stop : *start <= *stop;
  }

  std::optional<double> number(const Node* n) {
    const sem::Value* v = value(n);
    if (!v || !v->is_tensor() || v->tensor.numel() != 1) return std::nullopt;
    return v->tensor.item();
  }
};

}  // namespace

void fold_constants(Module& m) {
  Folder folder(m);
  for (Graph* g : parents_first(m)) folder.graph(g);
  folder.replaced().apply(m);
}

}  // namespace spora::passes
