// Shared by the ZeRO-1 and recomputation tests (in-process ranks) and their MPI test: the
// strategies with "optimizer_shard" and the sharded runs against the single-device ones.
#pragma once

#include <string>

#include "spmd_common.h"

namespace spora::parallel::testing {

// Data parallel over 4 ranks with the optimizer state sharded over the same axis (ZeRO-1).
inline const char* kDp4Zero =
    R"json({"mesh": [4], "axes": ["dp"], "layouts": {"x": "(4, 1)", "y": "(4)"},
            "optimizer_shard": "dp"})json";
// Data parallel over dp, Megatron over tp (layers 1 and 2), the state sharded over dp.
inline const char* kDp2Tp2Zero = R"json({"mesh": [2, 2], "axes": ["dp", "tp"], "layouts": {
    "x": "[dp, -]", "y": "[dp]",
    "net.l1.w": "[-, tp]", "net.l1.b": "[tp]", "net.l2.w": "[tp, -]"},
    "optimizer_shard": 0})json";

inline const char* zero_strategy_named(const std::string& name) {
  return name == "dp4" ? kDp4Zero : kDp2Tp2Zero;
}

inline distributed::TrainStepOptions zero_options(const std::string& optimizer) {
  distributed::TrainStepOptions o = mlp_options();
  o.optimizer = optimizer;
  o.lr = optimizer == "adam" ? 0.01 : 0.1;
  return o;
}

}  // namespace spora::parallel::testing
