// Fusion in the command line (fused_stage.h).
#include "tools/fused_stage.h"

#include <fmt/format.h>

#include "lang/diagnostics.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"

namespace spora::tools {

std::unique_ptr<codegen::FusedRuntime> fuse_for_run(ir::Module& m, bool fuse) {
  if (!fuse) return nullptr;
  passes::fuse_operators(m);
  return std::make_unique<codegen::FusedRuntime>(m);
}

std::string describe_fusion(const codegen::FusedRuntime& rt) {
  return fmt::format("fusion: {} groups, {} compiled kernels; {} fused launches, {} node-by-node runs",
                     rt.groups(), rt.kernels(), rt.launches(), rt.fallbacks());
}

std::string fused_stage(ir::Module& m, const std::string& emit) {
  if (!emit.empty() && emit != "kernels")
    throw lang::UserError("unknown --emit value '" + emit + "' (available: kernels)");
  passes::fuse_operators(m);
  ir::verify_or_throw(m, "after fusion");
  if (emit == "kernels") return codegen::kernel_listing(m, /*cuda=*/true, /*preludes=*/false);
  return ir::print_module(m);
}

}  // namespace spora::tools
