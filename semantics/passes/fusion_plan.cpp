// Lowering of a fusion group to a loop nest (fusion_plan.h).
//
// Steps:
//   1. Translate the group's nodes into planning nodes (PNode): one per elementwise, shape or
//      reduction op; a composite row (softmax, layer_norm, cross_entropy, ...) becomes the
//      elementwise ops and keepdims reductions its decompose facet builds (decompose.h); the
//      anchor and the external inputs become loads, scalar constants literals.
//   2. Classify reductions: over every axis of their input a total, else a row reduction; all
//      row reductions must reduce the same axes of the same shape (the domain). Levels: a row
//      reduction needs one pass more than the row reductions it reads.
//   3. Choose the loop structure (rows x inner) and emit kernel IR (semantics/kernel_ir/),
//      pass by pass, every value at the coordinates its consumers read it at (memoised per
//      coordinates, compared as structures), then the outputs, the totals and the scalar
//      epilogue; verify the kernel.
#include "semantics/passes/fusion_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "semantics/passes/decompose.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/shape_rules.h"

namespace spora::passes {

using sem::Shape;

GroupSpec group_of(const ir::Graph& fused) {
  GroupSpec g;
  g.inputs.assign(fused.params.begin(), fused.params.end());
  for (const ir::Node* n : fused.nodes)
    if (n != fused.output || !n->is_prim("make_tuple")) g.nodes.push_back(n);
  if (fused.output && fused.output->is_prim("make_tuple") && fused.output->graph == &fused)
    g.outputs.assign(fused.output->inputs.begin(), fused.output->inputs.end());
  else if (fused.output)
    g.outputs.push_back(fused.output);
  return g;
}

namespace {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool is_real(DType d) { return d == DType::f32 || d == DType::f64; }

// ---- planning nodes ---------------------------------------------------------------------------

struct PNode : LoopValue {
  enum class K {
    Input, Literal, Unary, Binary, Compare, Logical, Not, Where, Cast, FiniteOrZero, Reshape,
    Permute, Broadcast, OneHot, Slice, Dropout, Reduce
  };
  K k = K::Input;
  std::string op;
  std::vector<PNode*> in;
  DType dtype = DType::f32;
  Shape shape;
  int id = 0;
  int input = -1;              // Input: the kernel input
  double value = 0;            // Literal
  ReduceOp red = ReduceOp::Sum;
  bool mean = false;           // Reduce: divide by the count
  std::vector<int64_t> axes;   // Reduce (sorted; result keeps them as 1)
  std::vector<int64_t> perm;   // Permute: result axis i is input axis perm[i]
  int64_t axis = 0, classes = 0;  // OneHot: the class axis of the result
  std::vector<int64_t> starts, steps;  // Slice, per input axis
  std::vector<bool> squeezed;
  double p = 0;                // Dropout
  int64_t seed = 0;
  // analysis
  bool total = false;          // Reduce over every axis
  int level = 0;               // row-reduction passes needed before this value
  bool scalar = false;         // depends on a total
};

struct Fail {
  std::string why;
};
[[noreturn]] void fail(std::string why) { throw Fail{std::move(why)}; }

const std::set<std::string>& reshape_ops() {
  static const std::set<std::string> s = {"reshape", "flatten", "squeeze", "unsqueeze",
                                          "expand_dims"};
  return s;
}

std::vector<int64_t> axes_attr(const sem::Attrs& a, const char* name, int64_t rank) {
  std::vector<int64_t> axes;
  if (a.is_none(name)) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  const sem::Attr* v = a.find(name);
  if (const auto* one = std::get_if<int64_t>(v))
    axes.push_back(*one);
  else
    axes = a.get_ints(name);
  for (int64_t& x : axes) x = x < 0 ? x + rank : x;
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

// Step 1: the planning nodes of a group. Composite rows write themselves with the LoopBuilder
// operations (their decompose facet, decompose.h).
class Builder final : public LoopBuilder {
 public:
  explicit Builder(const GroupSpec& g) : g_(g) {
    for (size_t i = 0; i < g.inputs.size(); ++i) input_index_[g.inputs[i]] = static_cast<int>(i);
    for (const ir::Node* n : g.nodes) members_.insert(n);
  }

  std::vector<std::unique_ptr<PNode>> nodes;
  std::vector<PNode*> outputs;
  std::vector<KernelBuffer> inputs;  // kernel inputs (group inputs, then the anchor)
  int anchor = -1;

  void run() {
    // f16/bf16 groups run node by node (their kernels widen to f32, semantics/low_precision.h):
    // the generator has no 16-bit float type.
    auto no_low = [](const ir::Node* n) {
      if (n->type && n->type->is_tensor() &&
          (n->type->dtype == DType::f16 || n->type->dtype == DType::bf16))
        passes::fail("a " + std::string(dtype_name(n->type->dtype)) + " value");
    };
    for (const ir::Node* in : g_.inputs) {
      if (!in->type || !in->type->is_tensor()) fail("an input is not a tensor");
      no_low(in);
      inputs.push_back({in->type->dtype, in->type->shape});
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const ir::Node* n = g_.nodes[i];
      if (n->is_constant()) continue;  // literals are made where they are read
      if (!n->is_apply() || !n->prim) fail("a member is not a primitive apply");
      if (!n->type || !n->type->is_tensor()) fail(n->prim->name + " does not give a tensor");
      no_low(n);
      check_static(n->type->shape, n->prim->name);
      if (fusion_kind(*n->prim, n->attrs) == FusionKind::OutputFusable) {
        if (anchor >= 0) fail("two output-fusable anchors");
        for (const ir::Node* x : n->inputs)
          if (members_.count(x) && !scalar_constant(x))
            fail(n->prim->name + " reads a value of its own group");
        anchor = static_cast<int>(i);
        PNode* a = make(PNode::K::Input, n->type->dtype, n->type->shape);
        a->input = static_cast<int>(inputs.size());
        inputs.push_back({n->type->dtype, n->type->shape});
        map_[n] = a;
        continue;
      }
      map_[n] = translate(*n);
    }
    for (const ir::Node* o : g_.outputs) {
      auto it = map_.find(o);
      if (it == map_.end()) fail("an output is not a member");
      outputs.push_back(it->second);
    }
    dedupe();
  }

  // LoopBuilder (decompose.h)
  DType dtype(const LoopValue* v) const override { return as_node(v)->dtype; }
  const Shape& shape(const LoopValue* v) const override { return as_node(v)->shape; }
  LoopValue* literal(double v, DType d) override { return lit(v, d); }
  LoopValue* unary(const std::string& op, LoopValue* x) override {
    if (!kir::unary_fn(op)) fail(op + " has no loop form");
    need_float(op, as_node(x)->dtype);
    return un(op, as_node(x));
  }
  LoopValue* binary(const std::string& op, LoopValue* x, LoopValue* y) override {
    if (!kir::binary_fn(op)) fail(op + " has no loop form");
    need_float(op, as_node(x)->dtype);
    return bin(op, as_node(x), as_node(y));
  }
  LoopValue* reduce(ReduceOp op, bool mean, LoopValue* x, std::vector<int64_t> axes) override {
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    PNode* v = as_node(x);
    for (int64_t a : axes)
      if (a < 0 || a >= static_cast<int64_t>(v->shape.size()))
        fail("a reduction axis out of range");
    return reduce(op, mean, v, std::move(axes), v->dtype);
  }
  LoopValue* cast(LoopValue* x, DType d) override { return to(as_node(x), d); }
  LoopValue* reshape(LoopValue* x, Shape s) override {
    if (numel(s) != numel(as_node(x)->shape)) fail("a reshape to another element count");
    return reshape(as_node(x), std::move(s));
  }
  LoopValue* finite_or_zero(LoopValue* x) override {
    PNode* v = as_node(x);
    return make(PNode::K::FiniteOrZero, v->dtype, v->shape, {v});
  }
  LoopValue* one_hot(LoopValue* labels, DType d, Shape s, int64_t axis) override {
    if (!is_integer(as_node(labels)->dtype)) fail("one-hot labels of a non-integer dtype");
    PNode* p = make(PNode::K::OneHot, d, s, {as_node(labels)});
    p->axis = axis;
    p->classes = s.at(static_cast<size_t>(axis));
    return p;
  }
  [[noreturn]] void fail(const std::string& why) override { passes::fail(why); }

 private:
  static PNode* as_node(LoopValue* v) { return static_cast<PNode*>(v); }
  static const PNode* as_node(const LoopValue* v) { return static_cast<const PNode*>(v); }
  static void need_float(const std::string& op, DType t) {
    if (!is_real(t)) passes::fail(op + " on " + std::string(dtype_name(t)));
  }

  std::vector<std::unique_ptr<PNode>> dropped_;

  // Equal planning nodes become one (softmax and cross_entropy of the same logits share their
  // max and sum), and nodes no output needs are dropped.
  void dedupe() {
    std::unordered_map<std::string, PNode*> seen;
    std::unordered_map<const PNode*, PNode*> same;
    for (auto& p : nodes) {
      PNode* n = p.get();
      for (PNode*& x : n->in)
        if (auto it = same.find(x); it != same.end()) x = it->second;
      std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                                    static_cast<int>(n->k), n->op, static_cast<int>(n->dtype),
                                    fmt::join(n->shape, ","), n->input, n->value,
                                    static_cast<int>(n->red), n->mean, fmt::join(n->axes, ","),
                                    fmt::join(n->perm, ","), n->axis, n->classes,
                                    fmt::join(n->starts, ","), fmt::join(n->steps, ","),
                                    fmt::join(n->squeezed, ","), n->p, n->seed, n->in.size());
      for (const PNode* x : n->in) key += "," + std::to_string(x->id);
      if (n->k == PNode::K::Literal && std::signbit(n->value)) key += "-";
      auto [it, fresh] = seen.emplace(key, n);
      if (!fresh) same[n] = it->second;
    }
    for (PNode*& o : outputs)
      if (auto it = same.find(o); it != same.end()) o = it->second;
    std::set<const PNode*> live;
    std::vector<const PNode*> stack(outputs.begin(), outputs.end());
    while (!stack.empty()) {
      const PNode* n = stack.back();
      stack.pop_back();
      if (!live.insert(n).second) continue;
      for (const PNode* x : n->in) stack.push_back(x);
    }
    std::vector<std::unique_ptr<PNode>> kept;
    for (auto& p : nodes) (live.count(p.get()) ? kept : dropped_).push_back(std::move(p));
    nodes = std::move(kept);
  }

  const GroupSpec& g_;
  std::unordered_map<const ir::Node*, int> input_index_;
  std::set<const ir::Node*> members_;
  std::unordered_map<const ir::Node*, PNode*> map_;

  static void check_static(const Shape& s, const std::string& what) {
    for (int64_t d : s)
      if (d <= 0) passes::fail(what + ": dynamic or empty shape");
  }

  static bool scalar_constant(const ir::Node* n) {
    return n->is_constant() && !n->graph_value && n->value.is_tensor() &&
           n->value.tensor.numel() == 1 &&
           (is_real(n->value.tensor.dtype()) || is_integer(n->value.tensor.dtype()) ||
            n->value.tensor.dtype() == DType::boolean);
  }

  PNode* make(PNode::K k, DType d, Shape s, std::vector<PNode*> in = {}) {
    auto p = std::make_unique<PNode>();
    p->k = k;
    p->dtype = d;
    p->shape = std::move(s);
    p->in = std::move(in);
    p->id = static_cast<int>(nodes.size());
    nodes.push_back(std::move(p));
    return nodes.back().get();
  }
  PNode* lit(double v, DType d) {
    PNode* p = make(PNode::K::Literal, d, {});
    p->value = v;
    return p;
  }
  PNode* un(const std::string& op, PNode* x) {
    PNode* p = make(PNode::K::Unary, x->dtype, x->shape, {x});
    p->op = op;
    return p;
  }
  static Shape broadcast(const Shape& a, const Shape& b) {
    std::optional<Shape> s = sem::broadcast_shapes(a, b);
    if (!s) passes::fail("operands do not broadcast");
    return *s;
  }
  PNode* bin(const std::string& op, PNode* x, PNode* y) {
    PNode* p = make(PNode::K::Binary, x->dtype, broadcast(x->shape, y->shape), {x, y});
    p->op = op;
    return p;
  }
  PNode* reduce(ReduceOp op, bool mean, PNode* x, std::vector<int64_t> axes, DType d) {
    if (axes.empty()) fail("a reduction over no axes");
    Shape s = x->shape;
    for (int64_t a : axes) s[static_cast<size_t>(a)] = 1;
    PNode* p = make(PNode::K::Reduce, d, s, {x});
    p->red = op;
    p->mean = mean;
    p->axes = std::move(axes);
    return p;
  }
  PNode* reshape(PNode* x, Shape s) {
    if (s == x->shape) return x;
    return make(PNode::K::Reshape, x->dtype, std::move(s), {x});
  }

  PNode* value(const ir::Node* n) {
    auto it = map_.find(n);
    if (it != map_.end()) return it->second;
    if (scalar_constant(n)) {
      PNode* p = make(PNode::K::Literal, n->value.tensor.dtype(), n->value.tensor.shape());
      p->value = n->value.tensor.item();
      map_[n] = p;
      return p;
    }
    auto ii = input_index_.find(n);
    if (ii == input_index_.end()) fail("a value that is neither a member nor an input");
    if (!n->type || !n->type->is_tensor()) fail("an input is not a tensor");
    check_static(n->type->shape, "input");
    PNode* p = make(PNode::K::Input, n->type->dtype, n->type->shape);
    p->input = ii->second;
    map_[n] = p;
    return p;
  }

  PNode* translate(const ir::Node& n) {
    const std::string& op = n.prim->name;
    std::vector<PNode*> in;
    for (const ir::Node* x : n.inputs) in.push_back(value(x));
    const DType d = n.type->dtype;
    const Shape& s = n.type->shape;
    auto need_float = [&](DType t) {
      if (!is_real(t)) fail(op + " on " + std::string(dtype_name(t)));
    };
    if (op == "identity" || op == "stop_gradient") return in.at(0);
    if (kir::unary_fn(op)) {
      need_float(d);
      return un(op, in.at(0));
    }
    if (kir::binary_fn(op)) {
      need_float(d);
      need_float(in.at(0)->dtype);
      return bin(op, in[0], in.at(1));
    }
    if (kir::compare_fn(op)) {
      PNode* p = make(PNode::K::Compare, DType::boolean, s, {in.at(0), in.at(1)});
      p->op = op;
      return p;
    }
    if (op == "logical_and" || op == "logical_or") {
      PNode* p = make(PNode::K::Logical, DType::boolean, s, {in.at(0), in.at(1)});
      p->op = op;
      return p;
    }
    if (op == "logical_not") return make(PNode::K::Not, DType::boolean, s, {in.at(0)});
    if (op == "where") {
      if (!is_real(d) && d != DType::boolean) fail("where on " + std::string(dtype_name(d)));
      return make(PNode::K::Where, d, s, {in.at(0), in.at(1), in.at(2)});
    }
    if (op == "cast") {
      if (!is_real(d) && d != DType::boolean) fail("cast to " + std::string(dtype_name(d)));
      return make(PNode::K::Cast, d, s, {in.at(0)});
    }
    if (reshape_ops().count(op)) return reshape(in.at(0), s);
    if (op == "transpose" || op == "permute") {
      PNode* p = make(PNode::K::Permute, d, s, {in.at(0)});
      const int64_t rank = static_cast<int64_t>(s.size());
      if (n.attrs.is_none("axes")) {
        for (int64_t i = rank; i-- > 0;) p->perm.push_back(i);
      } else {
        for (int64_t a : n.attrs.get_ints("axes")) p->perm.push_back(a < 0 ? a + rank : a);
      }
      return p;
    }
    if (op == "broadcast_to") return make(PNode::K::Broadcast, d, s, {in.at(0)});
    if (op == "one_hot") {
      need_float(d);
      PNode* p = make(PNode::K::OneHot, d, s, {in.at(0)});
      p->axis = static_cast<int64_t>(s.size()) - 1;
      p->classes = s.back();
      return p;
    }
    if (op == "slice") return slice(n, in.at(0));
    if (op == "dropout") {
      const double pr = n.attrs.get_float("p");
      if (!n.attrs.get_bool("training") || pr == 0) return in.at(0);
      PNode* p = make(PNode::K::Dropout, d, s, {in.at(0)});
      p->p = pr;
      p->seed = n.attrs.get_int("seed");
      return p;
    }
    if (op == "sum" || op == "mean" || op == "prod" || op == "max" || op == "min" ||
        op == "all" || op == "any") {
      return reduction(n, op, in.at(0));
    }
    if (const auto* decompose = n.prim->facet<DecomposeFn>(kDecomposeFacet)) {
      const LoopValues args(in.begin(), in.end());
      PNode* out = as_node((*decompose)(*this, n, args));
      if (out->shape != s || out->dtype != d)
        fail(op + "'s decomposition gives " + std::string(dtype_name(out->dtype)) + "[" +
             fmt::format("{}", fmt::join(out->shape, ",")) + "], not its type");
      return out;
    }
    fail(op + " is not supported by the kernel generator");
  }

  PNode* reduction(const ir::Node& n, const std::string& op, PNode* x) {
    auto axes = axes_attr(n.attrs, "axis", static_cast<int64_t>(x->shape.size()));
    const DType d = n.type->dtype;
    ReduceOp r = ReduceOp::Sum;
    if (op == "all" || op == "any") {
      r = op == "all" ? ReduceOp::All : ReduceOp::Any;
    } else {
      if (!is_real(x->dtype) || d != x->dtype) fail(op + " on " + std::string(dtype_name(x->dtype)));
      r = op == "prod" ? ReduceOp::Prod
          : op == "max" ? ReduceOp::Max
          : op == "min" ? ReduceOp::Min
                        : ReduceOp::Sum;
    }
    return reshape(reduce(r, op == "mean", x, axes, d), n.type->shape);
  }

  PNode* to(PNode* v, DType d) {
    return v->dtype == d ? v : make(PNode::K::Cast, d, v->shape, {v});
  }

  PNode* slice(const ir::Node& n, PNode* x) {
    const auto& starts = n.attrs.get_ints("starts");
    const auto& stops = n.attrs.get_ints("stops");
    const auto& steps = n.attrs.get_ints("steps");
    const auto& squeeze = n.attrs.get_ints("squeeze");
    PNode* p = make(PNode::K::Slice, n.type->dtype, n.type->shape, {x});
    for (size_t i = 0; i < x->shape.size(); ++i) {
      const int64_t len = x->shape[i];
      if (i >= starts.size()) {
        p->starts.push_back(0);
        p->steps.push_back(1);
        p->squeezed.push_back(false);
        continue;
      }
      const bool sq = std::find(squeeze.begin(), squeeze.end(), static_cast<int64_t>(i)) !=
                      squeeze.end();
      if (sq) {
        int64_t idx = starts[i] < 0 ? starts[i] + len : starts[i];
        if (idx < 0 || idx >= len) fail("slice index out of range");
        p->starts.push_back(idx);
        p->steps.push_back(0);
        p->squeezed.push_back(true);
        continue;
      }
      const int64_t step = i < steps.size() ? steps[i] : 1;
      const int64_t stop = i < stops.size() ? stops[i] : std::numeric_limits<int64_t>::max();
      if (step == 0) fail("slice step 0");
      p->starts.push_back(sem::adjust_slice(starts[i], stop, step, len).first);
      p->steps.push_back(step);
      p->squeezed.push_back(false);
    }
    return p;
  }
};

// ---- index expressions -------------------------------------------------------------------------

using kir::Ix;
using kir::Operand;
using kir::Var;

// The coordinates a value is read at (one per axis of its shape) and, when known, its flat
// row-major index.
struct Coords {
  std::vector<Ix> c;
  Ix flat;
  bool has_flat = false;
  bool operator==(const Coords& o) const {
    return c == o.c && has_flat == o.has_flat && (!has_flat || flat == o.flat);
  }
  size_t hash() const {
    size_t h = has_flat ? flat.hash() * 31 + 7 : 0;
    for (const Ix& x : c) h = h * 1000003u ^ x.hash();
    return h;
  }
};

std::vector<int64_t> strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

Ix linear(const std::vector<Ix>& c, const Shape& s) {
  auto st = strides(s);
  std::vector<Ix> terms;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 1 || c[i].is_const(0)) continue;
    terms.push_back(st[i] == 1 ? c[i] : Ix::scale(c[i], st[i]));
  }
  if (terms.empty()) return Ix::constant(0);
  if (terms.size() == 1) return terms[0];
  return Ix::sum(std::move(terms));
}

Ix linear(const Coords& x, const Shape& s) { return x.has_flat ? x.flat : linear(x.c, s); }

std::vector<Ix> delinear(const Ix& lin, const Shape& s) {
  auto st = strides(s);
  const int64_t total = numel(s);
  std::vector<Ix> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 1) {
      out.push_back(Ix::constant(0));
      continue;
    }
    Ix e = lin;
    if (st[i] != 1) e = Ix::div(e, st[i]);
    if (st[i] * s[i] != total) e = Ix::mod(e, s[i]);
    out.push_back(e);
  }
  return out;
}

Coords from_flat(const Ix& flat, const Shape& s) {
  Coords x;
  x.c = delinear(flat, s);
  x.flat = flat;
  x.has_flat = true;
  return x;
}

// Coordinates in shape `to` of the element at x in shape `from` (same element count).
Coords reshape_coords(const Coords& x, const Shape& from, const Shape& to) {
  if (from == to) return x;
  size_t pre = 0;
  while (pre < from.size() && pre < to.size() && from[pre] == to[pre]) ++pre;
  size_t suf = 0;
  while (suf < from.size() - pre && suf < to.size() - pre &&
         from[from.size() - 1 - suf] == to[to.size() - 1 - suf])
    ++suf;
  Shape fmid(from.begin() + pre, from.end() - suf), tmid(to.begin() + pre, to.end() - suf);
  std::vector<Ix> mid(x.c.begin() + pre, x.c.end() - suf);
  Coords out;
  out.c.assign(x.c.begin(), x.c.begin() + pre);
  for (const Ix& i : delinear(linear(mid, fmid), tmid)) out.c.push_back(i);
  out.c.insert(out.c.end(), x.c.end() - suf, x.c.end());
  out.flat = x.flat;
  out.has_flat = x.has_flat;
  return out;
}

// Coordinates in `to` (broadcastable to `from`) of the element broadcast to x.
Coords broadcast_coords(const Coords& x, const Shape& from, const Shape& to) {
  if (from == to) return x;
  Coords out;
  const size_t off = from.size() - to.size();
  for (size_t i = 0; i < to.size(); ++i)
    out.c.push_back(to[i] == 1 ? Ix::constant(0) : x.c[off + i]);
  if (numel(to) == 1) {
    out.flat = Ix::constant(0);
    out.has_flat = true;
  }
  return out;
}

// ---- step 2 and 3: the loop nest ---------------------------------------------------------------

constexpr int64_t kColumnReductionLimit = 4096;

class Emitter {
 public:
  Emitter(Builder& b, std::vector<PNode*> outputs) : b_(b), outputs_(std::move(outputs)) {}

  KernelPlan run() {
    analyse();
    // Elementwise groups first try one flat loop; if an operand needs per-axis coordinates,
    // the last axis becomes the inner loop (coordinates of the others are per row).
    if (row_reduce_.empty() && domain_.size() > 1) {
      KernelPlan flat = emit(/*flat=*/true);
      if (!uses_coordinates(flat)) return flat;
    }
    return emit(row_reduce_.empty() && domain_.size() <= 1);
  }

 private:
  Builder& b_;
  std::vector<PNode*> outputs_;
  std::vector<PNode*> row_reduce_, totals_;
  Shape domain_;
  std::vector<int64_t> raxes_;  // the reduced axes of the domain
  int passes_ = 0;              // row-reduction passes

  // per emission
  KernelPlan plan_;
  std::vector<Ix> dcoord_;      // canonical domain coordinates
  Ix dflat_;                    // canonical flat index
  std::vector<size_t> outer_axes_, inner_axes_;
  int pass_ = 0;                // current pass; -1: the epilogue
  int var_ = 0;
  struct MemoKey {
    int node;
    Coords at;
    bool epilogue;
    bool operator==(const MemoKey& o) const {
      return node == o.node && epilogue == o.epilogue && at == o.at;
    }
  };
  struct MemoHash {
    size_t operator()(const MemoKey& k) const {
      return k.at.hash() * 131 + static_cast<size_t>(k.node) * 2 + k.epilogue;
    }
  };
  struct Memo {
    Operand var;
    bool inner;
    int pass;
  };
  std::unordered_map<MemoKey, Memo, MemoHash> memo_;
  std::unordered_map<const PNode*, Operand> reduced_;  // row reduction -> its row value
  std::unordered_map<const PNode*, Operand> total_var_;
  struct InputReads {
    std::optional<Ix> index;  // the one index read
    bool several = false;     // read at more than one index
  };
  std::vector<InputReads> in_place_index_;  // per input
  std::vector<Operand> checked_;            // labels whose range is checked

  void analyse() {
    for (auto& p : b_.nodes) {
      PNode* n = p.get();
      for (PNode* x : n->in) {
        n->level = std::max(n->level, x->level);
        n->scalar = n->scalar || x->scalar;
      }
      if (n->k != PNode::K::Reduce) continue;
      const PNode* x = n->in[0];
      n->total = n->axes.size() == x->shape.size();
      if (n->total) {
        if (x->scalar) fail("a total of a total");
        n->scalar = true;
        totals_.push_back(n);
        continue;
      }
      if (x->scalar) fail("a row reduction reads a total");
      if (row_reduce_.empty()) {
        domain_ = x->shape;
        raxes_ = n->axes;
      } else if (x->shape != domain_ || n->axes != raxes_) {
        fail("row reductions over different axes or shapes");
      }
      n->level += 1;
      passes_ = std::max(passes_, n->level);
      row_reduce_.push_back(n);
    }
    std::stable_sort(row_reduce_.begin(), row_reduce_.end(),
                     [](const PNode* a, const PNode* b) { return a->level < b->level; });
    // A reduction that is not over a suffix of the axes -- a column reduction (the contiguous
    // last axis kept, e.g. a bias gradient summing the batch) or a kept axis between reduced
    // ones (a conv bias gradient: NCHW summed over N, H, W) -- reads its rows at a stride in
    // this loop nest: beyond a small size the library's reduction (contiguous, vectorised) is
    // faster. (LeNet's ReLU-gradient + bias-gradient group ran 3x slower fused than unfused.)
    if (!row_reduce_.empty()) {
      const int64_t first_reduced =
          raxes_.empty() ? static_cast<int64_t>(domain_.size())
                         : *std::min_element(raxes_.begin(), raxes_.end());
      bool strided = false;
      for (size_t a = static_cast<size_t>(first_reduced) + 1; a < domain_.size(); ++a)
        if (domain_[a] > 1 && std::find(raxes_.begin(), raxes_.end(), static_cast<int64_t>(a)) ==
                                  raxes_.end())
          strided = true;
      if (strided && numel(domain_) >= kColumnReductionLimit)
        fail("a strided (not suffix) reduction of " + std::to_string(numel(domain_)) +
             " elements");
    }
    if (row_reduce_.empty()) {
      // The domain: the largest value evaluated per element.
      for (PNode* o : outputs_)
        if (!o->scalar && numel(o->shape) > numel(domain_)) domain_ = o->shape;
      for (PNode* t : totals_)
        if (numel(t->in[0]->shape) > numel(domain_)) domain_ = t->in[0]->shape;
    }
  }

  // Does a statement of a pass read a decoded coordinate (c<axis>)?
  static bool uses_coordinates(const KernelPlan& p) {
    auto uses = [](const kir::Stmt& s) {
      const Ix& x = s.kind == kir::Stmt::Kind::Define ? s.expr.index : s.index;
      return x.uses(Var::Kind::Coord);
    };
    for (const kir::Pass& ps : p.passes)
      for (const auto* list : {&ps.pre, &ps.body, &ps.post})
        for (const kir::Stmt& s : *list)
          if (uses(s)) return true;
    return false;
  }

  // ---- statements ----

  std::vector<kir::Stmt>& row_list() {
    return pass_ < 0 ? plan_.epilogue : plan_.passes[static_cast<size_t>(pass_)].pre;
  }
  void statement(kir::Stmt s, bool inner) {
    if (inner && pass_ >= 0)
      plan_.passes[static_cast<size_t>(pass_)].body.push_back(std::move(s));
    else
      row_list().push_back(std::move(s));
  }
  Operand define(kir::Expr e, bool inner) {
    const int id = var_++;
    const DType d = e.dtype;
    statement(kir::define(id, std::move(e)), inner);
    return Operand::value(id, d);
  }

  struct Val {
    Operand e;
    bool inner;
  };

  static kir::Expr expr(kir::Expr::Op op, DType d, std::vector<Operand> args) {
    kir::Expr e;
    e.op = op;
    e.dtype = d;
    e.args = std::move(args);
    return e;
  }

  // The value of n at coordinates x (in n's shape).
  Val value(PNode* n, const Coords& x) {
    if (n->scalar && pass_ >= 0) fail("a value computed from a total is read per element");
    if (n->k == PNode::K::Literal) return {Operand::literal(n->value, n->dtype), false};
    MemoKey key{n->id, x, pass_ < 0};
    auto it = memo_.find(key);
    if (it != memo_.end() && (it->second.inner ? it->second.pass == pass_ : it->second.pass <= pass_))
      return {it->second.var, it->second.inner};
    Val v = compute(n, x);
    memo_[key] = Memo{v.e, v.inner, pass_};
    return v;
  }

  Val load(PNode* n, const Coords& x) {
    const Ix idx = linear(x, n->shape);
    InputReads& seen = in_place_index_[static_cast<size_t>(n->input)];
    if (!seen.index)
      seen.index = idx;
    else if (*seen.index != idx)
      seen.several = true;
    const bool in = idx.depends_inner();
    return {define(kir::load(n->input, n->dtype, idx), in), in};
  }

  Val compute(PNode* n, const Coords& x) {
    using K = PNode::K;
    using Op = kir::Expr::Op;
    auto operand = [&](size_t i) {
      PNode* a = n->in[i];
      return value(a, broadcast_coords(x, n->shape, a->shape));
    };
    const DType t = n->dtype;
    switch (n->k) {
      case K::Input:
        return load(n, x);
      case K::Literal:
        return {Operand::literal(n->value, n->dtype), false};
      case K::Unary: {
        Val a = operand(0);
        return {define(kir::unary(n->op, a.e), a.inner), a.inner};
      }
      case K::Binary: {
        Val a = operand(0), b = operand(1);
        const bool in = a.inner || b.inner;
        return {define(kir::binary(n->op, t, a.e, b.e), in), in};
      }
      case K::Compare: {
        Val a = operand(0), b = operand(1);
        const bool in = a.inner || b.inner;
        return {define(kir::compare(n->op, a.e, b.e), in), in};
      }
      case K::Logical: {
        Val a = operand(0), b = operand(1);
        const bool in = a.inner || b.inner;
        return {define(expr(n->op == "logical_and" ? Op::And : Op::Or, DType::boolean, {a.e, b.e}),
                       in),
                in};
      }
      case K::Not: {
        Val a = operand(0);
        return {define(expr(Op::Not, DType::boolean, {a.e}), a.inner), a.inner};
      }
      case K::Where: {
        Val c = operand(0), a = operand(1), b = operand(2);
        const bool in = c.inner || a.inner || b.inner;
        return {define(expr(Op::Select, t, {c.e, a.e, b.e}), in), in};
      }
      case K::Cast: {
        Val a = operand(0);
        return {define(expr(Op::Cast, t, {a.e}), a.inner), a.inner};
      }
      case K::FiniteOrZero: {
        Val a = operand(0);
        return {define(expr(Op::FiniteOrZero, t, {a.e}), a.inner), a.inner};
      }
      case K::Reshape:
        return value(n->in[0], reshape_coords(x, n->shape, n->in[0]->shape));
      case K::Broadcast:
        return operand(0);
      case K::Permute: {
        Coords y;
        y.c.resize(x.c.size());
        bool identity = true;
        for (size_t i = 0; i < n->perm.size(); ++i) {
          y.c[static_cast<size_t>(n->perm[i])] = x.c[i];
          identity = identity && n->perm[i] == static_cast<int64_t>(i);
        }
        if (identity) y = x;
        return value(n->in[0], y);
      }
      case K::Slice: {
        Coords y;
        size_t k = 0;
        for (size_t i = 0; i < n->starts.size(); ++i) {
          if (n->squeezed[i]) {
            y.c.push_back(Ix::constant(n->starts[i]));
            continue;
          }
          const Ix& c = x.c[k++];
          Ix e = c;
          if (n->steps[i] != 1) e = Ix::scale(e, n->steps[i]);
          if (c.is_const(0)) e = Ix::constant(0);
          if (n->starts[i] != 0)
            e = e.is_const(0) ? Ix::constant(n->starts[i])
                              : Ix::sum({Ix::constant(n->starts[i]), e});
          y.c.push_back(e);
        }
        return value(n->in[0], y);
      }
      case K::OneHot: {
        Coords y;
        for (size_t i = 0; i < x.c.size(); ++i)
          if (static_cast<int64_t>(i) != n->axis) y.c.push_back(x.c[i]);
        const Ix& cls = x.c[static_cast<size_t>(n->axis)];
        Val lab = value(n->in[0], y);
        if (std::find(checked_.begin(), checked_.end(), lab.e) == checked_.end()) {
          checked_.push_back(lab.e);  // a new load of the label: check its range
          statement(kir::check(lab.e, n->classes), lab.inner);
          plan_.checks = true;
        }
        const bool in = lab.inner || cls.depends_inner();
        kir::Expr e = expr(Op::ClassMatch, t, {lab.e});
        e.index = cls;
        return {define(std::move(e), in), in};
      }
      case K::Dropout: {
        Val a = operand(0);
        Ix flat = linear(x, n->shape);
        kir::Expr e = expr(Op::Dropout, t, {a.e});
        e.p = n->p;
        e.scale = 1.0 / (1.0 - n->p);
        e.seed = static_cast<uint64_t>(n->seed);
        e.index = flat;
        const bool in = a.inner || flat.depends_inner();
        return {define(std::move(e), in), in};
      }
      case K::Reduce: {
        if (n->total) {
          auto it = total_var_.find(n);
          if (it == total_var_.end() || pass_ >= 0) fail("a total read before it is complete");
          return {it->second, false};
        }
        // A row value: read at the row's own coordinates only.
        for (size_t i = 0; i < x.c.size(); ++i) {
          const bool reduced = std::find(raxes_.begin(), raxes_.end(), static_cast<int64_t>(i)) !=
                               raxes_.end();
          const Ix want = reduced || domain_[i] == 1 ? Ix::constant(0) : dcoord_[i];
          if (x.c[i] != want) fail("a row reduction read at another row's coordinates");
        }
        auto it = reduced_.find(n);
        if (it == reduced_.end()) fail("a row reduction read before its pass");
        return {it->second, false};
      }
    }
    fail("unknown planning node");
  }

  // The coordinates of a value of shape s evaluated once per domain element (numel(s) ==
  // numel(domain)) or once per row (numel(s) == rows).
  Coords root(const Shape& s, bool per_row) {
    if (!per_row) return s == domain_ ? domain_coords() : from_flat(dflat_, s);
    Shape keep = domain_;
    for (int64_t a : raxes_) keep[static_cast<size_t>(a)] = 1;
    Coords rowc;
    for (size_t i = 0; i < domain_.size(); ++i)
      rowc.c.push_back(keep[i] == 1 ? Ix::constant(0) : dcoord_[i]);
    rowc.flat = Ix::var(Var::row());
    rowc.has_flat = true;
    return reshape_coords(rowc, keep, s);
  }
  Coords domain_coords() const {
    Coords x;
    x.c = dcoord_;
    x.flat = dflat_;
    x.has_flat = true;
    return x;
  }

  // Decodes the domain axes of one loop (the row loop r or the inner loop j) into coordinates.
  void decode(const std::vector<size_t>& axes, bool inner, std::vector<kir::Stmt>& setup) {
    const Var loop = inner ? Var::inner_index() : Var::row();
    std::vector<size_t> real;
    for (size_t a : axes)
      if (domain_[a] != 1) real.push_back(a);
    if (real.size() == 1) {
      dcoord_[real[0]] = Ix::var(loop);
      return;
    }
    Shape sub;
    for (size_t a : real) sub.push_back(domain_[a]);
    auto parts = delinear(Ix::var(loop), sub);
    std::vector<Ix> names;
    for (size_t k = 0; k < real.size(); ++k) {
      const Var c = Var::coord(static_cast<int>(real[k]), inner);
      dcoord_[real[k]] = Ix::var(c);
      names.push_back(dcoord_[real[k]]);
      setup.push_back(kir::coord(c, parts[k]));
      // Row reductions over several axes: nested loops instead of div/mod per element.
      if (inner && !row_reduce_.empty()) plan_.inner_nest.emplace_back(c, domain_[real[k]]);
    }
    if (inner && !row_reduce_.empty()) plan_.inner_index = linear(names, sub);
  }

  KernelPlan emit(bool flat) {
    plan_ = KernelPlan{};
    memo_.clear();
    checked_.clear();
    reduced_.clear();
    total_var_.clear();
    var_ = 0;
    in_place_index_.assign(b_.inputs.size(), InputReads{});
    plan_.inputs = b_.inputs;
    plan_.anchor = b_.anchor;
    plan_.domain = domain_;
    const size_t rank = domain_.size();

    // Loop structure.
    outer_axes_.clear();
    inner_axes_.clear();
    for (size_t i = 0; i < rank; ++i) {
      bool inner;
      if (!row_reduce_.empty())
        inner = std::find(raxes_.begin(), raxes_.end(), static_cast<int64_t>(i)) != raxes_.end();
      else
        inner = flat || i + 1 == rank;
      (inner ? inner_axes_ : outer_axes_).push_back(i);
    }
    plan_.rows = 1;
    plan_.inner = 1;
    for (size_t a : outer_axes_) plan_.rows *= domain_[a];
    for (size_t a : inner_axes_) plan_.inner *= domain_[a];
    plan_.splittable = row_reduce_.empty();

    // Canonical coordinates: one loop axis is the loop variable itself, several are decoded.
    dcoord_.assign(rank, Ix::constant(0));
    decode(outer_axes_, false, plan_.row_setup);
    decode(inner_axes_, true, plan_.inner_setup);
    const bool prefix = std::all_of(outer_axes_.begin(), outer_axes_.end(),
                                    [&](size_t a) { return a < rank - inner_axes_.size(); });
    const Ix r = Ix::var(Var::row()), j = Ix::var(Var::inner_index());
    if (prefix)
      dflat_ = plan_.rows == 1    ? j
               : plan_.inner == 1 ? r
                                  : Ix::sum({Ix::scale(r, plan_.inner), j});
    else
      dflat_ = linear(dcoord_, domain_);

    plan_.passes.resize(static_cast<size_t>(passes_) + 1);

    // Row reductions, pass by pass.
    for (PNode* n : row_reduce_) {
      pass_ = n->level - 1;
      Val v = value(n->in[0], domain_coords());
      kir::Accumulator a;
      a.id = var_++;
      a.op = n->red;
      a.dtype = accumulator_type(n);
      a.value = v.e;
      auto& pass = plan_.passes[static_cast<size_t>(pass_)];
      pass.accs.push_back(a);
      const int id = var_++;
      pass.post.push_back(kir::define(id, finish(n, a, numel_reduced(n))));
      reduced_[n] = Operand::value(id, n->dtype);
    }

    // The final pass: outputs per element and per row, and the totals' inputs. The stores
    // come last, after every read: an output may share its buffer with an input read at the
    // same index (in_place_ok).
    pass_ = passes_;
    std::vector<kir::Stmt> body_stores, post_stores;
    const int64_t dn = numel(domain_);
    auto per_row = [&](const Shape& s) {
      if (numel(s) == dn) return false;
      if (!row_reduce_.empty() && numel(s) == plan_.rows) return true;
      fail("a value of " + std::to_string(numel(s)) + " elements in a domain of " +
           std::to_string(dn));
    };
    for (size_t k = 0; k < outputs_.size(); ++k) {
      PNode* o = outputs_[k];
      plan_.outputs.push_back({o->dtype, o->shape});
      if (o->scalar) continue;  // epilogue
      const bool row = per_row(o->shape);
      Coords x = root(o->shape, row);
      Val v = value(o, x);
      (row ? post_stores : body_stores)
          .push_back(kir::store(static_cast<int>(k), linear(x, o->shape), v.e));
    }
    for (PNode* t : totals_) {
      PNode* x = t->in[0];
      const bool row = per_row(x->shape);
      Val v = value(x, root(x->shape, row));
      kir::Accumulator a;
      a.id = static_cast<int>(plan_.totals.size());
      a.total = true;
      a.op = t->red;
      a.dtype = accumulator_type(t);
      a.value = v.e;
      (row ? plan_.passes.back().post_totals : plan_.passes.back().body_totals)
          .push_back(plan_.totals.size());
      plan_.totals.push_back(a);
    }

    auto& final_pass = plan_.passes.back();
    final_pass.body.insert(final_pass.body.end(), body_stores.begin(), body_stores.end());
    final_pass.post.insert(final_pass.post.end(), post_stores.begin(), post_stores.end());

    // The epilogue: totals and what is computed from them.
    pass_ = -1;
    for (size_t k = 0; k < totals_.size(); ++k) {
      const PNode* t = totals_[k];
      const int id = var_++;
      plan_.epilogue.push_back(kir::define(id, finish(t, plan_.totals[k], numel(t->in[0]->shape))));
      total_var_[t] = Operand::value(id, t->dtype);
    }
    for (size_t k = 0; k < outputs_.size(); ++k) {
      PNode* o = outputs_[k];
      if (!o->scalar) continue;
      if (numel(o->shape) != 1) fail("a total broadcast to an output");
      Coords zero;
      zero.c.assign(o->shape.size(), Ix::constant(0));
      Val v = value(o, zero);
      plan_.epilogue.push_back(kir::store(static_cast<int>(k), Ix::constant(0), v.e));
    }

    plan_.in_place_ok.assign(b_.inputs.size(), false);
    for (size_t i = 0; i < b_.inputs.size(); ++i) {
      const InputReads& rd = in_place_index_[i];
      plan_.in_place_ok[i] =
          rd.index && !rd.several && *rd.index == dflat_ && b_.inputs[i].numel() == dn;
    }
    plan_.describe = fmt::format("domain [{}], {} rows x {} inner, {} reduction pass{}, {} total{}",
                                 fmt::join(domain_, ","), plan_.rows, plan_.inner, passes_,
                                 passes_ == 1 ? "" : "es", plan_.totals.size(),
                                 plan_.totals.size() == 1 ? "" : "s");
    return plan_;
  }

  static int64_t numel_reduced(const PNode* n) {
    int64_t c = 1;
    for (int64_t a : n->axes) c *= n->in[0]->shape[static_cast<size_t>(a)];
    return c;
  }
  // Floats are summed and multiplied in f64, compared in their own dtype; all/any count in i32.
  static DType accumulator_type(const PNode* n) {
    if (n->red == ReduceOp::All || n->red == ReduceOp::Any) return DType::i32;
    if (n->red == ReduceOp::Max || n->red == ReduceOp::Min) return n->in[0]->dtype;
    return DType::f64;
  }
  // The reduction's value from its finished accumulator.
  static kir::Expr finish(const PNode* n, const kir::Accumulator& a, int64_t count) {
    kir::Expr e;
    e.op = kir::Expr::Op::Reduced;
    e.dtype = n->dtype;
    e.acc = a.id;
    e.total = a.total;
    e.red = a.op;
    e.mean = n->mean;
    e.count = count;
    return e;
  }
};

}  // namespace

std::optional<KernelPlan> plan_group(const GroupSpec& group, std::string* why) {
  try {
    Builder b(group);
    b.run();
    if (b.outputs.empty()) fail("no outputs");
    Emitter e(b, b.outputs);
    KernelPlan k = e.run();
    if (std::string problems = kir::verify(k); !problems.empty())
      fail("the kernel IR does not verify: " + problems.substr(0, problems.find('\n')));
    return k;
  } catch (const Fail& f) {
    if (why) *why = f.why;
    return std::nullopt;
  }
}

}  // namespace spora::passes
