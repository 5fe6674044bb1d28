#include "autodiff/reverse.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <unordered_map>

#include "autodiff/copy.h"
#include "autodiff/emitter.h"
#include "lang/diagnostics.h"

namespace spora::autodiff {

namespace {

using sem::Type;
using sem::TypeP;

// A loop rewritten to tape its states, and the copy of its original body the backward
// recomputes from (kept in a private module: its free variables still name the real nodes).
struct TapedLoop {
  std::unique_ptr<ir::Module> scratch;
  ir::Graph* body = nullptr;  // the original body, in `scratch`
  size_t k = 0;               // number of carried state elements
  size_t extra = 0;           // leading body parameters before the state (i or elem): 0 or 1
};

struct ReverseState {
  std::unordered_map<const ir::Node*, std::shared_ptr<TapedLoop>> taped;
  std::unordered_map<const ir::Graph*, ir::Graph*> bwd_graphs;
};

ReverseState& state_of(ir::Module& m) {
  auto& slot = m.annotations["autodiff.reverse"];
  if (!slot) slot = std::make_shared<ReverseState>();
  return *std::static_pointer_cast<ReverseState>(slot);
}

// A copy of a loop that was already taped (a first derivative's loop, copied again by a
// second one) is the same taped loop: it returns its own tape, so it is not taped twice.
void inherit_tapes(ir::Module& m, const ir::CloneMap& map) {
  auto& taped = state_of(m).taped;
  for (const auto& [from, to] : map.nodes)
    if (auto it = taped.find(from); it != taped.end()) taped.emplace(to, it->second);
}

const sem::Primitive* prim(const char* name) { return sem::Registry::instance().find(name); }

// Adjoints in insertion order (so generated IR is deterministic).
class AdjointMap {
 public:
  SVal get(const ir::Node* n) const {
    auto it = index_.find(n);
    return it == index_.end() ? SVal{} : items_[it->second].second;
  }
  void set(ir::Node* n, SVal v) {
    auto it = index_.find(n);
    if (it == index_.end()) {
      index_[n] = items_.size();
      items_.emplace_back(n, std::move(v));
    } else {
      items_[it->second].second = std::move(v);
    }
  }
  const std::vector<std::pair<ir::Node*, SVal>>& items() const { return items_; }

 private:
  std::unordered_map<const ir::Node*, size_t> index_;
  std::vector<std::pair<ir::Node*, SVal>> items_;
};

// Which nodes depend on `leaves` (through their inputs, transitively), memoised. A call or a
// reference to a graph counts as depending (its body may read a leaf as a free variable), so
// only plain primitives of values computed without the leaves are found inactive: without
// this, grad(f)(w, xs) emitted and (in eager mode, which runs the derivative as it is emitted,
// with no dead-code pass after it) ran xs's adjoint: an RNN's slice gradients, one zero-filled
// copy of xs per time step, all added up.
class Activity {
 public:
  explicit Activity(const std::vector<ir::Node*>& leaves) {
    for (ir::Node* l : leaves) known_[l] = true;
  }
  bool operator()(const ir::Node* n) {
    if (auto it = known_.find(n); it != known_.end()) return it->second;
    // Iterative post-order DFS over inputs (an eager tape is a long chain).
    std::vector<std::pair<const ir::Node*, size_t>> stack{{n, 0}};
    while (!stack.empty()) {
      auto& [cur, next] = stack.back();
      if (cur->callee || cur->graph_value) {
        known_[cur] = true;
        stack.pop_back();
        continue;
      }
      bool pushed = false, dep = false;
      for (; next < cur->inputs.size(); ++next) {
        const ir::Node* in = cur->inputs[next];
        auto it = known_.find(in);
        if (it == known_.end()) {
          stack.emplace_back(in, 0);
          pushed = true;
          break;
        }
        if (it->second) {
          dep = true;
          break;
        }
      }
      if (pushed) continue;
      known_[cur] = dep;
      stack.pop_back();
    }
    return known_[n];
  }

 private:
  std::unordered_map<const ir::Node*, bool> known_;
};

class Reverse {
 public:
  Reverse(ir::Module& m, ir::Graph* into) : m_(m), into_(into), e_(m, into) {}

  void accumulate(ir::Node* n, const SVal& v) {
    if (v.zero() || !adjoint_type(n->type)) return;
    if (active_ && !(*active_)(n)) return;
    adj_.set(n, add_svals(e_, adj_.get(n), v, n->type));
  }
  // Activity: where set, only nodes it accepts (those that depend on the inputs being
  // differentiated) take adjoints, so nothing is emitted for the rest.
  void set_activity(const std::vector<ir::Node*>& leaves) { active_.emplace(leaves); }
  SVal adjoint(const ir::Node* n) const { return adj_.get(n); }
  const AdjointMap& adjoints() const { return adj_; }
  GraphEmitter& emitter() { return e_; }

  void run(const std::vector<ir::Node*>& region) {
    for (auto it = region.rbegin(); it != region.rend(); ++it) {
      ir::Node* c = *it;
      if (!c->is_apply()) continue;
      SVal a = adj_.get(c);
      if (a.zero()) continue;
      backprop(c, a);
    }
  }

 private:
  // Part i of a structured adjoint (splitting a whole node when needed).
  SVal part(const SVal& a, const TypeP& type, size_t i) {
    if (a.node) {
      Attrs at;
      if (type->kind == Type::Kind::Record) {
        at.set("field", type->names[i]);
        return SVal{e_.op("record_get", {a.node}, at), {}};
      }
      at.set("index", static_cast<int64_t>(i));
      return SVal{e_.op("tuple_get", {a.node}, at), {}};
    }
    return i < a.parts.size() ? a.parts[i] : SVal{};
  }

  void backprop(ir::Node* c, const SVal& a) {
    if (c->callee) return backprop_call(c, a);
    const std::string& name = c->prim->name;
    if (name == "make_tuple" || name == "make_record") {
      for (size_t i = 0; i < c->inputs.size(); ++i) accumulate(c->inputs[i], part(a, c->type, i));
      return;
    }
    if (name == "tuple_get" || name == "record_get") {
      const TypeP& t = c->inputs[0]->type;
      size_t idx = name == "tuple_get" ? static_cast<size_t>(c->attrs.get_int("index"))
                                       : static_cast<size_t>(t->field_index(c->attrs.get_string("field")));
      SVal s;
      s.parts.resize(t->elems.size());
      s.parts[idx] = a;
      accumulate(c->inputs[0], s);
      return;
    }
    if (name == "list_get") {
      // A tape read in a loop's backward pass (a second derivative of the loop): the tape's
      // adjoint is a sparse list holding this adjoint at index i (ops/tape.cpp); summed into
      // the loop's carried adjoint it is one list_add_at (emitter.cpp add_svals).
      Attrs la;
      la.set("elem", c->type->str());
      ir::Node* none = e_.op("list_empty", {}, la);
      accumulate(c->inputs[0],
                 SVal{e_.op("list_add_at", {none, c->inputs[1], materialise(e_, a, c->type)}), {}});
      return;
    }
    if (name == "if") return backprop_if(c, a);
    if (name == "while" || name == "for_range" || name == "for_each") return backprop_loop(c, a);
    if (!c->prim->differentiable || c->prim->effectful) return;
    const auto* rule = c->prim->facet<VjpRule>(kVjpFacet);
    if (!rule || !*rule)
      throw lang::UserError(fmt::format("cannot differentiate '{}': it has no derivative rule", name));
    Node* dout = materialise(e_, a, c->type);
    std::vector<Node*> dins;
    {
      std::vector<bool> wanted(c->inputs.size(), true);
      if (active_)
        for (size_t i = 0; i < c->inputs.size(); ++i) wanted[i] = (*active_)(c->inputs[i]);
      e_.set_wanted(std::move(wanted));
      struct Unset {
        Emitter& e;
        ~Unset() { e.set_wanted({}); }
      } unset{e_};
      dins = (*rule)(e_, *c, c->inputs, c, dout);
    }
    for (size_t i = 0; i < dins.size() && i < c->inputs.size(); ++i) {
      if (!dins[i]) continue;
      if (!sem::same_type(dins[i]->type, c->inputs[i]->type))
        throw lang::InternalError(fmt::format("the vjp rule of {} returned {} for input {} of type {}", name,
                                              dins[i]->type->str(), i, c->inputs[i]->type->str()));
      accumulate(c->inputs[i], SVal{dins[i], {}});
    }
  }

  // Adjoints of the nodes outside `inner` (free variables of a recomputed body).
  static std::vector<ir::Node*> externals(const Reverse& r, const ir::Graph* inner) {
    std::vector<ir::Node*> out;
    for (const auto& [n, v] : r.adjoints().items())
      if (!v.zero() && !ir::is_within(n->graph, inner)) out.push_back(n);
    return out;
  }

  void backprop_if(ir::Node* c, const SVal& a) {
    Node* dout = materialise(e_, a, c->type);
    ir::Graph* branches[2] = {c->inputs[1]->graph_value, c->inputs[2]->graph_value};
    ir::Graph* bwd[2];
    std::vector<std::unique_ptr<Reverse>> subs;
    std::vector<ir::Node*> ext;
    for (int k = 0; k < 2; ++k) {
      bwd[k] = m_.add_graph(branches[k]->name + ".bwd", into_);
      auto sub = std::make_unique<Reverse>(m_, bwd[k]);
      ir::CloneMap map;
      std::vector<const ir::Graph*> stack;
      ir::Node* out = copy_body(m_, bwd[k], *branches[k], {}, map, stack);
      inherit_tapes(m_, map);
      std::vector<ir::Node*> region(bwd[k]->nodes.begin(), bwd[k]->nodes.end());
      sub->accumulate(out, SVal{dout, {}});
      sub->run(region);
      for (ir::Node* n : externals(*sub, bwd[k]))
        if (std::find(ext.begin(), ext.end(), n) == ext.end()) ext.push_back(n);
      subs.push_back(std::move(sub));
    }
    if (ext.empty()) {
      m_.remove_graph(bwd[0]);
      m_.remove_graph(bwd[1]);
      return;
    }
    std::vector<TypeP> types;
    for (ir::Node* n : ext) types.push_back(n->type);
    for (int k = 0; k < 2; ++k) {
      std::vector<ir::Node*> outs;
      for (ir::Node* n : ext) outs.push_back(materialise(subs[k]->emitter(), subs[k]->adjoint(n), n->type));
      bwd[k]->output = subs[k]->emitter().op("make_tuple", outs);
    }
    ir::Node* r = m_.add_apply(into_, prim("if"),
                               {c->inputs[0], m_.add_graph_constant(into_, bwd[0], c->loc),
                                m_.add_graph_constant(into_, bwd[1], c->loc)},
                               {}, Type::tuple(types), c->loc);
    for (size_t j = 0; j < ext.size(); ++j) {
      Attrs at;
      at.set("index", static_cast<int64_t>(j));
      accumulate(ext[j], SVal{e_.op("tuple_get", {r}, at), {}});
    }
  }

  // Rewrites loop c (once) so that it also returns a tape of its iterations' states.
  std::shared_ptr<TapedLoop> tape_loop(ir::Node* c) {
    auto& taped = state_of(m_).taped;
    if (auto it = taped.find(c); it != taped.end()) return it->second;
    const std::string& kind = c->prim->name;
    const size_t body_at = kind == "while" ? 1 : kind == "for_range" ? 3 : 1;
    const size_t state_at = body_at + 1;
    ir::Graph* G = c->graph;
    ir::Graph* B = c->inputs[body_at]->graph_value;
    auto t = std::make_shared<TapedLoop>();
    t->k = c->inputs.size() - state_at;
    t->extra = kind == "while" ? 0 : 1;
    t->scratch = std::make_unique<ir::Module>();
    {
      ir::CloneMap map;
      t->body = ir::clone_graph(*t->scratch, *B, nullptr, map);
      inherit_tapes(m_, map);
    }
    // What one tape entry holds: the body's parameters (i or elem, then the state).
    std::vector<TypeP> entry_types;
    for (ir::Node* p : B->params) entry_types.push_back(p->type);
    TypeP entry = Type::tuple(entry_types);
    TypeP list = Type::list(entry);
    GraphEmitter ge(m_, G, c->loc);
    Attrs la;
    la.set("elem", entry->str());
    ir::Node* t0 = ge.op("list_empty", {}, la);
    move_before(t0, c);
    ir::Node* z0 = nullptr;
    if (kind == "while") {
      z0 = ge.scalar(0, DType::i64);
      move_before(z0, c);
    }
    // The taping body: push the parameters, then run the original body.
    ir::Graph* Ba = m_.add_graph(B->name + ".tape", G);
    std::vector<ir::Node*> params;
    for (ir::Node* p : B->params) params.push_back(m_.add_param(Ba, p->name, p->type, p->loc));
    ir::Node* n_param = kind == "while" ? m_.add_param(Ba, "n", Type::scalar(DType::i64), c->loc) : nullptr;
    ir::Node* tape_param = m_.add_param(Ba, "tape", list, c->loc);
    GraphEmitter be(m_, Ba, c->loc);
    ir::Node* pushed = be.op("list_push", {tape_param, be.op("make_tuple", params)});
    ir::CloneMap map;
    std::vector<const ir::Graph*> stack;
    ir::Node* out = copy_body(m_, Ba, *B, params, map, stack);
    inherit_tapes(m_, map);
    std::vector<ir::Node*> outs;
    for (size_t j = 0; j < t->k; ++j) {
      Attrs at;
      at.set("index", static_cast<int64_t>(j));
      outs.push_back(be.op("tuple_get", {out}, at));
    }
    if (n_param) outs.push_back(be.add(n_param, be.scalar(1, DType::i64)));
    outs.push_back(pushed);
    Ba->output = be.op("make_tuple", outs);
    std::vector<ir::Graph*> old_graphs{B};
    ir::Node* body_const = m_.add_graph_constant(G, Ba, c->loc);
    move_before(body_const, c);
    std::vector<ir::Node*> old_consts{c->inputs[body_at]};
    c->inputs[body_at] = body_const;
    if (kind == "while") {
      // The condition ignores the counter and the tape.
      ir::Graph* C = c->inputs[0]->graph_value;
      ir::Graph* Ca = m_.add_graph(C->name + ".tape", G);
      std::vector<ir::Node*> cps;
      for (ir::Node* p : C->params) cps.push_back(m_.add_param(Ca, p->name, p->type, p->loc));
      m_.add_param(Ca, "n", Type::scalar(DType::i64), c->loc);
      m_.add_param(Ca, "tape", list, c->loc);
      ir::CloneMap cmap;
      std::vector<const ir::Graph*> cstack;
      Ca->output = copy_body(m_, Ca, *C, cps, cmap, cstack);
      ir::Node* cond_const = m_.add_graph_constant(G, Ca, c->loc);
      move_before(cond_const, c);
      old_consts.push_back(c->inputs[0]);
      old_graphs.push_back(C);
      c->inputs[0] = cond_const;
      c->inputs.push_back(z0);
    }
    c->inputs.push_back(t0);
    std::vector<TypeP> result;
    for (size_t j = 0; j < t->k; ++j) result.push_back(c->type->elems[j]);
    if (kind == "while") result.push_back(Type::scalar(DType::i64));
    result.push_back(list);
    c->type = Type::tuple(result);
    // The original body and condition are no longer referenced: drop them.
    for (ir::Node* oc : old_consts) {
      auto& ns = G->nodes;
      ns.erase(std::remove(ns.begin(), ns.end(), oc), ns.end());
    }
    for (ir::Graph* g : old_graphs) m_.remove_graph(g);
    taped[c] = t;
    return t;
  }

  void backprop_loop(ir::Node* c, const SVal& a) {
    const std::string kind = c->prim->name;
    std::shared_ptr<TapedLoop> t = tape_loop(c);
    const size_t k = t->k;
    const size_t state_at = kind == "for_range" ? 4 : 2;
    Attrs at;
    at.set("index", static_cast<int64_t>(kind == "while" ? k + 1 : k));
    ir::Node* tape = e_.op("tuple_get", {c}, at);
    ir::Node* n;
    if (kind == "while") {
      Attrs an;
      an.set("index", static_cast<int64_t>(k));
      n = e_.op("tuple_get", {c}, an);
    } else {
      n = e_.op("list_len", {tape});
    }
    std::vector<TypeP> state_types;
    for (size_t j = 0; j < k; ++j) state_types.push_back(c->type->elems[j]);
    std::vector<ir::Node*> d_state;
    for (size_t j = 0; j < k; ++j) d_state.push_back(materialise(e_, part(a, c->type, j), state_types[j]));
    std::vector<ir::Node*> fv;
    for (ir::Node* v : ir::free_variables(t->body))
      if (adjoint_type(v->type)) fv.push_back(v);
    std::vector<ir::Node*> d_free;
    for (ir::Node* v : fv) d_free.push_back(zeros_of(e_, v->type));

    ir::Graph* Bb = m_.add_graph(t->body->name + ".bwd", into_);
    ir::Node* i = m_.add_param(Bb, "i", Type::scalar(DType::i64), c->loc);
    std::vector<ir::Node*> ds_params, df_params;
    for (size_t j = 0; j < k; ++j) ds_params.push_back(m_.add_param(Bb, "", state_types[j], c->loc));
    for (ir::Node* v : fv) df_params.push_back(m_.add_param(Bb, "", v->type, c->loc));
    Reverse sub(m_, Bb);
    GraphEmitter& be = sub.emitter();
    ir::Node* last = be.sub(n, be.scalar(1, DType::i64));
    ir::Node* idx = be.sub(last, i);
    ir::Node* entry = be.op("list_get", {tape, idx});
    std::vector<ir::Node*> args;
    for (size_t j = 0; j < t->body->params.size(); ++j) {
      Attrs ai;
      ai.set("index", static_cast<int64_t>(j));
      args.push_back(be.op("tuple_get", {entry}, ai));
    }
    const size_t region_begin = Bb->nodes.size();
    ir::CloneMap map;
    std::vector<const ir::Graph*> stack;
    ir::Node* out = copy_body(m_, Bb, *t->body, args, map, stack);
    inherit_tapes(m_, map);
    std::vector<ir::Node*> region(Bb->nodes.begin() + static_cast<long>(region_begin), Bb->nodes.end());
    SVal seed;
    for (ir::Node* p : ds_params) seed.parts.push_back(SVal{p, {}});
    sub.accumulate(out, seed);
    sub.run(region);
    // The tape's own adjoint (when the loop's backward pass was differentiated): the entry of
    // iteration idx is that iteration's state, so its adjoint joins the state's.
    const SVal d_tape = part(a, c->type, kind == "while" ? k + 1 : k);
    if (!d_tape.zero()) {
      ir::Node* dt = materialise(e_, d_tape, tape->type);
      Attrs ae;
      ae.set("elem", tape->type->elems.at(0)->str());
      ir::Node* d_entry = be.op("list_get_or_zeros", {dt, idx}, ae);
      for (size_t j = 0; j < k; ++j) {
        Attrs ai;
        ai.set("index", static_cast<int64_t>(t->extra + j));
        if (adjoint_type(state_types[j]))
          sub.accumulate(args[t->extra + j], SVal{be.op("tuple_get", {d_entry}, ai), {}});
      }
    }
    std::vector<ir::Node*> outs;
    for (size_t j = 0; j < k; ++j) outs.push_back(materialise(be, sub.adjoint(args[t->extra + j]), state_types[j]));
    for (size_t j = 0; j < fv.size(); ++j) {
      SVal total = add_svals(be, SVal{df_params[j], {}}, sub.adjoint(fv[j]), fv[j]->type);
      outs.push_back(materialise(be, total, fv[j]->type));
    }
    Bb->output = be.op("make_tuple", outs);

    std::vector<ir::Node*> inputs{e_.scalar(0, DType::i64), n, e_.scalar(1, DType::i64),
                                  m_.add_graph_constant(into_, Bb, c->loc)};
    std::vector<TypeP> types;
    for (ir::Node* d : d_state) {
      inputs.push_back(d);
      types.push_back(d->type);
    }
    for (ir::Node* d : d_free) {
      inputs.push_back(d);
      types.push_back(d->type);
    }
    ir::Node* r = m_.add_apply(into_, prim("for_range"), inputs, {}, Type::tuple(types), c->loc);
    for (size_t j = 0; j < k; ++j) {
      Attrs ai;
      ai.set("index", static_cast<int64_t>(j));
      accumulate(c->inputs[state_at + j], SVal{e_.op("tuple_get", {r}, ai), {}});
    }
    for (size_t j = 0; j < fv.size(); ++j) {
      Attrs ai;
      ai.set("index", static_cast<int64_t>(k + j));
      accumulate(fv[j], SVal{e_.op("tuple_get", {r}, ai), {}});
    }
  }

  // @G.bwd(params..., dout) -> (adjoint of each parameter): recomputes G's forward.
  ir::Graph* bwd_graph(ir::Graph* G) {
    auto& cache = state_of(m_).bwd_graphs;
    if (auto it = cache.find(G); it != cache.end()) return it->second;
    ir::Graph* Gb = m_.add_graph(G->name + ".bwd");
    cache[G] = Gb;
    std::vector<ir::Node*> params;
    for (ir::Node* p : G->params) params.push_back(m_.add_param(Gb, p->name, p->type, p->loc));
    ir::Node* dout = m_.add_param(Gb, "dout", G->result_type(), G->loc);
    Reverse sub(m_, Gb);
    ir::CloneMap map;
    std::vector<const ir::Graph*> stack;
    ir::Node* out = copy_body(m_, Gb, *G, params, map, stack);
    inherit_tapes(m_, map);
    std::vector<ir::Node*> region(Gb->nodes.begin(), Gb->nodes.end());
    sub.accumulate(out, SVal{dout, {}});
    sub.run(region);
    std::vector<ir::Node*> outs;
    for (ir::Node* p : params) outs.push_back(materialise(sub.emitter(), sub.adjoint(p), p->type));
    Gb->output = sub.emitter().op("make_tuple", outs);
    return Gb;
  }

  void backprop_call(ir::Node* c, const SVal& a) {
    ir::Graph* G = c->callee;
    Node* dout = materialise(e_, a, c->type);
    if (ir::Graph* custom = custom_grad_of(m_, *G)) {
      std::vector<ir::Node*> ins = c->inputs;
      ins.push_back(c);
      ins.push_back(dout);
      ir::Node* r = m_.add_call(into_, custom, ins, custom->result_type(), c->loc);
      if (c->inputs.size() == 1) {
        accumulate(c->inputs[0], SVal{r, {}});
      } else {
        for (size_t j = 0; j < c->inputs.size(); ++j) {
          Attrs at;
          at.set("index", static_cast<int64_t>(j));
          accumulate(c->inputs[j], SVal{e_.op("tuple_get", {r}, at), {}});
        }
      }
      return;
    }
    ir::Graph* Gb = bwd_graph(G);
    std::vector<ir::Node*> ins = c->inputs;
    ins.push_back(dout);
    // One adjoint per parameter (Gb may still be under construction when G is recursive).
    std::vector<TypeP> ts;
    for (ir::Node* p : G->params) ts.push_back(p->type);
    ir::Node* r = m_.add_call(into_, Gb, ins, Type::tuple(ts), c->loc);
    for (size_t j = 0; j < c->inputs.size(); ++j) {
      Attrs at;
      at.set("index", static_cast<int64_t>(j));
      accumulate(c->inputs[j], SVal{e_.op("tuple_get", {r}, at), {}});
    }
  }

  ir::Module& m_;
  ir::Graph* into_;
  GraphEmitter e_;
  AdjointMap adj_;
  std::optional<Activity> active_;
};

}  // namespace

std::vector<ir::Node*> reverse_region(ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                                      const std::vector<ir::Node*>& inputs, ir::Node* output, ir::Node* dout) {
  Reverse r(m, into);
  r.set_activity(inputs);
  r.accumulate(output, SVal{dout, {}});
  r.run(region);
  std::vector<ir::Node*> out;
  for (ir::Node* in : inputs) out.push_back(materialise(r.emitter(), r.adjoint(in), in->type));
  return out;
}

}  // namespace spora::autodiff
