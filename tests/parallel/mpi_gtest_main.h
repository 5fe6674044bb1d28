// The main() of the test binaries that run under mpirun (spmd_mpi_main.cpp, zero_mpi_main.cpp):
// MPI up, the registry and autodiff installed, only rank 0 prints, and the exit status is
// failed on every rank when any rank failed.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include "autodiff/install.h"
#include "backends/comm/mpi_comm.h"
#include "ops/ops.h"

namespace spora::parallel::testing {

inline int run_mpi_gtests(int argc, char** argv) {
  comm::mpi_initialize(&argc, &argv);
  ops::register_all();
  autodiff::install();
  ::testing::InitGoogleTest(&argc, argv);
  if (comm::mpi_world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  comm::mpi_finalize();
  return any_failed;
}

}  // namespace spora::parallel::testing
