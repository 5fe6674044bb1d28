// The in-process communicator: p ranks as p threads of one process, sharing memory.
//
//   ThreadWorld world(4);                       // four persistent rank threads
//   world.run([&](Communicator& comm) { ... }); // runs the body on every rank, waits for all
//
// Point-to-point is single-copy rendezvous: a send and a receive with the same (peer, tag)
// meet in the receiver's mailbox, and whichever arrives second copies (or reduces) straight
// from the sender's buffer into the receiver's, then completes both. No intermediate buffer,
// no busy waiting: a rank with nothing to do sleeps on its condition variable, which matters
// when many rank threads share few cores.
//
// Native collectives use the shared address space directly: every rank publishes its buffer
// pointers, and after a barrier each rank computes its share of the result from its peers'
// buffers (for a reduction, rank r reduces slice r of all inputs, then everyone copies the
// finished slices).
//
// If the body throws on one rank, the world is aborted: ranks blocked in wait_some or in a
// barrier throw CommError("aborted") and run() rethrows the original exception.
#pragma once

#include <functional>
#include <memory>

#include "backends/comm/communicator.h"

namespace spora::comm {

class ThreadWorld {
 public:
  explicit ThreadWorld(int ranks);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const;
  void run(const std::function<void(Communicator&)>& body);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// One-shot convenience: a ThreadWorld of `ranks` threads running `body` once.
void run_threads(int ranks, const std::function<void(Communicator&)>& body);

}  // namespace spora::comm
