// Kernels and memory traffic of one call of a graph, counted on its IR (issue 7's report of
// W2-W4 with and without fusion): what the CPU backend launches and what those kernels must
// read and write at least (each kernel reads its tensor inputs and writes its tensor outputs
// once; caches may save some of it, nothing can save less).
//
//   - a primitive apply is one kernel reading its tensor inputs and writing its result, except
//     views and plumbing (reshape, flatten, squeeze, unsqueeze, expand_dims, identity,
//     stop_gradient, the annotation identities, tuples), which move no data;
//   - a call of a fused group (fusion.h) is its loop nest, one kernel reading the group's
//     tensor inputs and writing its outputs, plus one more for a GEMM/conv anchor
//     (output-fusable member), which reads the anchor's inputs and writes its result, then read
//     again by the loop nest (backends/codegen/fused_runtime.h runs them so);
//   - a call of any other graph counts that graph's kernels (once per call site); loops and
//     conditionals count their bodies once (the counts are per iteration there: `loops` says
//     how many such nodes were met).
#pragma once

#include <cstdint>

#include "semantics/ir/ir.h"

namespace spora::passes {

struct KernelStats {
  int64_t kernels = 0;       // kernel launches
  int64_t fused_calls = 0;   // of which fused loop nests
  double bytes_read = 0;     // tensor bytes the kernels read
  double bytes_written = 0;  // tensor bytes the kernels write
  int64_t loops = 0;         // loop / conditional nodes whose bodies were counted once
  double bytes() const { return bytes_read + bytes_written; }
};

KernelStats kernel_stats(const ir::Graph& g);

}  // namespace spora::passes
