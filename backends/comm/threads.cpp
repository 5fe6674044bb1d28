#include "backends/comm/threads.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace spora::comm {

namespace {

// One half of a message: a posted send or receive.
struct Op {
  int owner = 0;  // rank that waits for it
  const void* send_data = nullptr;
  void* recv_data = nullptr;
  std::size_t bytes = 0;
  bool reduce = false;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  bool done = false;  // guarded by the owner's Rank::mutex
};

struct Rank {
  std::mutex mutex;
  std::condition_variable cv;
  // Mailbox of messages addressed to this rank, keyed by (source, tag).
  std::mutex mailbox_mutex;
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<Op>>> sends, recvs;
  // Pointers published for native collectives.
  const void* input = nullptr;
  void* output = nullptr;
};

}  // namespace

struct ThreadWorld::State {
  int p = 0;
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Communicator>> comms;

  // Work dispatch to the persistent rank threads.
  std::mutex run_mutex;
  std::condition_variable run_cv, done_cv;
  const std::function<void(Communicator&)>* body = nullptr;
  std::uint64_t generation = 0;
  int finished = 0;
  bool shutting_down = false;
  std::exception_ptr first_error;

  // Abort and barrier.
  std::atomic<bool> aborted{false};
  std::mutex barrier_mutex;
  std::condition_variable barrier_cv;
  int barrier_waiting = 0;
  std::uint64_t barrier_generation = 0;

  void complete(Op& op) {
    Rank& owner = *ranks[op.owner];
    {
      std::lock_guard lock(owner.mutex);
      op.done = true;
    }
    owner.cv.notify_all();
  }

  void transfer(Op& send, Op& recv) {
    if (recv.reduce)
      host_reduce(recv.recv_data, send.send_data, recv.bytes / dtype_size(recv.dtype), recv.dtype,
                  recv.op);
    else if (recv.bytes)
      std::memcpy(recv.recv_data, send.send_data, recv.bytes);
    complete(send);
    complete(recv);
  }

  void abort() {
    aborted = true;
    for (auto& r : ranks) {
      { std::lock_guard lock(r->mutex); }
      r->cv.notify_all();
    }
    { std::lock_guard lock(barrier_mutex); }
    barrier_cv.notify_all();
  }

  void barrier() {
    std::unique_lock lock(barrier_mutex);
    const std::uint64_t gen = barrier_generation;
    if (++barrier_waiting == p) {
      barrier_waiting = 0;
      ++barrier_generation;
      barrier_cv.notify_all();
      return;
    }
    barrier_cv.wait(lock, [&] { return barrier_generation != gen || aborted; });
    if (barrier_generation == gen) throw CommError("aborted: another rank failed");
  }
};

namespace {

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(ThreadWorld::State& world, int rank) : w_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return w_.p; }
  std::string_view backend() const override { return "threads"; }
  bool supports_recv_reduce() const override { return true; }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    auto op = std::make_shared<Op>();
    op->owner = rank_;
    op->send_data = data;
    op->bytes = bytes;
    post(op, peer, tag, /*sending=*/true);
    return track(std::move(op));
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    auto op = std::make_shared<Op>();
    op->owner = rank_;
    op->recv_data = data;
    op->bytes = bytes;
    return post_recv(std::move(op), peer, tag);
  }
  Request irecv_reduce(void* data, std::size_t count, DType t, ReduceOp reduce_op, int peer,
                       int tag) override {
    auto op = std::make_shared<Op>();
    op->owner = rank_;
    op->recv_data = data;
    op->bytes = count * dtype_size(t);
    op->reduce = true;
    op->dtype = t;
    op->op = reduce_op;
    return post_recv(std::move(op), peer, tag);
  }

  std::vector<std::size_t> wait_some(std::span<const Request> requests) override {
    std::vector<std::size_t> done;
    Rank& me = *w_.ranks[rank_];
    std::unique_lock lock(me.mutex);
    for (;;) {
      for (std::size_t i = 0; i < requests.size(); ++i)
        if (ops_.at(requests[i].id)->done) done.push_back(i);
      if (!done.empty()) break;
      if (w_.aborted) throw CommError("aborted: another rank failed");
      me.cv.wait(lock);
    }
    lock.unlock();
    for (std::size_t i : done) ops_.erase(requests[i].id);
    return done;
  }

  void native(const CollectiveCall& call) override;
  void barrier() override { w_.barrier(); }

 private:
  Request post_recv(std::shared_ptr<Op> op, int peer, int tag) {
    post(op, peer, tag, /*sending=*/false);
    return track(std::move(op));
  }

  // Puts `op` in the receiver's mailbox, or completes the transfer with the waiting half.
  void post(const std::shared_ptr<Op>& op, int peer, int tag, bool sending) {
    if (peer < 0 || peer >= w_.p || peer == rank_)
      throw CommError("threads: invalid peer " + std::to_string(peer));
    Rank& box = *w_.ranks[sending ? peer : rank_];
    const std::pair<int, int> key{sending ? rank_ : peer, tag};
    std::shared_ptr<Op> other;
    {
      std::lock_guard lock(box.mailbox_mutex);
      auto& waiting = sending ? box.recvs : box.sends;
      auto it = waiting.find(key);
      if (it == waiting.end() || it->second.empty()) {
        (sending ? box.sends : box.recvs)[key].push_back(op);
        return;
      }
      other = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) waiting.erase(it);
    }
    Op& send = sending ? *op : *other;
    Op& recv = sending ? *other : *op;
    if (send.bytes != recv.bytes)
      throw CommError("threads: message size mismatch between rank " + std::to_string(send.owner) +
                      " and rank " + std::to_string(recv.owner));
    w_.transfer(send, recv);
  }

  Request track(std::shared_ptr<Op> op) {
    const std::int64_t id = next_id_++;
    ops_.emplace(id, std::move(op));
    return Request{id};
  }

  ThreadWorld::State& w_;
  int rank_;
  std::int64_t next_id_ = 0;
  std::map<std::int64_t, std::shared_ptr<Op>> ops_;  // only this rank's thread touches it
};

// Slice i of n elements cut into p nearly equal parts.
std::int64_t block_offset(std::int64_t n, int p, int i) {
  return i * (n / p) + std::min<std::int64_t>(i, n % p);
}
std::int64_t block_size(std::int64_t n, int p, int i) { return n / p + (i < n % p ? 1 : 0); }

// memcpy that accepts the null pointers of empty buffers.
void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void ThreadCommunicator::native(const CollectiveCall& c) {
  Rank& me = *w_.ranks[rank_];
  me.input = c.input;
  me.output = c.output;
  w_.barrier();  // everyone's pointers are visible
  const int p = w_.p, r = rank_;
  const std::size_t es = dtype_size(c.dtype);
  const std::int64_t n = c.count;
  auto in = [&](int rank, std::int64_t offset) {
    return static_cast<const char*>(w_.ranks[rank]->input) + offset * es;
  };
  auto out = [&](int rank, std::int64_t offset) {
    return static_cast<char*>(w_.ranks[rank]->output) + offset * es;
  };
  // dst = reduction over all ranks of elements [offset, offset + count) at in(rank, base + offset).
  auto reduce_all = [&](char* dst, std::int64_t base, std::int64_t count) {
    if (count == 0) return;
    copy_bytes(dst, in(0, base), count * es);
    for (int q = 1; q < p; ++q) host_reduce(dst, in(q, base), count, c.dtype, c.op);
  };
  switch (c.collective) {
    case Collective::Broadcast:
      copy_bytes(out(r, 0), in(c.root, 0), n * es);
      break;
    case Collective::Scatter:
      copy_bytes(out(r, 0), in(c.root, r * n), n * es);
      break;
    case Collective::Gather:
      copy_bytes(out(c.root, r * n), in(r, 0), n * es);
      break;
    case Collective::AllGather:
      for (int q = 0; q < p; ++q) copy_bytes(out(r, q * n), in(q, 0), n * es);
      break;
    case Collective::AllToAll:
      for (int q = 0; q < p; ++q) copy_bytes(out(r, q * n), in(q, r * n), n * es);
      break;
    case Collective::ReduceScatter:
      reduce_all(out(r, 0), r * n, n);
      break;
    case Collective::Reduce: {
      const std::int64_t lo = block_offset(n, p, r);
      reduce_all(out(c.root, lo), lo, block_size(n, p, r));
      break;
    }
    case Collective::AllReduce: {
      const std::int64_t lo = block_offset(n, p, r);
      reduce_all(out(r, lo), lo, block_size(n, p, r));
      w_.barrier();  // every slice is reduced
      for (int q = 0; q < p; ++q)
        if (q != r)
          copy_bytes(out(r, block_offset(n, p, q)), out(q, block_offset(n, p, q)),
                     block_size(n, p, q) * es);
      break;
    }
  }
  w_.barrier();  // nobody reuses its buffers while a peer still reads them
}

}  // namespace

ThreadWorld::ThreadWorld(int ranks) : state_(std::make_unique<State>()) {
  if (ranks < 1) throw CommError("threads: a world needs at least one rank");
  State& s = *state_;
  s.p = ranks;
  for (int r = 0; r < ranks; ++r) {
    s.ranks.push_back(std::make_unique<Rank>());
    s.comms.push_back(std::make_unique<ThreadCommunicator>(s, r));
  }
  for (int r = 0; r < ranks; ++r)
    s.threads.emplace_back([&s, r] {
      std::uint64_t seen = 0;
      for (;;) {
        const std::function<void(Communicator&)>* body;
        {
          std::unique_lock lock(s.run_mutex);
          s.run_cv.wait(lock, [&] { return s.shutting_down || s.generation != seen; });
          if (s.shutting_down) return;
          seen = s.generation;
          body = s.body;
        }
        try {
          (*body)(*s.comms[r]);
        } catch (...) {
          {
            std::lock_guard lock(s.run_mutex);
            if (!s.first_error) s.first_error = std::current_exception();
          }
          s.abort();
        }
        std::lock_guard lock(s.run_mutex);
        if (++s.finished == s.p) s.done_cv.notify_all();
      }
    });
}

ThreadWorld::~ThreadWorld() {
  {
    std::lock_guard lock(state_->run_mutex);
    state_->shutting_down = true;
  }
  state_->run_cv.notify_all();
  for (auto& t : state_->threads) t.join();
}

int ThreadWorld::size() const { return state_->p; }

void ThreadWorld::run(const std::function<void(Communicator&)>& body) {
  State& s = *state_;
  std::unique_lock lock(s.run_mutex);
  s.body = &body;
  s.finished = 0;
  s.first_error = nullptr;
  s.aborted = false;
  ++s.generation;
  s.run_cv.notify_all();
  s.done_cv.wait(lock, [&] { return s.finished == s.p; });
  if (s.first_error) {
    // Leave a clean world behind: drop half-matched messages of the failed run.
    for (auto& r : s.ranks) {
      std::lock_guard box(r->mailbox_mutex);
      r->sends.clear();
      r->recvs.clear();
    }
    s.barrier_waiting = 0;
    std::rethrow_exception(s.first_error);
  }
}

void run_threads(int ranks, const std::function<void(Communicator&)>& body) {
  ThreadWorld world(ranks);
  world.run(body);
}

}  // namespace spora::comm
