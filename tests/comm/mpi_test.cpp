// The comm matrix over MPI. Run as
//   mpirun --oversubscribe --allow-run-as-root -np 4 test_comm_mpi
// Every process runs the same tests in the same order (they are collective); cases run on
// communicators of 1, 2, 3 and 4 ranks carved out of the world, and a failure on any rank
// fails the test on every rank. Only rank 0 prints.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "backends/comm/mpi_comm.h"
#include "comm_matrix.h"

namespace spora::comm {
namespace {

using namespace testing_support;

// Sum of wrong elements over the world (ranks outside the sub-communicator add 0).
std::int64_t world_sum(std::int64_t local) {
  std::int64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

class MpiMatrix : public testing::TestWithParam<Pair> {};

TEST_P(MpiMatrix, ElementByElement) {
  const Pair pair = GetParam();
  for (int p = 1; p <= mpi_world_size(); ++p) {
    std::unique_ptr<Communicator> comm = make_mpi_communicator(p);
    for (std::int64_t count : {0, 1, 2, 7, 13, 1031, 65537}) {
      const int root = static_cast<int>(count % p);
      for (ReduceOp op : ops_for(pair.collective)) {
        const CollectiveSpec spec{pair.collective, op, p, count, root};
        for (int chunks : {1, 4}) {
          if (chunks > 1 && (pair.algorithm == Algorithm::Native || count < 1000)) continue;
          std::unique_ptr<parallel::Schedule> schedule;
          if (pair.algorithm != Algorithm::Native)
            schedule = std::make_unique<parallel::Schedule>(
                parallel::build_schedule(pair.algorithm, spec, AlgorithmOptions{chunks, 0}));
          for (DType t : {DType::F32, DType::F64, DType::I32}) {
            std::int64_t wrong = 0;
            if (comm) wrong = run_case(*comm, pair.algorithm, spec, schedule.get(), t);
            ASSERT_EQ(world_sum(wrong), 0) << describe(pair, spec, t, chunks);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, MpiMatrix, testing::ValuesIn(all_pairs()),
                         [](const auto& info) { return pair_name(info.param); });

TEST(Mpi, WorldHasFourRanks) { EXPECT_EQ(mpi_world_size(), 4) << "run under mpirun -np 4"; }

}  // namespace
}  // namespace spora::comm

int main(int argc, char** argv) {
  spora::comm::mpi_initialize(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  const int rank = spora::comm::mpi_world_rank();
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  spora::comm::mpi_finalize();
  return any_failed;
}
