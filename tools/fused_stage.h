// Fusion in the command line: `spora run` fuses and compiles before running (unless
// --no-fuse), `spora ir --stage fused` prints the fused module, `--emit kernels` the generated
// C++ and CUDA of every group, `spora ir --stage kernels` their kernel IR (semantics/passes/fusion.h, backends/codegen/).
#pragma once

#include <memory>
#include <string>

#include "backends/codegen/fused_runtime.h"
#include "semantics/ir/ir.h"

namespace spora::tools {

// Fuses m (after optimize) and compiles its groups; the runtime runs them while it lives.
// Null when fuse is false. gpu: the groups are compiled with NVRTC and launched on the CUDA
// device (backends/cuda/fused.h); without one, a warning and no fusion.
std::unique_ptr<codegen::FusedRuntime> fuse_for_run(ir::Module& m, bool fuse, bool gpu = false);
// One line for `spora run --stats`.
std::string describe_fusion(const codegen::FusedRuntime& rt);
// `spora ir --stage fused [--emit kernels]`: fuses the optimized module m; the text to print
// (the module, or the kernels' source when emit is "kernels"). Throws lang::UserError for an
// unknown emit value.
std::string fused_stage(ir::Module& m, const std::string& emit);
// `spora ir --stage kernels`: fuses the optimized module m; per fusion group its kernel IR
// (semantics/kernel_ir/kernel_ir.h) and the transformations the C++ target applies.
std::string kernels_stage(ir::Module& m);

}  // namespace spora::tools
