// Sharded training runs over MPI (run under `mpirun -np 4`, ctest parallel_spmd_mpi_4_ranks):
// the small MLP with data-parallel, tensor-parallel (Megatron) and mixed 2x2 strategies gives
// the losses of 3 sgd steps and the updated parameters of the single-device run. Every rank
// computes the reference itself (it is small) and checks its own gathered result.
#include <gtest/gtest.h>
#include <mpi.h>

#include "autodiff/install.h"
#include "backends/comm/mpi_comm.h"
#include "mpi_gtest_main.h"
#include "ops/ops.h"
#include "spmd_common.h"

namespace spora::parallel::testing {
namespace {

class MpiShardedRun : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiShardedRun, EqualsTheSingleDeviceRun) {
  ASSERT_EQ(comm::mpi_world_size(), 4) << "run under mpirun -np 4";
  const StepGraph program = distributed::build_training_step(mlp_options());
  const distributed::TrainStepResult ref =
      distributed::run_training(program, mlp_options(), nullptr, "");
  auto world = comm::make_mpi_communicator();
  const distributed::TrainStepResult got =
      distributed::run_training(program, mlp_options(), world.get(), strategy_named(GetParam()));
  EXPECT_GT(got.collectives, 0);
  expect_same_run(ref, got, std::string(GetParam()) + " on rank " + std::to_string(world->rank()));
}

INSTANTIATE_TEST_SUITE_P(Strategies, MpiShardedRun, ::testing::Values("dp4", "tp4", "dp2tp2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spora::parallel::testing

int main(int argc, char** argv) { return spora::parallel::testing::run_mpi_gtests(argc, argv); }
