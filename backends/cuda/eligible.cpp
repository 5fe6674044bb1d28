// Which functions may be captured as CUDA graphs (cuda.h): host logic on the IR, built with and
// without the toolkit so it is tested everywhere.
#include <set>

#include "backends/cuda/cuda.h"
#include "semantics/ir/ir.h"
#include "semantics/registry.h"

namespace spora::cuda {

namespace {

const std::set<std::string> kControlFlow = {"if", "while", "for_range", "for_each"};

bool walk(const ir::Graph& g, const std::function<bool(const sem::Primitive&)>& native,
          std::set<const ir::Graph*>& seen, std::string* why) {
  if (!seen.insert(&g).second) return true;
  for (const ir::Node* n : g.nodes) {
    if (n->is_constant()) {
      if (n->graph_value && !walk(*n->graph_value, native, seen, why)) return false;
      continue;
    }
    if (!n->is_apply()) continue;
    if (n->callee) {
      if (!walk(*n->callee, native, seen, why)) return false;
      continue;
    }
    if (!n->prim) continue;
    if (kControlFlow.count(n->prim->name)) {
      if (why)
        *why = "@" + g.name + " has control flow ('" + n->prim->name +
               "' reads its operands on the host)";
      return false;
    }
    if (!native(*n->prim)) {
      if (why)
        *why = "@" + g.name + " uses '" + n->prim->name +
               "', which has no CUDA kernel (it runs on the host)";
      return false;
    }
  }
  return true;
}

}  // namespace

bool capture_eligible(const ir::Graph& g, const std::function<bool(const sem::Primitive&)>& native,
                      std::string* why) {
  if (g.parent) {
    if (why) *why = "@" + g.name + " is nested in @" + g.parent->name;
    return false;
  }
  if (g.has_flag("fused")) {
    if (why) *why = "@" + g.name + " is a fusion group";
    return false;
  }
  std::set<const ir::Graph*> seen;
  return walk(g, native, seen, why);
}

bool runs_natively(const sem::Primitive& p) {
  for (const Coverage& c : coverage())
    if (c.name == p.name) return c.kind == Coverage::Kind::Native;
  return false;
}

}  // namespace spora::cuda
