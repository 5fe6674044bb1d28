// A small term-rewriting language over IR nodes: algebraic simplification is a table of
// `pattern -> replacement` rules (tinygrad's PatternMatcher, Halide's
// rewrite rules), not hand-written matchers. simplify.cpp holds the table.
//
//   {"x * 1 -> x",           op("mul", X, One), X},
//   {"--x -> x",             op("neg", op("neg", X)), X},
//   {"x * 0 -> 0",           op("mul", X, Zero.as(A)), zeros_of_root},
//
// Patterns
//   X, Y                any node, bound to that name; a second X must be the same node
//   Zero, One           a tensor every element of which is 0 (1): a constant (0.0 and -0.0 are
//                       both zero), zeros / ones / full(value=...), or a broadcast_to, reshape
//                       (and the other reshapes), transpose, permute or cast of one
//   op(name, args...)   an apply of that primitive, with exactly those inputs;
//   op({names}, args...)  of any of those primitives
//   p.as(A)             also bind the node p matched to A (A, B name matched applies)
// Replacements: a bound name or X / Y (the node is reused), or a function building the replacement
// with an Emit (new nodes go right before the rewritten one, at its location, typed by their
// shape rules); it returns null to decline (a guard that failed).
//
// Applying (rewrite): the rules of the node's primitive are tried in table order; the first
// whose pattern matches and whose replacement has exactly the node's type wins. A replacement
// of another type (x * ones where ones broadcasts x to a larger shape) is never used, so no
// rule has to restate shape conditions. Nodes a failed replacement built are taken out again.
#pragma once

#include <array>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::passes::pattern {

using ir::Graph;
using ir::Module;
using ir::Node;

enum class Var : uint8_t { X, Y, A, B };
constexpr size_t kVars = 4;

class Pattern {
 public:
  enum class Kind { Any, Zero, One, Op };

  static Pattern any(Var v);
  static Pattern filled(double value);  // Zero, One
  static Pattern op(std::vector<std::string> prims, std::vector<Pattern> args);

  Pattern as(Var v) const;

  Kind kind() const { return kind_; }
  std::optional<Var> bound() const { return bind_; }
  const std::vector<std::string>& prims() const { return prims_; }

 private:
  friend class Matcher;
  Kind kind_ = Kind::Any;
  double value_ = 0;                // Zero, One
  std::vector<std::string> prims_;  // Op
  std::vector<Pattern> args_;       // Op
  std::optional<Var> bind_;
};

inline const Pattern X = Pattern::any(Var::X);
inline const Pattern Y = Pattern::any(Var::Y);
inline const Pattern Zero = Pattern::filled(0.0);
inline const Pattern One = Pattern::filled(1.0);

template <class... Args>
Pattern op(std::string prim, Args... args) {
  return Pattern::op({std::move(prim)}, {std::move(args)...});
}
template <class... Args>
Pattern op(std::initializer_list<std::string> prims, Args... args) {
  return Pattern::op(std::vector<std::string>(prims), {std::move(args)...});
}

// Is every element of n's value `value` (see Zero / One above)?
bool is_filled(const Node* n, double value);

// What a pattern bound.
struct Match {
  Node* root = nullptr;
  std::array<Node*, kVars> vars{};
  Node* operator[](Var v) const { return vars[static_cast<size_t>(v)]; }
};

// Builds replacement nodes right before the node being rewritten (appended to its graph's
// list, which the caller is rebuilding in order).
class Emit {
 public:
  Emit(Module& m, const Node& at) : m_(m), at_(at) {}
  // An apply typed by its shape rule; null when the rule rejects the inputs.
  Node* op(const std::string& prim, std::vector<Node*> inputs, sem::Attrs attrs = {});
  // zeros(shape, dtype) of a tensor type with static dims; null otherwise.
  Node* zeros(const sem::TypeP& type);
  const std::vector<Node*>& created() const { return created_; }

 private:
  Module& m_;
  const Node& at_;
  std::vector<Node*> created_;
};

using Build = std::function<Node*(const Match&, Emit&)>;

struct Replacement {
  Replacement(Var v) : var(v) {}                     // NOLINT: implicit, so rules
  Replacement(const Pattern& p) : var(p.bound()) {}  // NOLINT: read `..., X}`
  template <class F, class = std::enable_if_t<std::is_invocable_r_v<Node*, F, const Match&, Emit&>>>
  Replacement(F f) : build(std::move(f)) {}  // NOLINT: implicit, a lambda or function
  std::optional<Var> var;
  Build build;
};

struct Rule {
  std::string name;  // "x * 1 -> x": for tests and SPORA_DEBUG_PASSES
  Pattern pattern;
  Replacement replacement;
};

// A rule table indexed by the primitive of each rule's root.
class RuleSet {
 public:
  explicit RuleSet(std::vector<Rule> rules);
  RuleSet(const RuleSet&) = delete;  // the index points into rules_
  RuleSet& operator=(const RuleSet&) = delete;
  // The replacement of n by the first rule that applies (see above), or null. `fired`, when
  // given, receives the rule's name.
  Node* rewrite(Module& m, Node* n, std::string* fired = nullptr) const;
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
  std::unordered_map<std::string, std::vector<const Rule*>> by_prim_;
};

}  // namespace spora::passes::pattern
