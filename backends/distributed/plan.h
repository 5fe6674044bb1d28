// What a multi-rank run shards (SpmdPlan, spmd_runtime.h), from the command line:
//   --strategy dp        pure data parallelism: a 1-D mesh "dp" of all ranks, every batch cut
//   --strategy FILE      a strategy file (parallel/partition/README.md): its mesh and axis
//                        names, parameter layouts by name; the data-parallel axis is the axis
//                        named "dp", else the one cutting dim 0 of the file's data entries
//   --mesh AxB           a mesh only (names allowed: dp=2,tp=2): the program's shard(...)
//                        annotations place values, and an axis named "dp" cuts the batches
// A strategy file may add ZeRO (spmd_runtime.h step 6): "zero": 1|2|3 over the dp axis, or
// {"stage": N, "axis": "dp"}; "optimizer_shard": AXIS is stage 1. --zero N sets the stage over
// the data-parallel axis of any plan (set_zero_stage). "recompute": true or ["net.l1", ...]
// recomputes those layers' forward in the backward pass (step 7).
// Errors are lang::UserError naming the file and the entry.
#pragma once

#include <string>

#include "backends/distributed/spmd_runtime.h"

namespace spora::distributed {

SpmdPlan data_parallel_plan(int ranks);
SpmdPlan plan_from_strategy_text(const std::string& json_text, const std::string& origin);
SpmdPlan plan_from_strategy(const std::string& path);  // "dp" or a file
SpmdPlan plan_from_mesh(const std::string& mesh_text);
void set_zero_stage(SpmdPlan& p, int stage);

}  // namespace spora::distributed
