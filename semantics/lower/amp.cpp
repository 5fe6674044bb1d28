// Automatic mixed precision at lowering (semantics/amp.h): set_amp(...), the casts inserted
// before each primitive of the network, and the network's outputs cast back to f32.
#include <fmt/format.h>

#include <algorithm>

#include "semantics/low_precision.h"
#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

bool Lowerer::lower_set_amp(const lang::Expr& call) {
  // set_amp("O1") / set_amp("O2", f16) / set_amp(level="O1", dtype=bf16)
  constexpr const char* kUsage =
      "set_amp takes a level \"O0\", \"O1\", \"O2\" or \"O3\" and optionally a dtype bf16 "
      "or f16 (default bf16)";
  const lang::Expr* level_expr = nullptr;
  const lang::Expr* dtype_expr = nullptr;
  if (call.args.size() > 2) {
    error(call.range, kUsage);
    return false;
  }
  if (!call.args.empty()) level_expr = call.args[0].get();
  if (call.args.size() == 2) dtype_expr = call.args[1].get();
  for (const lang::KeywordArg& kw : call.kwargs) {
    const lang::Expr** slot = kw.name == "level"   ? &level_expr
                              : kw.name == "dtype" ? &dtype_expr
                                                   : nullptr;
    if (!slot || *slot) {
      error(kw.name_range, slot ? fmt::format("set_amp: argument '{}' is given twice", kw.name)
                                : fmt::format("set_amp has no parameter named '{}'", kw.name));
      return false;
    }
    *slot = kw.value.get();
  }
  if (!level_expr || level_expr->kind != lang::ExprKind::String) {
    error(level_expr ? level_expr->range : call.range, kUsage);
    return false;
  }
  const std::optional<AmpLevel> level = parse_amp_level(level_expr->string_value);
  if (!level) {
    error(level_expr->range, fmt::format("set_amp: unknown level \"{}\" (O0, O1, O2 or O3)",
                                         level_expr->string_value));
    return false;
  }
  DType low = DType::bf16;
  if (dtype_expr) {
    const bool named =
        dtype_expr->kind == lang::ExprKind::Name || dtype_expr->kind == lang::ExprKind::String;
    const std::string d =
        dtype_expr->kind == lang::ExprKind::Name ? dtype_expr->name : dtype_expr->string_value;
    const std::optional<DType> parsed = named ? parse_dtype(d) : std::nullopt;
    if (!parsed || !is_low_float(*parsed)) {
      error(dtype_expr->range,
            named ? fmt::format("set_amp: the low-precision dtype is bf16 or f16, not {}", d)
                  : std::string("set_amp: the low-precision dtype is bf16 or f16"));
      return false;
    }
    low = *parsed;
  }
  if (!amp_override_) amp_ = AmpPolicy{*level, low};
  return true;
}

bool Lowerer::model_has_params(const AV& self) {
  if (!self || self->kind != AK::Record || !self->model) return false;
  const auto& fields = self->model->fields;
  return std::any_of(fields.begin(), fields.end(),
                     [](const lang::FieldDecl& f) { return f.is_param; });
}

std::vector<ir::Node*> Lowerer::amp_cast_inputs(const Primitive& prim,
                                                std::vector<ir::Node*> inputs,
                                                lang::SourceRange r) {
  if (!prim.facet<bool>(kLowPrecisionFacet)) return inputs;
  std::vector<DType> floats;
  for (const ir::Node* n : inputs)
    if (n && n->type && n->type->is_tensor() && is_float(n->type->dtype) &&
        n->type->dtype != DType::f64)
      floats.push_back(n->type->dtype);
  if (floats.empty()) return inputs;
  const std::optional<DType> want = amp_compute_dtype(amp_, prim, floats);
  if (!want) return inputs;
  for (ir::Node*& n : inputs) {
    if (!n || !n->type || !n->type->is_tensor()) continue;
    const DType d = n->type->dtype;
    if (d == *want || !is_float(d) || d == DType::f64) continue;
    Attrs a;
    a.set("dtype", *want);
    n = emit_node("cast", {n}, a, r);
  }
  return inputs;
}

AV Lowerer::amp_outputs_to_f32(const AV& v, lang::SourceRange r) {
  if (!v) return v;
  if (v->kind == AK::Node && v->node && v->type && v->type->is_tensor() &&
      is_low_float(v->type->dtype)) {
    Attrs a;
    a.set("dtype", DType::f32);
    return make_node(emit_node("cast", {v->node}, a, r));
  }
  if (v->kind != AK::Tuple && v->kind != AK::Record) return v;
  bool changed = false;
  std::vector<AV> elems;
  for (const AV& e : v->elems) {
    elems.push_back(amp_outputs_to_f32(e, r));
    changed = changed || elems.back() != e;
  }
  if (!changed) return v;
  auto out = std::make_shared<AVal>(*v);
  out->elems = std::move(elems);
  return out;
}

AV Lowerer::call_def(const AVal& fn, std::vector<Arg> args, lang::SourceRange r) {
  const bool network = amp_.on() && model_has_params(fn.self);
  if (!network) return call_def_body(fn, std::move(args), r);
  // A method of the network: its primitives follow the AMP policy; the outermost one's
  // low-precision results go back to f32 for the loss and the rest of the program.
  struct Depth {
    int& d;
    explicit Depth(int& depth) : d(depth) { ++d; }
    ~Depth() { --d; }
  };
  AV result;
  {
    Depth depth(amp_depth_);
    result = call_def_body(fn, std::move(args), r);
  }
  return amp_depth_ == 0 ? amp_outputs_to_f32(result, r) : result;
}

}  // namespace spora::sem::lower
