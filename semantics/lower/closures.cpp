// Function values chosen at run time, by defunctionalization (Reynolds, "Definitional
// interpreters for higher-order programming languages", 1972): where a conditional with a
// run-time condition gives different functions in its branches, the value becomes a union
// (AK::Union) of the candidate functions, carried at run time as a tag (an i32 naming the
// candidate) and each candidate's captured run-time values. A call of a union is a switch over
// the calls of its candidates: nested `if` nodes on `tag == k`, whose branch graphs are named
// after the candidate (`main.case_lambda_3_16`). Myia and MindSpore's graph mode represent
// such values as a switch over function graphs likewise.
//
// Everything is ordinary data flow: the tag and the captures are outputs of the `if` that
// chose, and inputs of the `if` that calls, so reverse and forward mode differentiate through
// them, captured values included.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

namespace {

// The variables of its environment a lambda refers to, sorted (the order of its captures); its
// parameters shadow the environment (unless a default value, evaluated there, may read it).
std::vector<std::string> captured_names(const AVal& clo) {
  std::set<std::string> names;
  collect_names(clo.lambda, names);
  bool defaults = false;
  for (const auto& p : clo.lambda->params) defaults = defaults || p.default_value;
  if (!defaults)
    for (const auto& p : clo.lambda->params) names.erase(p.name);
  std::vector<std::string> out;
  for (const auto& n : names)
    if (clo.env && clo.env->lookup(n)) out.push_back(n);
  return out;
}

// A function value's identity as a candidate: what it is, with its captured run-time values by
// type and its static ones by value. Two values of one key differ only in their captures.
std::string capture_key(const AV& v) {
  switch (v->kind) {
    case AK::Node:
      return v->type->str();
    case AK::Tuple:
    case AK::Record: {
      std::string s = v->record_name + "(";
      for (const auto& [n, st] : v->statics) s += n + "=" + skeleton_key(st) + ",";
      for (size_t k = 0; k < v->elems.size(); ++k)
        s += (k < v->names.size() ? v->names[k] + ":" : "") + capture_key(v->elems[k]) + ",";
      return s + ")";
    }
    case AK::Closure: {
      std::string s = fmt::format("lambda@{}{{", static_cast<const void*>(v->lambda));
      for (const auto& n : captured_names(*v))
        s += n + ":" + capture_key(v->env->lookup(n)->value) + ",";
      return s + "}";
    }
    case AK::Def:
      return fmt::format("def:{}@{}", v->def->name, static_cast<const void*>(v->def)) +
             (v->self ? "[" + capture_key(v->self) + "]" : "");
    case AK::Transform: {
      std::string s = v->s + "[";
      for (int64_t w : v->wrt) s += std::to_string(w) + ",";
      return s + (v->wrt_tuple ? "t" : "") + (v->b ? "a" : "") + "](" + capture_key(v->elems[0]) +
             ")";
    }
    case AK::Union: {
      std::string s = "switch<";
      for (const auto& [key, f] : v->statics) s += key + ";";
      return s + ">";
    }
    default:
      return skeleton_key(v);
  }
}

// How a candidate appears in graph names: "lambda_3_16", "square", "grad_square".
std::string candidate_label(const AV& f) {
  switch (f->kind) {
    case AK::Closure:
      return fmt::format("lambda_{}_{}", f->lambda->range.begin.line, f->lambda->range.begin.col);
    case AK::Def:
      return f->def->name;
    case AK::Builtin:
      return f->s;
    case AK::ModelClass:
      return f->model->name;
    case AK::Transform:
      return f->s + "_" + candidate_label(f->elems[0]);
    default:
      return "function";
  }
}

// Where a function is written (invalid for built-ins).
lang::SourceRange written_at(const AV& f) {
  if (f->kind == AK::Closure && f->lambda) return f->lambda->range;
  if (f->kind == AK::Def && f->def) return f->def->name_range;
  if (f->kind == AK::Transform) return written_at(f->elems[0]);
  return {};
}

AV strip_captures(const AV& f);

// Appends v's candidates (v itself, or a union's) to `out`, skipping those already there.
void add_candidates(const AV& v, std::vector<std::pair<std::string, AV>>& out) {
  auto add = [&](const std::string& key, const AV& f) {
    for (const auto& c : out)
      if (c.first == key) return;
    out.emplace_back(key, f);
  };
  if (v->kind == AK::Union) {
    for (const auto& c : v->statics) add(c.first, c.second);
    return;
  }
  add(capture_key(v), strip_captures(v));
}

int64_t candidate_index(const AVal& u, const std::string& key) {
  for (size_t k = 0; k < u.statics.size(); ++k)
    if (u.statics[k].first == key) return static_cast<int64_t>(k);
  return -1;
}

// Whether a and b are one function value (a join of them needs no union).
bool same_function(const AV& a, const AV& b) {
  if (a.get() == b.get()) return true;
  if (a->kind != b->kind) return false;
  if (a->kind == AK::Def) return a->def == b->def && !a->self && !b->self;
  if (a->kind == AK::Builtin) return a->s == b->s && a->prim == b->prim;
  if (a->kind == AK::ModelClass) return a->model == b->model;
  return false;
}

// The compile-time parts of a record (a model's constructor arguments) as text.
std::string statics_key(const AV& v) {
  std::string s;
  for (const auto& [n, st] : v->statics) s += n + "=" + skeleton_key(st) + ",";
  return s;
}

AV skeleton_node(TypeP t) {
  auto n = std::make_shared<AVal>();
  n->kind = AK::Node;
  n->type = std::move(t);
  return n;
}

}  // namespace

namespace {
// The captured run-time values of v (Node values), in the order of the captures.
void capture_values(const AV& v, std::vector<AV>& out) {
  switch (v->kind) {
    case AK::Node:
      out.push_back(v);
      return;
    case AK::Tuple:
    case AK::Record:
    case AK::Transform:
    case AK::Union:
      for (const auto& e : v->elems) capture_values(e, out);
      return;
    case AK::Closure:
      for (const auto& n : captured_names(*v)) capture_values(v->env->lookup(n)->value, out);
      return;
    case AK::Def:
      if (v->self) capture_values(v->self, out);
      return;
    default:
      return;
  }
}

// v with each captured run-time value c replaced by leaf(c), in the order of the captures.
AV rebuild(const AV& v, const std::function<AV(const AV&)>& leaf) {
  switch (v->kind) {
    case AK::Node:
      return leaf(v);
    case AK::Tuple:
    case AK::Record:
    case AK::Transform:
    case AK::Union: {
      auto c = std::make_shared<AVal>(*v);
      for (auto& e : c->elems) e = rebuild(e, leaf);
      return c;
    }
    case AK::Closure: {
      auto env = std::make_shared<Env>(*v->env);
      for (const auto& n : captured_names(*v)) {
        Binding* b = env->lookup_mutable(n);
        b->value = rebuild(b->value, leaf);
      }
      auto c = std::make_shared<AVal>(*v);
      c->env = env;
      return c;
    }
    case AK::Def: {
      if (!v->self) return v;
      auto c = std::make_shared<AVal>(*v);
      c->self = rebuild(v->self, leaf);
      return c;
    }
    default:
      return v;
  }
}

// A candidate as a union keeps it: its captures by type only (their nodes may belong to a
// branch or loop body graph that is gone by the time the union is called).
AV strip_captures(const AV& f) {
  return rebuild(f, [](const AV& c) { return skeleton_node(c->type); });
}
}  // namespace

void Lowerer::collect_captures(const AV& v, std::vector<ir::Node*>& out) const {
  std::vector<AV> caps;
  capture_values(v, caps);
  for (const AV& c : caps) out.push_back(c->node);
}

AV Lowerer::map_captures(const AV& v, const std::vector<ir::Node*>& nodes, size_t& pos) const {
  return rebuild(v, [&](const AV&) { return make_node(nodes.at(pos++)); });
}

ir::Node* Lowerer::placeholder(const TypeP& t, lang::SourceRange r) {
  if (t->is_tensor()) return constant(Tensor::zeros(t->dtype, t->shape), r);
  if (t->kind == Type::Kind::Tuple || t->kind == Type::Kind::Record) {
    std::vector<ir::Node*> xs;
    for (const auto& e : t->elems) xs.push_back(placeholder(e, r));
    if (t->kind == Type::Kind::Tuple) return emit_node("make_tuple", xs, {}, r);
    std::string names;
    for (const auto& n : t->names) names += (names.empty() ? "" : ",") + n;
    Attrs a;
    a.set("name", t->name);
    a.set("names", names);
    return emit_node("make_record", xs, a, r);
  }
  fail(r, fmt::format("a function chosen here by a run-time condition captures a value of type {}, "
                      "which a function chosen at run time cannot carry (it carries tensors, and "
                      "tuples and records of them)",
                      t->str()));
}

namespace {
// A model instance called as a function (net(x)) meets functions as its forward method.
bool callable_model(const AV& v) { return v->kind == AK::Record && v->model; }
}  // namespace

AV Lowerer::join_values(const AV& a_in, const AV& b_in, lang::SourceRange r) {
  AV a = a_in, b = b_in;
  if (callable_model(a) && is_function(b)) a = eval_attribute(a, "forward", r);
  if (callable_model(b) && is_function(a)) b = eval_attribute(b, "forward", r);
  if (is_function(a) || is_function(b)) {
    if (!is_function(a) || !is_function(b)) return nullptr;
    if (same_function(a, b)) return a;
    for (const AV* f : {&a, &b})
      if ((*f)->kind == AK::Pullback)
        fail(r,
             "this run-time condition chooses between a pullback (the function vjp returns) and "
             "another function; call the pullback in each branch and choose between the results");
    auto u = std::make_shared<AVal>();
    u->kind = AK::Union;
    add_candidates(a, u->statics);
    add_candidates(b, u->statics);
    u->elems.push_back(skeleton_node(Type::tensor(DType::i32, {})));
    for (const auto& [key, f] : u->statics) {
      std::vector<AV> caps;
      capture_values(f, caps);
      u->elems.push_back(make_tuple(caps));
    }
    return u;
  }
  if ((a->kind == AK::Tuple || a->kind == AK::Record) && a->kind == b->kind &&
      a->elems.size() == b->elems.size() && a->names == b->names &&
      a->record_name == b->record_name && a->model == b->model &&
      statics_key(a) == statics_key(b)) {
    auto c = std::make_shared<AVal>(*a);
    for (size_t k = 0; k < a->elems.size(); ++k) {
      c->elems[k] = join_values(a->elems[k], b->elems[k], r);
      if (!c->elems[k]) return nullptr;
    }
    return skeleton_key(c) == skeleton_key(a) ? a : c;
  }
  return skeleton_key(a) == skeleton_key(b) ? a : nullptr;
}

AV Lowerer::inject(const AV& v_in, const AV& skel, lang::SourceRange r) {
  if (skel->kind == AK::Union) {
    const AV v = callable_model(v_in) ? eval_attribute(v_in, "forward", r) : v_in;
    if (v->kind == AK::Union && skeleton_key(v) == skeleton_key(skel)) return v;
    const size_t n = skel->statics.size();
    std::vector<AV> envs(n);
    ir::Node* tag = nullptr;
    if (v->kind == AK::Union) {
      // v's tag k names its candidate k: renumber to the join's candidates.
      std::vector<int64_t> to(v->statics.size());
      for (size_t k = 0; k < to.size(); ++k) {
        to[k] = candidate_index(*skel, v->statics[k].first);
        envs[static_cast<size_t>(to[k])] = v->elems[1 + k];
      }
      AV t = make_node(constant(Tensor::scalar(DType::i32, static_cast<double>(to.back())), r));
      for (size_t k = to.size() - 1; k-- > 0;) {
        AV is_k =
            eval_binary(lang::BinaryOp::Eq, v->elems[0], make_int(static_cast<int64_t>(k)), r);
        AV tk = make_node(constant(Tensor::scalar(DType::i32, static_cast<double>(to[k])), r));
        t = emit("where", {is_k->node, tk->node, t->node}, {}, r);
      }
      tag = t->node;
    } else {
      const int64_t k = candidate_index(*skel, capture_key(v));
      std::vector<ir::Node*> caps;
      collect_captures(v, caps);
      std::vector<AV> env;
      for (ir::Node* c : caps) env.push_back(make_node(c));
      envs[static_cast<size_t>(k)] = make_tuple(env);
      tag = constant(Tensor::scalar(DType::i32, static_cast<double>(k)), r);
    }
    auto u = std::make_shared<AVal>(*skel);
    u->elems[0] = make_node(tag);
    for (size_t k = 0; k < n; ++k) {
      if (envs[k]) {
        u->elems[1 + k] = envs[k];
        continue;
      }
      std::vector<AV> env;
      for (const AV& e : skel->elems[1 + k]->elems)
        env.push_back(make_node(placeholder(e->type, r)));
      u->elems[1 + k] = make_tuple(env);
    }
    return u;
  }
  if ((skel->kind == AK::Tuple || skel->kind == AK::Record) && v_in->kind == skel->kind) {
    auto c = std::make_shared<AVal>(*v_in);
    for (size_t k = 0; k < c->elems.size(); ++k)
      c->elems[k] = inject(v_in->elems[k], skel->elems[k], r);
    return c;
  }
  return v_in;
}

bool Lowerer::merge_branches(AV (&results)[2], ir::Graph* (&branches)[2], lang::SourceRange r) {
  AV joined = join_values(results[0], results[1], r);
  if (!joined) return false;
  if (skeleton_key(joined) == skeleton_key(results[0]) &&
      skeleton_key(joined) == skeleton_key(results[1]))
    return true;
  for (int k = 0; k < 2; ++k) {
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    results[k] = inject(results[k], joined, r);
  }
  return true;
}

AV Lowerer::call_union(const AVal& u, std::vector<Arg> args, lang::SourceRange r) {
  const size_t n = u.statics.size();
  auto candidate = [&](size_t k) {
    std::vector<ir::Node*> caps;
    flatten(u.elems[1 + k], caps, r, false);
    size_t pos = 0;
    return map_captures(u.statics[k].second, caps, pos);
  };
  // Candidates k.. of the switch: `if tag == k then candidate k else (candidates k+1..)`.
  std::function<AV(size_t)> from = [&](size_t k) -> AV {
    if (k + 1 == n) return call(candidate(k), args, r);
    AV is_k = eval_binary(lang::BinaryOp::Eq, u.elems[0], make_int(static_cast<int64_t>(k)), r);
    ir::Graph* outer = current_graph(r);
    ir::Graph* branches[2];
    AV results[2];
    std::optional<RecursionPending> pending[2];
    for (int b = 0; b < 2; ++b) {
      const std::string name = b == 0 ? "case_" + candidate_label(u.statics[k].second)
                                      : "case_" + candidate_label(u.statics[k + 1].second) +
                                            (k + 2 < n ? "_or_later" : "");
      branches[b] = module_.add_graph(outer->name + "." + name, outer);
      const Restore<ir::Graph*> in_branch(graph_, branches[b]);
      try {
        results[b] = materialise_numbers(b == 0 ? call(candidate(k), args, r) : from(k + 1), r);
      } catch (const RecursionPending& p) {
        pending[b] = p;
      }
    }
    if (pending[0] && pending[1]) throw *pending[0];
    if (pending[0]) return results[1];
    if (pending[1]) return results[0];
    if (!merge_branches(results, branches, r)) {
      error(r,
            fmt::format("this call runs a function chosen at run time, and its candidates return "
                        "different types: {} and {}; they must return the same type",
                        describe(results[0]), describe(results[1])));
      for (size_t c : {k, k + 1})
        if (lang::SourceRange at = written_at(u.statics[c].second); at.valid())
          diags_.note(at, fmt::format("candidate {} is written here", c));
      throw Abort{};
    }
    for (int b = 0; b < 2; ++b) {
      const Restore<ir::Graph*> in_branch(graph_, branches[b]);
      branches[b]->output = pack(results[b], r);
    }
    ir::Node* node =
        module_.add_apply(graph_, Registry::instance().find("if"),
                          {is_k->node, module_.add_graph_constant(graph_, branches[0], loc(r)),
                           module_.add_graph_constant(graph_, branches[1], loc(r))},
                          {}, branches[0]->output->type, loc(r));
    return unpack(results[0], node, r);
  };
  return from(0);
}

}  // namespace spora::sem::lower
