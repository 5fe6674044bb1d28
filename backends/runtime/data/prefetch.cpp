// The prefetch thread and its bounded queue (see prefetch.h).
#include "backends/runtime/data/prefetch.h"

#include <cstring>

namespace spora::runtime::data {

sem::Tensor RawTensor::to_tensor() const {
  sem::Tensor t = sem::Tensor::empty(dtype, shape);
  if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

Prefetcher::Prefetcher(int64_t count, size_t depth, Prepare prepare, Produce produce)
    : count_(count), depth_(depth < 1 ? 1 : depth), prepare_(std::move(prepare)), produce_(std::move(produce)) {
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::run() {
  try {
    if (prepare_) prepare_();
    for (int64_t i = 0; i < count_; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        not_full_.wait(lock, [&] { return stopping_ || queue_.size() < depth_; });
        if (stopping_) break;
      }
      RawBatch b = produce_(i);  // outside the lock: the consumer keeps popping meanwhile
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
      queue_.push_back(std::move(b));
      ++produced_;
      not_empty_.notify_one();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  not_empty_.notify_all();
}

bool Prefetcher::pop(RawBatch& out) {
  std::unique_lock<std::mutex> lock(mu_);
  not_empty_.wait(lock, [&] { return !queue_.empty() || finished_; });
  if (!queue_.empty()) {
    out = std::move(queue_.front());
    queue_.pop_front();
    not_full_.notify_one();
    return true;
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;  // reported once; later pops see the end
    std::rethrow_exception(e);
  }
  return false;
}

void Prefetcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  not_full_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t Prefetcher::produced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return produced_;
}

}  // namespace spora::runtime::data
