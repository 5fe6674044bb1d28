// Strategy files: the JSON that `spora train-step --strategy`, `spora ir --stage partitioned` (and
// the strategy search, which writes them) share. parallel/README.md documents the format:
//
//   {
//     "mesh": [2, 2],                 // devices per mesh axis (row-major ranks)
//     "axes": ["dp", "tp"],           // optional mesh axis names (default m0, m1, ...)
//     "layouts": {                    // per parameter / input of the step, by name
//       "x": "(2, 1)",                // MindSpore partition numbers: dim 0 in 2 pieces
//       "net.l1.w": "[-, tp]"         // or the tensor map by mesh axis name
//     },
//     "ops": {"12": "k:m0"},          // optional: node 12 of the step graph runs its rule's
//                                     // strategy named "k:m0" (the rest: propagation)
//     "optimizer_shard": "dp",        // optional: ZeRO-1 over this mesh axis (name or index)
//     "recompute": ["net.l1"]         // optional: layers recomputed in backward (true: all)
//   }
// Names not listed are replicated. A partition number > 1 takes the first unused mesh axis of
// that size (parallel/layout/layout.h); on a mesh with two axes of one size, name the axis.
#pragma once

#include <string>

#include "parallel/partition/partition.h"
#include "semantics/ir/ir.h"

namespace spora::parallel {

// Parses the JSON text for graph `g` (layouts need each tensor's rank). Throws
// lang::UserError naming `origin` (the file) and the problem.
Strategy parse_strategy(const std::string& json_text, const ir::Graph& g,
                        const std::string& origin = "strategy");
Strategy load_strategy(const std::string& path, const ir::Graph& g);

// Only the "recompute" of the JSON text (recompute_all, recompute; the rest default): it is
// needed before the step is built, and the full parse needs the step.
Strategy parse_recompute(const std::string& json_text, const std::string& origin = "strategy");

// The JSON text of a strategy (layouts in the tensor-map form); parses back to the same.
std::string strategy_json(const Strategy& s);

}  // namespace spora::parallel
