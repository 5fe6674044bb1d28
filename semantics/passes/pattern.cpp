// The rewrite-rule language of simplify_algebra (pattern.h).
#include "semantics/passes/pattern.h"

#include <algorithm>

#include "lang/diagnostics.h"
#include "semantics/passes/util.h"

namespace spora::passes::pattern {

Pattern Pattern::any(Var v) {
  Pattern p;
  p.bind_ = v;
  return p;
}

Pattern Pattern::filled(double value) {
  Pattern p;
  p.kind_ = value == 0.0 ? Kind::Zero : Kind::One;
  p.value_ = value;
  return p;
}

Pattern Pattern::op(std::vector<std::string> prims, std::vector<Pattern> args) {
  Pattern p;
  p.kind_ = Kind::Op;
  p.prims_ = std::move(prims);
  p.args_ = std::move(args);
  return p;
}

Pattern Pattern::as(Var v) const {
  Pattern p = *this;
  p.bind_ = v;
  return p;
}

namespace {

// Primitives whose result has the same elements as their input, rearranged or converted:
// a filled input gives a filled result.
bool keeps_fill(const Node& n) {
  static const std::vector<std::string> kNames = {"broadcast_to", "reshape",   "flatten",
                                                  "squeeze",      "unsqueeze", "expand_dims",
                                                  "transpose",    "permute",   "cast"};
  return n.prim && n.inputs.size() == 1 &&
         std::find(kNames.begin(), kNames.end(), n.prim->name) != kNames.end();
}

bool filled(const Node* n, double value, int depth) {
  if (const sem::Value* c = tensor_constant(*n)) {
    const sem::Tensor& t = c->tensor;
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.get(i) != value) return false;
    return true;
  }
  if (!n->is_apply() || !n->prim) return false;
  const std::string& name = n->prim->name;
  if (name == "zeros") return value == 0.0;
  if (name == "ones") return value == 1.0;
  if (name == "full") return n->attrs.has("value") && n->attrs.get_float("value") == value;
  return depth < 8 && keeps_fill(*n) && filled(n->inputs[0], value, depth + 1);
}

}  // namespace

bool is_filled(const Node* n, double value) { return filled(n, value, 0); }

class Matcher {
 public:
  static bool match(const Pattern& p, Node* n, Match& m) {
    switch (p.kind_) {
      case Pattern::Kind::Any:
        break;
      case Pattern::Kind::Zero:
      case Pattern::Kind::One:
        if (!is_filled(n, p.value_)) return false;
        break;
      case Pattern::Kind::Op:
        if (!n->is_apply() || !n->prim || n->inputs.size() != p.args_.size() ||
            std::find(p.prims_.begin(), p.prims_.end(), n->prim->name) == p.prims_.end())
          return false;
        for (size_t i = 0; i < p.args_.size(); ++i)
          if (!match(p.args_[i], n->inputs[i], m)) return false;
        break;
    }
    if (p.bind_) {
      Node*& slot = m.vars[static_cast<size_t>(*p.bind_)];
      if (slot && slot != n) return false;
      slot = n;
    }
    return true;
  }
};

Node* Emit::op(const std::string& prim, std::vector<Node*> inputs, sem::Attrs attrs) {
  const sem::Primitive* p = sem::Registry::instance().find(prim);
  if (!p) throw lang::InternalError("simplify: unknown primitive " + prim);
  try {
    Node* n = m_.add_apply(at_.graph, p, std::move(inputs), std::move(attrs), nullptr, at_.loc);
    created_.push_back(n);
    return n;
  } catch (const lang::UserError&) {
    return nullptr;  // the shape rule rejects it: the rule does not apply
  }
}

Node* Emit::zeros(const sem::TypeP& type) {
  if (!type || !type->is_tensor() || type->numel() < 0) return nullptr;
  sem::Attrs attrs;
  attrs.set("shape", type->shape);
  attrs.set("dtype", type->dtype);
  return op("zeros", {}, std::move(attrs));
}

RuleSet::RuleSet(std::vector<Rule> rules) : rules_(std::move(rules)) {
  for (const Rule& r : rules_) {
    if (r.pattern.kind() != Pattern::Kind::Op)
      throw lang::InternalError("rule '" + r.name + "': the root of a pattern is an op");
    if (!r.replacement.var && !r.replacement.build)
      throw lang::InternalError("rule '" + r.name + "': the replacement names no bound node");
    for (const std::string& prim : r.pattern.prims()) by_prim_[prim].push_back(&r);
  }
}

Node* RuleSet::rewrite(Module& m, Node* n, std::string* fired) const {
  if (!n->is_apply() || !n->prim) return nullptr;
  auto it = by_prim_.find(n->prim->name);
  if (it == by_prim_.end()) return nullptr;
  for (const Rule* rule : it->second) {
    Match match;
    match.root = n;
    if (!Matcher::match(rule->pattern, n, match)) continue;
    Emit emit(m, *n);
    Node* r = rule->replacement.var ? match[*rule->replacement.var]
                                    : rule->replacement.build(match, emit);
    if (r && r != n && sem::same_type(r->type, n->type)) {
      if (fired) *fired = rule->name;
      return r;
    }
    // Declined: take back what the replacement built (the newest nodes of n's graph).
    std::vector<Node*>& list = n->graph->nodes;
    for (auto c = emit.created().rbegin(); c != emit.created().rend(); ++c)
      if (!list.empty() && list.back() == *c) list.pop_back();
  }
  return nullptr;
}

}  // namespace spora::passes::pattern
