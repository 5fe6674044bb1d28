// What a multi-rank run shards (SpmdPlan, spmd_runtime.h), from the command line:
//   --strategy dp        pure data parallelism: a 1-D mesh "dp" of all ranks, every batch cut
//   --strategy FILE      a strategy file (parallel/partition/README.md): its mesh and axis
//                        names, parameter layouts by name; the data-parallel axis is the axis
//                        named "dp", else the one cutting dim 0 of the file's data entries
//   --mesh AxB           a mesh only (names allowed: dp=2,tp=2): the program's shard(...)
//                        annotations place values, and an axis named "dp" cuts the batches
// Errors are lang::UserError naming the file and the entry.
#pragma once

#include <string>

#include "backends/distributed/spmd_runtime.h"

namespace spora::distributed {

SpmdPlan data_parallel_plan(int ranks);
SpmdPlan plan_from_strategy_text(const std::string& json_text, const std::string& origin);
SpmdPlan plan_from_strategy(const std::string& path);  // "dp" or a file
SpmdPlan plan_from_mesh(const std::string& mesh_text);

}  // namespace spora::distributed
