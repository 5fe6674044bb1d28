#include "backends/comm/device_check.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace spora::comm {

DeviceCheck::~DeviceCheck() {
  for (auto& [p, n] : blocks_) std::free(const_cast<char*>(p));
}

void DeviceCheck::check(const void* p, std::size_t bytes, const char* what) const {
  if (bytes == 0) return;
  const char* c = static_cast<const char*>(p);
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(c);
  if (it != blocks_.begin()) {
    --it;
    if (c >= it->first && c + bytes <= it->first + it->second) return;
  }
  throw CommError(std::string("device-check: ") + what + " was given " + std::to_string(bytes) +
                  " bytes at a host address, not in a block this device-memory communicator "
                  "allocated (stage host data with upload / download)");
}

Request DeviceCheck::post(Request r) {
  if (group_depth_ == 0) {
    ++ungrouped_;
    queued_.push_back(r);
  } else {
    in_group_.push_back(r);
  }
  return r;
}

Request DeviceCheck::isend(const void* data, std::size_t bytes, int peer, int tag) {
  check(data, bytes, "isend");
  if (group_depth_ == 0) drain();
  return post(host_.isend(data, bytes, peer, tag));
}

Request DeviceCheck::irecv(void* data, std::size_t bytes, int peer, int tag) {
  check(data, bytes, "irecv");
  if (group_depth_ == 0) drain();
  return post(host_.irecv(data, bytes, peer, tag));
}

void DeviceCheck::drain() {
  std::vector<Request> pending = std::move(queued_);
  queued_.clear();
  while (!pending.empty()) {
    std::vector<bool> finished(pending.size(), false);
    for (std::size_t k : host_.wait_some(pending)) finished[k] = true;
    std::vector<Request> still;
    for (std::size_t k = 0; k < pending.size(); ++k)
      if (!finished[k]) still.push_back(pending[k]);
    pending = std::move(still);
  }
}

std::vector<std::size_t> DeviceCheck::wait_some(std::span<const Request> requests) {
  drain();  // a stream synchronisation: everything queued completes
  std::vector<std::size_t> all(requests.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

// A group's messages are queued after everything before them (stream order): a send of this
// group may read what a receive of the last one writes.
void DeviceCheck::group_start() {
  if (group_depth_++ == 0) drain();
}
void DeviceCheck::group_end() {
  if (group_depth_ == 0) throw CommError("device-check: group_end without group_start");
  if (--group_depth_ == 0) {
    queued_.insert(queued_.end(), in_group_.begin(), in_group_.end());
    in_group_.clear();
  }
}

void DeviceCheck::copy(void* dst, const void* src, std::size_t bytes) {
  check(dst, bytes, "copy (destination)");
  check(src, bytes, "copy (source)");
  drain();
  if (bytes) std::memmove(dst, src, bytes);
}

void DeviceCheck::reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) {
  check(dst, count * dtype_size(t), "reduce (destination)");
  check(src, count * dtype_size(t), "reduce (source)");
  drain();
  host_reduce(dst, src, count, t, op);
}

void* DeviceCheck::allocate(std::size_t bytes) {
  const std::size_t n = bytes ? bytes : 1;
  char* p = static_cast<char*>(std::malloc(n));
  if (!p) throw CommError("device-check: out of memory");
  std::lock_guard lock(mu_);
  blocks_[p] = n;
  return p;
}

void DeviceCheck::deallocate(void* p) {
  if (!p) return;
  std::lock_guard lock(mu_);
  auto it = blocks_.find(static_cast<const char*>(p));
  if (it == blocks_.end())
    throw CommError("device-check: deallocate of a block it did not allocate");
  blocks_.erase(it);
  std::free(p);
}

void DeviceCheck::upload(void* dst, const void* host_src, std::size_t bytes) {
  check(dst, bytes, "upload (destination)");
  drain();
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void DeviceCheck::download(void* host_dst, const void* src, std::size_t bytes) {
  check(src, bytes, "download (source)");
  drain();
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void DeviceCheck::native(const CollectiveCall& call) {
  // Buffers of an empty call, and the input of a rank a rooted call reads nothing from, may
  // be null.
  if (call.count > 0 && call.input) check(call.input, 1, "native (input)");
  if (call.count > 0 && call.output) check(call.output, 1, "native (output)");
  drain();
  host_.native(call);
}

}  // namespace spora::comm
