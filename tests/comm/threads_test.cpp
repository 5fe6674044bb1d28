// Every algorithm x every collective it implements x reduction ops x dtypes (f32, f64, i32) x
// rank counts 1-9 and 16 x counts 0, 1, 2 and primes, over the in-process communicator,
// checked element by element against the direct computation (backends/comm/verify.h).
#include "backends/comm/threads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "comm_matrix.h"
#include "parallel/collectives/text.h"

namespace spora::comm {
namespace {

using namespace testing_support;

class ThreadsMatrix : public testing::TestWithParam<Pair> {};

TEST_P(ThreadsMatrix, ElementByElement) {
  const Pair pair = GetParam();
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
    ThreadWorld world(p);
    for (std::int64_t count : {0, 1, 2, 7, 13, 101, 1031}) {
      const int root = static_cast<int>(count % p);  // every root shows up across the counts
      for (ReduceOp op : ops_for(pair.collective)) {
        const CollectiveSpec spec{pair.collective, op, p, count, root};
        for (int chunks : {1, 3}) {
          if (chunks > 1 && (pair.algorithm == Algorithm::Native || count < 100)) continue;
          std::unique_ptr<parallel::Schedule> schedule;
          if (pair.algorithm != Algorithm::Native)
            schedule = std::make_unique<parallel::Schedule>(
                parallel::build_schedule(pair.algorithm, spec, AlgorithmOptions{chunks, 0}));
          for (DType t : {DType::F32, DType::F64, DType::I32}) {
            std::vector<std::int64_t> wrong(p, -1);
            world.run([&](Communicator& comm) {
              wrong[comm.rank()] = run_case(comm, pair.algorithm, spec, schedule.get(), t);
            });
            for (int r = 0; r < p; ++r)
              ASSERT_EQ(wrong[r], 0) << describe(pair, spec, t, chunks) << ": rank " << r;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ThreadsMatrix, testing::ValuesIn(all_pairs()),
                         [](const auto& info) { return pair_name(info.param); });

// NCCL's execution model, emulated on threads: operations between group_start and group_end
// all progress together and the group completes as a whole; there is no per-request wait.
// The executor must then issue schedules in lockstep rounds -- this checks that path (and that
// the rounds never leave a send waiting for a receive of a later round) without a GPU.
class GroupSynchronous final : public Communicator {
 public:
  explicit GroupSynchronous(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string_view backend() const override { return "group-synchronous"; }
  bool stream_ordered() const override { return true; }
  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    return add(inner_.isend(data, bytes, peer, tag));
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    return add(inner_.irecv(data, bytes, peer, tag));
  }
  std::vector<std::size_t> wait_some(std::span<const Request> requests) override {
    std::vector<std::size_t> all(requests.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  void group_start() override { in_group_ = true; }
  void group_end() override {
    in_group_ = false;
    complete_group();
  }
  void native(const CollectiveCall& call) override { inner_.native(call); }
  void barrier() override { inner_.barrier(); }

 private:
  Request add(Request r) {
    group_.push_back(r);
    if (!in_group_) complete_group();
    return Request{next_++};
  }
  void complete_group() {
    while (!group_.empty()) {
      std::vector<std::size_t> done = inner_.wait_some(group_);
      std::sort(done.rbegin(), done.rend());
      for (std::size_t i : done) group_.erase(group_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  Communicator& inner_;
  std::vector<Request> group_;
  bool in_group_ = false;
  std::int64_t next_ = 0;
};

TEST(Threads, LockstepRoundsAsNcclRunsThem) {
  for (const Pair& pair : all_pairs()) {
    if (pair.algorithm == Algorithm::Native) continue;
    for (int p : {1, 2, 3, 5, 8, 9})
      for (std::int64_t count : {0, 1, 13, 1031}) {
        const CollectiveSpec spec{pair.collective, ReduceOp::Max, p, count, p / 2};
        const auto schedule = parallel::build_schedule(pair.algorithm, spec, {2, 0});
        std::vector<std::int64_t> wrong(p, -1);
        run_threads(p, [&](Communicator& comm) {
          GroupSynchronous grouped(comm);
          wrong[comm.rank()] = run_case(grouped, pair.algorithm, spec, &schedule, DType::F64);
        });
        ASSERT_EQ(wrong, std::vector<std::int64_t>(p, 0)) << describe(pair, spec, DType::F64, 2);
      }
  }
}

// Channelled rings (parallel/collectives/ring.cpp: C rings over parts of the data, rotated per
// node) give the direct computation's result, element by element.
TEST(Threads, ChannelledRingsElementByElement) {
  for (Collective c : parallel::supported_collectives(Algorithm::Ring))
    for (int p : {4, 6, 16}) {
      ThreadWorld world(p);
      for (int g : {p, p / 2, 2}) {
        for (int channels : {2, 4}) {
          for (std::int64_t count : {1, 13, 1031}) {
            const CollectiveSpec spec{c, ReduceOp::Sum, p, count, 0};
            const parallel::Schedule schedule =
                parallel::build_schedule(Algorithm::Ring, spec, AlgorithmOptions{1, g, channels});
            for (DType t : {DType::F32, DType::I32}) {
              std::vector<std::int64_t> wrong(p, -1);
              world.run([&](Communicator& comm) {
                wrong[comm.rank()] = run_case(comm, Algorithm::Ring, spec, &schedule, t);
              });
              for (int r = 0; r < p; ++r)
                ASSERT_EQ(wrong[r], 0)
                    << parallel::collective_name(c) << " p=" << p << " ranks_per_node=" << g
                    << " channels=" << channels << " count=" << count << ": rank " << r;
            }
          }
        }
      }
    }
}

TEST(Threads, ExecutorRunsRepeatedly) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 4, 1000, 0};
  const auto schedule = parallel::build_schedule(Algorithm::Ring, spec, {4, 0});
  ThreadWorld world(4);
  std::vector<std::int64_t> wrong(4, -1);
  world.run([&](Communicator& comm) {
    std::vector<float> in(1000), out(1000);
    fill_input(spec, comm.rank(), DType::F32, in.data());
    Executor ex(schedule, comm, DType::F32);
    for (int i = 0; i < 5; ++i) {
      std::fill(out.begin(), out.end(), -1.0f);
      ex.run(in.data(), out.data());
    }
    wrong[comm.rank()] = count_wrong(spec, comm.rank(), DType::F32, out.data());
  });
  EXPECT_EQ(wrong, std::vector<std::int64_t>(4, 0));
}

TEST(Threads, RunsAHandWrittenSchedule) {
  const auto schedule = parallel::parse_schedule(R"(
    schedule all-gather ranks=2 count=2
    rank 0
      0: copy input[0:2] -> output[0:2]
      1: send to 1 input[0:2]
      2: recv from 1 output[2:4]
    rank 1
      0: copy input[0:2] -> output[2:4]
      1: recv from 0 output[0:2]
      2: send to 0 input[0:2]
  )");
  std::vector<std::int64_t> wrong(2, -1);
  run_threads(2, [&](Communicator& comm) {
    wrong[comm.rank()] = run_case(comm, Algorithm::Ring, schedule.spec, &schedule, DType::I32);
  });
  EXPECT_EQ(wrong, std::vector<std::int64_t>(2, 0));
}

TEST(Threads, AFailingRankAbortsTheOthers) {
  ThreadWorld world(3);
  EXPECT_THROW(world.run([](Communicator& comm) {
    if (comm.rank() == 1) throw std::runtime_error("rank 1 gives up");
    int x = 0;
    Request r = comm.irecv(&x, sizeof x, 1, 0);  // never sent: must not hang
    comm.wait_some(std::span<const Request>(&r, 1));
  }),
               std::runtime_error);
  // The world is usable afterwards.
  std::atomic<int> ran{0};
  world.run([&](Communicator& comm) {
    comm.barrier();
    ++ran;
  });
  EXPECT_EQ(ran, 3);
}

TEST(Threads, ScheduleForTheWrongRankCountIsRejected) {
  const auto schedule =
      parallel::build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 3, 9, 0});
  EXPECT_THROW(run_threads(2, [&](Communicator& comm) { Executor(schedule, comm, DType::F32); }),
               CommError);
}

}  // namespace
}  // namespace spora::comm
