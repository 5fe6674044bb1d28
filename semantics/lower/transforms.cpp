// Function transforms in the lowering: grad, value_and_grad, vjp, jvp (the derivative code is
// emitted by autodiff/ through semantics/ad_hooks.h), @custom_grad, and eager-mode helpers.
//
// A transform lowers one call of the function as a region of the current graph (with calls
// of defs inlined, so the region is first-order straight-line code plus structured control
// flow), then asks autodiff to emit the derivative after it. In eager mode the region is the
// tape of nodes that have already run.
#include <fmt/format.h>

#include <algorithm>

#include "semantics/ad_hooks.h"
#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

namespace {

struct PullbackData {
  std::vector<ir::Node*> region;
  ir::Graph* graph = nullptr;
  std::vector<ir::Node*> inputs;   // differentiable leaves of the primals
  std::vector<AV> primals;         // the primals (their structure)
  AV out_skeleton;
  ir::Node* out_node = nullptr;
};

bool float_leaf(const AV& v) { return v->kind == AK::Node && v->type->is_tensor() && is_float(v->type->dtype); }

// Field k of a model instance is a buffer: a `let` field holding a run-time tensor
// (BatchNorm's running statistics). It travels with the model like a parameter but is not
// differentiated: its gradient is none, so tree_map-based optimizers leave it alone.
bool is_buffer(const AVal& rec, size_t k) {
  if (rec.kind != AK::Record || !rec.model || k >= rec.names.size()) return false;
  for (const auto& f : rec.model->fields)
    if (f.name == rec.names[k]) return !f.is_param;
  return false;
}

}  // namespace

void Lowerer::pullback_nodes(const AVal& pb, std::vector<ir::Node*>& region, std::vector<ir::Node*>& others,
                              std::vector<AV>& values) {
  auto data = std::static_pointer_cast<PullbackData>(pb.payload);
  if (!data) return;
  region.insert(region.end(), data->region.begin(), data->region.end());
  others.insert(others.end(), data->inputs.begin(), data->inputs.end());
  if (data->out_node) others.push_back(data->out_node);
  values.insert(values.end(), data->primals.begin(), data->primals.end());
  if (data->out_skeleton) values.push_back(data->out_skeleton);
}

AV Lowerer::known(const AV& v) const {
  if (!eager_ || v->kind != AK::Node || !eager_value || !v->type->is_scalar()) return v;
  const Value* x = eager_value(v->node);
  if (!x || !x->is_tensor()) return v;
  const sem::Tensor& t = x->tensor;
  // Integers exactly: through a double, an i64 beyond 2^53 would change (and 2^63 overflow).
  if (is_integer(v->type->dtype) && t.numel() == 1) {
    if (t.dtype() == DType::i64) return make_int(t.data<int64_t>()[0]);
    if (t.dtype() == DType::i32) return make_int(t.data<int32_t>()[0]);
  }
  const double d = t.item();
  if (v->type->dtype == DType::boolean) return make_bool(d != 0);
  if (is_integer(v->type->dtype)) return make_int(static_cast<int64_t>(d));
  return v;
}

AV Lowerer::fresh_leaves(const AV& v, std::vector<ir::Node*>& leaves, lang::SourceRange r,
                         const std::string& path) {
  if (is_static_number(v)) {
    if (v->kind == AK::Bool) return v;
    ir::Node* n = to_node(make_float(v->kind == AK::Float ? v->f : static_cast<double>(v->i)), r);
    return fresh_leaves(make_node(n), leaves, r, path);
  }
  if (float_leaf(v)) {
    ir::Node* n = emit_node("identity", {v->node}, {}, r);
    n->name = path;
    leaves.push_back(n);
    return make_node(n);
  }
  if (v->kind == AK::Tuple || v->kind == AK::Record) {
    auto c = std::make_shared<AVal>(*v);
    for (size_t k = 0; k < c->elems.size(); ++k) {
      if (is_buffer(*c, k)) continue;
      std::string field;
      if (!path.empty())
        field = path + "." + (k < c->names.size() ? c->names[k] : std::to_string(k));
      c->elems[k] = fresh_leaves(c->elems[k], leaves, r, field);
    }
    return c;
  }
  if (v->kind == AK::Node && (v->type->kind == Type::Kind::Tuple || v->type->kind == Type::Kind::Record)) {
    // A packed run-time tuple/record: differentiate its unpacked leaves.
    AV skel = v;
    return fresh_leaves(unpack(skel, v->node, r), leaves, r, path);
  }
  return v;
}

AV Lowerer::with_leaves(const AV& v, const std::vector<ir::Node*>& adj, size_t& pos) {
  if (float_leaf(v)) return make_node(adj.at(pos++));
  if (v->kind == AK::Tuple || v->kind == AK::Record) {
    auto c = std::make_shared<AVal>(*v);
    for (size_t k = 0; k < c->elems.size(); ++k)
      c->elems[k] = is_buffer(*c, k) ? make_none() : with_leaves(c->elems[k], adj, pos);
    return c;
  }
  return make_none();  // integer, boolean and static values get no gradient
}

AV Lowerer::replace_leaves(const AV& v, const std::vector<ir::Node*>& nodes, size_t& pos) {
  if (float_leaf(v)) return make_node(nodes.at(pos++));
  if (v->kind == AK::Tuple || v->kind == AK::Record) {
    auto c = std::make_shared<AVal>(*v);
    for (size_t k = 0; k < c->elems.size(); ++k)
      if (!is_buffer(*c, k)) c->elems[k] = replace_leaves(c->elems[k], nodes, pos);
    return c;
  }
  return v;
}

namespace {
std::string function_label(const AV& fn) {
  switch (fn->kind) {
    case AK::Def: return fn->def->name;
    case AK::Closure: return fmt::format("lambda at line {}", fn->lambda->range.begin.line);
    case AK::Transform: return fn->s + "(" + function_label(fn->elems[0]) + ")";
    default: return describe(fn);
  }
}
}  // namespace

void Lowerer::emit_grad_checks(const AV& fn, const std::vector<Arg>& args, const std::vector<int64_t>& wrt,
                               const std::vector<AV>& primals, const std::vector<ir::Node*>& inputs,
                               const std::vector<ir::Node*>& region, ir::Node* out,
                               const std::vector<ir::Node*>& adj, lang::SourceRange r) {
  const std::string label = function_label(fn);
  const double eps = x64_ ? 1e-5 : 1e-2;
  auto op = [&](const char* p, std::vector<ir::Node*> xs, Attrs a = {}) { return emit_node(p, std::move(xs), std::move(a), r); };
  auto scalar = [&](double v, DType d) { return to_node(make_float(v), r, d); };
  const DType dt = out->type->dtype;
  // f at perturbed leaves (inlined again; prints inside f are part of the program's output).
  auto f_at = [&](const std::vector<ir::Node*>& leaves) {
    std::vector<Arg> a2 = args;
    size_t pos = 0;
    for (size_t k = 0; k < wrt.size(); ++k) a2[static_cast<size_t>(wrt[k])].value = replace_leaves(primals[k], leaves, pos);
    AV o = call(fn, std::move(a2), r);
    if (o->kind == AK::Tuple && !o->elems.empty()) o = o->elems[0];  // has_aux: (value, aux)
    return to_node(o, r);
  };
  // Relative error; below 1e-4 in magnitude the difference counts as absolute (a derivative
  // that is exactly zero is compared with finite differences that are only ~1e-11).
  auto rel = [&](ir::Node* a, ir::Node* b) {
    ir::Node* den = op("maximum", {op("maximum", {op("abs", {a}), op("abs", {b})}), scalar(1e-4, dt)});
    return op("div", {op("abs", {op("sub", {a, b})}), den});
  };
  auto report = [&](ir::Node* err, const std::string& what) {
    Attrs a;
    a.set("label", label + ": " + what);
    op("grad_check", {err}, a);
  };
  auto total = [&](ir::Node* x) {
    Attrs a;
    a.set("axis", std::monostate{});
    a.set("keepdims", false);
    return op("sum", {x}, a);
  };
  // 1. A random direction: central differences vs <grad, v>, and forward mode vs reverse.
  std::vector<ir::Node*> dirs, plus, minus;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Attrs a;
    a.set("mean", 0.0);
    a.set("std", 1.0);
    a.set("shape", inputs[i]->type->shape);
    a.set("seed", static_cast<int64_t>(7919 + i));
    a.set("dtype", inputs[i]->type->dtype);
    ir::Node* v = op("normal", {}, a);
    dirs.push_back(v);
    ir::Node* step = op("mul", {v, scalar(eps, inputs[i]->type->dtype)});
    plus.push_back(op("add", {inputs[i], step}));
    minus.push_back(op("sub", {inputs[i], step}));
  }
  ir::Node* fd = op("div", {op("sub", {f_at(plus), f_at(minus)}), scalar(2 * eps, dt)});
  ir::Node* an = scalar(0.0, dt);
  for (size_t i = 0; i < inputs.size(); ++i) an = op("add", {an, total(op("mul", {adj[i], dirs[i]}))});
  report(rel(fd, an), "finite differences along a random direction");
  if (auto& hooks = autodiff_hooks(); hooks.forward) {
    ir::Node* tangent = hooks.forward(module_, region, graph_, inputs, dirs, out);
    report(rel(tangent, an), "forward mode vs reverse mode");
  }
  // 2. Small inputs: the whole gradient, element by element.
  int64_t n = 0;
  for (ir::Node* x : inputs) n += x->type->numel();
  if (n > 16) return;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t m = inputs[i]->type->numel();
    for (int64_t j = 0; j < m; ++j) {
      Tensor e = Tensor::zeros(inputs[i]->type->dtype, inputs[i]->type->shape);
      e.set(j, eps);
      ir::Node* step = constant(Value(e), r);
      std::vector<ir::Node*> p = inputs, q = inputs;
      p[i] = op("add", {inputs[i], step});
      q[i] = op("sub", {inputs[i], step});
      ir::Node* fdj = op("div", {op("sub", {f_at(p), f_at(q)}), scalar(2 * eps, dt)});
      Tensor onehot = Tensor::zeros(inputs[i]->type->dtype, inputs[i]->type->shape);
      onehot.set(j, 1.0);
      ir::Node* anj = total(op("mul", {adj[i], constant(Value(onehot), r)}));
      report(rel(fdj, anj), "jacobian");
    }
  }
}

AV Lowerer::make_transform(const std::string& kind, std::vector<Arg> args, lang::SourceRange r) {
  auto t = std::make_shared<AVal>();
  t->kind = AK::Transform;
  t->s = kind;
  t->wrt = {0};
  bool have_fn = false;
  for (auto& a : args) {
    if (a.keyword.empty() && !have_fn) {
      if (!is_function(a.value)) fail(a.range, fmt::format("{} expects a function, not {}", kind, describe(a.value)));
      t->elems.push_back(a.value);
      have_fn = true;
    } else if (a.keyword == "wrt") {
      if (a.value->kind == AK::Int) {
        t->wrt = {a.value->i};
      } else if (a.value->kind == AK::Tuple) {
        t->wrt.clear();
        t->wrt_tuple = true;
        for (const auto& e : a.value->elems) {
          if (e->kind != AK::Int) fail(a.range, "wrt must be an integer or a tuple of integers");
          t->wrt.push_back(e->i);
        }
      } else {
        fail(a.range, fmt::format("wrt must be an integer or a tuple of integers, not {}", describe(a.value)));
      }
    } else if (a.keyword == "has_aux") {
      if (a.value->kind != AK::Bool) fail(a.range, fmt::format("has_aux must be true or false, not {}", describe(a.value)));
      t->b = a.value->b;
    } else {
      fail(a.range, fmt::format("{} takes a function and optional wrt= and has_aux=", kind));
    }
  }
  if (!have_fn) fail(r, fmt::format("{} expects a function", kind));
  if (kind == "hessian") {
    // JAX: hessian(f) = jacfwd(jacrev(f)), both with respect to the same argument.
    if (t->wrt_tuple)
      fail(r, "hessian takes one argument to differentiate: wrt must be an integer");
    if (t->b) fail(r, "hessian takes no has_aux");
    auto inner = std::make_shared<AVal>(*t);
    inner->s = "jacrev";
    t->s = "jacfwd";
    t->elems = {inner};
  }
  return t;
}

namespace {
// The float tensors of v (a value, or tuples and records of them; a model's buffers skipped), in
// order.
void collect_float_leaves(const AV& v, std::vector<ir::Node*>& out) {
  if (float_leaf(v)) {
    out.push_back(v->node);
  } else if (v->kind == AK::Tuple || v->kind == AK::Record) {
    for (size_t k = 0; k < v->elems.size(); ++k)
      if (!is_buffer(*v, k)) collect_float_leaves(v->elems[k], out);
  }
}

// v with each float tensor replaced by leaf(it), in collect_float_leaves' order; other values
// become none.
AV map_float_leaves(const AV& v, const std::function<AV(const AV&)>& leaf) {
  if (float_leaf(v)) return leaf(v);
  if (v->kind != AK::Tuple && v->kind != AK::Record) return make_none();
  auto c = std::make_shared<AVal>(*v);
  for (size_t k = 0; k < c->elems.size(); ++k)
    c->elems[k] = is_buffer(*c, k) ? make_none() : map_float_leaves(c->elems[k], leaf);
  return c;
}
}  // namespace

// A function's result as the jacobian sees it: static numbers made tensors, packed run-time
// tuples and records unpacked.
AV Lowerer::jacobian_output(const AV& v, lang::SourceRange r) {
  if (is_static_number(v)) return make_node(to_node(v, r));
  if (v->kind == AK::Node &&
      (v->type->kind == Type::Kind::Tuple || v->type->kind == Type::Kind::Record))
    return jacobian_output(unpack(v, v->node, r), r);
  if (v->kind != AK::Tuple && v->kind != AK::Record) return v;
  auto c = std::make_shared<AVal>(*v);
  for (size_t k = 0; k < c->elems.size(); ++k)
    if (!is_buffer(*c, k)) c->elems[k] = jacobian_output(c->elems[k], r);
  return c;
}

// JAX's jacfwd / jacrev on structures: the result has the structure of f's result, each float
// tensor y of it replaced by the jacobian of y with respect to the argument (wrt=k: the
// structure of argument k, each float tensor x of it replaced by dy/dx of shape y.shape +
// x.shape; wrt=(k, ...): a tuple of those).
AV Lowerer::call_jacobian(const AVal& t, std::vector<Arg> args, lang::SourceRange r) {
  auto& hooks = autodiff_hooks();
  const bool forward = t.s == "jacfwd";
  if (forward ? !hooks.forward : !hooks.reverse)
    fail(r, "automatic differentiation is not linked into this program");
  for (int64_t w : t.wrt)
    if (w < 0 || w >= static_cast<int64_t>(args.size()) ||
        !args[static_cast<size_t>(w)].keyword.empty())
      fail(r, fmt::format("{}: wrt={} but the function was called with {} positional argument{}",
                          t.s, w, args.size(), args.size() == 1 ? "" : "s"));
  std::vector<ir::Node*> inputs;  // the float tensors of every wrt argument, in order
  std::vector<AV> wrt_args;       // each wrt argument with its fresh leaves
  std::vector<size_t> first;      // each wrt argument's first leaf in inputs
  for (int64_t w : t.wrt) {
    Arg& a = args[static_cast<size_t>(w)];
    std::vector<ir::Node*> leaves;
    a.value = fresh_leaves(a.value, leaves, a.range);
    if (leaves.empty())
      fail(a.range, fmt::format("{} differentiates with respect to float tensors or numbers (or "
                                "tuples, records and models of them), but argument {} is {}",
                                t.s, w, describe(a.value)));
    first.push_back(inputs.size());
    wrt_args.push_back(a.value);
    inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  }
  first.push_back(inputs.size());
  const size_t begin = current_graph(r)->nodes.size();
  ir::Graph* region_graph = graph_;
  AV out;
  {
    const Restore<bool> inlining(ad_inline_, true);  // the function's calls are inlined
    out = call(t.elems[0], std::move(args), r);
  }
  if (out->kind == AK::Error) return out;
  AV aux;
  if (t.b) {
    if (out->kind == AK::Node && out->type->kind == Type::Kind::Tuple)
      out = unpack(out, out->node, r);
    if (out->kind != AK::Tuple || out->elems.size() != 2)
      fail(r,
           fmt::format(
               "{} with has_aux=true needs a function returning (value, aux), but it returned {}",
               t.s, describe(out)));
    aux = out->elems[1];
    out = out->elems[0];
  }
  out = jacobian_output(out, r);
  std::vector<ir::Node*> outs;
  collect_float_leaves(out, outs);
  if (outs.empty())
    fail(r, fmt::format("{} needs a function returning float tensors (or tuples and records of "
                        "them), but it returned {}",
                        t.s, describe(out)));
  std::vector<ir::Node*> region(region_graph->nodes.begin() + static_cast<long>(begin),
                                region_graph->nodes.end());
  auto reshape = [&](ir::Node* x, Shape shape) {
    Attrs a;
    a.set("shape", std::move(shape));
    return emit_node("reshape", {x}, a, r);
  };
  auto one_hot = [&](const Type& type, int64_t j) {
    Tensor e = Tensor::zeros(type.dtype, type.shape);
    if (j >= 0) e.set(j, 1.0);
    return constant(Value(e), r);
  };
  // parts[o][k][i]: the derivative of element i of output o (jacrev) or by element i of input
  // k (jacfwd), flattened.
  std::vector<std::vector<std::vector<ir::Node*>>> parts(
      outs.size(), std::vector<std::vector<ir::Node*>>(inputs.size()));
  try {
    if (forward) {
      for (size_t k = 0; k < inputs.size(); ++k)
        for (int64_t j = 0; j < inputs[k]->type->numel(); ++j) {
          std::vector<ir::Node*> tangents;
          for (size_t i = 0; i < inputs.size(); ++i)
            tangents.push_back(one_hot(*inputs[i]->type, i == k ? j : -1));
          for (size_t o = 0; o < outs.size(); ++o) {
            ir::Node* d = hooks.forward(module_, region, graph_, inputs, tangents, outs[o]);
            parts[o][k].push_back(reshape(d, {outs[o]->type->numel()}));
          }
        }
    } else {
      for (size_t o = 0; o < outs.size(); ++o)
        for (int64_t i = 0; i < outs[o]->type->numel(); ++i) {
          std::vector<ir::Node*> adj =
              hooks.reverse(module_, region, graph_, inputs, outs[o], one_hot(*outs[o]->type, i));
          for (size_t k = 0; k < inputs.size(); ++k)
            parts[o][k].push_back(reshape(adj[k], {inputs[k]->type->numel()}));
        }
    }
  } catch (const lang::UserError& e) {
    fail(r, e.what());
  }
  // d output o / d input k, of shape o.shape + k.shape.
  auto jacobian = [&](size_t o, size_t k) {
    const Type& ot = *outs[o]->type;
    const Type& it = *inputs[k]->type;
    Shape shape = ot.shape;
    shape.insert(shape.end(), it.shape.begin(), it.shape.end());
    if (parts[o][k].empty())  // an empty result or argument
      return constant(Value(Tensor::zeros(ot.dtype, shape)), r);
    Attrs a;
    a.set("axis", int64_t{forward ? 1 : 0});
    return reshape(emit_node("stack", parts[o][k], a, r), shape);  // [m, n] first
  };
  size_t o = 0;
  AV jac = map_float_leaves(out, [&](const AV&) {
    std::vector<AV> per_arg;
    for (size_t w = 0; w < wrt_args.size(); ++w) {
      std::vector<ir::Node*> js;
      for (size_t k = first[w]; k < first[w + 1]; ++k) js.push_back(jacobian(o, k));
      size_t pos = 0;
      per_arg.push_back(with_leaves(wrt_args[w], js, pos));
    }
    ++o;
    return t.wrt_tuple ? make_tuple(per_arg) : per_arg[0];
  });
  return aux ? make_tuple({jac, aux}) : jac;
}

AV Lowerer::call_transform(const AVal& t, std::vector<Arg> args, lang::SourceRange r) {
  if (t.s == "jacfwd" || t.s == "jacrev") return call_jacobian(t, std::move(args), r);
  auto& hooks = autodiff_hooks();
  if (!hooks.reverse) fail(r, "automatic differentiation is not linked into this program");
  for (int64_t w : t.wrt) {
    if (w < 0 || w >= static_cast<int64_t>(args.size()) || !args[static_cast<size_t>(w)].keyword.empty())
      fail(r, fmt::format("{}: wrt={} but the function was called with {} positional argument{}", t.s, w,
                          args.size(), args.size() == 1 ? "" : "s"));
  }
  // The differentiated function's parameter names name the leaves ("net.l1.w") and the
  // other tensor arguments ("x"), for the layers that refer to them (training steps,
  // parallel strategies); debug names only, the printed IR does not show them.
  const AV& f = t.elems.empty() ? nullptr : t.elems[0];
  auto param_name = [&](size_t i) -> std::string {
    if (f && f->kind == AK::Def && f->def && !f->self && i < f->def->params.size())
      return f->def->params[i].name;
    return "";
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const AV& v = args[i].value;
    if (args[i].keyword.empty() && v && v->kind == AK::Node && v->node && v->node->name.empty() &&
        std::find(t.wrt.begin(), t.wrt.end(), static_cast<int64_t>(i)) == t.wrt.end())
      v->node->name = param_name(i);
  }
  std::vector<std::vector<ir::Node*>> leaves(t.wrt.size());
  std::vector<AV> primals(t.wrt.size());
  for (size_t k = 0; k < t.wrt.size(); ++k) {
    Arg& a = args[static_cast<size_t>(t.wrt[k])];
    a.value = fresh_leaves(a.value, leaves[k], a.range, param_name(static_cast<size_t>(t.wrt[k])));
    primals[k] = a.value;
  }
  const size_t begin = current_graph(r)->nodes.size();
  ir::Graph* region_graph = graph_;
  const std::vector<Arg> check_args = grad_check_ ? args : std::vector<Arg>{};
  AV out;
  {
    const Restore<bool> inlining(ad_inline_, true);  // the function's calls are inlined
    out = call(t.elems[0], std::move(args), r);
  }
  if (out->kind == AK::Error) return out;
  // has_aux=true (JAX): f returns (value, aux); aux is passed through, not differentiated.
  AV aux;
  if (t.b) {
    if (out->kind == AK::Node && out->type->kind == Type::Kind::Tuple) out = unpack(out, out->node, r);
    if (out->kind != AK::Tuple || out->elems.size() != 2)
      fail(r, fmt::format("{} with has_aux=true needs a function returning (value, aux), but it returned {}", t.s,
                          describe(out)));
    aux = out->elems[1];
    out = out->elems[0];
  }
  if (is_static_number(out)) out = make_node(to_node(out, r));
  if (out->kind != AK::Node || !out->type->is_scalar() || !is_float(out->type->dtype))
    fail(r, fmt::format("{} needs a function returning a float scalar, but it returned {}", t.s, describe(out)));
  std::vector<ir::Node*> region(region_graph->nodes.begin() + static_cast<long>(begin), region_graph->nodes.end());
  std::vector<ir::Node*> inputs;
  for (const auto& l : leaves) inputs.insert(inputs.end(), l.begin(), l.end());
  ir::Node* dout = to_node(make_float(1.0), r, out->type->dtype);
  std::vector<ir::Node*> adj;
  try {
    adj = hooks.reverse(module_, region, graph_, inputs, out->node, dout);
  } catch (const lang::UserError& e) {
    fail(r, e.what());
  }
  if (grad_check_) emit_grad_checks(t.elems[0], check_args, t.wrt, primals, inputs, region, out->node, adj, r);
  std::vector<AV> grads;
  size_t pos = 0;
  for (size_t k = 0; k < t.wrt.size(); ++k) {
    grads.push_back(with_leaves(primals[k], adj, pos));
    // A distributed run (LowerOptions::materialize_models) pins layouts on the fields of the model
    // records a program builds: the gradient of a model is one too, a node even where the code
    // around it is inlined (an optimizer whose schedule is a closure), so ZeRO can cut it.
    AV& g = grads.back();
    if (materialize_models_ && !eager_ && g->kind == AK::Record && !g->record_name.empty() &&
        !g->elems.empty())
      g = unpack(g, pack(g, r), r);
  }
  AV g = t.wrt_tuple ? make_tuple(grads) : grads[0];
  if (t.s == "value_and_grad") return make_tuple({aux ? make_tuple({out, aux}) : out, g});
  return aux ? make_tuple({g, aux}) : g;
}

AV Lowerer::call_vjp(std::vector<Arg> args, lang::SourceRange r) {
  auto& hooks = autodiff_hooks();
  if (!hooks.reverse) fail(r, "automatic differentiation is not linked into this program");
  if (args.empty() || !args[0].keyword.empty() || !is_function(args[0].value))
    fail(r, "vjp expects a function and its arguments: vjp(f, x, ...)");
  AV fn = args[0].value;
  auto data = std::make_shared<PullbackData>();
  std::vector<Arg> call_args;
  for (size_t k = 1; k < args.size(); ++k) {
    if (!args[k].keyword.empty()) fail(args[k].range, "vjp takes the function's arguments positionally");
    AV p = fresh_leaves(args[k].value, data->inputs, args[k].range);
    data->primals.push_back(p);
    call_args.push_back(Arg{"", p, args[k].range});
  }
  const size_t begin = current_graph(r)->nodes.size();
  data->graph = graph_;
  AV out;
  {
    const Restore<bool> inlining(ad_inline_, true);  // the function's calls are inlined
    out = call(fn, std::move(call_args), r);
  }
  if (out->kind == AK::Error) return out;
  out = materialise_numbers(out, r);
  if (contains_function(out)) fail(r, "vjp of a function that returns a function is not supported");
  data->out_node = pack(out, r);
  data->out_skeleton = out;
  data->region.assign(graph_->nodes.begin() + static_cast<long>(begin), graph_->nodes.end());
  auto pb = std::make_shared<AVal>();
  pb->kind = AK::Pullback;
  pb->payload = data;
  return make_tuple({out, pb});
}

AV Lowerer::call_pullback(const AVal& pb, std::vector<Arg> args, lang::SourceRange r) {
  auto data = std::static_pointer_cast<PullbackData>(pb.payload);
  if (args.size() != 1 || !args[0].keyword.empty())
    fail(r, fmt::format("a pullback takes one cotangent (like the output, {})", describe(data->out_skeleton)));
  if (!ir::is_within(graph_, data->graph))
    fail(r, "a pullback can only be called where its vjp is visible (not from another function)");
  // The cotangent takes the output's structure; numbers take its dtype.
  AV ct = args[0].value;
  std::vector<ir::Node*> out_leaves, ct_leaves;
  flatten(data->out_skeleton, out_leaves, r, false);
  auto fill = [&](auto&& self, const AV& skel, const AV& c) -> void {
    if (skel->kind == AK::Node) {
      ir::Node* n = to_node(c, args[0].range, skel->type->is_tensor() ? std::optional<DType>(skel->type->dtype) : std::nullopt);
      if (!same_type(n->type, skel->type))
        fail(args[0].range, fmt::format("the cotangent has type {} but the output has type {}", n->type->str(),
                                        skel->type->str()));
      ct_leaves.push_back(n);
      return;
    }
    if (skel->kind == AK::Tuple || skel->kind == AK::Record) {
      if (c->kind != skel->kind || c->elems.size() != skel->elems.size())
        fail(args[0].range, fmt::format("the cotangent must have the output's structure ({})", describe(skel)));
      for (size_t k = 0; k < skel->elems.size(); ++k) self(self, skel->elems[k], c->elems[k]);
    }
  };
  fill(fill, data->out_skeleton, ct);
  size_t pos = 0;
  AV ct_struct = unflatten(data->out_skeleton, ct_leaves, pos);
  ir::Node* dout = pack(ct_struct, r);
  std::vector<ir::Node*> adj;
  try {
    adj = autodiff_hooks().reverse(module_, data->region, graph_, data->inputs, data->out_node, dout);
  } catch (const lang::UserError& e) {
    fail(r, e.what());
  }
  std::vector<AV> grads;
  size_t at = 0;
  for (const auto& p : data->primals) grads.push_back(with_leaves(p, adj, at));
  return make_tuple(grads);
}

AV Lowerer::call_jvp(std::vector<Arg> args, lang::SourceRange r) {
  auto& hooks = autodiff_hooks();
  if (!hooks.forward) fail(r, "automatic differentiation is not linked into this program");
  if (args.size() != 3) fail(r, "jvp takes a function, a tuple of primals and a tuple of tangents");
  for (const auto& a : args)
    if (!a.keyword.empty()) fail(a.range, "jvp takes its arguments positionally");
  AV fn = args[0].value;
  if (!is_function(fn)) fail(args[0].range, fmt::format("jvp expects a function, not {}", describe(fn)));
  if (args[1].value->kind != AK::Tuple || args[2].value->kind != AK::Tuple)
    fail(r, "jvp expects tuples of primals and tangents: jvp(f, (x,), (v,))");
  const auto& ps = args[1].value->elems;
  const auto& ts = args[2].value->elems;
  if (ps.size() != ts.size())
    fail(r, fmt::format("jvp got {} primals but {} tangents", ps.size(), ts.size()));
  std::vector<ir::Node*> inputs, tangents;
  std::vector<Arg> call_args;
  for (size_t k = 0; k < ps.size(); ++k) {
    std::vector<ir::Node*> leaves;
    AV p = fresh_leaves(ps[k], leaves, args[1].range);
    // Tangent leaves in the same order, each with its primal leaf's type.
    std::vector<ir::Node*> tl;
    auto fill = [&](auto&& self, const AV& skel, const AV& t) -> void {
      if (float_leaf(skel)) {
        ir::Node* n = to_node(t, args[2].range, skel->type->dtype);
        if (!same_type(n->type, skel->type))
          fail(args[2].range, fmt::format("tangent {} has type {} but its primal has type {}", k, n->type->str(),
                                          skel->type->str()));
        tl.push_back(n);
        return;
      }
      if ((skel->kind == AK::Tuple || skel->kind == AK::Record) && t->kind == skel->kind &&
          t->elems.size() == skel->elems.size()) {
        for (size_t e = 0; e < skel->elems.size(); ++e)
          if (!is_buffer(*skel, e)) self(self, skel->elems[e], t->elems[e]);  // buffers: no tangent
        return;
      }
      if (skel->kind == AK::Tuple || skel->kind == AK::Record)
        fail(args[2].range, fmt::format("tangent {} must have the structure of its primal ({})", k, describe(skel)));
    };
    fill(fill, p, ts[k]);
    inputs.insert(inputs.end(), leaves.begin(), leaves.end());
    tangents.insert(tangents.end(), tl.begin(), tl.end());
    call_args.push_back(Arg{"", p, args[1].range});
  }
  const size_t begin = current_graph(r)->nodes.size();
  ir::Graph* region_graph = graph_;
  AV out;
  {
    const Restore<bool> inlining(ad_inline_, true);  // the function's calls are inlined
    out = call(fn, std::move(call_args), r);
  }
  if (out->kind == AK::Error) return out;
  out = materialise_numbers(out, r);
  if (contains_function(out)) fail(r, "jvp of a function that returns a function is not supported");
  ir::Node* out_node = pack(out, r);
  std::vector<ir::Node*> region(region_graph->nodes.begin() + static_cast<long>(begin), region_graph->nodes.end());
  ir::Node* tout;
  try {
    tout = hooks.forward(module_, region, graph_, inputs, tangents, out_node);
  } catch (const lang::UserError& e) {
    fail(r, e.what());
  }
  return make_tuple({out, unpack(out, tout, r)});
}

// ------------------------------------------------------------------ recursion and decorators
void collect_names(const lang::Stmt* s, std::set<std::string>& out) {
  if (!s) return;
  collect_names(s->value.get(), out);
  collect_names(s->cond.get(), out);
  collect_names(s->then_block.get(), out);
  collect_names(s->else_block.get(), out);
  collect_names(s->body.get(), out);
}
void collect_names(const lang::Block* b, std::set<std::string>& out) {
  if (!b) return;
  for (const auto& s : b->stmts) collect_names(s.get(), out);
}
void collect_names(const lang::Expr* e, std::set<std::string>& out) {
  if (!e) return;
  if (e->kind == lang::ExprKind::Name) out.insert(e->name);
  for (const auto& x : e->elems) collect_names(x.get(), out);
  collect_names(e->callee.get(), out);
  for (const auto& x : e->args) collect_names(x.get(), out);
  for (const auto& k : e->kwargs) collect_names(k.value.get(), out);
  collect_names(e->object.get(), out);
  for (const auto& it : e->indices) {
    collect_names(it.index.get(), out);
    collect_names(it.start.get(), out);
    collect_names(it.stop.get(), out);
    collect_names(it.step.get(), out);
  }
  collect_names(e->operand.get(), out);
  collect_names(e->lhs.get(), out);
  collect_names(e->rhs.get(), out);
  collect_names(e->cond.get(), out);
  collect_names(e->then_expr.get(), out);
  collect_names(e->else_expr.get(), out);
  collect_names(e->body_expr.get(), out);
  collect_names(e->body_block.get(), out);
  for (const auto& p : e->params) collect_names(p.default_value.get(), out);
}

bool Lowerer::is_recursive(const lang::FuncDef* def) {
  if (auto it = recursive_.find(def); it != recursive_.end()) return it->second;
  // Does a chain of name references from def's body lead back to def? (Over the top-level
  // defs of all modules, by name; conservative.)
  std::map<std::string, std::vector<const lang::FuncDef*>> by_name;
  for (const auto& m : program_.modules)
    for (const auto& f : m->functions) by_name[f->name].push_back(f.get());
  std::set<const lang::FuncDef*> seen;
  std::vector<const lang::FuncDef*> work{def};
  bool rec = false;
  while (!work.empty() && !rec) {
    const lang::FuncDef* f = work.back();
    work.pop_back();
    std::set<std::string> names;
    collect_names(f->body.get(), names);
    collect_names(f->body_expr.get(), names);
    for (const auto& n : names) {
      auto it = by_name.find(n);
      if (it == by_name.end()) continue;
      for (const lang::FuncDef* g : it->second) {
        if (g == def) rec = true;
        if (seen.insert(g).second) work.push_back(g);
      }
    }
  }
  recursive_[def] = rec;
  return rec;
}

}  // namespace spora::sem::lower
