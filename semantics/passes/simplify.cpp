// Algebraic simplification: the rule table (what the groups mean and which rules are not
// exact: simplify.h; the rule language: pattern.h).
#include "semantics/passes/simplify.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>

#include "semantics/passes/pattern.h"
#include "semantics/passes/util.h"
#include "semantics/shape_rules.h"

namespace spora::passes {

namespace {

using namespace pattern;  // NOLINT: the table is written in the rule language

// ---- replacements that build ----------------------------------------------------------------

// The zero operand bound to A when it has the result's type, else zeros of that type.
Node* zero_result(const Match& m, Emit& e) {
  if (m[Var::A] && sem::same_type(m[Var::A]->type, m.root->type)) return m[Var::A];
  return e.zeros(m.root->type);
}

Node* negate_x(const Match& m, Emit& e) { return e.op("neg", {m[Var::X]}); }
Node* x_minus_y(const Match& m, Emit& e) { return e.op("sub", {m[Var::X], m[Var::Y]}); }
Node* x_plus_y(const Match& m, Emit& e) { return e.op("add", {m[Var::X], m[Var::Y]}); }

// The permutation a transpose/permute node applies: result axis i is input axis perm[i].
std::optional<std::vector<int64_t>> permutation(const Node& n) {
  const sem::TypeP& t = n.inputs[0]->type;
  if (!t || !t->is_tensor()) return std::nullopt;
  return sem::permutation(n.attrs, t->rank());
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// transpose(transpose(x)): x when the two cancel, else one permute. The inner node is A.
Node* composed_permutation(const Match& m, Emit& e) {
  std::optional<std::vector<int64_t>> outer = permutation(*m.root), inner = permutation(*m[Var::A]);
  if (!outer || !inner || outer->size() != inner->size()) return nullptr;
  std::vector<int64_t> both(outer->size());
  for (size_t j = 0; j < both.size(); ++j) both[j] = (*inner)[static_cast<size_t>((*outer)[j])];
  if (is_identity(both)) return m[Var::X];
  sem::Attrs attrs;
  attrs.set("axes", both);
  return e.op("permute", {m[Var::X]}, std::move(attrs));
}

Node* if_identity_permutation(const Match& m, Emit&) {
  std::optional<std::vector<int64_t>> perm = permutation(*m.root);
  return perm && is_identity(*perm) ? m[Var::X] : nullptr;
}

// sum(x) where every element of x is 1 (the cotangent seed of sum(f(x)), summed for a bias's
// gradient): each result element is the number of elements it adds, one full(...) of it. Exact
// while that count is an integer the dtype holds: the sum adds ones in double and rounds once.
Node* count_of_ones(const Match& m, Emit& e) {
  const sem::TypeP &in = m[Var::A]->type, &out = m.root->type;
  if (!in || !out || !in->is_tensor() || !out->is_tensor() || in->dtype != out->dtype)
    return nullptr;
  if (in->numel() < 0 || out->numel() <= 0 || in->numel() % out->numel() != 0) return nullptr;
  const int64_t count = in->numel() / out->numel();
  int64_t exact = 0;  // the largest count the dtype holds exactly
  switch (out->dtype) {
    case DType::f64:
    case DType::i64:
      exact = std::numeric_limits<int64_t>::max();
      break;
    case DType::f32:
      exact = int64_t{1} << 24;
      break;
    case DType::f16:
      exact = 2048;
      break;
    case DType::bf16:
      exact = 256;
      break;
    case DType::i32:
      exact = std::numeric_limits<int32_t>::max();
      break;
    default:
      return nullptr;
  }
  if (count > exact) return nullptr;
  sem::Attrs attrs;
  attrs.set("shape", out->shape);
  attrs.set("value", static_cast<double>(count));
  attrs.set("dtype", out->dtype);
  return e.op("full", {}, std::move(attrs));
}

// reshape(reshape(x)): one reshape of x to the outer shape.
Node* one_reshape(const Match& m, Emit& e) { return e.op("reshape", {m[Var::X]}, m.root->attrs); }

// ---- the table ------------------------------------------------------------------------------

const std::initializer_list<std::string> kReshapes = {"reshape", "flatten", "squeeze", "unsqueeze",
                                                      "expand_dims"};
const std::initializer_list<std::string> kTransposes = {"transpose", "permute"};

const RuleSet& rules() {
  static const RuleSet table({
      // neutral elements
      {"x * 1 -> x", op("mul", X, One), X},
      {"1 * x -> x", op("mul", One, X), X},
      {"x / 1 -> x", op("div", X, One), X},
      {"x ** 1 -> x", op("pow", X, One), X},
      {"x + 0 -> x", op("add", X, Zero), X},
      {"0 + x -> x", op("add", Zero, X), X},
      {"x - 0 -> x", op("sub", X, Zero), X},
      {"0 - x -> -x", op("sub", Zero, X), negate_x},
      // negation
      {"--x -> x", op("neg", op("neg", X)), X},
      {"x + -y -> x - y", op("add", X, op("neg", Y)), x_minus_y},
      {"x - -y -> x + y", op("sub", X, op("neg", Y)), x_plus_y},
      // zeros
      {"x * 0 -> 0", op("mul", X, Zero.as(Var::A)), zero_result},
      {"0 * x -> 0", op("mul", Zero.as(Var::A), X), zero_result},
      {"matmul(x, 0) -> 0", op("matmul", X, Zero.as(Var::A)), zero_result},
      {"matmul(0, x) -> 0", op("matmul", Zero.as(Var::A), X), zero_result},
      {"f(0) -> 0",
       op({"neg", "abs", "relu", "square", "sum", "transpose", "permute", "reshape", "flatten",
           "squeeze", "unsqueeze", "expand_dims", "broadcast_to", "cast", "slice"},
          Zero.as(Var::A)),
       zero_result},
      // ones
      {"sum(1) -> count", op("sum", One.as(Var::A)), count_of_ones},
      // same type: the op changes nothing
      {"reshape(x) -> x", op(kReshapes, X), X},
      {"broadcast_to(x) -> x", op("broadcast_to", X), X},
      {"cast(x) -> x", op("cast", X), X},
      {"reduce(x) -> x", op({"sum", "mean", "prod", "max", "min"}, X), X},
      {"identity(x) -> x", op("identity", X), X},
      // shapes
      {"transpose(x) -> x", op(kTransposes, X), if_identity_permutation},
      {"transpose(transpose(x))", op(kTransposes, op(kTransposes, X).as(Var::A)),
       composed_permutation},
      {"reshape(reshape(x)) -> reshape(x)", op("reshape", op(kReshapes, X)), one_reshape},
  });
  return table;
}

bool debug_rules() {
  static const bool on = [] {
    const char* v = std::getenv("SPORA_DEBUG_PASSES");
    return v && std::atoi(v) >= 2;
  }();
  return on;
}

// What n becomes: the end of a chain of at most 8 rewrites (n itself when none applies). The
// chain goes on only through nodes it created (right before n); any other replacement is an
// earlier node, simplified already.
Node* simplify(Module& m, Node* n) {
  const std::vector<Node*>& list = n->graph->nodes;
  const size_t first_new = list.size();
  Node* current = n;
  for (int i = 0; i < 8; ++i) {
    std::string fired;
    Node* next = rules().rewrite(m, current, &fired);
    if (!next) break;
    if (debug_rules()) std::cerr << "simplify: " << fired << " in @" << n->graph->name << "\n";
    current = next;
    if (std::find(list.begin() + static_cast<long>(first_new), list.end(), next) == list.end())
      break;
  }
  return current;
}

}  // namespace

void simplify_algebra(Module& m) {
  Substitution replaced;
  for (Graph* g : parents_first(m)) {
    std::vector<Node*> old = std::move(g->nodes);
    g->nodes.clear();
    for (Node* n : old) {
      replaced.rewrite_inputs(*n);
      Node* r = simplify(m, n);  // may append new nodes to g (before n)
      if (r != n)
        replaced.replace(n, r);
      else
        g->nodes.push_back(n);
    }
    g->output = replaced(g->output);
  }
  replaced.apply(m);
}

}  // namespace spora::passes
