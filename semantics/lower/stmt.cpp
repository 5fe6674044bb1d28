// Statements and control flow. Static conditions are decided at compile time; run-time ones
// become structured IR (semantics/ir/ir.h): the variables a branch or loop body reassigns
// are its results / loop-carried state, flattened into tuples of run-time leaves.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "semantics/interpreter.h"
#include "semantics/iterable.h"
#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

using lang::Stmt;
using lang::StmtKind;

namespace {

void pattern_names(const lang::Pattern& p, std::vector<std::string>& out) {
  if (p.is_tuple) {
    for (const auto& e : p.elems) pattern_names(e, out);
  } else if (p.name != "_") {
    out.push_back(p.name);
  }
}

// Names assigned (not declared) anywhere in a block, in first-assignment order; names a block
// declares with let/var are local to it and excluded.
void assigned_names(const lang::Block* b, std::vector<std::string>& out, std::set<std::string>& declared) {
  if (!b) return;
  for (const auto& s : b->stmts) {
    switch (s->kind) {
      case StmtKind::Let: {
        std::vector<std::string> ns;
        pattern_names(s->pattern, ns);
        declared.insert(ns.begin(), ns.end());
        break;
      }
      case StmtKind::Assign:
      case StmtKind::AugAssign: {
        std::vector<std::string> ns;
        pattern_names(s->pattern, ns);
        for (const auto& n : ns)
          if (!declared.count(n) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
        break;
      }
      case StmtKind::If: {
        std::set<std::string> d1 = declared, d2 = declared;
        assigned_names(s->then_block.get(), out, d1);
        assigned_names(s->else_block.get(), out, d2);
        break;
      }
      case StmtKind::For: {
        std::set<std::string> d = declared;
        std::vector<std::string> ns;
        pattern_names(s->pattern, ns);
        d.insert(ns.begin(), ns.end());
        assigned_names(s->body.get(), out, d);
        break;
      }
      case StmtKind::While: {
        std::set<std::string> d = declared;
        assigned_names(s->body.get(), out, d);
        break;
      }
      default: break;
    }
  }
}

bool contains_return(const lang::Block* b) {
  if (!b) return false;
  for (const auto& s : b->stmts) {
    if (s->kind == StmtKind::Return) return true;
    if (contains_return(s->then_block.get()) || contains_return(s->else_block.get()) || contains_return(s->body.get()))
      return true;
  }
  return false;
}

bool always_returns(const lang::Block* b) {
  if (!b || b->stmts.empty()) return false;
  const Stmt& last = *b->stmts.back();
  if (last.kind == StmtKind::Return) return true;
  if (last.kind == StmtKind::If) return always_returns(last.then_block.get()) && always_returns(last.else_block.get());
  return false;
}

// The loop index after i: i + step, or `stop` when that leaves int64 (as the step past the
// last index of range(0, 2**63 - 1, 2**62) does); the loop is over either way.
int64_t next_index(int64_t i, int64_t step, int64_t stop) {
  int64_t next = 0;
  return __builtin_add_overflow(i, step, &next) ? stop : next;
}

}  // namespace

void Lowerer::bind_pattern(const lang::Pattern& p, AV value, Env& env, bool declare, bool is_var,
                           lang::SourceRange value_range) {
  if (p.is_tuple) {
    std::vector<AV> parts;
    if (value->kind == AK::Error) {
      parts.assign(p.elems.size(), value);
    } else if (value->kind == AK::Tuple) {
      parts = value->elems;
    } else if (value->kind == AK::Node && value->type->kind == Type::Kind::Tuple) {
      for (size_t k = 0; k < value->type->elems.size(); ++k) {
        Attrs a;
        a.set("index", static_cast<int64_t>(k));
        parts.push_back(emit("tuple_get", {value->node}, a, value_range));
      }
    } else {
      fail(p.range, fmt::format("cannot unpack {} into {} names", describe(value), p.elems.size()));
    }
    if (parts.size() != p.elems.size())
      fail(p.range, fmt::format("cannot unpack a tuple of {} elements into {} names", parts.size(), p.elems.size()));
    for (size_t k = 0; k < parts.size(); ++k) bind_pattern(p.elems[k], parts[k], env, declare, is_var, value_range);
    return;
  }
  if (p.name == "_") return;
  if (declare) {
    Lowerer::declare(env, p.name, Binding{value, is_var, p.range});
    return;
  }
  Binding* b = env.lookup_mutable(p.name);
  if (!b) {
    if (lookup_global(env.module, p.name))
      fail(p.range, fmt::format("cannot assign to '{}': it is not a variable", p.name));
    fail(p.range, fmt::format("unknown variable '{}' (declare it first with `var {} = ...`)", p.name, p.name));
  }
  if (!b->is_var) {
    error(p.range, fmt::format("cannot assign to '{}': it was declared with let (use var to make it reassignable)", p.name));
    if (b->decl.valid()) diags_.note(b->decl, fmt::format("'{}' was declared here", p.name));
    throw Abort{};
  }
  b->value = value;
}

Flow Lowerer::lower_block(const std::vector<lang::StmtPtr>& stmts, size_t from, Env& env) {
  EagerBlock eager_block(*this, env);  // eager mode: collect what statements leave behind
  for (size_t i = from; i < stmts.size(); ++i) {
    const Stmt& s = *stmts[i];
    eager_block.statement_start();
    check_interrupt(loc(s.range));  // a loop of host arithmetic runs no op to stop at
    const int errors = diags_.error_count();
    try {
      switch (s.kind) {
        case StmtKind::Let: {
          AV v = eval(*s.value, env);
          if (s.type) v = check_annotation(v, *s.type, env, "the value", s.value->range);
          bind_pattern(s.pattern, v, env, true, s.is_var, s.value->range);
          break;
        }
        case StmtKind::Assign:
          bind_pattern(s.pattern, eval(*s.value, env), env, false, true, s.value->range);
          break;
        case StmtKind::AugAssign: {
          if (s.pattern.is_tuple) fail(s.pattern.range, "augmented assignment needs a single variable");
          const Binding* b = env.lookup(s.pattern.name);
          if (!b) fail(s.pattern.range, fmt::format("unknown variable '{}'", s.pattern.name));
          AV v = eval_binary(s.aug_op, b->value, eval(*s.value, env), s.range);
          bind_pattern(s.pattern, v, env, false, true, s.range);
          break;
        }
        case StmtKind::Expr: eval(*s.value, env); break;
        case StmtKind::Return: {
          Flow f;
          f.returned = true;
          f.value = s.value ? eval(*s.value, env) : make_none();
          f.range = s.value ? s.value->range : s.range;
          if (f.value->kind == AK::Error) throw Abort{};
          return f;
        }
        case StmtKind::If: {
          Flow f = lower_if(stmts, i, env);
          if (f.returned) return f;
          break;
        }
        case StmtKind::While: lower_while(s, env); break;
        case StmtKind::For: lower_for(s, env); break;
        case StmtKind::Assert: {
          AV c = eval(*s.cond, env);
          std::string msg;
          if (s.message) {
            AV m = eval(*s.message, env);
            if (m->kind != AK::Str) fail(s.message->range, "an assert message must be a string");
            msg = m->s;
          }
          if (is_static_number(c)) {
            if ((c->kind == AK::Float ? c->f : c->kind == AK::Int ? c->i : c->b) == 0)
              fail(s.cond->range, msg.empty() ? "assertion failed" : "assertion failed: " + msg);
            break;
          }
          if (c->kind != AK::Node || !c->type->is_tensor())
            fail(s.cond->range, fmt::format("an assert condition must be a boolean, not {}", describe(c)));
          Attrs a;
          a.set("message", msg);
          emit("assert", {c->node}, a, s.range);
          break;
        }
        case StmtKind::Pass: break;
      }
    } catch (const Abort&) {
      // Op by op (eager mode), the program stops at its first error, as graph mode runs
      // nothing after one.
      if (op_by_op()) throw;
      // Poison what the statement would have bound, and go on with the next statement.
      if (s.kind == StmtKind::Let) {
        std::vector<std::string> ns;
        pattern_names(s.pattern, ns);
        for (const auto& n : ns) env.declare(n, Binding{make_error(), true, s.pattern.range});
      } else if (s.kind == StmtKind::Assign || s.kind == StmtKind::AugAssign) {
        std::vector<std::string> ns;
        pattern_names(s.pattern, ns);
        for (const auto& n : ns)
          if (Binding* b = env.lookup_mutable(n)) b->value = make_error();
      } else if (s.kind == StmtKind::Return) {
        return Flow{true, make_error(), s.range};
      }
    }
    if (op_by_op() && diags_.error_count() > errors) throw Abort{};  // reported in a graph it called
    eager_block.statement_end();
  }
  return Flow{};
}

Flow Lowerer::lower_if(const std::vector<lang::StmtPtr>& stmts, size_t i, Env& env) {
  const Stmt& s = *stmts[i];
  AV c = known(eval(*s.cond, env));
  if (c->kind == AK::Error) throw Abort{};
  if (is_static_number(c)) {
    const bool taken = (c->kind == AK::Float ? c->f : c->kind == AK::Int ? c->i : c->b) != 0;
    const lang::Block* b = taken ? s.then_block.get() : s.else_block.get();
    if (!b) return Flow{};
    env.push();
    Flow f = lower_block(b->stmts, 0, env);
    env.pop();
    return f;
  }
  if (c->kind != AK::Node || !c->type->is_scalar() || c->type->dtype != DType::boolean)
    fail(s.cond->range, fmt::format("an if condition must be a bool scalar, not {}", describe(c)));

  const bool then_ret = always_returns(s.then_block.get());
  const bool else_ret = always_returns(s.else_block.get());
  if ((contains_return(s.then_block.get()) && !then_ret) || (contains_return(s.else_block.get()) && !else_ret))
    fail(s.range, "with a run-time condition, a return must be the last statement of its branch");
  const bool returns = then_ret || else_ret;
  const bool rest_in_branch = returns && !(then_ret && else_ret);

  // Variables the branches (and, for early returns, the rest of the block) reassign.
  std::vector<std::string> vars;
  if (!returns) {
    std::set<std::string> d1, d2;
    assigned_names(s.then_block.get(), vars, d1);
    assigned_names(s.else_block.get(), vars, d2);
    std::vector<std::string> outer;
    for (const auto& v : vars)
      if (env.lookup(v)) outer.push_back(v);
    vars = outer;
  }

  ir::Graph* outer = graph_;
  ir::Graph* branches[2];
  AV results[2];
  std::optional<RecursionPending> pending[2];
  for (int k = 0; k < 2; ++k) {
    branches[k] = module_.add_graph(outer->name + (k == 0 ? ".then" : ".else"), outer);
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    Env benv = env;
    benv.push();
    try {
      const lang::Block* b = k == 0 ? s.then_block.get() : s.else_block.get();
      Flow f = b ? lower_block(b->stmts, 0, benv) : Flow{};
      const bool this_returns = k == 0 ? then_ret : else_ret;
      if (returns && !this_returns && rest_in_branch) {
        // The rest of the enclosing block runs in this branch.
        f = lower_block(stmts, i + 1, benv);
      }
      if (returns) {
        results[k] = f.returned ? f.value : make_none();
      } else {
        std::vector<AV> vals;
        for (const auto& v : vars) vals.push_back(benv.lookup(v)->value);
        results[k] = make_tuple(vals);
      }
      if (contains_error(results[k])) throw Abort{};
    } catch (const RecursionPending& p) {
      pending[k] = p;
    }
  }
  // Inferring a recursive function's result type (lowerer.cpp): the branch without the
  // pending recursive call is the base case; its result stands for the if's.
  if (pending[0] && pending[1]) throw *pending[0];
  if (pending[0] || pending[1]) {
    const int k = pending[0] ? 1 : 0;
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    const AV base = materialise_numbers(results[k], s.range);
    // A returned number literal as it is: its type comes from its use (Spec::literal_base).
    if (returns && (results[k]->kind == AK::Float || results[k]->kind == AK::Int))
      return Flow{true, results[k], s.range};
    if (returns) return Flow{true, base, s.range};
    for (size_t v = 0; v < vars.size(); ++v) env.lookup_mutable(vars[v])->value = base->elems[v];
    return Flow{};
  }
  materialise_branches(results, branches, s.range);
  // Different functions in the branches become a function chosen at run time (closures.cpp).
  if (!merge_branches(results, branches, s.range)) {
    if (returns) {
      if (contains_function(results[0]) || contains_function(results[1]))
        fail_run_time_function(s.range, "this if", results);
      fail(s.range, fmt::format("the branches of this if return different types: {} and {}",
                                describe(results[0]), describe(results[1])));
    }
    for (size_t v = 0; v < vars.size(); ++v) {
      const AV both[2] = {results[0]->elems[v], results[1]->elems[v]};
      if (join_values(both[0], both[1], s.range)) continue;
      if (contains_function(both[0]) || contains_function(both[1]))
        fail_run_time_function(s.range, fmt::format("this if (variable '{}')", vars[v]), both);
      fail(s.range,
           fmt::format("variable '{}' has different types after the branches of this if: {} and {}",
                       vars[v], describe(both[0]), describe(both[1])));
    }
  }
  for (int k = 0; k < 2; ++k) {
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    branches[k]->output = pack(results[k], s.range);
  }
  ir::Node* n = module_.add_apply(graph_, Registry::instance().find("if"),
                                  {c->node, module_.add_graph_constant(graph_, branches[0], loc(s.range)),
                                   module_.add_graph_constant(graph_, branches[1], loc(s.range))},
                                  {}, branches[0]->output->type, loc(s.range));
  AV out = unpack(results[0], n, s.range);
  if (returns) {
    Flow f;
    f.returned = true;
    f.value = out;
    f.range = s.range;
    return f;
  }
  for (size_t v = 0; v < vars.size(); ++v) env.lookup_mutable(vars[v])->value = out->elems[v];
  return Flow{};
}

// Builds a loop body graph: params (prefix params, carried leaves), rebinding `vars` in a
// copy of env; `body` lowers the statements; returns the new carried values (checked stable).
namespace {
struct Carried {
  std::vector<std::string> vars;
  AV skeleton;                    // tuple of the carried values (materialised)
  std::vector<ir::Node*> leaves;  // their run-time leaves
};

// Thrown by body_result when the body gives a carried variable that holds a function another
// function: the loop is lowered again with the variable holding `joined` (a function chosen at
// run time, closures.cpp) from the start.
struct WidenCarried {
  std::string var;
  AV joined;
};

// A loop's carried variables: those of `names` bound before it, with their values materialised
// and flattened into run-time leaves.
Carried carried_from(Lowerer& L, const Env& env, const std::vector<std::string>& names,
                     lang::SourceRange r) {
  Carried c;
  std::vector<AV> init;
  for (const auto& n : names) {
    if (const Binding* b = env.lookup(n)) {
      c.vars.push_back(n);
      init.push_back(b->value);
    }
  }
  c.skeleton = L.materialise_numbers(make_tuple(init), r);
  L.flatten(c.skeleton, c.leaves, r, false);
  if (contains_error(c.skeleton)) throw Abort{};
  return c;
}

// The body's result: the carried variables' new values (their types must not change; a
// function may become one of the candidates of the function chosen at run time it started as).
ir::Node* body_result(Lowerer& L, const Carried& c, Env& benv, lang::SourceRange r) {
  std::vector<AV> after;
  for (const auto& v : c.vars) after.push_back(benv.lookup(v)->value);
  AV next = L.materialise_numbers(make_tuple(after), r);
  if (contains_error(next)) throw Abort{};
  for (size_t k = 0; k < c.vars.size(); ++k) {
    const AV& before = c.skeleton->elems[k];
    if (skeleton_key(after[k] = next->elems[k]) == skeleton_key(before)) continue;
    if (AV joined = L.join_values(before, next->elems[k], r); joined && contains_function(joined)) {
      if (skeleton_key(joined) != skeleton_key(before)) throw WidenCarried{c.vars[k], joined};
      after[k] = L.inject(next->elems[k], before, r);
      continue;
    }
    L.fail(r,
           fmt::format("variable '{}' changes type in the loop: {} before, {} after an iteration",
                       c.vars[k], describe(before), describe(next->elems[k])));
  }
  next = make_tuple(after);
  std::vector<ir::Node*> leaves;
  L.flatten(next, leaves, r, false);
  return L.emit_node("make_tuple", leaves, {}, r);
}

// Runs `lower`, which lowers a loop and records the graphs it makes in `made`, again after each
// widening of a carried variable to a function chosen at run time (body_result).
template <class F>
void with_widening(Lowerer& L, Env& env, lang::SourceRange r, F&& lower) {
  for (int widened = 0;; ++widened) {
    std::vector<ir::Graph*> made;
    const int errors = L.diags_.error_count();
    try {
      lower(made);
      return;
    } catch (const WidenCarried& w) {
      for (ir::Graph* g : made) L.module_.remove_graph(g);
      if (L.diags_.error_count() > errors) throw Abort{};  // reported once, not once per try
      if (widened == 8)
        L.fail(r,
               fmt::format("variable '{}' holds a new function after each iteration of this loop: "
                           "each iteration builds one from the one before, so after {} tries the "
                           "set of functions it may hold still grows; a loop can carry a "
                           "function chosen among a fixed set (assign it one of several "
                           "functions, not one that wraps its previous value)",
                           w.var, widened + 1));
      Binding* b = env.lookup_mutable(w.var);
      b->value = L.inject(b->value, w.joined, r);
    }
  }
}

// Emits the loop `prim(inputs..., carried leaves...)` and rebinds the carried variables to its
// results.
void emit_loop(Lowerer& L, const char* prim, std::vector<ir::Node*> inputs, const Carried& c, Env& env,
               lang::SourceRange r, Attrs attrs = {}) {
  std::vector<TypeP> ts;
  for (auto* l : c.leaves) {
    inputs.push_back(l);
    ts.push_back(l->type);
  }
  ir::Node* loop =
      L.module_.add_apply(L.graph_, Registry::instance().find(prim), inputs, std::move(attrs), Type::tuple(ts), L.loc(r));
  std::vector<ir::Node*> outs;
  for (size_t k = 0; k < ts.size(); ++k) {
    Attrs a;
    a.set("index", static_cast<int64_t>(k));
    outs.push_back(L.emit_node("tuple_get", {loop}, a, r));
  }
  size_t pos = 0;
  AV vals = L.unflatten(c.skeleton, outs, pos);
  for (size_t k = 0; k < c.vars.size(); ++k) env.lookup_mutable(c.vars[k])->value = vals->elems[k];
}
}  // namespace

void Lowerer::lower_while(const Stmt& s, Env& env) {
  if (op_by_op()) {
    // Op by op: test the condition on its value, run the body, repeat.
    for (;;) {
      AV cv = known(eval(*s.cond, env));
      if (cv->kind == AK::Error) throw Abort{};
      if (!is_static_number(cv))
        fail(s.cond->range, fmt::format("a while condition must be a bool scalar, not {}", describe(cv)));
      if ((cv->kind == AK::Float ? cv->f : cv->kind == AK::Int ? cv->i : cv->b) == 0) break;
      env.push();
      Flow f = lower_block(s.body->stmts, 0, env);
      env.pop();
      if (f.returned) fail(f.range, "return inside a while loop is not supported; use a variable and the loop condition");
    }
    return;
  }
  if (contains_return(s.body.get())) fail(s.range, "return inside a while loop is not supported; use a variable and the loop condition");
  with_widening(*this, env, s.range, [&](std::vector<ir::Graph*>& made) {
    std::set<std::string> declared;
    std::vector<std::string> names;
    assigned_names(s.body.get(), names, declared);
    Carried c = carried_from(*this, env, names, s.range);

    ir::Graph* outer = graph_;
    auto make_graph = [&](const std::string& suffix, Env& genv) {
      ir::Graph* g = module_.add_graph(outer->name + suffix, outer);
      made.push_back(g);
      std::vector<ir::Node*> params;
      for (size_t k = 0; k < c.leaves.size(); ++k)
        params.push_back(module_.add_param(g, "", c.leaves[k]->type, loc(s.range)));
      size_t pos = 0;
      graph_ = g;
      AV vals = unflatten(c.skeleton, params, pos);
      for (size_t k = 0; k < c.vars.size(); ++k)
        genv.lookup_mutable(c.vars[k])->value = vals->elems[k];
      return g;
    };
    // cond graph
    Env cenv = env;
    ir::Graph* cond_g = nullptr;
    {
      const Restore<ir::Graph*> restore(graph_);
      cond_g = make_graph(".cond", cenv);
      AV cv = eval(*s.cond, cenv);
      if (cv->kind == AK::Error) throw Abort{};
      if (is_static_number(cv))
        cv = make_node(to_node(make_bool((cv->kind == AK::Float ? cv->f
                                          : cv->kind == AK::Int ? cv->i
                                                                : cv->b) != 0),
                               s.cond->range));
      if (cv->kind != AK::Node || !cv->type->is_scalar() || cv->type->dtype != DType::boolean)
        fail(s.cond->range,
             fmt::format("a while condition must be a bool scalar, not {}", describe(cv)));
      cond_g->output = cv->node;
    }
    // body graph
    Env benv = env;
    ir::Graph* body_g = nullptr;
    {
      const Restore<ir::Graph*> restore(graph_);
      body_g = make_graph(".body", benv);
      benv.push();
      lower_block(s.body->stmts, 0, benv);
      body_g->output = body_result(*this, c, benv, s.range);
    }
    emit_loop(*this, "while",
              {module_.add_graph_constant(graph_, cond_g, loc(s.range)),
               module_.add_graph_constant(graph_, body_g, loc(s.range))},
              c, env, s.range);
  });
}

// The bounds of `for i in range(...)`: start, stop and step as nodes of one integer dtype
// (i32, or i64 when an argument is i64 or a bound needs 64 bits).
Lowerer::RangeBounds Lowerer::range_bounds(const lang::Expr& it, Env& env) {
  if (!it.kwargs.empty()) fail(it.kwargs[0].name_range, "range takes no keyword arguments");
  std::vector<AV> a;
  for (const auto& x : it.args) a.push_back(eval(*x, env));
  if (a.empty() || a.size() > 3)
    fail(it.range, fmt::format("range takes 1 to 3 arguments but {} were given", a.size()));
  DType dt = DType::i32;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k]->kind == AK::Error) throw Abort{};
    if (a[k]->kind == AK::Node && a[k]->type->is_scalar() && is_integer(a[k]->type->dtype)) {
      if (a[k]->type->dtype == DType::i64) dt = DType::i64;
    } else if (a[k]->kind == AK::Int) {
      if (a[k]->i != static_cast<int32_t>(a[k]->i)) dt = DType::i64;  // a bound needs 64 bits
    } else {
      fail(it.args[k]->range,
           fmt::format("range arguments must be integers, not {}", describe(a[k])));
    }
  }
  if (a.size() == 3 && a[2]->kind == AK::Int && a[2]->i == 0)
    fail(it.args[2]->range, "range step cannot be zero");
  AV zero = make_int(0), one = make_int(1);
  AV av_start = a.size() == 1 ? zero : a[0];
  AV av_stop = a.size() == 1 ? a[0] : a[1];
  AV av_step = a.size() == 3 ? a[2] : one;
  auto as_dt = [&](const AV& v, lang::SourceRange r) {
    ir::Node* n = to_node(v, r, dt);
    if (n->type->dtype != dt) {
      Attrs ca;
      ca.set("dtype", dt);
      n = emit_node("cast", {n}, ca, r);
    }
    return n;
  };
  return {as_dt(av_start, it.range), as_dt(av_stop, it.range), as_dt(av_step, it.range)};
}

void Lowerer::lower_for(const Stmt& s, Env& env) {
  if (contains_return(s.body.get())) fail(s.range, "return inside a for loop is not supported; use a variable");
  const lang::Expr& it = *s.value;
  // Iterating a tuple (static or run-time) unrolls the loop.
  bool is_range = it.kind == lang::ExprKind::Call && it.callee->kind == lang::ExprKind::Name &&
                  it.callee->name == "range" && !env.lookup("range");
  AV iterable;
  if (!is_range) {
    iterable = eval(it, env);
    if (iterable->kind == AK::Error) throw Abort{};
    if (iterable->kind == AK::Tuple || (iterable->kind == AK::Node && iterable->type->kind == Type::Kind::Tuple)) {
      const size_t n = iterable->kind == AK::Tuple ? iterable->elems.size() : iterable->type->elems.size();
      for (size_t k = 0; k < n; ++k) {
        AV elem;
        if (iterable->kind == AK::Tuple) {
          elem = iterable->elems[k];
        } else {
          Attrs a;
          a.set("index", static_cast<int64_t>(k));
          elem = emit("tuple_get", {iterable->node}, a, it.range);
        }
        env.push();
        bind_pattern(s.pattern, elem, env, true, false, it.range);
        lower_block(s.body->stmts, 0, env);
        env.pop();
      }
      return;
    }
  }
  // A run-time loop: for_range (range(...) or the first axis of a tensor) or for_each.
  ir::Node *start = nullptr, *stop = nullptr, *step = nullptr;
  const bool over_tensor = !is_range && iterable->kind == AK::Node && iterable->type->is_tensor();
  const bool over_iter = !is_range && iterable->kind == AK::Node && iterable->type->kind == Type::Kind::Iterator;
  if (is_range) {
    const RangeBounds bounds = range_bounds(it, env);
    start = bounds.start;
    stop = bounds.stop;
    step = bounds.step;
  } else if (over_tensor) {
    if (iterable->type->rank() == 0) fail(it.range, fmt::format("cannot iterate over a scalar {}", iterable->type->str()));
    start = to_node(make_int(0), it.range, DType::i64);
    stop = to_node(make_int(iterable->type->shape[0]), it.range, DType::i64);
    step = to_node(make_int(1), it.range, DType::i64);
  } else if (!over_iter) {
    fail(it.range, fmt::format("cannot iterate over {}", describe(iterable)));
  }

  if (op_by_op() && !over_iter) {
    // Op by op: the bounds are known, the loop variable is a compile-time integer.
    auto value_of = [&](ir::Node* n) -> int64_t {
      AV k = known(make_node(n));
      if (k->kind != AK::Int) fail(it.range, "the bounds of this loop are not known");
      return k->i;
    };
    const int64_t b = value_of(start), e = value_of(stop), st = value_of(step);
    for (int64_t i = b; st > 0 ? i < e : i > e; i = next_index(i, st, e)) {
      AV elem = make_int(i);
      if (over_tensor) {
        std::vector<lang::IndexItem> none;
        Attrs a;
        a.set("axis", int64_t{0});
        elem = emit("gather", {iterable->node, to_node(make_int(i), it.range, DType::i64)}, a, it.range);
      }
      env.push();
      bind_pattern(s.pattern, elem, env, true, false, it.range);
      lower_block(s.body->stmts, 0, env);
      env.pop();
    }
    return;
  }
  if (op_by_op() && over_iter && lower_for_eager_iter(s, iterable, env)) return;
  std::set<std::string> declared;
  {
    std::vector<std::string> loop_names;
    pattern_names(s.pattern, loop_names);
    declared.insert(loop_names.begin(), loop_names.end());
  }
  std::vector<std::string> names;
  assigned_names(s.body.get(), names, declared);
  // An iterator whose elements have several types (a dataset's last partial batch) is walked
  // in parts (semantics/iterable.h): one for_each per element type, the body lowered once for
  // each, every part continuing with the state the one before left.
  const size_t n_parts = over_iter ? std::max<size_t>(1, iterable->type->elems.size()) : 1;
  for (size_t part = 0; part < n_parts; ++part) {
    with_widening(*this, env, s.range, [&](std::vector<ir::Graph*>& made) {
      Carried c = carried_from(*this, env, names, s.range);

      ir::Graph* body_g = module_.add_graph(graph_->name + ".body", graph_);
      made.push_back(body_g);
      TypeP elem_type = over_iter ? iterable->type->elems.at(part) : start->type;
      ir::Node* elem_param = module_.add_param(body_g, s.pattern.is_tuple ? "" : s.pattern.name,
                                               elem_type, loc(s.pattern.range));
      std::vector<ir::Node*> params;
      for (auto* l : c.leaves)
        params.push_back(module_.add_param(body_g, "", l->type, loc(s.range)));
      Env benv = env;
      try {
        const Restore<ir::Graph*> in_body(graph_, body_g);
        size_t pos = 0;
        AV vals = unflatten(c.skeleton, params, pos);
        for (size_t k = 0; k < c.vars.size(); ++k)
          benv.lookup_mutable(c.vars[k])->value = vals->elems[k];
        benv.push();
        AV elem = make_node(elem_param);
        if (over_tensor) {
          Attrs a;
          a.set("axis", int64_t{0});
          elem = emit("gather", {iterable->node, elem_param}, a, it.range);
        }
        bind_pattern(s.pattern, elem, benv, true, false, it.range);
        lower_block(s.body->stmts, 0, benv);
        body_g->output = body_result(*this, c, benv, s.range);
      } catch (const Abort&) {
        if (part > 0)
          diags_.note(
              it.range,
              fmt::format("the last element of this iterator has another type than the others: {} "
                          "(a partial last batch; drop_last=true leaves it out)",
                          elem_type->str()));
        throw;
      }
      std::vector<ir::Node*> inputs;
      if (over_iter) {
        inputs = {iterable->node};
      } else {
        inputs = {start, stop, step};
      }
      inputs.push_back(module_.add_graph_constant(graph_, body_g, loc(s.range)));
      Attrs attrs;
      if (n_parts > 1) attrs.set("part", static_cast<int64_t>(part));
      emit_loop(*this, over_iter ? "for_each" : "for_range", inputs, c, env, s.range,
                std::move(attrs));
    });
  }
}

// Eager mode over an iterator: pull the elements one at a time and lower (so run) the body for
// each, like the unrolled range loop; each element becomes constants of its own type, so a
// partial last batch needs no second part. False when the iterator has no value yet (it was
// not made in the eagerly run graph): the caller then emits a for_each.
bool Lowerer::lower_for_eager_iter(const Stmt& s, const AV& iterable, Env& env) {
  const Value* v = eager_value ? eager_value(iterable->node) : nullptr;
  auto* iter = v && v->kind == Value::Kind::Opaque ? dynamic_cast<Iterable*>(v->opaque.get()) : nullptr;
  if (!iter) return false;
  const lang::Expr& it = *s.value;
  // Keep the iterator alive while the body runs, whatever the executor does with its values.
  std::shared_ptr<Opaque> keep = v->opaque;
  auto as_av = [&](auto&& self, const Value& e) -> AV {
    if (e.kind == Value::Kind::Tuple) {
      std::vector<AV> parts;
      for (const Value& x : e.items()) parts.push_back(self(self, x));
      return make_tuple(std::move(parts));
    }
    return make_node(constant(e, it.range));
  };
  auto pull = [&](Value& e) {
    try {
      return iter->next(e);
    } catch (const RuntimeError&) {
      throw;
    } catch (const lang::UserError& err) {
      throw RuntimeError(err.what(), loc(it.range));
    }
  };
  try {
    iter->reset();
  } catch (const lang::UserError& err) {
    throw RuntimeError(err.what(), loc(it.range));
  }
  Value e;
  while (pull(e)) {
    AV elem = as_av(as_av, e);
    e = Value();
    const int errors = diags_.error_count();
    env.push();
    bind_pattern(s.pattern, elem, env, true, false, it.range);
    lower_block(s.body->stmts, 0, env);
    env.pop();
    if (diags_.error_count() > errors) throw Abort{};  // reported once, not once per element
  }
  return true;
}

}  // namespace spora::sem::lower
