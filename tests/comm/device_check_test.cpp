// The device-memory contract (backends/comm/device_check.h) over threads: the executor's
// stream-ordered path (lockstep rounds in groups, staging for receive-reduces) runs every
// algorithm x collective right on a communicator that orders its work as a GPU stream does and
// refuses host pointers; the same path NCCL takes, checked on a machine without a GPU.
#include "backends/comm/device_check.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "backends/comm/threads.h"
#include "comm_matrix.h"

namespace spora::comm {
namespace {

using namespace testing_support;

class DeviceCheckMatrix : public testing::TestWithParam<Pair> {};

TEST_P(DeviceCheckMatrix, ElementByElement) {
  const Pair pair = GetParam();
  for (int p : {1, 2, 3, 4, 5, 8}) {
    ThreadWorld world(p);
    for (std::int64_t count : {0, 1, 7, 1031}) {
      const int root = static_cast<int>(count % p);
      for (ReduceOp op : ops_for(pair.collective)) {
        const CollectiveSpec spec{pair.collective, op, p, count, root};
        std::unique_ptr<parallel::Schedule> schedule;
        if (pair.algorithm != Algorithm::Native)
          schedule = std::make_unique<parallel::Schedule>(
              parallel::build_schedule(pair.algorithm, spec, AlgorithmOptions{2, 0}));
        for (DType t : {DType::F32, DType::I32}) {
          std::vector<std::int64_t> wrong(p, -1), ungrouped(p, -1);
          world.run([&](Communicator& host) {
            DeviceCheck comm(host);
            wrong[comm.rank()] = run_case(comm, pair.algorithm, spec, schedule.get(), t);
            ungrouped[comm.rank()] = comm.ungrouped_messages();
          });
          for (int r = 0; r < p; ++r) {
            ASSERT_EQ(wrong[r], 0) << describe(pair, spec, t, 2) << ": rank " << r;
            if (pair.algorithm != Algorithm::Native) {
              ASSERT_EQ(ungrouped[r], 0) << describe(pair, spec, t, 2) << ": rank " << r;
            }
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, DeviceCheckMatrix, testing::ValuesIn(all_pairs()),
                         [](const auto& info) { return pair_name(info.param); });

TEST(DeviceCheck, RefusesHostPointersAndKeepsItsOwn) {
  run_threads(2, [](Communicator& host) {
    DeviceCheck comm(host);
    EXPECT_EQ(comm.memory_space(), MemorySpace::Device);
    EXPECT_TRUE(comm.stream_ordered());
    std::vector<float> on_host(4, 1.0f);
    try {
      comm.isend(on_host.data(), 16, 1 - comm.rank(), 7);
      ADD_FAILURE() << "a host pointer was accepted";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("isend was given 16 bytes at a host address"),
                std::string::npos)
          << e.what();
    }
    void* block = comm.allocate(16);
    // One past the block is outside it too.
    EXPECT_THROW(comm.copy(static_cast<char*>(block) + 8, block, 16), CommError);
    comm.upload(block, on_host.data(), 16);
    void* other = comm.allocate(16);
    comm.group_start();
    const Request s = comm.isend(block, 16, 1 - comm.rank(), 7);
    const Request r = comm.irecv(other, 16, 1 - comm.rank(), 7);
    comm.group_end();
    const std::vector<Request> both{s, r};
    EXPECT_EQ(comm.wait_some(both).size(), 2u);
    std::vector<float> back(4, 0.0f);
    comm.download(back.data(), other, 16);
    EXPECT_EQ(back, on_host);
    EXPECT_EQ(comm.ungrouped_messages(), 0);
    comm.deallocate(block);
    comm.deallocate(other);
    EXPECT_THROW(comm.deallocate(on_host.data()), CommError);
  });
}

}  // namespace
}  // namespace spora::comm
