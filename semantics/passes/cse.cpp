// Common subexpression elimination (algorithm in cse.h).
#include "semantics/passes/cse.h"

#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

void mix(size_t& seed, size_t h) { seed ^= h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

size_t hash_type(const sem::TypeP& t) {
  size_t h = 0;
  if (!t) return h;
  mix(h, static_cast<size_t>(t->kind));
  mix(h, static_cast<size_t>(t->dtype));
  for (int64_t d : t->shape) mix(h, std::hash<int64_t>{}(d));
  for (const sem::TypeP& e : t->elems) mix(h, hash_type(e));
  for (const std::string& n : t->names) mix(h, std::hash<std::string>{}(n));
  mix(h, std::hash<std::string>{}(t->name));
  if (t->result) mix(h, hash_type(t->result));
  return h;
}

size_t hash_value(const sem::Value& v) {
  size_t h = static_cast<size_t>(v.kind);
  switch (v.kind) {
    case sem::Value::Kind::Tensor: {
      const sem::Tensor t = sem::host_tensor(v.tensor);  // a device constant: its host copy
      std::string_view bytes(static_cast<const char*>(t.raw()), t.raw() ? t.nbytes() : 0);
      mix(h, std::hash<std::string_view>{}(bytes));
      break;
    }
    case sem::Value::Kind::String:
      mix(h, std::hash<std::string>{}(v.str));
      break;
    case sem::Value::Kind::Tuple:
    case sem::Value::Kind::Record:
      for (const sem::Value& e : v.items()) mix(h, hash_value(e));
      break;
    default:
      break;
  }
  return h;
}

// Identical bits (tensors), equal text (strings), element-wise (tuples and records).
bool same_value(const sem::Value& a, const sem::Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case sem::Value::Kind::Tensor: {
      if (a.tensor.dtype() != b.tensor.dtype() || a.tensor.shape() != b.tensor.shape())
        return false;
      const sem::Tensor x = sem::host_tensor(a.tensor), y = sem::host_tensor(b.tensor);
      return x.nbytes() == 0 || std::memcmp(x.raw(), y.raw(), x.nbytes()) == 0;
    }
    case sem::Value::Kind::String:
      return a.str == b.str;
    case sem::Value::Kind::Record:
      if (!sem::same_type(a.record_type, b.record_type)) return false;
      [[fallthrough]];
    case sem::Value::Kind::Tuple: {
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!same_value(a.items()[i], b.items()[i])) return false;
      return true;
    }
    default:
      return false;  // None, Opaque: no identity to compare
  }
}

size_t hash_node(const Node& n) {
  size_t h = static_cast<size_t>(n.kind);
  mix(h, std::hash<const void*>{}(n.prim));
  mix(h, std::hash<const void*>{}(n.callee));
  mix(h, std::hash<const void*>{}(n.graph_value));
  for (const Node* in : n.inputs) mix(h, std::hash<const void*>{}(in));
  for (const auto& [name, a] : n.attrs.items()) {
    mix(h, std::hash<std::string>{}(name));
    mix(h, std::hash<std::string>{}(sem::attr_str(a)));
  }
  mix(h, hash_type(n.type));
  if (n.is_constant() && !n.graph_value) mix(h, hash_value(n.value));
  return h;
}

bool equivalent(const Node& a, const Node& b) {
  if (a.kind != b.kind || a.prim != b.prim || a.callee != b.callee ||
      a.graph_value != b.graph_value || a.inputs != b.inputs || !(a.attrs == b.attrs) ||
      !sem::same_type(a.type, b.type))
    return false;
  return !a.is_constant() || a.graph_value || same_value(a.value, b.value);
}

class ValueNumbering {
 public:
  explicit ValueNumbering(Module& m) : effects_(m) {}

  // Steps 1 and 2.
  void walk(Graph* g) {
    walked_.insert(g);
    std::vector<size_t> added;
    for (Node* n : g->nodes) {
      replaced_.rewrite_inputs(*n);
      for (Graph* h : {n->graph_value, n->callee})
        if (h && h->parent && !walked_.count(h)) walk(h);
      if (!mergeable(*n)) continue;
      const size_t key = hash_node(*n);
      if (Node* earlier = find(key, *n)) {
        replaced_.replace(n, earlier);
        continue;
      }
      table_[key].push_back(n);
      added.push_back(key);
    }
    g->output = replaced_(g->output);
    for (auto it = added.rbegin(); it != added.rend(); ++it) table_[*it].pop_back();
  }

  const Substitution& replaced() const { return replaced_; }

 private:
  Effects effects_;
  Substitution replaced_;
  std::unordered_map<size_t, std::vector<Node*>> table_;
  std::unordered_set<const Graph*> walked_;

  bool mergeable(const Node& n) const {
    if (n.is_param()) return false;
    if (n.is_constant())
      return n.graph_value || n.value.kind == sem::Value::Kind::Tensor ||
             n.value.kind == sem::Value::Kind::String || n.value.kind == sem::Value::Kind::Tuple ||
             n.value.kind == sem::Value::Kind::Record;
    return !effects_.node(&n) && !touches_state(n);
  }

  // The newest equivalent node whose graph encloses n's.
  Node* find(size_t key, const Node& n) const {
    auto it = table_.find(key);
    if (it == table_.end()) return nullptr;
    for (auto c = it->second.rbegin(); c != it->second.rend(); ++c)
      if (ir::is_within(n.graph, (*c)->graph) && equivalent(**c, n)) return *c;
    return nullptr;
  }
};

}  // namespace

void eliminate_common_subexpressions(Module& m) {
  ValueNumbering numbering(m);
  for (const auto& g : m.graphs())
    if (!g->parent) numbering.walk(g.get());
  numbering.replaced().apply(m);  // step 3
}

}  // namespace spora::passes
