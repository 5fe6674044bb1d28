// The simplification pipeline (pipeline.h).
#include "semantics/passes/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "lang/diagnostics.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/constant_fold.h"
#include "semantics/passes/cse.h"
#include "semantics/passes/dce.h"
#include "semantics/passes/fold_tuples.h"
#include "semantics/passes/hoist.h"
#include "semantics/passes/inline.h"
#include "semantics/passes/simplify.h"
#include "semantics/passes/stack_products.h"
#include "semantics/passes/util.h"

namespace spora::passes {

namespace {

struct Pass {
  std::string name;
  void (*run)(ir::Module&);
};

const std::vector<Pass>& passes() {
  static const std::vector<Pass> list = {
      // One pass per line, in order.
      // clang-format off
      {"inline", inline_calls},
      {"fold-tuples", fold_tuples},
      {"fold-constants", fold_constants},
      {"simplify", simplify_algebra},
      {"hoist", hoist_loop_products},
      {"stack", stack_loop_products},
      {"cse", eliminate_common_subexpressions},
      {"dce", eliminate_dead_code},
      // clang-format on
  };
  return list;
}

void mix(size_t& seed, size_t h) { seed ^= h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }

// Changes whenever a pass changes the module: nodes and graphs are compared by identity
// (passes make new ones rather than editing, except for in-place constant folds, attribute
// and type updates, which the value, attribute and type parts catch).
size_t fingerprint(const ir::Module& m) {
  std::hash<const void*> ptr;
  size_t h = 0;
  for (const auto& g : m.graphs()) {
    mix(h, ptr(g.get()));
    mix(h, ptr(g->parent));
    mix(h, ptr(g->output));
    for (const Node* p : g->params) mix(h, ptr(p));
    for (const Node* n : g->nodes) {
      mix(h, ptr(n));
      mix(h, static_cast<size_t>(n->kind));
      mix(h, ptr(n->type.get()));
      mix(h, ptr(n->value.tensor.raw()));
      mix(h, ptr(n->prim));
      mix(h, ptr(n->callee));
      mix(h, ptr(n->graph_value));
      for (const Node* in : n->inputs) mix(h, ptr(in));
      for (const auto& [name, a] : n->attrs.items())
        mix(h, std::hash<std::string>{}(sem::attr_str(a)));
    }
  }
  return h;
}

int debug_level() {
  const char* v = std::getenv("SPORA_DEBUG_PASSES");
  return v ? std::atoi(v) : 0;
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Pass& p : passes()) out.push_back(p.name);
    return out;
  }();
  return names;
}

void optimize(ir::Module& m, const PassOptions& options) {
  auto wanted = [&](const std::string& name) {
    return std::find(options.print_after.begin(), options.print_after.end(), name) !=
           options.print_after.end();
  };
  for (const std::string& name : options.print_after) {
    if (name == "all" ||
        std::find(pass_names().begin(), pass_names().end(), name) != pass_names().end())
      continue;
    std::string list;
    for (const std::string& p : pass_names()) list += (list.empty() ? "" : ", ") + p;
    throw lang::UserError("unknown pass '" + name + "' (available: " + list + ", all)");
  }
  std::ostream& dump = options.dump ? *options.dump : std::cerr;
  const int debug = debug_level();
  if (options.verify) ir::verify_or_throw(m, "before optimize");

  for (int round = 1; round <= kMaxRounds; ++round) {
    const size_t round_start = fingerprint(m);
    for (const Pass& pass : passes()) {
      const size_t before = fingerprint(m), nodes_before = node_count(m);
      const size_t graphs_before = m.graphs().size();
      pass.run(m);
      if (options.verify) ir::verify_or_throw(m, "after " + pass.name);
      if (debug >= 1)
        std::cerr << "optimize: round " << round << " " << pass.name << ": " << nodes_before
                  << " -> " << node_count(m) << " nodes, " << graphs_before << " -> "
                  << m.graphs().size() << " graphs\n";
      if ((wanted(pass.name) || wanted("all")) && (round == 1 || fingerprint(m) != before))
        dump << "# after " << pass.name << " (round " << round << ")\n"
             << ir::print_module(m) << std::flush;
    }
    if (fingerprint(m) == round_start) break;
  }
}

}  // namespace spora::passes
