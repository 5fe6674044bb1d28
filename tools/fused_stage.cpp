// Fusion in the command line (fused_stage.h).
#include "tools/fused_stage.h"

#include <fmt/format.h>

#include <iostream>

#include "backends/codegen/codegen.h"
#include "backends/cuda/fused.h"
#include "lang/diagnostics.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"

namespace spora::tools {

std::unique_ptr<codegen::FusedRuntime> fuse_for_run(ir::Module& m, bool fuse, bool gpu) {
  if (!fuse) return nullptr;
  codegen::FusedOptions options = codegen::default_fused_options();
  if (gpu) {
    std::string why;
    options.gpu = cuda::make_fused_gpu(&why);
    if (!options.gpu) {
      // The C++ kernels cannot read GPU memory: every node runs its own CUDA kernel.
      std::cerr << "spora: warning: fused groups cannot run on the GPU (" << why
                << "); running every node on its own\n";
      return nullptr;
    }
  }
  passes::fuse_operators(m);
  return std::make_unique<codegen::FusedRuntime>(m, std::move(options));
}

std::string describe_fusion(const codegen::FusedRuntime& rt) {
  const std::string variants =
      rt.variants() > 0 ? fmt::format(" ({} more for other argument shapes)", rt.variants()) : "";
  return fmt::format(
      "fusion: {} groups, {} compiled kernels{}; {} fused launches, {} node-by-node runs",
      rt.groups(), rt.kernels(), variants, rt.launches(), rt.fallbacks());
}

std::string fused_stage(ir::Module& m, const std::string& emit) {
  if (!emit.empty() && emit != "kernels")
    throw lang::UserError("unknown --emit value '" + emit + "' (available: kernels)");
  passes::fuse_operators(m);
  ir::verify_or_throw(m, "after fusion");
  if (emit == "kernels") return codegen::kernel_listing(m, /*cuda=*/true, /*preludes=*/false);
  return ir::print_module(m);
}

std::string kernels_stage(ir::Module& m) {
  passes::fuse_operators(m);
  ir::verify_or_throw(m, "after fusion");
  std::string out;
  for (const codegen::FusedGroup& g : codegen::fused_groups(m)) {
    out += "// ---- @" + g.graph->name + " ----\n" + kir::print(g.plan);
    const kir::Kernel k = codegen::cpp_schedule(g.plan);
    std::string cpu = k.tile ? fmt::format("tiles of {}", k.tile) : "whole rows";
    for (size_t p = 0; p < k.passes.size(); ++p) {
      const kir::InnerLoop& l = k.passes[p].loop;
      if (l.interleave > 1 || l.vector_width > 1)
        cpu += fmt::format(", pass {}: interleave {}, vector width {}", p, l.interleave,
                           l.vector_width);
    }
    out += "  cpu: " + cpu + "\n";
  }
  return out;
}

}  // namespace spora::tools
