#include "autodiff/forward.h"

#include <fmt/format.h>

#include <unordered_map>

#include "autodiff/copy.h"
#include "autodiff/emitter.h"
#include "autodiff/rules.h"
#include "lang/diagnostics.h"

namespace spora::autodiff {

namespace {

using sem::Type;
using sem::TypeP;

struct ForwardState {
  std::unordered_map<const ir::Graph*, ir::Graph*> jvp_graphs;
};

ForwardState& state_of(ir::Module& m) {
  auto& slot = m.annotations["autodiff.forward"];
  if (!slot) slot = std::make_shared<ForwardState>();
  return *std::static_pointer_cast<ForwardState>(slot);
}

class Forward {
 public:
  Forward(ir::Module& m, ir::Graph* into, const Forward* parent = nullptr)
      : m_(m), into_(into), e_(m, into), parent_(parent) {}

  void set(const ir::Node* n, SVal t) {
    if (!t.zero()) tan_[n] = std::move(t);
  }
  SVal get(const ir::Node* n) const {
    auto it = tan_.find(n);
    if (it != tan_.end()) return it->second;
    return parent_ ? parent_->get(n) : SVal{};
  }
  GraphEmitter& emitter() { return e_; }

  void run(const std::vector<ir::Node*>& region) {
    for (ir::Node* c : region)
      if (c->is_apply()) step(c);
  }

 private:
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

  bool any_tangent(const std::vector<ir::Node*>& nodes) const {
    for (ir::Node* n : nodes)
      if (!get(n).zero()) return true;
    return false;
  }

  void step(ir::Node* c) {
    if (c->callee) return step_call(c);
    const std::string& name = c->prim->name;
    if (name == "make_tuple" || name == "make_record") {
      SVal s;
      for (ir::Node* x : c->inputs) s.parts.push_back(get(x));
      return set(c, s);
    }
    if (name == "tuple_get" || name == "record_get") {
      const TypeP& t = c->inputs[0]->type;
      size_t idx = name == "tuple_get" ? static_cast<size_t>(c->attrs.get_int("index"))
                                       : static_cast<size_t>(t->field_index(c->attrs.get_string("field")));
      return set(c, part(get(c->inputs[0]), t, idx));
    }
    if (name == "if") return step_if(c);
    if (name == "while" || name == "for_range" || name == "for_each") return step_loop(c);
    if (!any_tangent(c->inputs)) return;
    // Tape lists (reverse-differentiated loops) carry a parallel list of tangents.
    if (name == "list_push") {
      SVal tl = get(c->inputs[0]);
      ir::Node* l = tl.zero() ? zeros_of(e_, c->inputs[0]->type) : materialise(e_, tl, c->inputs[0]->type);
      ir::Node* x = materialise(e_, get(c->inputs[1]), c->inputs[1]->type);
      return set(c, SVal{e_.op("list_push", {l, x}), {}});
    }
    if (name == "list_get") {
      SVal tl = get(c->inputs[0]);
      if (!tl.zero()) set(c, SVal{e_.op("list_get", {materialise(e_, tl, c->inputs[0]->type), c->inputs[1]}), {}});
      return;
    }
    if (name.rfind("list_", 0) == 0) return;
    if (!c->prim->differentiable || c->prim->effectful) return;
    const auto* rule = c->prim->facet<JvpRule>(kJvpFacet);
    if (!rule || !*rule)
      throw lang::UserError(fmt::format("cannot differentiate '{}' in forward mode: it has no jvp rule", name));
    std::vector<ir::Node*> ts;
    for (ir::Node* x : c->inputs) {
      SVal t = get(x);
      ts.push_back(t.zero() ? nullptr : materialise(e_, t, x->type));
    }
    if (ir::Node* t = (*rule)(e_, *c, c->inputs, c, ts)) {
      if (!sem::same_type(t->type, c->type))
        throw lang::InternalError(fmt::format("the jvp rule of {} returned {} for an output of type {}", name,
                                              t->type->str(), c->type->str()));
      set(c, SVal{t, {}});
    }
  }

  bool body_has_tangents(const ir::Graph* g) const {
    for (ir::Node* v : ir::free_variables(g))
      if (!get(v).zero()) return true;
    return false;
  }

  void step_if(ir::Node* c) {
    ir::Graph* branches[2] = {c->inputs[1]->graph_value, c->inputs[2]->graph_value};
    if (!body_has_tangents(branches[0]) && !body_has_tangents(branches[1])) return;
    ir::Graph* jv[2];
    for (int k = 0; k < 2; ++k) {
      jv[k] = m_.add_graph(branches[k]->name + ".jvp", into_);
      Forward sub(m_, jv[k], this);
      ir::CloneMap map;
      std::vector<const ir::Graph*> stack;
      ir::Node* out = copy_body(m_, jv[k], *branches[k], {}, map, stack);
      std::vector<ir::Node*> region(jv[k]->nodes.begin(), jv[k]->nodes.end());
      sub.run(region);
      jv[k]->output = sub.emitter().op("make_tuple", {out, materialise(sub.emitter(), sub.get(out), out->type)});
    }
    ir::Node* r = m_.add_apply(into_, sem::Registry::instance().find("if"),
                               {c->inputs[0], m_.add_graph_constant(into_, jv[0], c->loc),
                                m_.add_graph_constant(into_, jv[1], c->loc)},
                               {}, Type::tuple({c->type, c->type}), c->loc);
    Attrs at;
    at.set("index", int64_t{1});
    set(c, SVal{e_.op("tuple_get", {r}, at), {}});
  }

  void step_loop(ir::Node* c) {
    const std::string kind = c->prim->name;
    const size_t body_at = kind == "for_range" ? 3 : 1;
    const size_t state_at = body_at + 1;
    const size_t extra = kind == "while" ? 0 : 1;
    ir::Graph* B = c->inputs[body_at]->graph_value;
    const size_t k = c->inputs.size() - state_at;
    std::vector<ir::Node*> init(c->inputs.begin() + static_cast<long>(state_at), c->inputs.end());
    if (!any_tangent(init) && !body_has_tangents(B)) return;
    std::vector<TypeP> st;
    for (ir::Node* x : init) st.push_back(x->type);
    // Only state elements that can carry tangents get a tangent alongside (not counters).
    std::vector<size_t> carried;
    for (size_t j = 0; j < k; ++j)
      if (tangent_type(st[j])) carried.push_back(j);
    std::vector<ir::Node*> t0;
    for (size_t j : carried) t0.push_back(materialise(e_, get(init[j]), st[j]));

    // Body: (extra?, s..., ts...) -> (s'..., ts'...)
    ir::Graph* Bj = m_.add_graph(B->name + ".jvp", into_);
    std::vector<ir::Node*> ps, tps;
    ir::Node* lead = extra ? m_.add_param(Bj, B->params[0]->name, B->params[0]->type, c->loc) : nullptr;
    for (size_t j = 0; j < k; ++j) ps.push_back(m_.add_param(Bj, "", st[j], c->loc));
    for (size_t j : carried) tps.push_back(m_.add_param(Bj, "", st[j], c->loc));
    Forward sub(m_, Bj, this);
    for (size_t q = 0; q < carried.size(); ++q) sub.set(ps[carried[q]], SVal{tps[q], {}});
    std::vector<ir::Node*> args;
    if (lead) args.push_back(lead);
    args.insert(args.end(), ps.begin(), ps.end());
    ir::CloneMap map;
    std::vector<const ir::Graph*> stack;
    ir::Node* out = copy_body(m_, Bj, *B, args, map, stack);
    std::vector<ir::Node*> region(Bj->nodes.begin(), Bj->nodes.end());
    sub.run(region);
    GraphEmitter& be = sub.emitter();
    SVal tout = sub.get(out);
    std::vector<ir::Node*> outs;
    for (size_t j = 0; j < k; ++j) {
      Attrs at;
      at.set("index", static_cast<int64_t>(j));
      outs.push_back(be.op("tuple_get", {out}, at));
    }
    for (size_t j : carried) outs.push_back(materialise(be, sub.part(tout, out->type, j), st[j]));
    Bj->output = be.op("make_tuple", outs);

    std::vector<ir::Node*> inputs(c->inputs.begin(), c->inputs.begin() + static_cast<long>(body_at));
    if (kind == "while") {
      ir::Graph* C = c->inputs[0]->graph_value;
      ir::Graph* Cj = m_.add_graph(C->name + ".jvp", into_);
      std::vector<ir::Node*> cps;
      for (size_t j = 0; j < k; ++j) cps.push_back(m_.add_param(Cj, "", st[j], c->loc));
      for (size_t j : carried) m_.add_param(Cj, "", st[j], c->loc);
      ir::CloneMap cmap;
      std::vector<const ir::Graph*> cstack;
      Cj->output = copy_body(m_, Cj, *C, cps, cmap, cstack);
      inputs[0] = m_.add_graph_constant(into_, Cj, c->loc);
    }
    inputs.push_back(m_.add_graph_constant(into_, Bj, c->loc));
    inputs.insert(inputs.end(), init.begin(), init.end());
    inputs.insert(inputs.end(), t0.begin(), t0.end());
    std::vector<TypeP> types = st;
    for (size_t j : carried) types.push_back(st[j]);
    ir::Node* r = m_.add_apply(into_, c->prim, inputs, c->attrs, Type::tuple(types), c->loc);
    SVal s;
    s.parts.resize(k);
    for (size_t q = 0; q < carried.size(); ++q) {
      Attrs at;
      at.set("index", static_cast<int64_t>(k + q));
      s.parts[carried[q]] = SVal{e_.op("tuple_get", {r}, at), {}};
    }
    set(c, s);
  }

  // @G.jvp(params..., tangents...) -> (value, tangent)
  ir::Graph* jvp_graph(ir::Graph* G) {
    auto& cache = state_of(m_).jvp_graphs;
    if (auto it = cache.find(G); it != cache.end()) return it->second;
    ir::Graph* Gj = m_.add_graph(G->name + ".jvp");
    cache[G] = Gj;
    std::vector<ir::Node*> ps, tps;
    for (ir::Node* p : G->params) ps.push_back(m_.add_param(Gj, p->name, p->type, p->loc));
    for (ir::Node* p : G->params) tps.push_back(m_.add_param(Gj, "d" + p->name, p->type, p->loc));
    Forward sub(m_, Gj);
    for (size_t j = 0; j < ps.size(); ++j) sub.set(ps[j], SVal{tps[j], {}});
    ir::CloneMap map;
    std::vector<const ir::Graph*> stack;
    ir::Node* out = copy_body(m_, Gj, *G, ps, map, stack);
    std::vector<ir::Node*> region(Gj->nodes.begin(), Gj->nodes.end());
    sub.run(region);
    Gj->output = sub.emitter().op("make_tuple", {out, materialise(sub.emitter(), sub.get(out), out->type)});
    return Gj;
  }

  void step_call(ir::Node* c) {
    if (!any_tangent(c->inputs)) return;
    ir::Graph* Gj = jvp_graph(c->callee);
    std::vector<ir::Node*> ins = c->inputs;
    for (ir::Node* x : c->inputs) ins.push_back(materialise(e_, get(x), x->type));
    ir::Node* r = m_.add_call(into_, Gj, ins, Type::tuple({c->type, c->type}), c->loc);
    Attrs at;
    at.set("index", int64_t{1});
    set(c, SVal{e_.op("tuple_get", {r}, at), {}});
  }

  ir::Module& m_;
  ir::Graph* into_;
  GraphEmitter e_;
  const Forward* parent_;
  std::unordered_map<const ir::Node*, SVal> tan_;

  friend class ForwardAccess;
};

}  // namespace

ir::Node* forward_region(ir::Module& m, const std::vector<ir::Node*>& region, ir::Graph* into,
                         const std::vector<ir::Node*>& inputs, const std::vector<ir::Node*>& tangents,
                         ir::Node* output) {
  Forward f(m, into);
  for (size_t i = 0; i < inputs.size(); ++i) f.set(inputs[i], SVal{tangents[i], {}});
  f.run(region);
  return materialise(f.emitter(), f.get(output), output->type);
}

}  // namespace spora::autodiff
