// The caching allocator (backends/runtime/allocator.h) and tensor storage (semantics/value.h):
// size classes, reuse of freed blocks, the two pools, large blocks by exact-ish size, cache
// trimming, statistics, two threads allocating at once, and Tensor storage on top of it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "backends/runtime/allocator.h"
#include "lang/diagnostics.h"
#include "semantics/value.h"

namespace spora::runtime {
namespace {

using sem::Lifetime;

TEST(CachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::round_size(0), 64u);
  EXPECT_EQ(CachingAllocator::round_size(1), 64u);
  EXPECT_EQ(CachingAllocator::round_size(64), 64u);
  EXPECT_EQ(CachingAllocator::round_size(65), 128u);
  EXPECT_EQ(CachingAllocator::round_size(1024), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1025), 1152u);  // 1024 + 1024/8
  EXPECT_EQ(CachingAllocator::round_size(4000), 4096u);  // steps of 2048 / 8 = 256
  EXPECT_EQ(CachingAllocator::round_size(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::round_size((size_t{1} << 20) + 1), (size_t{1} << 20) + (64 << 10));
  // Every class holds its request, is 64-byte aligned, and wastes at most 1/8 above 1 KiB.
  for (size_t n = 1; n < (size_t{8} << 20); n = n * 5 / 4 + 7) {
    const size_t r = CachingAllocator::round_size(n);
    EXPECT_GE(r, n);
    EXPECT_EQ(r % 64, 0u);
    if (n > 1024) {
      EXPECT_LE(r - n, n / 8) << n;
    }
  }
}

TEST(CachingAllocator, ReusesFreedBlocks) {
  CachingAllocator a;
  sem::Block b1 = a.allocate(1000, Lifetime::Short);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b1.ptr) % 64, 0u);
  EXPECT_EQ(b1.size, 1024u);
  std::memset(b1.ptr, 0x5a, 1000);
  a.deallocate(b1);
  sem::Block b2 = a.allocate(1000, Lifetime::Short);
  EXPECT_EQ(b2.ptr, b1.ptr);  // the same block again
  sem::Block b3 = a.allocate(1000, Lifetime::Short);
  EXPECT_NE(b3.ptr, b2.ptr);  // the cache had one block
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.short_lived.hits, 1);
  EXPECT_EQ(s.short_lived.misses, 2);
  EXPECT_EQ(s.short_lived.live_bytes, 2048);
  EXPECT_EQ(s.short_lived.cached_bytes, 0);
  a.deallocate(b2);
  a.deallocate(b3);
  s = a.stats();
  EXPECT_EQ(s.short_lived.live_bytes, 0);
  EXPECT_EQ(s.short_lived.cached_bytes, 2048);
  EXPECT_EQ(s.short_lived.reserved_bytes, 2048);
  EXPECT_EQ(s.short_lived.peak_bytes, 2048);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 1.0 / 3.0);
  a.empty_cache();
  s = a.stats();
  EXPECT_EQ(s.short_lived.cached_bytes, 0);
  EXPECT_EQ(s.short_lived.reserved_bytes, 0);
}

TEST(CachingAllocator, PoolsAreApart) {
  CachingAllocator a;
  sem::Block lng = a.allocate(5000, Lifetime::Long);
  EXPECT_EQ(lng.pool, 1u);
  a.deallocate(lng);
  // A short-lived request of the same class does not take the long-lived pool's block...
  sem::Block shrt = a.allocate(5000, Lifetime::Short);
  EXPECT_NE(shrt.ptr, lng.ptr);
  EXPECT_EQ(shrt.pool, 0u);
  // ...which is still there for the next long-lived request.
  sem::Block lng2 = a.allocate(5000, Lifetime::Long);
  EXPECT_EQ(lng2.ptr, lng.ptr);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.long_lived.hits, 1);
  EXPECT_EQ(s.long_lived.misses, 1);
  EXPECT_EQ(s.short_lived.misses, 1);
  EXPECT_EQ(s.long_lived.live_bytes, static_cast<int64_t>(CachingAllocator::round_size(5000)));
  a.deallocate(shrt);
  a.deallocate(lng2);
}

// From 8 MiB: multiples of 2 MiB (the huge page), 2 MiB aligned, at most 1/4 rounding.
TEST(CachingAllocator, HugeBlocks) {
  const size_t mb = size_t{1} << 20;
  EXPECT_EQ(CachingAllocator::round_size(8 * mb - 1), 8 * mb);  // 64 KiB steps below
  EXPECT_EQ(CachingAllocator::round_size(8 * mb + 1), 10 * mb);
  EXPECT_EQ(CachingAllocator::round_size(16 * mb), 16 * mb);
  for (size_t n = 8 * mb; n < 256 * mb; n = n * 9 / 8 + 12345) {
    const size_t r = CachingAllocator::round_size(n);
    EXPECT_GE(r, n);
    EXPECT_EQ(r % (2 * mb), 0u);
    EXPECT_LE(r - n, n / 4) << n;
  }
  CachingAllocator a;
  sem::Block b = a.allocate(16 * mb + 3, Lifetime::Short);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.ptr) % (2 * mb), 0u);
  EXPECT_EQ(b.size, 18 * mb);
  static_cast<char*>(b.ptr)[b.size - 1] = 1;  // the whole class size is usable
  a.deallocate(b);
}

TEST(CachingAllocator, LargeBlocksByExactishSize) {
  CachingAllocator a;
  const size_t mb = size_t{1} << 20;
  sem::Block big = a.allocate(10 * mb, Lifetime::Short);
  a.deallocate(big);
  sem::Block close = a.allocate(9 * mb + mb / 2, Lifetime::Short);  // within 1/8: reused
  EXPECT_EQ(close.ptr, big.ptr);
  EXPECT_EQ(close.size, 10 * mb);  // the block keeps its real size
  a.deallocate(close);
  sem::Block small = a.allocate(5 * mb, Lifetime::Short);  // half the size: not this block
  EXPECT_NE(small.ptr, big.ptr);
  EXPECT_EQ(a.stats().short_lived.cached_bytes, static_cast<int64_t>(10 * mb));
  a.deallocate(small);
  // Best fit: of two cached blocks, the smaller one that fits.
  sem::Block again = a.allocate(5 * mb, Lifetime::Short);
  EXPECT_EQ(again.size, 5 * mb);
  a.deallocate(again);
}

TEST(CachingAllocator, TrimsTheCacheOverItsLimit) {
  CachingAllocator a;
  a.set_cache_limit(size_t{4} << 20);
  std::vector<sem::Block> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(a.allocate((size_t{1} << 20) + static_cast<size_t>(i) * (256 << 10), Lifetime::Short));
  for (const auto& b : blocks) a.deallocate(b);
  EXPECT_GT(a.stats().short_lived.cached_bytes, int64_t{4} << 20);
  // A miss with the cache over its limit frees cached blocks down to half the limit.
  sem::Block b = a.allocate(size_t{32} << 20, Lifetime::Short);
  EXPECT_LE(a.stats().short_lived.cached_bytes, int64_t{2} << 20);
  a.deallocate(b);
}

TEST(CachingAllocator, TwoThreadsAllocating) {
  CachingAllocator a;
  constexpr int kRounds = 20000;
  auto worker = [&](uint8_t tag, Lifetime lifetime, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<sem::Block> held;
    for (int i = 0; i < kRounds; ++i) {
      if (held.size() < 16 && (held.empty() || rng() % 2)) {
        const size_t n = 1 + rng() % 20000;
        sem::Block b = a.allocate(n, lifetime);
        std::memset(b.ptr, tag, n);
        held.push_back(b);
        // Every byte of a block this thread holds still has its tag: no block is handed
        // out twice.
        const sem::Block& c = held[rng() % held.size()];
        const uint8_t* p = static_cast<const uint8_t*>(c.ptr);
        ASSERT_EQ(p[0], tag);
      } else {
        const size_t k = rng() % held.size();
        a.deallocate(held[k]);
        held.erase(held.begin() + static_cast<long>(k));
      }
    }
    for (const auto& b : held) a.deallocate(b);
  };
  std::thread t1(worker, uint8_t{0x11}, Lifetime::Short, 1u);
  std::thread t2(worker, uint8_t{0x22}, Lifetime::Short, 2u);
  std::thread t3(worker, uint8_t{0x33}, Lifetime::Long, 3u);
  t1.join();
  t2.join();
  t3.join();
  const AllocatorStats s = a.stats();
  const PoolStats t = s.total();
  EXPECT_EQ(t.live_bytes, 0);
  EXPECT_EQ(t.hits + t.misses, t.frees);  // every block came back
  EXPECT_GT(s.hit_rate(), 0.5);
}

// A CPU allocator that fills what it hands out with 0xab, to see what Tensor writes.
class PatternAllocator final : public sem::Allocator {
 public:
  sem::Block allocate(size_t bytes, Lifetime lifetime) override {
    sem::Block b = inner.allocate(bytes, lifetime);
    std::memset(b.ptr, 0xab, b.size);
    ++allocations;
    last_lifetime = lifetime;
    return b;
  }
  void deallocate(const sem::Block& b) override {
    ++frees;
    inner.deallocate(b);
  }
  CachingAllocator inner;
  int allocations = 0, frees = 0;
  Lifetime last_lifetime = Lifetime::Short;
};

TEST(TensorStorage, EmptyDoesNotTouchMemoryZerosAndFullDo) {
  PatternAllocator pa;
  sem::set_allocator(&pa);
  {
    sem::Tensor e = sem::Tensor::empty(DType::f32, {3, 5});
    EXPECT_EQ(e.data<uint8_t>()[0], 0xab);
    EXPECT_EQ(e.data<uint8_t>()[59], 0xab);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(e.raw()) % sem::kBufferAlignment, 0u);
    sem::Tensor z = sem::Tensor::zeros(DType::i64, {7});
    for (int i = 0; i < 7; ++i) EXPECT_EQ(z.data<int64_t>()[i], 0);
    sem::Tensor f = sem::Tensor::full(DType::i32, {2, 2}, -3.0);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(f.data<int32_t>()[i], -3);
    sem::Tensor h = sem::Tensor::full(DType::f16, {3}, 1.5);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(h.get(i), 1.5);
    sem::Tensor d = sem::Tensor::full(DType::f64, {2}, 0.1);
    EXPECT_EQ(d.data<double>()[1], 0.1);
    EXPECT_EQ(pa.allocations, 5);
  }
  EXPECT_EQ(pa.frees, 5);
  sem::set_allocator(nullptr);
}

TEST(TensorStorage, BuffersDieByReferenceCount) {
  PatternAllocator pa;
  sem::set_allocator(&pa);
  const int64_t live0 = sem::memory_stats().live_bytes;
  {
    sem::Tensor a = sem::Tensor::zeros(DType::f32, {1000});
    EXPECT_TRUE(a.unique());
    EXPECT_EQ(a.storage()->capacity(), CachingAllocator::round_size(4000));
    EXPECT_EQ(sem::memory_stats().live_bytes - live0, 4000);  // bytes asked for, not rounded
    sem::Tensor b = a.reshaped({10, 100});  // shares the buffer
    EXPECT_FALSE(a.unique());
    EXPECT_EQ(b.raw(), a.raw());
    EXPECT_EQ(b.strides(), (std::vector<int64_t>{100, 1}));
    EXPECT_EQ(b.device(), sem::Device::cpu());
    a = sem::Tensor();
    EXPECT_EQ(pa.frees, 0);  // b still holds it
    EXPECT_TRUE(b.unique());
  }
  EXPECT_EQ(pa.frees, 1);
  EXPECT_EQ(sem::memory_stats().live_bytes, live0);
  sem::set_allocator(nullptr);
}

TEST(TensorStorage, LongLivedScopeChoosesThePool) {
  PatternAllocator pa;
  sem::set_allocator(&pa);
  EXPECT_EQ(sem::current_lifetime(), Lifetime::Short);
  {
    sem::LongLived scope;
    sem::Tensor p = sem::Tensor::empty(DType::f32, {256});
    EXPECT_EQ(pa.last_lifetime, Lifetime::Long);
    EXPECT_EQ(p.storage()->lifetime(), Lifetime::Long);
    EXPECT_EQ(pa.inner.stats().long_lived.live_bytes, 1024);
    {
      sem::LifetimeScope inner(Lifetime::Short);  // scopes nest
      EXPECT_EQ(sem::current_lifetime(), Lifetime::Short);
    }
    EXPECT_EQ(sem::current_lifetime(), Lifetime::Long);
    // The hint is per thread: another thread starts short-lived.
    Lifetime seen = Lifetime::Long;
    std::thread([&] { seen = sem::current_lifetime(); }).join();
    EXPECT_EQ(seen, Lifetime::Short);
  }
  EXPECT_EQ(sem::current_lifetime(), Lifetime::Short);
  sem::set_allocator(nullptr);
}

TEST(TensorStorage, BuffersGoBackToTheAllocatorThatMadeThem) {
  PatternAllocator pa;
  sem::set_allocator(&pa);
  sem::Tensor t = sem::Tensor::empty(DType::f32, {8});
  sem::set_allocator(nullptr);  // back to the default for new buffers
  sem::Tensor u = sem::Tensor::empty(DType::f32, {8});
  EXPECT_EQ(pa.allocations, 1);
  t = sem::Tensor();
  EXPECT_EQ(pa.frees, 1);
  EXPECT_EQ(sem::Device::cuda(1).str(), "cuda:1");
  EXPECT_THROW(sem::allocator(sem::Device::Kind::cuda), lang::InternalError);
}

}  // namespace
}  // namespace spora::runtime
