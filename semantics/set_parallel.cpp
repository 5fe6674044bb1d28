// Reading `set_parallel(...)` (set_parallel.h).
#include "semantics/set_parallel.h"

#include <fmt/format.h>

namespace spora::sem {

bool is_set_parallel(const lang::Stmt& s) {
  return s.kind == lang::StmtKind::Expr && s.value && s.value->kind == lang::ExprKind::Call &&
         s.value->callee->kind == lang::ExprKind::Name && s.value->callee->name == "set_parallel";
}

std::optional<ParallelDirective> read_set_parallel(const lang::Stmt& s, ParallelDirectiveError* error) {
  const lang::Expr& call = *s.value;
  auto fail = [&](const lang::SourceRange& where, std::string message) {
    if (error) *error = {std::move(message), where};
    return std::nullopt;
  };
  if (!call.args.empty())
    return fail(call.args[0]->range,
                "set_parallel takes keyword arguments only: ranks=, strategy=, mesh=, zero=, "
                "recompute=");
  ParallelDirective d;
  d.range = call.range;
  for (const lang::KeywordArg& k : call.kwargs) {
    const lang::Expr& v = *k.value;
    const bool is_int = v.kind == lang::ExprKind::Int, is_string = v.kind == lang::ExprKind::String;
    if (k.name == "ranks" || k.name == "zero") {
      if (!is_int)
        return fail(v.range, fmt::format("set_parallel's {}= takes an integer literal", k.name));
      if (k.name == "ranks") {
        if (v.int_value < 1)
          return fail(v.range, fmt::format("set_parallel's ranks= must be positive, got {}", v.int_value));
        d.ranks = v.int_value;
      } else {
        if (v.int_value < 0 || v.int_value > 3)
          return fail(v.range, fmt::format("set_parallel's zero= is a ZeRO stage 0-3, got {}", v.int_value));
        d.zero = static_cast<int>(v.int_value);
      }
    } else if (k.name == "strategy" || k.name == "mesh" || k.name == "recompute") {
      if (!is_string || v.string_value.empty())
        return fail(v.range, fmt::format("set_parallel's {}= takes a non-empty string literal", k.name));
      (k.name == "strategy" ? d.strategy : k.name == "mesh" ? d.mesh : d.recompute) = v.string_value;
    } else {
      return fail(k.name_range, fmt::format("set_parallel has no argument '{}' (ranks, strategy, mesh, "
                                            "zero, recompute)",
                                            k.name));
    }
  }
  if (!d.strategy.empty() && !d.mesh.empty())
    return fail(call.range,
                "set_parallel: strategy= places values by a file (or \"dp\"), mesh= by the "
                "program's shard annotations: give one of them");
  if (d.ranks == 0 && d.strategy.empty() && d.mesh.empty())
    return fail(call.range, "set_parallel needs ranks= (with strategy \"dp\" by default), strategy= or mesh=");
  return d;
}

std::optional<ParallelDirective> find_set_parallel(const lang::FuncDef& main) {
  if (!main.body) return std::nullopt;
  // The prologue: set_mode, set_device, set_amp and set_parallel, each once, in any order.
  for (size_t i = 0; i < main.body->stmts.size() && i < 4; ++i) {
    const lang::Stmt& s = *main.body->stmts[i];
    if (is_set_parallel(s)) return read_set_parallel(s, nullptr);
    const bool prologue = s.kind == lang::StmtKind::Expr && s.value &&
                          s.value->kind == lang::ExprKind::Call &&
                          s.value->callee->kind == lang::ExprKind::Name &&
                          (s.value->callee->name == "set_mode" || s.value->callee->name == "set_device" ||
                           s.value->callee->name == "set_amp");
    if (!prologue) break;
  }
  return std::nullopt;
}

}  // namespace spora::sem
