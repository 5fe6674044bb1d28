// The caching allocator behind tensor storage, installed by
// runtime::install() through sem::set_allocator.
//
// Freed buffers are not returned to the system: they are kept in a cache and handed out again
// for a later request of the same size class, so a training loop that allocates the same
// shapes every step stops calling malloc after its first step.
//
//   request ──round──> class size ──pool (hint)──> cache hit? ── yes ──> cached block
//                                                      │ no
//                                                      └──> aligned_alloc (after trimming the
//                                                           cache when it is over its limit)
//
// - Size classes: below 1 KiB, multiples of 64 bytes; up to 1 MiB, 8 classes per power of two
//   (at most 12.5 % rounding); from 1 MiB, multiples of 64 KiB; from 8 MiB, multiples of 2 MiB,
//   2 MiB aligned and advised to use transparent huge pages (SPORA_HUGE_PAGES=0: not advised;
//   at most 25 % rounding, 12.5 % from 16 MiB); a cached large block is
//   reused for any request it exceeds by at most 1/8 (best fit), so large blocks are cached by
//   exact-ish size.
// - Two pools, chosen by the calling thread's sem::Lifetime hint (sem::LongLived scope):
//   long-lived buffers (parameters, optimizer state, graph inputs / outputs, dataset buffers)
//   and short-lived ones (activations) never share cached blocks, so the churn of activations
//   cannot take or fragment the blocks of the long-lived working set.
// - When a pool's cached bytes exceed its limit (default: max(256 MiB, the pool's live
//   bytes)), a miss first frees cached blocks, largest first, down to half the limit.
// - Thread-safe (one mutex): the data loader thread allocates while the interpreter runs.
// - Blocks are 64-byte aligned (2 MiB from 8 MiB), never split or merged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "semantics/value.h"

namespace spora::runtime {

struct PoolStats {
  int64_t live_bytes = 0;      // in blocks handed out (class sizes)
  int64_t peak_bytes = 0;      // of live_bytes since the last reset
  int64_t cached_bytes = 0;    // freed blocks kept for reuse
  int64_t reserved_bytes = 0;  // live + cached: what the pool holds from the system
  int64_t peak_reserved_bytes = 0;
  int64_t hits = 0;            // requests served from the cache
  int64_t misses = 0;          // requests that went to the system
  int64_t frees = 0;           // blocks handed back
};

struct AllocatorStats {
  PoolStats short_lived;
  PoolStats long_lived;
  PoolStats total() const;
  // hits / (hits + misses) over both pools (1 when nothing was asked).
  double hit_rate() const;
};

class CachingAllocator final : public sem::Allocator {
 public:
  CachingAllocator() = default;
  ~CachingAllocator() override;  // frees the cache (live blocks must be gone)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  sem::Block allocate(size_t bytes, sem::Lifetime lifetime) override;
  void deallocate(const sem::Block& block) override;

  // The size class of a request: the block size a miss allocates.
  static size_t round_size(size_t bytes);

  AllocatorStats stats() const;
  // Peaks (live and reserved) restart from the current values; hit / miss counts restart at 0.
  void reset_stats();
  // Returns every cached block to the system.
  void empty_cache();
  // Cached bytes a pool may keep before a miss trims it (0: the default rule above).
  void set_cache_limit(size_t bytes);

 private:
  struct Pool {
    std::multimap<size_t, void*> free;  // cached blocks by size
    PoolStats stats;
  };
  void trim(Pool& pool, int64_t target);
  void release_all(Pool& pool);

  mutable std::mutex mu_;
  Pool pools_[2];
  size_t cache_limit_ = 0;
};

// The process-wide caching allocator (created on first use, never destroyed: buffers may
// outlive main).
CachingAllocator& caching_allocator();

// "allocator reserved 12.6 MB (peak ...), 97.3 % cache hits (1234 of 1268), long-lived pool
// peak 4.2 MB" for --stats.
std::string describe(const AllocatorStats& stats);

}  // namespace spora::runtime
