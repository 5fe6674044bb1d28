// The comm matrix over NCCL, on as many GPUs as this machine has (a single GPU runs the
// 1-rank cases). Without a usable GPU -- as on the development and CI machines, where CUDA
// programs fail with cudaErrorInsufficientDriver -- every test skips with the reason.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/comm/nccl_comm.h"
#include "comm_matrix.h"

namespace spora::comm {
namespace {

using namespace testing_support;

class NcclMatrix : public testing::TestWithParam<Pair> {};

TEST_P(NcclMatrix, ElementByElement) {
  std::string why;
  const int gpus = cuda_device_count(&why);
  if (gpus == 0) GTEST_SKIP() << "no usable GPU, NCCL tests skipped: " << why;
  const Pair pair = GetParam();
  for (int p = 1; p <= std::min(gpus, 8); ++p) {
    // Communicators are made once per rank count (ncclCommInitAll takes far longer than a
    // case); every rank runs every case in the same order, and counts its wrong elements.
    struct Case {
      CollectiveSpec spec;
      std::unique_ptr<parallel::Schedule> schedule;
      DType dtype;
    };
    std::vector<Case> cases;
    for (std::int64_t count : {0, 1, 7, 1031, 65537}) {
      const int root = static_cast<int>(count % p);
      for (ReduceOp op : ops_for(pair.collective)) {
        const CollectiveSpec spec{pair.collective, op, p, count, root};
        for (DType t : {DType::F32, DType::F64, DType::I32}) {
          std::unique_ptr<parallel::Schedule> schedule;
          if (pair.algorithm != Algorithm::Native)
            schedule = std::make_unique<parallel::Schedule>(
                parallel::build_schedule(pair.algorithm, spec, AlgorithmOptions{2, 0}));
          cases.push_back({spec, std::move(schedule), t});
        }
      }
    }
    std::vector<std::vector<std::int64_t>> wrong(p, std::vector<std::int64_t>(cases.size(), -1));
    run_nccl_threads(p, [&](Communicator& comm) {
      for (std::size_t i = 0; i < cases.size(); ++i)
        wrong[comm.rank()][i] =
            run_case(comm, pair.algorithm, cases[i].spec, cases[i].schedule.get(), cases[i].dtype);
    });
    for (std::size_t i = 0; i < cases.size(); ++i)
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(wrong[r][i], 0) << describe(pair, cases[i].spec, cases[i].dtype, 2) << ": rank "
                                  << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, NcclMatrix, testing::ValuesIn(all_pairs()),
                         [](const auto& info) { return pair_name(info.param); });

TEST(Nccl, ReportsWhyThereIsNoGpu) {
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(run_nccl_threads(1, [](Communicator&) {}), CommError);
}

}  // namespace
}  // namespace spora::comm
