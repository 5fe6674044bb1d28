// The caching allocator (allocator.h).
#include "backends/runtime/allocator.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <string_view>

#include "lang/diagnostics.h"

namespace spora::runtime {

namespace {

constexpr size_t kSmallLimit = 1024;           // multiples of 64 below
constexpr size_t kLargeFrom = size_t{1} << 20;  // multiples of 64 KiB from here
constexpr size_t kLargeStep = size_t{64} << 10;
constexpr int64_t kDefaultCacheLimit = int64_t{256} << 20;
constexpr size_t kHugeFrom = size_t{8} << 20;  // multiples of 2 MiB huge pages from here
constexpr size_t kHugePage = size_t{2} << 20;

// Blocks from 8 MiB are 2 MiB aligned and advised to use transparent huge pages (where the
// kernel's THP mode is "madvise" or "always"): a 16 MB tensor then spans 8 TLB entries instead
// of 4,096, and a streaming kernel stops paying a page walk and a restarted hardware prefetch
// every 4 KiB (W5 unfused and fused, min_ms: 5.4 -> 4.8 and 2.0 -> 1.75 ms here).
// SPORA_HUGE_PAGES=0 turns it off (read once).
const bool g_huge_pages = [] {
  const char* env = std::getenv("SPORA_HUGE_PAGES");
  return !(env && std::string_view(env) == "0");
}();

void* system_alloc(size_t size) {
  if (size < kHugeFrom || !g_huge_pages) return std::aligned_alloc(sem::kBufferAlignment, size);
  void* p = std::aligned_alloc(kHugePage, size);  // size is a multiple of kHugePage
  if (p) madvise(p, size, MADV_HUGEPAGE);         // advice only: failure changes nothing
  return p;
}

size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

void note_peaks(PoolStats& s) {
  s.reserved_bytes = s.live_bytes + s.cached_bytes;
  s.peak_bytes = std::max(s.peak_bytes, s.live_bytes);
  s.peak_reserved_bytes = std::max(s.peak_reserved_bytes, s.reserved_bytes);
}

}  // namespace

PoolStats AllocatorStats::total() const {
  PoolStats t;
  for (const PoolStats* p : {&short_lived, &long_lived}) {
    t.live_bytes += p->live_bytes;
    t.peak_bytes += p->peak_bytes;  // an upper bound: the two peaks need not coincide
    t.cached_bytes += p->cached_bytes;
    t.reserved_bytes += p->reserved_bytes;
    t.peak_reserved_bytes += p->peak_reserved_bytes;
    t.hits += p->hits;
    t.misses += p->misses;
    t.frees += p->frees;
  }
  return t;
}

double AllocatorStats::hit_rate() const {
  const PoolStats t = total();
  const int64_t asked = t.hits + t.misses;
  return asked ? static_cast<double>(t.hits) / static_cast<double>(asked) : 1.0;
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes <= kSmallLimit) return round_up(std::max<size_t>(bytes, 1), sem::kBufferAlignment);
  if (bytes < kLargeFrom) return round_up(bytes, std::bit_floor(bytes) / 8);
  if (bytes < kHugeFrom) return round_up(bytes, kLargeStep);
  return round_up(bytes, kHugePage);
}

CachingAllocator::~CachingAllocator() { empty_cache(); }

sem::Block CachingAllocator::allocate(size_t bytes, sem::Lifetime lifetime) {
  const size_t size = round_size(bytes);
  const uint32_t tag = lifetime == sem::Lifetime::Long ? 1 : 0;
  std::lock_guard<std::mutex> lock(mu_);
  Pool& pool = pools_[tag];
  // Best fit: the smallest cached block that is big enough; small classes must match exactly,
  // large blocks may be up to 1/8 bigger.
  auto it = pool.free.lower_bound(size);
  const size_t slack = size >= kLargeFrom ? size / 8 : 0;
  if (it != pool.free.end() && it->first <= size + slack) {
    sem::Block b{it->second, it->first, tag};
    pool.free.erase(it);
    pool.stats.cached_bytes -= static_cast<int64_t>(b.size);
    pool.stats.live_bytes += static_cast<int64_t>(b.size);
    ++pool.stats.hits;
    note_peaks(pool.stats);
    return b;
  }
  ++pool.stats.misses;
  const int64_t limit = cache_limit_ ? static_cast<int64_t>(cache_limit_)
                                     : std::max(kDefaultCacheLimit, pool.stats.live_bytes);
  if (pool.stats.cached_bytes > limit) trim(pool, limit / 2);
  void* p = system_alloc(size);
  if (!p) {  // out of memory: give the whole cache back and try once more
    release_all(pools_[0]);
    release_all(pools_[1]);
    p = system_alloc(size);
    if (!p)
      throw lang::UserError(sem::out_of_memory_message(
          size, pools_[0].stats.live_bytes + pools_[1].stats.live_bytes));
  }
  pool.stats.live_bytes += static_cast<int64_t>(size);
  note_peaks(pool.stats);
  return sem::Block{p, size, tag};
}

void CachingAllocator::deallocate(const sem::Block& block) {
  if (!block.ptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  Pool& pool = pools_[block.pool & 1u];
  pool.free.emplace(block.size, block.ptr);
  pool.stats.live_bytes -= static_cast<int64_t>(block.size);
  pool.stats.cached_bytes += static_cast<int64_t>(block.size);
  ++pool.stats.frees;
  note_peaks(pool.stats);
}

void CachingAllocator::trim(Pool& pool, int64_t target) {
  while (pool.stats.cached_bytes > target && !pool.free.empty()) {
    auto last = std::prev(pool.free.end());
    std::free(last->second);
    pool.stats.cached_bytes -= static_cast<int64_t>(last->first);
    pool.free.erase(last);
  }
  pool.stats.reserved_bytes = pool.stats.live_bytes + pool.stats.cached_bytes;
}

void CachingAllocator::release_all(Pool& pool) { trim(pool, 0); }

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return AllocatorStats{pools_[0].stats, pools_[1].stats};
}

void CachingAllocator::reset_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Pool& p : pools_) {
    p.stats.peak_bytes = p.stats.live_bytes;
    p.stats.peak_reserved_bytes = p.stats.reserved_bytes;
    p.stats.hits = p.stats.misses = p.stats.frees = 0;
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_all(pools_[0]);
  release_all(pools_[1]);
}

void CachingAllocator::set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_limit_ = bytes;
}

CachingAllocator& caching_allocator() {
  static CachingAllocator* a = new CachingAllocator();  // never destroyed (see the header)
  return *a;
}

std::string describe(const AllocatorStats& stats) {
  const PoolStats t = stats.total();
  return fmt::format("allocator reserved {:.3f} MB (peak {:.3f} MB), {:.1f} % cache hits ({} of {}), "
                     "long-lived pool peak {:.3f} MB",
                     static_cast<double>(t.reserved_bytes) / 1e6,
                     static_cast<double>(t.peak_reserved_bytes) / 1e6, 100.0 * stats.hit_rate(), t.hits,
                     t.hits + t.misses, static_cast<double>(stats.long_lived.peak_bytes) / 1e6);
}

}  // namespace spora::runtime
