// Shared by the partitioner tests (in-process ranks) and the MPI test: the small MLP, its
// strategies, and the comparison of a sharded run with the single-device one.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/distributed/train_step.h"
#include "sim/step_program.h"

namespace spora::parallel::testing {

inline std::string mlp_path() {
  return std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp_small.sp";
}

// The step's parameters are named after the model's fields; x and y are the data.
inline const char* kDp4 = R"json({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"}})json";
// Megatron on layers 2 and 3: column split of l2 (w and b), row split of l3; l1 replicated, so
// the backward pass needs the gradient of l2's input, partial over the model axis.
inline const char* kTp4 = R"json({"mesh": [4], "layouts": {
    "net.l2.w": "(1, 4)", "net.l2.b": "(4)", "net.l3.w": "(4, 1)"}})json";
// Data parallel over dp, Megatron over tp (layers 1 and 2).
inline const char* kDp2Tp2 = R"json({"mesh": [2, 2], "axes": ["dp", "tp"], "layouts": {
    "x": "[dp, -]", "y": "[dp]",
    "net.l1.w": "[-, tp]", "net.l1.b": "[tp]", "net.l2.w": "[tp, -]"}})json";

// The strategies above by name (test parameters print as their names).
inline const char* strategy_named(const std::string& name) {
  return name == "dp4" ? kDp4 : name == "tp4" ? kTp4 : kDp2Tp2;
}

// As `spora train-step` runs: a pipeline's "split": "auto" balances the simulator's cost rows.
inline distributed::TrainStepOptions mlp_options() {
  distributed::TrainStepOptions o;
  o.file = mlp_path();
  o.steps = 3;
  o.lr = 0.1;
  o.stage_cost = sim::node_cost;
  return o;
}

// A sharded run equals the reference: losses per step and the updated parameters (f64: to
// 1e-10 relative to the largest element).
inline void expect_same_run(const distributed::TrainStepResult& ref,
                            const distributed::TrainStepResult& got, const std::string& what) {
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  for (size_t i = 0; i < ref.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], ref.losses[i], 1e-10 * std::abs(ref.losses[i]))
        << what << ": loss of step " << i + 1;
  ASSERT_EQ(got.params.size(), ref.params.size()) << what;
  for (size_t p = 0; p < ref.params.size(); ++p) {
    ASSERT_EQ(got.params[p].shape(), ref.params[p].shape()) << what << " " << ref.names[p];
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < ref.params[p].numel(); ++i) {
      scale = std::max(scale, std::abs(ref.params[p].get(i)));
      worst = std::max(worst, std::abs(got.params[p].get(i) - ref.params[p].get(i)));
    }
    EXPECT_LE(worst, 1e-10 * scale) << what << ": parameter " << ref.names[p];
  }
}

}  // namespace spora::parallel::testing
