// Transformations of the kernel IR (transform.h).
#include "semantics/kernel_ir/transform.h"

#include <set>
#include <stdexcept>
#include <string>

namespace spora::kir {

void tile_inner(Kernel& k, int64_t tile) {
  if (tile < 0 || (tile > 0 && !k.splittable))
    throw std::logic_error("kir::tile_inner: tile " + std::to_string(tile) +
                           " of a kernel that is not splittable");
  k.tile = tile >= k.inner ? 0 : tile;
}

int64_t task_extent(const Kernel& k) { return k.tile > 0 ? k.tile : k.inner; }

namespace {

Operand renamed(Operand o, const std::set<int>& body, int copy) {
  if (o.is_value() && body.count(o.id)) o.copy = copy;
  return o;
}

Stmt renamed(const Stmt& s, const std::set<int>& body, int copy) {
  Stmt out = s;
  out.index = s.index.with_inner_copy(copy);
  out.value = renamed(s.value, body, copy);
  switch (s.kind) {
    case Stmt::Kind::Define:
      out.copy = copy;
      out.expr.index = s.expr.index.with_inner_copy(copy);
      for (Operand& a : out.expr.args) a = renamed(a, body, copy);
      break;
    case Stmt::Kind::Coord:
      out.coord.copy = copy;
      break;
    case Stmt::Kind::Store:
    case Stmt::Kind::Check:
      break;
  }
  return out;
}

}  // namespace

void interleave(Kernel& k, Pass& p, int ways) {
  if (ways < 2 || !k.inner_nest.empty() || !p.accs.empty() || !p.body_totals.empty())
    throw std::logic_error("kir::interleave: " + std::to_string(ways) +
                           " ways of a loop that is nested or accumulates");
  std::set<int> body;
  for (const Stmt& s : p.body)
    if (s.kind == Stmt::Kind::Define) body.insert(s.id);
  std::vector<Stmt> all = k.inner_setup;
  all.insert(all.end(), p.body.begin(), p.body.end());
  p.loop.interleaved.clear();
  for (const Stmt& s : all)
    for (int c = 1; c <= ways; ++c) p.loop.interleaved.push_back(renamed(s, body, c));
  p.loop.interleave = ways;
}

bool calls_transcendental(const Pass& p) {
  static const std::set<std::string> fns = {"exp", "log", "tanh", "erf", "sigmoid", "gelu"};
  for (const Stmt& s : p.body)
    if (s.kind == Stmt::Kind::Define && s.expr.op == Expr::Op::Unary && fns.count(s.expr.fn))
      return true;
  return false;
}

}  // namespace spora::kir
