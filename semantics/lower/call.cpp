// Calls: dispatch on the callee, binding of arguments to a primitive's signature (with weak
// literal typing), built-in special forms, and model construction.
#include <fmt/format.h>

#include <algorithm>

#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

namespace {

using AttrKind = ParamSpec::AttrKind;

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "a compile-time integer";
    case AttrKind::Float: return "a compile-time number";
    case AttrKind::Bool: return "true or false";
    case AttrKind::String: return "a string";
    case AttrKind::Ints: return "a compile-time integer or tuple of integers";
    case AttrKind::IntsOrNone: return "none, or a compile-time integer or tuple of integers";
    case AttrKind::IntOrNone: return "none or a compile-time integer";
    case AttrKind::DType: return "a dtype (f32, f64, i32, i64, bool)";
    case AttrKind::Any: return "a compile-time value";
  }
  return "a value";
}

// Integer list from a static value: 3, (2, 3), or a constant integer tensor literal [2, 3].
std::optional<std::vector<int64_t>> static_ints(const AV& v) {
  if (v->kind == AK::Int) return std::vector<int64_t>{v->i};
  if (v->kind == AK::Tuple) {
    std::vector<int64_t> out;
    for (const auto& e : v->elems) {
      if (e->kind != AK::Int) return std::nullopt;
      out.push_back(e->i);
    }
    return out;
  }
  if (v->kind == AK::Node && v->node->is_constant() && v->node->value.is_tensor()) {
    const Tensor& t = v->node->value.tensor;
    if (!is_integer(t.dtype()) || t.rank() > 1) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<int64_t>(t.get(i)));
    return out;
  }
  return std::nullopt;
}

std::optional<Attr> to_attr(const AV& v, AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      if (v->kind == AK::Int) return Attr{v->i};
      return std::nullopt;
    case AttrKind::Float:
      if (v->kind == AK::Int) return Attr{static_cast<double>(v->i)};
      if (v->kind == AK::Float) return Attr{v->f};
      return std::nullopt;
    case AttrKind::Bool:
      if (v->kind == AK::Bool) return Attr{v->b};
      return std::nullopt;
    case AttrKind::String:
      if (v->kind == AK::Str) return Attr{v->s};
      return std::nullopt;
    case AttrKind::IntsOrNone:
      if (v->kind == AK::None) return Attr{std::monostate{}};
      [[fallthrough]];
    case AttrKind::Ints:
      if (auto xs = static_ints(v)) return Attr{*xs};
      return std::nullopt;
    case AttrKind::IntOrNone:
      if (v->kind == AK::None) return Attr{std::monostate{}};
      if (v->kind == AK::Int) return Attr{v->i};
      return std::nullopt;
    case AttrKind::DType:
      if (v->kind == AK::DType) return Attr{v->dtype};
      return std::nullopt;
    case AttrKind::Any:
      switch (v->kind) {
        case AK::None: return Attr{std::monostate{}};
        case AK::Int: return Attr{v->i};
        case AK::Float: return Attr{v->f};
        case AK::Bool: return Attr{v->b};
        case AK::Str: return Attr{v->s};
        case AK::DType: return Attr{v->dtype};
        default:
          if (auto xs = static_ints(v)) return Attr{*xs};
          return std::nullopt;
      }
  }
  return std::nullopt;
}

// Whether attribute `name` of `prim` may be given at run time: the primitive lists it under the
// facet "run_time_attrs" (a std::vector<std::string>; the data primitives' `seed`).
bool run_time_attr(const Primitive& prim, const std::string& name) {
  const auto* names = prim.facet<std::vector<std::string>>("run_time_attrs");
  return names && std::find(names->begin(), names->end(), name) != names->end();
}

bool tensorish(const AV& v) { return is_static_number(v) || (v->kind == AK::Node && v->type->is_tensor()); }

// 64-bit mix (splitmix64 finaliser): derives parameter seeds from a model seed and a path.
int64_t mix_seed(int64_t seed, int64_t salt) {
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(salt) + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) & 0x7FFFFFFFFFFFull);
}

// A primitive's arguments bound to its parameters (registry.h's ParamSpec).
struct PrimitiveArgs {
  std::vector<std::optional<Arg>> bound;  // per parameter
  std::vector<Arg> kwargs;                // for a Kwargs parameter
  std::optional<Arg> shard;               // `shard=` (parallel annotation, annotate.cpp)
};

PrimitiveArgs bind_primitive_args(Lowerer& L, const Primitive& prim, std::vector<Arg> args) {
  const auto& ps = prim.params;
  PrimitiveArgs out;
  std::optional<Arg>& shard = out.shard;
  std::vector<std::optional<Arg>>& bound = out.bound;
  std::vector<Arg>& kwargs = out.kwargs;
  // `shard=` unless the primitive has a parameter of that name.
  if (std::none_of(ps.begin(), ps.end(), [](const ParamSpec& p) { return p.name == "shard"; }))
    for (size_t i = args.size(); i-- > 0;)
      if (args[i].keyword == "shard") {
        if (shard)
          L.fail(shard->range, fmt::format("argument 'shard' of {} is given twice", prim.name));
        shard = std::move(args[i]);
        args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      }
  bound.resize(ps.size());
  const bool takes_kwargs = !ps.empty() && ps.back().kind == ParamSpec::Kind::Kwargs;
  const size_t n_positional = ps.size() - (takes_kwargs ? 1 : 0);
  size_t positional = 0;
  for (auto& a : args) {
    size_t k;
    if (a.keyword.empty()) {
      k = positional++;
      if (k >= n_positional)
        L.fail(a.range, fmt::format("{} takes at most {} argument{} but {} were given", prim.name,
                                    n_positional, n_positional == 1 ? "" : "s", args.size()));
    } else {
      k = 0;
      while (k < n_positional && ps[k].name != a.keyword) ++k;
      if (k == n_positional && takes_kwargs) {
        for (const auto& other : kwargs)
          if (other.keyword == a.keyword)
            L.fail(a.range,
                   fmt::format("argument '{}' of {} is given twice", a.keyword, prim.name));
        kwargs.push_back(std::move(a));
        continue;
      }
      if (k == n_positional) {
        std::string names;
        for (const auto& p : ps) names += (names.empty() ? "" : ", ") + p.name;
        L.fail(a.range, fmt::format("{} has no parameter named '{}' (parameters: {})", prim.name,
                                    a.keyword, names));
      }
      if (bound[k])
        L.fail(a.range, fmt::format("parameter '{}' of {} is given twice", a.keyword, prim.name));
    }
    bound[k] = std::move(a);
  }
  return out;
}

}  // namespace

ir::Node* Lowerer::emit_node(const std::string& prim_name, std::vector<ir::Node*> inputs,
                             Attrs attrs, lang::SourceRange r) {
  const Primitive* prim = Registry::instance().find(prim_name);
  if (!prim) throw lang::InternalError("unknown primitive '" + prim_name + "'");
  if (in_amp()) inputs = amp_cast_inputs(*prim, std::move(inputs), r);
  std::vector<TypeP> types;
  for (auto* n : inputs) types.push_back(n->type);
  TypeP out;
  try {
    out = prim->infer(types, attrs);
  } catch (const lang::UserError& e) {
    fail(r, e.what());
  }
  return module_.add_apply(current_graph(r), prim, std::move(inputs), std::move(attrs), out,
                           loc(r));
}

AV Lowerer::emit(const std::string& prim, std::vector<ir::Node*> inputs, Attrs attrs,
                 lang::SourceRange r) {
  return make_node(emit_node(prim, std::move(inputs), std::move(attrs), r));
}

AV Lowerer::call_primitive(const Primitive& prim, std::vector<Arg> args, lang::SourceRange r,
                           std::optional<DType> init_dtype, const Shape* init_shape,
                           std::optional<int64_t> init_seed) {
  const auto& ps = prim.params;
  PrimitiveArgs bound_args = bind_primitive_args(*this, prim, std::move(args));
  const std::vector<std::optional<Arg>>& bound = bound_args.bound;
  const std::vector<Arg>& kwargs = bound_args.kwargs;
  const std::optional<Arg>& shard = bound_args.shard;
  // Initialiser context (a model's `param w: f32[3, 4] = normal(0.0, 0.02)`): the declared
  // shape, dtype and a derived seed fill the parameters the call left out.
  std::vector<ir::Node*> inputs;
  std::vector<std::pair<size_t, AV>> tensor_args;
  Attrs attrs;
  // The dtype weak literals take: that of the first run-time tensor argument.
  std::optional<DType> ctx;
  for (size_t k = 0; k < ps.size(); ++k) {
    if (!bound[k]) continue;
    const AV& v = bound[k]->value;
    if (ps[k].kind == ParamSpec::Kind::Input || ps[k].kind == ParamSpec::Kind::OptionalInput) {
      if (v->kind == AK::Node && v->type->is_tensor() && !ctx) ctx = v->type->dtype;
    } else if (ps[k].kind == ParamSpec::Kind::InputList && v->kind == AK::Tuple) {
      for (const auto& e : v->elems)
        if (e->kind == AK::Node && e->type->is_tensor() && !ctx) ctx = e->type->dtype;
    }
  }
  auto materialise = [&](const AV& v, lang::SourceRange ar, const std::string& pname) -> ir::Node* {
    if (!tensorish(v))
      fail(ar, fmt::format("argument '{}' of {} must be a tensor, not {}", pname, prim.name, describe(v)));
    if (v->kind == AK::Node) return v->node;
    std::optional<DType> dt = ctx;
    if (v->kind == AK::Float && dt && !is_float(*dt)) dt = float_dtype();
    if (v->kind == AK::Bool && dt && *dt != DType::boolean) dt = std::nullopt;
    if (v->kind == AK::Int && dt && *dt == DType::boolean) dt = std::nullopt;
    return to_node(v, ar, dt);
  };
  bool skipped_optional = false;
  std::vector<ir::Node*> run_time_attrs;  // appended to the inputs, after all the others
  AV value_arg;  // the first Value argument with a structure (a model, a tuple)
  for (size_t k = 0; k < ps.size(); ++k) {
    const ParamSpec& p = ps[k];
    switch (p.kind) {
      case ParamSpec::Kind::Input:
        if (!bound[k]) fail(r, fmt::format("missing argument '{}' of {}", p.name, prim.name));
        inputs.push_back(materialise(bound[k]->value, bound[k]->range, p.name));
        break;
      case ParamSpec::Kind::OptionalInput:
        if (!bound[k] || bound[k]->value->kind == AK::None) {
          skipped_optional = true;
          break;
        }
        if (skipped_optional)
          fail(bound[k]->range, fmt::format("{}: '{}' needs the optional inputs before it", prim.name, p.name));
        inputs.push_back(materialise(bound[k]->value, bound[k]->range, p.name));
        break;
      case ParamSpec::Kind::InputList: {
        if (!bound[k]) fail(r, fmt::format("missing argument '{}' of {}", p.name, prim.name));
        const AV& v = bound[k]->value;
        if (v->kind == AK::Tuple) {
          for (const auto& e : v->elems) inputs.push_back(materialise(e, bound[k]->range, p.name));
        } else if (v->kind == AK::Node && v->type->kind == Type::Kind::Tuple) {
          for (size_t e = 0; e < v->type->elems.size(); ++e) {
            Attrs a;
            a.set("index", static_cast<int64_t>(e));
            inputs.push_back(emit_node("tuple_get", {v->node}, a, bound[k]->range));
          }
        } else {
          fail(bound[k]->range, fmt::format("argument '{}' of {} must be a tuple of tensors, not {}", p.name,
                                            prim.name, describe(v)));
        }
        break;
      }
      case ParamSpec::Kind::Value: {
        if (!bound[k]) fail(r, fmt::format("missing argument '{}' of {}", p.name, prim.name));
        const AV& v = bound[k]->value;
        if (contains_function(v))
          fail(bound[k]->range, fmt::format("argument '{}' of {} must be a value, not {}", p.name, prim.name, describe(v)));
        inputs.push_back(to_node(v, bound[k]->range));
        if (!value_arg && (v->kind == AK::Record || v->kind == AK::Tuple)) value_arg = materialise_numbers(v, bound[k]->range);
        break;
      }
      case ParamSpec::Kind::Kwargs: {
        std::string names;
        for (const Arg& a : kwargs) {
          if (contains_function(a.value))
            fail(a.range, fmt::format("argument '{}' of {} must be a value, not {}", a.keyword, prim.name, describe(a.value)));
          inputs.push_back(to_node(a.value, a.range));
          names += (names.empty() ? "" : ",") + a.keyword;
        }
        attrs.set(p.name, names);
        break;
      }
      case ParamSpec::Kind::Attr: {
        if (!bound[k]) {
          if (p.name == "shape" && init_shape) {
            attrs.set(p.name, *init_shape);
          } else if (p.name == "dtype" && init_dtype) {
            attrs.set(p.name, *init_dtype);
          } else if (p.name == "seed" && init_seed) {
            attrs.set(p.name, *init_seed);
          } else if (p.default_value) {
            if (p.default_written) attrs.set(p.name, *p.default_value);
          } else {
            fail(r, fmt::format("missing argument '{}' of {}", p.name, prim.name));
          }
          break;
        }
        const AV& v = bound[k]->value;
        if (p.attr_kind == AttrKind::Int && v->kind == AK::Node && v->type->is_scalar() &&
            is_integer(v->type->dtype) && run_time_attr(prim, p.name)) {
          attrs.set(p.name, std::monostate{});
          run_time_attrs.push_back(v->node);
          break;
        }
        auto a = to_attr(v, p.attr_kind);
        if (!a)
          fail(bound[k]->range, fmt::format("argument '{}' of {} must be {}, not {}", p.name, prim.name,
                                            attr_kind_name(p.attr_kind), describe(bound[k]->value)));
        attrs.set(p.name, *a);
        break;
      }
    }
  }
  if (x64_) {
    Attrs wide;
    for (const auto& [n, a] : attrs.items()) {
      if (const DType* d = std::get_if<DType>(&a)) wide.set(n, widen(*d));
      else wide.set(n, a);
    }
    attrs = wide;
  }
  inputs.insert(inputs.end(), run_time_attrs.begin(), run_time_attrs.end());
  if (shard) inputs = shard_inputs(prim.name, std::move(inputs), *shard);
  AV result = emit(prim.name, std::move(inputs), std::move(attrs), r);
  // A primitive that returns the type of its Value argument (`load(path, like=net)`) gives a
  // value of that argument's structure: a model stays a model, with its methods.
  if (value_arg && same_type(result->type, packed_type(value_arg))) return unpack(value_arg, result->node, r);
  return result;
}

AV Lowerer::call(AV callee, std::vector<Arg> args, lang::SourceRange r) {
  switch (callee->kind) {
    case AK::Builtin:
      if (callee->prim && callee->s != "print") return call_primitive(*callee->prim, std::move(args), r);
      return call_builtin(callee->s, std::move(args), r);
    case AK::Def: return call_def(*callee, std::move(args), r);
    case AK::Closure: return call_closure(*callee, std::move(args), r);
    case AK::ModelClass: return construct_model(*callee, std::move(args), r);
    case AK::Record:
      if (callee->model) {
        if (callee->stage >= 0)  // a sub-model field under @stage(k) (annotate.cpp)
          for (Arg& a : args) a.value = enter_stage(a.value, callee->stage, a.range);
        AV fwd = eval_attribute(callee, "forward", r);
        return call_def(*fwd, std::move(args), r);
      }
      break;
    case AK::Transform: return call_transform(*callee, std::move(args), r);
    case AK::Pullback: return call_pullback(*callee, std::move(args), r);
    case AK::Union:
      return call_union(*callee, std::move(args), r);
    case AK::Error: return callee;
    // `bool` names the dtype as a value (`cast(x, bool)`) and the conversion when called, as
    // `int` and `float` do.
    case AK::DType:
      if (callee->dtype == DType::boolean) return call_builtin("bool", std::move(args), r);
      break;
    default: break;
  }
  fail(r, fmt::format("{} is not callable", describe(callee)));
}

AV Lowerer::call_builtin(const std::string& name, std::vector<Arg> args, lang::SourceRange r) {
  auto want = [&](size_t n) {
    for (const auto& a : args)
      if (!a.keyword.empty()) fail(a.range, fmt::format("{} takes no keyword arguments", name));
    if (args.size() != n)
      fail(r, fmt::format("{} takes {} argument{} but {} were given", name, n, n == 1 ? "" : "s", args.size()));
  };
  if (name == "print") {
    std::vector<ir::Node*> xs;
    for (const auto& a : args) {
      if (!a.keyword.empty()) fail(a.range, "print takes no keyword arguments");
      if (contains_function(a.value)) fail(a.range, fmt::format("cannot print {}", describe(a.value)));
      // `none` and a dtype print as their names.
      if (a.value->kind == AK::None) {
        xs.push_back(constant(Value::string("none"), a.range));
      } else if (a.value->kind == AK::DType) {
        xs.push_back(constant(Value::string(std::string(dtype_name(a.value->dtype))), a.range));
      } else {
        xs.push_back(to_node(a.value, a.range));
      }
    }
    emit("print", xs, {}, r);
    return make_none();
  }
  if (name == "len") {
    want(1);
    const AV& v = args[0].value;
    if (v->kind == AK::Tuple) return make_int(static_cast<int64_t>(v->elems.size()));
    if (v->kind == AK::Node && v->type->kind == Type::Kind::Tuple) return make_int(static_cast<int64_t>(v->type->elems.size()));
    if (v->kind == AK::Node && v->type->is_tensor() && v->type->rank() > 0) return make_int(v->type->shape[0]);
    fail(args[0].range, fmt::format("len() of {} is not defined", describe(v)));
  }
  if (name == "shape") {
    want(1);
    return eval_attribute(args[0].value, "shape", args[0].range);
  }
  if (name == "int" || name == "float" || name == "bool") {
    want(1);
    const AV& v = args[0].value;
    if (is_static_number(v)) {
      double d = v->kind == AK::Float ? v->f : v->kind == AK::Int ? static_cast<double>(v->i) : v->b;
      if (name == "int") return make_int(static_cast<int64_t>(d));
      if (name == "float") return make_float(d);
      return make_bool(d != 0);
    }
    if (v->kind == AK::Node && v->type->is_tensor()) {
      Attrs a;
      a.set("dtype", name == "int" ? DType::i32 : name == "float" ? float_dtype() : DType::boolean);
      return emit("cast", {v->node}, a, r);
    }
    fail(args[0].range, fmt::format("{}() of {} is not defined", name, describe(v)));
  }
  if (name == "range") fail(r, "range(...) can only be iterated by a for loop: `for i in range(n) { ... }`");
  if (name == "grad" || name == "value_and_grad" || name == "jacfwd" || name == "jacrev" ||
      name == "hessian")
    return make_transform(name, std::move(args), r);
  if (name == "tree_map") {
    // tree_map(f, t1, t2, ...): f applied leaf by leaf to trees of one structure (tuples,
    // records, models); static leaves are kept from t1 (JAX's tree_util.tree_map).
    if (args.size() < 2) fail(r, "tree_map takes a function and at least one tree");
    for (const auto& a : args)
      if (!a.keyword.empty()) fail(a.range, "tree_map takes no keyword arguments");
    const AV f = args[0].value;
    if (!is_function(f)) fail(args[0].range, fmt::format("tree_map expects a function, not {}", describe(f)));
    auto rec = [&](auto&& self, std::vector<AV> leaves) -> AV {
      const AV& first = leaves[0];
      if (first->kind == AK::Tuple || first->kind == AK::Record) {
        for (size_t k = 1; k < leaves.size(); ++k)
          if (leaves[k]->kind != first->kind || leaves[k]->elems.size() != first->elems.size())
            fail(args[k + 1].range, fmt::format("tree_map: tree {} does not have the structure of the first ({} vs {})",
                                                k + 1, describe(leaves[k]), describe(first)));
        auto c = std::make_shared<AVal>(*first);
        for (size_t e = 0; e < first->elems.size(); ++e) {
          std::vector<AV> sub;
          for (const auto& l : leaves) sub.push_back(l->elems[e]);
          c->elems[e] = self(self, sub);
        }
        return c;
      }
      if (first->kind == AK::Node && first->type->is_tensor()) {
        std::vector<Arg> call_args;
        for (const auto& l : leaves) {
          if (l->kind == AK::None) return first;  // no gradient for this leaf: keep it
          call_args.push_back(Arg{"", l, r});
        }
        return call(f, std::move(call_args), r);
      }
      return first;
    };
    std::vector<AV> trees;
    for (size_t k = 1; k < args.size(); ++k) trees.push_back(args[k].value);
    return rec(rec, trees);
  }
  if (name == "tree_leaves") {
    // tree_leaves(t): the run-time tensor leaves of a tree (tuples, records, models) as a
    // tuple, in tree_map's order; static and none leaves left out (JAX's tree_leaves). Iterating
    // the tuple unrolls, so a loop folds a tree (std.amp's all_finite).
    if (args.size() != 1 || !args[0].keyword.empty()) fail(r, "tree_leaves takes one tree");
    std::vector<AV> leaves;
    auto rec = [&](auto&& self, const AV& v) -> void {
      if (v->kind == AK::Tuple || v->kind == AK::Record) {
        for (const AV& e : v->elems) self(self, e);
      } else if (v->kind == AK::Node && v->type->is_tensor()) {
        leaves.push_back(v);
      }
    };
    rec(rec, args[0].value);
    return make_tuple(std::move(leaves));
  }
  if (name == "replace") {
    // replace(m, field=value, ...): a copy of record or model m with the named fields
    // (parameters, buffers, sub-models) replaced by values of the same structure and types
    // (Python's dataclasses.replace, Flax's .replace).
    if (args.empty() || !args[0].keyword.empty()) fail(r, "replace takes a record and field=value arguments");
    const AV& rec = args[0].value;
    if (rec->kind != AK::Record) fail(args[0].range, fmt::format("replace expects a record or model, not {}", describe(rec)));
    auto c = std::make_shared<AVal>(*rec);
    for (size_t k = 1; k < args.size(); ++k) {
      const Arg& a = args[k];
      if (a.keyword.empty()) fail(a.range, "replace takes field=value arguments after the record");
      size_t f = 0;
      while (f < c->names.size() && c->names[f] != a.keyword) ++f;
      if (f == c->names.size()) {
        std::string fields;
        for (const auto& n : c->names) fields += (fields.empty() ? "" : ", ") + n;
        fail(a.range, fmt::format("{} has no field '{}' (fields: {})", describe(rec), a.keyword, fields));
      }
      if (skeleton_key(a.value) != skeleton_key(c->elems[f]))
        fail(a.range, fmt::format("replace: field '{}' is {} but the new value is {}", a.keyword,
                                  describe(c->elems[f]), describe(a.value)));
      c->elems[f] = a.value;
    }
    return c;
  }
  if (name == "vjp") return call_vjp(std::move(args), r);
  if (name == "shard") return call_shard(std::move(args), r);
  if (name == "jvp") return call_jvp(std::move(args), r);
  if (name == "set_mode" || name == "set_device" || name == "set_amp" || name == "set_parallel")
    fail(r,
         fmt::format("{}(...) must be among the first statements of main (set_mode, set_device, "
                     "set_amp and set_parallel come before anything runs)",
                     name));
  fail(r, fmt::format("'{}' is not available in this build of Spora yet", name));
}

AV Lowerer::construct_model(const AVal& cls, std::vector<Arg> args, lang::SourceRange r) {
  const lang::ModelDef& md = *cls.model;
  LongLived parameters;  // eager mode initialises them now: the allocator's long-lived pool
  Env env;
  env.module = cls.module;
  env.push();
  // Constructor arguments (static hyper-parameters or run-time values), plus `seed`.
  std::vector<AV> bound(md.params.size());
  int64_t seed = mix_seed(0, model_counter_++);
  bool seed_given = false;
  size_t positional = 0;
  for (auto& a : args) {
    size_t k;
    if (a.keyword.empty()) {
      k = positional++;
      if (k >= md.params.size())
        fail(a.range, fmt::format("model '{}' takes {} argument{} but {} were given", md.name, md.params.size(),
                                  md.params.size() == 1 ? "" : "s", args.size()));
    } else {
      if (a.keyword == "seed") {
        bool declared = false;
        for (const auto& p : md.params) declared = declared || p.name == "seed";
        if (!declared) {
          if (a.value->kind != AK::Int) fail(a.range, fmt::format("seed must be a compile-time integer, not {}", describe(a.value)));
          seed = a.value->i;
          seed_given = true;
          continue;
        }
      }
      k = 0;
      while (k < md.params.size() && md.params[k].name != a.keyword) ++k;
      if (k == md.params.size()) {
        std::string names;
        for (const auto& p : md.params) names += (names.empty() ? "" : ", ") + p.name;
        fail(a.range, fmt::format("model '{}' has no parameter named '{}' (parameters: {}{}seed)", md.name,
                                  a.keyword, names, names.empty() ? "" : ", "));
      }
    }
    if (bound[k]) fail(a.range, fmt::format("parameter '{}' of model '{}' is given twice", md.params[k].name, md.name));
    bound[k] = a.value;
  }
  (void)seed_given;
  auto rec = std::make_shared<AVal>();
  rec->kind = AK::Record;
  rec->record_name = md.name;
  rec->model = &md;
  for (size_t k = 0; k < md.params.size(); ++k) {
    const auto& p = md.params[k];
    AV v = bound[k];
    if (!v) {
      if (!p.default_value) fail(r, fmt::format("missing argument '{}' of model '{}'", p.name, md.name));
      v = eval(*p.default_value, env);
    }
    if (p.type) v = check_annotation(v, *p.type, env, fmt::format("argument '{}' of model '{}'", p.name, md.name), r);
    declare(env, p.name, Binding{v, false, p.range});
    rec->statics.emplace_back(p.name, v);
  }
  rec->statics.emplace_back("seed", make_int(seed));
  for (size_t f = 0; f < md.fields.size(); ++f) {
    const auto& fd = md.fields[f];
    const int64_t field_seed = mix_seed(seed, static_cast<int64_t>(f) + 1);
    AV v;
    if (fd.init && fd.init->kind == lang::ExprKind::Call) {
      AV callee = eval(*fd.init->callee, env);
      std::vector<Arg> cargs;
      for (const auto& a : fd.init->args) cargs.push_back(Arg{"", eval(*a, env), a->range});
      for (const auto& k : fd.init->kwargs) cargs.push_back(Arg{k.name, eval(*k.value, env), k.value->range});
      if (callee->kind == AK::Builtin && callee->prim && fd.type) {
        TypeP t = resolve_type(*fd.type, env);
        v = call_primitive(*callee->prim, std::move(cargs), fd.init->range, t->dtype, &t->shape, field_seed);
      } else if (callee->kind == AK::ModelClass) {
        bool has_seed = false;
        for (const auto& a : cargs) has_seed = has_seed || a.keyword == "seed";
        if (!has_seed) cargs.push_back(Arg{"seed", make_int(field_seed), fd.init->range});
        v = call(callee, std::move(cargs), fd.init->range);
      } else {
        // An initialiser written in Spora (std.nn's xavier_uniform): like a primitive's, its
        // `shape`, `dtype` and `seed` parameters default to the field's type and seed.
        if (callee->kind == AK::Def && fd.type) {
          TypeP t = resolve_type(*fd.type, env);
          std::vector<AV> dims;
          for (int64_t d : t->shape) dims.push_back(make_int(d));
          const std::pair<const char*, AV> defaults[] = {
              {"shape", make_tuple(dims)}, {"dtype", make_dtype(t->dtype)}, {"seed", make_int(field_seed)}};
          for (const auto& [name, value] : defaults) {
            bool declared = false, given = false;
            for (const auto& p : callee->def->params) declared = declared || p.name == name;
            for (const auto& a : cargs) given = given || a.keyword == name;
            if (declared && !given) cargs.push_back(Arg{name, value, fd.init->range});
          }
        }
        v = call(callee, std::move(cargs), fd.init->range);
      }
    } else if (fd.init) {
      v = eval(*fd.init, env);
    } else if (fd.type) {
      TypeP t = resolve_type(*fd.type, env);
      Attrs a;
      a.set("shape", t->shape);
      a.set("dtype", t->dtype);
      v = emit("zeros", {}, a, fd.range);
    } else {
      fail(fd.range, fmt::format("field '{}' needs a type or an initial value", fd.name));
    }
    // A `let` field holding a run-time tensor is a buffer (BatchNorm's running statistics): a
    // field of the record like a parameter, but not differentiated (transforms.cpp).
    const bool buffer = !fd.is_param && v->kind == AK::Node && v->type->is_tensor();
    if (fd.type && (fd.is_param || buffer))
      v = check_annotation(v, *fd.type, env,
                           fmt::format("{} '{}' of model '{}'", buffer ? "buffer" : "parameter", fd.name, md.name),
                           fd.init ? fd.init->range : fd.range);
    if (fd.is_param && v->kind != AK::Node && v->kind != AK::Record && v->kind != AK::Tuple)
      fail(fd.init ? fd.init->range : fd.range,
           fmt::format("parameter '{}' of model '{}' must be a tensor or a model, not {}", fd.name, md.name, describe(v)));
    // `@stage(k) param l2 = Dense(...)`: calls of l2 wrap their tensor arguments (annotate.cpp).
    if (const std::optional<int64_t> stage = stage_of(fd.decorators, cls.module)) {
      if (v->kind != AK::Record || !v->model)
        fail(fd.range, fmt::format("@stage applies to a sub-model field (a layer) or a def; '{}' "
                                   "is {}",
                                   fd.name, describe(v)));
      auto staged = std::make_shared<AVal>(*v);
      staged->stage = *stage;
      v = staged;
    }
    env.declare(fd.name, Binding{v, false, fd.range});
    if (fd.is_param || buffer) {
      rec->names.push_back(fd.name);
      rec->elems.push_back(v);
    } else {
      rec->statics.emplace_back(fd.name, v);
    }
  }
  if (materialize_models_ && !eager_ && !rec->elems.empty()) return unpack(rec, pack(rec, r), r);
  return rec;
}

}  // namespace spora::sem::lower
