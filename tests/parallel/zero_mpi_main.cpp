// ZeRO-1 and recomputation over MPI (run under `mpirun -np 4`, ctest parallel_zero_mpi_4_ranks):
// the small MLP with the optimizer state sharded over dp (dp4, dp2 x tp2), sgd, momentum and
// adam, gives the losses of 3 steps and the updated parameters of the single-device run. Every
// rank computes the reference itself (it is small) and checks its own gathered result.
#include <gtest/gtest.h>
#include <mpi.h>

#include "autodiff/install.h"
#include "backends/comm/mpi_comm.h"
#include "mpi_gtest_main.h"
#include "ops/ops.h"
#include "zero_common.h"

namespace spora::parallel::testing {
namespace {

class MpiZeroRun : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(MpiZeroRun, EqualsTheSingleDeviceRun) {
  ASSERT_EQ(comm::mpi_world_size(), 4) << "run under mpirun -np 4";
  const auto& [strategy, optimizer] = GetParam();
  const distributed::TrainStepOptions o = zero_options(optimizer);
  const StepGraph program = distributed::build_training_step(o);
  const distributed::TrainStepResult ref = distributed::run_training(program, o, nullptr, "");
  auto world = comm::make_mpi_communicator();
  const distributed::TrainStepResult got =
      distributed::run_training(program, o, world.get(), zero_strategy_named(strategy));
  EXPECT_EQ(got.gathers, strategy == "dp4" ? 6 : 5);
  expect_same_run(ref, got,
                  strategy + " " + optimizer + " on rank " + std::to_string(world->rank()));
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndOptimizers, MpiZeroRun,
                         ::testing::Combine(::testing::Values("dp4", "dp2tp2"),
                                            ::testing::Values("sgd", "momentum", "adam")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// Recomputation with ZeRO-1 on the block MLP, data parallel over MPI.
TEST(MpiRecompute, EqualsTheRunWithoutIt) {
  distributed::TrainStepOptions o = zero_options("adam");
  o.file = std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp_blocks.sp";
  const std::string dp4 = R"json({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"},
                                  "recompute": true, "optimizer_shard": 0})json";
  const distributed::TrainStepResult ref =
      distributed::run_training(distributed::build_training_step(o), o, nullptr, "");
  auto world = comm::make_mpi_communicator();
  const distributed::TrainStepResult got =
      distributed::run_training(distributed::build_training_step(o, dp4), o, world.get(), dp4);
  expect_same_run(ref, got, "recompute on rank " + std::to_string(world->rank()));
}

}  // namespace
}  // namespace spora::parallel::testing

int main(int argc, char** argv) { return spora::parallel::testing::run_mpi_gtests(argc, argv); }
