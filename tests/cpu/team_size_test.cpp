// team_size's test of other processes wanting the processors (kernels.h: oversubscribed_from):
// a task runnable in one read of the load only does not make loops single-threaded; one that
// stays runnable, or a high load average, does.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "backends/cpu/kernels.h"

namespace spora::cpu {
namespace {

// Reads that return `reads` in turn (the last one again past the end), counting the calls.
struct Reads {
  std::vector<LoadRead> reads;
  int calls = 0;
  LoadRead operator()() {
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(calls), reads.size() - 1);
    ++calls;
    return reads[i];
  }
};

bool busy(double procs, Reads& r) {
  return oversubscribed_from(procs, [&r] { return r(); });
}

TEST(TeamSize, ATaskRunnableInOneReadOnlyIsNotOversubscription) {
  // 2 processors: this thread and a team member runnable, and a third task in the first read.
  Reads r{{{0.5, 3, true}, {0.5, 2, true}}};
  EXPECT_FALSE(busy(2, r));
  EXPECT_EQ(r.calls, 2);
  Reads late{{{0.5, 3, true}, {0.5, 3, true}, {0.5, 3, true}, {0.5, 1, true}}};
  EXPECT_FALSE(busy(2, late));
  EXPECT_EQ(late.calls, 4);
}

TEST(TeamSize, ATaskRunnableInEveryReadIsOversubscription) {
  Reads r{{{0.5, 3, true}}};
  EXPECT_TRUE(busy(2, r));
  EXPECT_EQ(r.calls, 4);
  Reads many{{{0.5, 9, true}}};
  EXPECT_TRUE(busy(8, many));
}

TEST(TeamSize, NoMoreTasksThanProcessorsIsNotOversubscription) {
  Reads r{{{2.9, 2, true}}};
  EXPECT_FALSE(busy(2, r));
  EXPECT_EQ(r.calls, 1);
}

TEST(TeamSize, ALoadAverageOfProcessorsPlusOneIsOversubscriptionAtOnce) {
  Reads r{{{3.0, 1, true}}};
  EXPECT_TRUE(busy(2, r));
  EXPECT_EQ(r.calls, 1);
  // A high average ends the reads however the instant counts go.
  Reads later{{{0.5, 3, true}, {3.5, 2, true}}};
  EXPECT_TRUE(busy(2, later));
  EXPECT_EQ(later.calls, 2);
}

TEST(TeamSize, AnUnreadableLoadIsNotOversubscription) {
  Reads r{{{0, 0, false}}};
  EXPECT_FALSE(busy(2, r));
}

// parallel_for_from and parallel_tasks open no parallel region with more threads than pieces of
// work: a thread without a chunk would only wake and wait at the barrier.
struct TwoThreads {
  int threads = omp_get_max_threads();
  TwoThreads() {
    omp_set_num_threads(2);
    set_load_adaptive(false);
  }
  ~TwoThreads() {
    omp_set_num_threads(threads);
    set_load_adaptive(true);
  }
};

TEST(TeamSize, NoThreadWithoutAChunk) {
  const TwoThreads two;
  auto teams = [](int64_t n, int64_t align) {
    std::vector<int> seen;
    parallel_for_from(
        1, n, 1,
        [&](int64_t, int64_t) {
#pragma omp critical
          seen.push_back(omp_get_num_threads());
        },
        align);
    return seen;
  };
  EXPECT_EQ(teams(1, 1), (std::vector<int>{1}));       // one block of a product: inline
  EXPECT_EQ(teams(16, 16), (std::vector<int>{1}));     // one aligned chunk
  EXPECT_EQ(teams(17, 16), (std::vector<int>{2, 2}));  // [0, 16) and [16, 17)
  EXPECT_EQ(teams(2, 1), (std::vector<int>{2, 2}));
  std::vector<int> tasks;
  parallel_tasks(1, int64_t{1} << 40, [&](int64_t) { tasks.push_back(omp_get_num_threads()); });
  EXPECT_EQ(tasks, (std::vector<int>{1}));
}

}  // namespace
}  // namespace spora::cpu
