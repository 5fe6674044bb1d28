#include "sim/transformer/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace spora::sim::transformer {

std::vector<PipelinePass> stage_order(int64_t k, int64_t p, int64_t v, int64_t m) {
  if (p < 1 || v < 1 || m < 1 || k < 0 || k >= p)
    throw std::invalid_argument(
        "pipeline schedule: bad stage, stage count, chunks or micro-batches");
  if (v > 1 && m % p != 0)
    throw std::invalid_argument("interleaved schedule: micro-batches must be a multiple of stages");
  const int64_t total = m * v;
  int64_t warmup;
  if (v == 1) {
    warmup = std::min(p - k - 1, m);
  } else {
    warmup = m == p ? total : std::min((p - k - 1) * 2 + (v - 1) * p, total);
  }
  auto forward = [&](int64_t j) {
    if (v == 1) return PipelinePass{'F', j, 0};
    const int64_t group = j / (p * v), in_group = j % (p * v);
    return PipelinePass{'F', group * p + j % p, in_group / p};
  };
  auto backward = [&](int64_t j) {
    PipelinePass b = forward(j);
    b.kind = 'B';
    b.chunk = v - 1 - b.chunk;
    return b;
  };
  std::vector<PipelinePass> order;
  order.reserve(2 * total);
  for (int64_t j = 0; j < warmup; ++j) order.push_back(forward(j));
  for (int64_t i = 0; i < total - warmup; ++i) {
    order.push_back(forward(warmup + i));
    order.push_back(backward(i));
  }
  for (int64_t i = total - warmup; i < total; ++i) order.push_back(backward(i));
  return order;
}

ScheduleResult run_schedule(const ScheduleInput& in) {
  const int64_t p = in.stages, v = in.chunks, m = in.micro_batches;
  if (static_cast<int64_t>(in.forward.size()) != p || static_cast<int64_t>(in.backward.size()) != p)
    throw std::invalid_argument("pipeline schedule: one row of times per stage");
  ScheduleResult r;
  r.passes.resize(p);
  for (int64_t k = 0; k < p; ++k) r.passes[k] = stage_order(k, p, v, m);
  // done[kind][virtual stage][micro-batch]: end time, or -1.
  const int64_t vs = p * v;
  std::vector<double> f_end(vs * m, -1), b_end(vs * m, -1);
  std::vector<size_t> next(p, 0);
  std::vector<double> free_at(p, 0);
  r.end.assign(p, 0);
  r.busy.assign(p, 0);
  r.last_backward.assign(p, std::vector<PipelinePass>(v));
  int64_t remaining = 2 * m * v * p;
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t k = 0; k < p; ++k) {
      while (next[k] < r.passes[k].size()) {
        PipelinePass& pass = r.passes[k][next[k]];
        const int64_t virt = pass.chunk * p + k;
        double ready = 0;
        if (pass.kind == 'F') {
          if (virt > 0) {
            const double e = f_end[(virt - 1) * m + pass.micro_batch];
            if (e < 0) break;
            ready = e + (p > 1 ? in.p2p_seconds : 0);
          }
        } else if (virt == vs - 1) {
          const double e = f_end[virt * m + pass.micro_batch];
          if (e < 0) break;
          ready = e;
        } else {
          const double e = b_end[(virt + 1) * m + pass.micro_batch];
          if (e < 0) break;
          ready = e + (p > 1 ? in.p2p_seconds : 0);
        }
        const double dur =
            pass.kind == 'F' ? in.forward[k][pass.chunk] : in.backward[k][pass.chunk];
        pass.start = std::max(free_at[k], ready);
        pass.end = pass.start + dur;
        free_at[k] = pass.end;
        r.busy[k] += dur;
        (pass.kind == 'F' ? f_end : b_end)[virt * m + pass.micro_batch] = pass.end;
        if (pass.kind == 'B') r.last_backward[k][pass.chunk] = pass;
        ++next[k];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed && remaining > 0) throw std::logic_error("pipeline schedule deadlocked");
  }
  for (int64_t k = 0; k < p; ++k) {
    r.end[k] = free_at[k];
    r.pipeline_seconds = std::max(r.pipeline_seconds, free_at[k]);
  }
  double idle = 0;
  for (int64_t k = 0; k < p; ++k) idle += (r.pipeline_seconds - r.busy[k]) / r.pipeline_seconds;
  r.bubble_fraction = r.pipeline_seconds > 0 ? idle / static_cast<double>(p) : 0;
  r.peak_in_flight.assign(p, 0);
  for (int64_t k = 0; k < p; ++k) {
    int64_t live = 0;
    for (const PipelinePass& pass : r.passes[k]) {
      live += pass.kind == 'F' ? 1 : -1;
      r.peak_in_flight[k] = std::max(r.peak_in_flight[k], live);
    }
  }
  return r;
}

}  // namespace spora::sim::transformer
