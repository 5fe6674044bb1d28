// Helpers of the runtime tests (allocator, liveness, memory plan, eager memory): a process set
// up like `spora run`, programs lowered from source text, IR graphs built by hand.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"
#include "semantics/lower.h"

namespace spora::runtime::testing {

// ops, autodiff, the runtime (caching allocator) and the CPU kernels, once per process.
void setup();

struct Lowered {
  std::unique_ptr<sem::Program> program;
  std::unique_ptr<ir::Module> module;
  std::string diagnostics;
};
// Lowers `source` (the main module; std imports work). In eager mode the program runs now.
Lowered lower(const std::string& source, bool eager);

// Runs a lowered graph-mode program's main; returns what it printed.
std::string run_graph_mode(const ir::Module& m);

// `prim(inputs)` with the type its shape rule gives, appended to g.
ir::Node* apply(ir::Module& m, ir::Graph* g, const std::string& prim, std::vector<ir::Node*> inputs,
                sem::Attrs attrs = {});

}  // namespace spora::runtime::testing
