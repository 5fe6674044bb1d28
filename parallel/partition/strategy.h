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

// Parses the JSON text for graph `g` (layouts need each tensor's rank). A strategy that does not
// fit the program throws lang::UserError located at the offending entry, then its line and a
// caret:
//
//   s.json:3:5: split (4, 1) of 'net.l1.w' does not divide dimension 0 of size 10 ...
//   s.json:3:5: 'net.l1.ww' is not a parameter or input of the step; its 5 names, closest
//               first: net.l1.w, net.l1.b, ...
//
// (`origin`: the file name; line and column count from 1, columns in bytes.)
Strategy parse_strategy(const std::string& json_text, const ir::Graph& g,
                        const std::string& origin = "strategy");
Strategy load_strategy(const std::string& path, const ir::Graph& g);

// Throws the located lang::UserError "s.json:2:3: the mesh [2, 2] has 4 devices, but --ranks
// is 2" unless the mesh of `s` (parsed by parse_strategy) has `ranks` devices; `what` names the
// rank count for people ("--ranks").
void check_ranks(const Strategy& s, int64_t ranks, const std::string& what);

// Only the "recompute" of the JSON text (recompute_all, recompute; the rest default): it is
// needed before the step is built, and the full parse needs the step.
Strategy parse_recompute(const std::string& json_text, const std::string& origin = "strategy");

// The JSON text of a strategy (layouts in the tensor-map form); parses back to the same.
std::string strategy_json(const Strategy& s);

}  // namespace spora::parallel
