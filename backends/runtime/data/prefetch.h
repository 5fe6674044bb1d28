// A bounded prefetch queue filled by one background thread: the data pipeline decodes and
// batches ahead of the compute, so a training loop waits for data only when the thread is
// slower than the model.
//
//   Prefetcher p(count, depth, prepare, produce);   // starts the thread
//   RawBatch b;
//   while (p.pop(b)) { ... }                          // blocks until batch i is ready
//
// The thread runs prepare() once (loading files), then produce(i) for i = 0..count-1, pushing
// each result; it waits while `depth` batches are queued. Shutdown is clean in every case: the
// destructor (or stop()) wakes and joins the thread, whether it is blocked on a full queue or
// still producing (it checks between batches). An exception thrown on the thread is stored
// and rethrown by pop() on the consumer's thread after the batches produced before it, so an
// error there is reported where the loop is, never a hang or a crash.
//
// Batches are plain bytes (RawTensor), turned into interpreter tensors on the consumer thread:
// the thread touches no interpreter state and no allocator but malloc's.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "semantics/value.h"

namespace spora::runtime::data {

struct RawTensor {
  DType dtype = DType::f32;
  sem::Shape shape;
  std::vector<uint8_t> bytes;
  sem::Tensor to_tensor() const;  // a fresh interpreter tensor with these bytes
};

struct RawBatch {
  std::vector<RawTensor> parts;  // one tensor, or the parts of a tuple element
  int64_t samples = 0;           // rows in this batch (its first dim)
};

class Prefetcher {
 public:
  using Prepare = std::function<void()>;
  using Produce = std::function<RawBatch(int64_t index)>;
  Prefetcher(int64_t count, size_t depth, Prepare prepare, Produce produce);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch; false after the last. Rethrows an exception of the thread.
  bool pop(RawBatch& out);
  // Stops and joins the thread (idempotent).
  void stop();
  // Batches produced so far (for tests).
  int64_t produced() const;

 private:
  void run();

  const int64_t count_;
  const size_t depth_;
  Prepare prepare_;
  Produce produce_;
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<RawBatch> queue_;
  std::exception_ptr error_;
  int64_t produced_ = 0;
  bool finished_ = false;  // the thread has returned (all produced, stopped or failed)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace spora::runtime::data
