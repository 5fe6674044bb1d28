#include "backends/comm/executor.h"

#include <algorithm>
#include <string>

#include "parallel/collectives/checker.h"

namespace spora::comm {

using parallel::BufferKind;
using parallel::Region;
using parallel::Step;
using parallel::StepKind;

Executor::Executor(const parallel::Schedule& schedule, Communicator& comm, DType dtype)
    : op_(schedule.spec.op), comm_(comm), dtype_(dtype), rank_(comm.rank()) {
  if (schedule.spec.ranks != comm.size())
    throw CommError("schedule for " + std::to_string(schedule.spec.ranks) +
                    " ranks executed on a communicator of " + std::to_string(comm.size()));
  tag_ = parallel::message_sequence(schedule)[rank_];  // also checks the schedule's form
  steps_ = schedule.ranks[rank_].steps;
  const auto& steps = steps_;
  dependents_.resize(steps.size());
  for (const Step& s : steps)
    for (int d : s.deps) dependents_[d].push_back(s.id);

  const std::size_t es = dtype_size(dtype);
  std::int64_t staged = 0;
  staging_.assign(steps.size(), -1);
  for (const Step& s : steps)
    if (s.kind == StepKind::RecvReduce && (comm.stream_ordered() || !comm.supports_recv_reduce())) {
      staging_[s.id] = staged;
      staged += s.dst.count;
    }
  scratch_ = Buffer(comm, schedule.ranks[rank_].scratch_count * es);
  staging_buffer_ = Buffer(comm, staged * es);

  if (comm.stream_ordered()) {
    const std::vector<int> round = parallel::lockstep_rounds(schedule)[rank_];
    for (const Step& s : steps) {
      if (round[s.id] >= static_cast<int>(rounds_.size())) rounds_.resize(round[s.id] + 1);
      rounds_[round[s.id]].push_back(s.id);
    }
  }
}

void Executor::run(const void* input, void* output) {
  const std::size_t es = dtype_size(dtype_);
  const auto& steps = steps_;
  const parallel::ReduceOp op = op_;
  auto at = [&](const Region& r) -> char* {
    char* base = nullptr;
    switch (r.buffer) {
      case BufferKind::Input:
        base = const_cast<char*>(static_cast<const char*>(input));
        break;
      case BufferKind::Output:
        base = static_cast<char*>(output);
        break;
      case BufferKind::Scratch:
        base = static_cast<char*>(scratch_.data());
        break;
    }
    return base + r.offset * es;
  };
  auto staged = [&](const Step& s) {
    return static_cast<char*>(staging_buffer_.data()) + staging_[s.id] * es;
  };
  auto run_local = [&](const Step& s) {
    if (s.kind == StepKind::Copy)
      comm_.copy(at(s.dst), at(s.src), s.dst.count * es);
    else
      comm_.reduce(at(s.dst), at(s.src), s.dst.count, dtype_, op);
  };
  auto post = [&](const Step& s) -> Request {
    switch (s.kind) {
      case StepKind::Send:
        return comm_.isend(at(s.src), s.src.count * es, s.peer, tag_[s.id]);
      case StepKind::Recv:
        return comm_.irecv(at(s.dst), s.dst.count * es, s.peer, tag_[s.id]);
      case StepKind::RecvReduce:
        if (staging_[s.id] >= 0)
          return comm_.irecv(staged(s), s.dst.count * es, s.peer, tag_[s.id]);
        return comm_.irecv_reduce(at(s.dst), s.dst.count, dtype_, op, s.peer, tag_[s.id]);
      default:
        break;
    }
    return {};
  };
  auto finish_receive = [&](const Step& s) {
    if (s.kind == StepKind::RecvReduce && staging_[s.id] >= 0)
      comm_.reduce(at(s.dst), staged(s), s.dst.count, dtype_, op);
  };

  if (comm_.stream_ordered()) {
    std::vector<Request> requests;
    for (const std::vector<int>& round : rounds_) {
      for (int id : round)
        if (!steps[id].is_communication()) run_local(steps[id]);
      comm_.group_start();
      for (int id : round)
        if (steps[id].is_communication()) requests.push_back(post(steps[id]));
      comm_.group_end();
      for (int id : round)
        if (steps[id].is_communication()) finish_receive(steps[id]);
    }
    comm_.synchronize();
    if (!requests.empty()) comm_.wait_some(requests);
    return;
  }

  std::vector<int> pending(steps.size());
  std::vector<int> ready;
  for (const Step& s : steps) {
    pending[s.id] = static_cast<int>(s.deps.size());
    if (s.deps.empty()) ready.push_back(s.id);
  }
  std::reverse(ready.begin(), ready.end());  // lowest id first
  std::vector<Request> active;
  std::vector<int> active_step;
  std::size_t done = 0;
  auto complete = [&](int id) {
    ++done;
    for (auto it = dependents_[id].rbegin(); it != dependents_[id].rend(); ++it)
      if (--pending[*it] == 0) ready.push_back(*it);
  };
  while (done < steps.size()) {
    while (!ready.empty()) {
      const Step& s = steps[ready.back()];
      ready.pop_back();
      if (s.is_communication()) {
        active.push_back(post(s));
        active_step.push_back(s.id);
      } else {
        run_local(s);
        complete(s.id);
      }
    }
    if (done == steps.size()) break;
    std::vector<std::size_t> finished = comm_.wait_some(active);
    std::sort(finished.rbegin(), finished.rend());  // erase from the back
    for (std::size_t i : finished) {
      const int id = active_step[i];
      active[i] = active.back();
      active.pop_back();
      active_step[i] = active_step.back();
      active_step.pop_back();
      finish_receive(steps[id]);
      complete(id);
    }
  }
}

void execute(const parallel::Schedule& schedule, Communicator& comm, DType dtype, const void* input,
             void* output) {
  Executor(schedule, comm, dtype).run(input, output);
}

}  // namespace spora::comm
