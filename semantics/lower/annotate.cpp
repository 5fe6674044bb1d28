// Parallel annotations (semi-auto): the three source forms and the
// identity primitives they lower to (ops/annotation.cpp).
//
//   shard(x, (2, 1))  shard(x, "[dp, -]")    -> shard_hint(x, layout="(2, 1)")
//   prim(a, b, shard=((2, 1), (1, 4)))       -> prim(shard_hint(a, "(2, 1)"),
//                                                    shard_hint(b, "(1, 4)"))
//                                               (one layout per tensor input, in order; none
//                                               leaves an input free)
//   @stage(k) param l = Dense(...)  /  @stage(k) def f(...)
//                                            -> each tensor argument of a call of l (or f),
//                                               through tuples, is stage_boundary(x, stage=k)
// A layout's rank must be x's: partition numbers count the tuple's entries, a tensor map the
// entries between its brackets. The layout is kept as written (a program names no mesh; the
// partitioner reads it on the mesh of the run, parallel/layout/layout.h). In eager mode the
// annotations run as the identities they are.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

namespace {

// The entries of a tensor map's bracket list ("[dp, -] partial(tp)" -> 2), or -1 when the text
// is not one.
int64_t tensor_map_rank(const std::string& text) {
  const size_t open = text.find_first_not_of(' ');
  if (open == std::string::npos || (text[open] != '[' && text[open] != '(')) return -1;
  const char close_char = text[open] == '[' ? ']' : ')';
  const size_t close = text.find(close_char, open);
  if (close == std::string::npos) return -1;
  const std::string inner = text.substr(open + 1, close - open - 1);
  if (inner.find_first_not_of(' ') == std::string::npos) return 0;
  return 1 + static_cast<int64_t>(std::count(inner.begin(), inner.end(), ','));
}

}  // namespace

ir::Node* Lowerer::emit_shard_hint(ir::Node* x, const AV& layout, lang::SourceRange r,
                                   const std::string& what) {
  if (!x->type->is_tensor())
    fail(r, fmt::format("{} needs a tensor, not {}", what, x->type->str()));
  const int64_t rank = x->type->rank();
  std::string text;
  int64_t entries = -1;
  if (layout->kind == AK::Str) {
    text = layout->s;
    entries = tensor_map_rank(text);
    if (entries < 0)
      fail(r, fmt::format("{}: layout \"{}\" is neither partition numbers like \"(2, 1)\" nor a "
                          "tensor map like \"[dp, -]\"",
                          what, text));
  } else if (layout->kind == AK::Int || layout->kind == AK::Tuple) {
    std::vector<int64_t> parts;
    if (layout->kind == AK::Int) parts.push_back(layout->i);
    for (const AV& e : layout->elems) {
      if (e->kind != AK::Int)
        fail(r, fmt::format("{}: partition numbers must be compile-time integers, not {}", what,
                            describe(e)));
      parts.push_back(e->i);
    }
    for (int64_t p : parts)
      if (p < 1)
        fail(r, fmt::format("{}: partition numbers must be positive, got ({})", what,
                            fmt::join(parts, ", ")));
    text = fmt::format("({})", fmt::join(parts, ", "));
    entries = static_cast<int64_t>(parts.size());
  } else {
    fail(r, fmt::format("{}: the layout must be partition numbers like (2, 1) or a tensor map "
                        "like \"[dp, -]\", not {}",
                        what, describe(layout)));
  }
  if (entries != rank)
    fail(r, fmt::format("{}: layout {} has {} entr{} but the tensor {} has rank {}", what, text,
                        entries, entries == 1 ? "y" : "ies", x->type->str(), rank));
  Attrs a;
  a.set("layout", text);
  return emit_node("shard_hint", {x}, a, r);
}

AV Lowerer::call_shard(std::vector<Arg> args, lang::SourceRange r) {
  for (const Arg& a : args)
    if (!a.keyword.empty()) fail(a.range, "shard takes no keyword arguments: shard(x, (2, 1))");
  if (args.size() != 2)
    fail(r, fmt::format("shard takes a tensor and a layout, shard(x, (2, 1)), but {} argument{} "
                        "were given",
                        args.size(), args.size() == 1 ? "" : "s"));
  const AV& x = args[0].value;
  if (x->kind != AK::Node || !x->type->is_tensor())
    fail(args[0].range, fmt::format("shard needs a run-time tensor, not {}", describe(x)));
  return make_node(emit_shard_hint(x->node, args[1].value, args[1].range, "shard"));
}

std::vector<ir::Node*> Lowerer::shard_inputs(const std::string& prim, std::vector<ir::Node*> inputs,
                                             const Arg& shard) {
  const AV& v = shard.value;
  std::vector<AV> layouts;
  // One input: the layout itself may stand alone, shard=(2, 1) or shard="[dp, -]".
  const bool single = v->kind == AK::Str || v->kind == AK::Int ||
                      (v->kind == AK::Tuple && !v->elems.empty() &&
                       std::all_of(v->elems.begin(), v->elems.end(),
                                   [](const AV& e) { return e->kind == AK::Int; }));
  if (single && inputs.size() == 1) {
    layouts.push_back(v);
  } else if (v->kind == AK::Tuple && !single) {
    layouts = v->elems;
  } else {
    fail(shard.range, fmt::format("shard= of {} takes one layout per tensor input, e.g. "
                                  "shard=((2, 1), (1, 4)), not {}",
                                  prim, describe(v)));
  }
  if (layouts.size() != inputs.size())
    fail(shard.range, fmt::format("shard= gives {} layout{} but {} has {} tensor input{}",
                                  layouts.size(), layouts.size() == 1 ? "" : "s", prim,
                                  inputs.size(), inputs.size() == 1 ? "" : "s"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (layouts[i]->kind == AK::None) continue;  // this input is left to propagation
    inputs[i] = emit_shard_hint(inputs[i], layouts[i], shard.range,
                                fmt::format("shard= of {} (input {})", prim, i + 1));
  }
  return inputs;
}

std::optional<int64_t> Lowerer::stage_of(const std::vector<lang::Decorator>& decorators,
                                         int module) {
  std::optional<int64_t> stage;
  for (const lang::Decorator& d : decorators) {
    if (d.name != "stage") continue;
    if (stage) fail(d.range, "@stage is given twice");
    if (d.args.size() != 1 || !d.kwargs.empty())
      fail(d.range, "@stage takes the stage number: @stage(1)");
    Env env;
    env.module = module;
    env.push();
    const AV k = eval(*d.args[0], env);
    if (k->kind != AK::Int || k->i < 0)
      fail(d.args[0]->range, fmt::format("the stage of @stage must be a compile-time integer of "
                                         "0 or more, not {}",
                                         describe(k)));
    stage = k->i;
  }
  return stage;
}

AV Lowerer::enter_stage(const AV& v, int64_t stage, lang::SourceRange r) {
  if (v->kind == AK::Node && v->type->is_tensor()) {
    Attrs a;
    a.set("stage", stage);
    return make_node(emit_node("stage_boundary", {v->node}, a, r));
  }
  if (v->kind == AK::Tuple) {
    std::vector<AV> elems;
    for (const AV& e : v->elems) elems.push_back(enter_stage(e, stage, r));
    return make_tuple(std::move(elems));
  }
  return v;  // models, static values, functions: not data flowing between stages
}

}  // namespace spora::sem::lower
