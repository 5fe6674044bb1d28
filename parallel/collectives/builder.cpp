#include "parallel/collectives/builder.h"

#include <algorithm>
#include <stdexcept>

namespace spora::parallel::detail {

std::int64_t block_offset(std::int64_t total, int parts, int i) {
  const std::int64_t base = total / parts, extra = total % parts;
  return i * base + std::min<std::int64_t>(i, extra);
}

std::int64_t block_size(std::int64_t total, int parts, int i) {
  return total / parts + (i < total % parts ? 1 : 0);
}

std::vector<Piece> pieces(std::int64_t count, int chunks) {
  const int n = static_cast<int>(std::min<std::int64_t>(std::max(chunks, 1), count));
  std::vector<Piece> out;
  for (int j = 0; j < n; ++j) out.push_back({block_offset(count, n, j), block_size(count, n, j)});
  return out;
}

ScheduleBuilder::ScheduleBuilder(const CollectiveSpec& spec, std::string algorithm,
                                 const AlgorithmOptions& options)
    : spec_(spec), chunks_(std::max(1, options.chunks)), hazards_(spec.ranks) {
  schedule_.spec = spec;
  schedule_.algorithm = std::move(algorithm);
  schedule_.options = options;
  schedule_.ranks.resize(spec.ranks);
  for (auto& per_rank : hazards_)
    for (Segments& segs : per_rank) segs[0] = Segment{INT64_MAX, -1, {}};
}

ScheduleBuilder::Segments::iterator ScheduleBuilder::split(Segments& segs, std::int64_t at) {
  auto it = std::prev(segs.upper_bound(at));
  if (it->first == at) return it;
  Segment right = it->second;  // same writer and readers on both sides
  it->second.end = at;
  return segs.emplace_hint(std::next(it), at, std::move(right));
}

void ScheduleBuilder::access(int rank, const Region& region, bool reads, bool writes, int step,
                             std::vector<int>& deps) {
  if (region.buffer == BufferKind::Input) {
    if (writes) throw std::logic_error("schedule builder: a step writes the input buffer");
    return;
  }
  Segments& segs = hazards_[rank][region.buffer == BufferKind::Output ? 0 : 1];
  auto first = split(segs, region.offset);
  auto last = split(segs, region.end());
  for (auto it = first; it != last; ++it) {
    Segment& s = it->second;
    if (s.writer >= 0) deps.push_back(s.writer);  // RAW and WAW
    if (writes) {
      deps.insert(deps.end(), s.readers.begin(), s.readers.end());  // WAR
      s.writer = step;
      s.readers.clear();
    } else if (reads) {
      s.readers.push_back(step);
    }
  }
}

int ScheduleBuilder::add_step(int rank, Step step, const std::vector<int>& extra_deps) {
  RankProgram& program = schedule_.ranks.at(rank);
  step.id = static_cast<int>(program.steps.size());
  std::vector<int> deps;
  for (int d : extra_deps)
    if (d >= 0) deps.push_back(d);
  // Register reads before writes so a read-modify-write does not depend on itself.
  switch (step.kind) {
    case StepKind::Send:
      access(rank, step.src, true, false, step.id, deps);
      break;
    case StepKind::Recv:
      access(rank, step.dst, false, true, step.id, deps);
      break;
    case StepKind::RecvReduce:
      access(rank, step.dst, true, true, step.id, deps);
      break;
    case StepKind::Copy:
    case StepKind::LocalReduce:
      access(rank, step.src, true, false, step.id, deps);
      access(rank, step.dst, true, true, step.id, deps);
      break;
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  std::erase(deps, step.id);
  step.deps = std::move(deps);
  program.steps.push_back(std::move(step));
  return program.steps.back().id;
}

int ScheduleBuilder::copy(int rank, const Region& src, const Region& dst,
                          const std::vector<int>& deps) {
  if (src.count != dst.count) throw std::logic_error("schedule builder: copy of unequal regions");
  if (src.count == 0 || src == dst) return -1;
  Step s;
  s.kind = StepKind::Copy;
  s.src = src;
  s.dst = dst;
  return add_step(rank, std::move(s), deps);
}

int ScheduleBuilder::reduce(int rank, const Region& src, const Region& dst,
                            const std::vector<int>& deps) {
  if (src.count != dst.count) throw std::logic_error("schedule builder: reduce of unequal regions");
  if (src.count == 0) return -1;
  Step s;
  s.kind = StepKind::LocalReduce;
  s.src = src;
  s.dst = dst;
  return add_step(rank, std::move(s), deps);
}

int ScheduleBuilder::send(int rank, int peer, const Region& src, const std::vector<int>& deps) {
  if (src.count == 0) return -1;
  Step s;
  s.kind = StepKind::Send;
  s.peer = peer;
  s.src = src;
  return add_step(rank, std::move(s), deps);
}

int ScheduleBuilder::recv(int rank, int peer, const Region& dst, bool reduce,
                          const std::vector<int>& deps) {
  if (dst.count == 0) return -1;
  Step s;
  s.kind = reduce ? StepKind::RecvReduce : StepKind::Recv;
  s.peer = peer;
  s.dst = dst;
  return add_step(rank, std::move(s), deps);
}

void ScheduleBuilder::transfer(int from, const Region& src, int to, const Region& dst,
                               bool reduce) {
  if (src.count != dst.count)
    throw std::logic_error("schedule builder: transfer of unequal regions");
  if (from == to) {
    reduce ? this->reduce(from, src, dst) : copy(from, src, dst);
    return;
  }
  for (const Piece& piece : pieces(src.count, chunks_)) {
    send(from, to, sub(src, piece.offset, piece.count));
    recv(to, from, sub(dst, piece.offset, piece.count), reduce);
  }
}

Region ScheduleBuilder::allocate_scratch(int rank, std::int64_t count) {
  RankProgram& program = schedule_.ranks.at(rank);
  Region r = scratch(program.scratch_count, count);
  program.scratch_count += count;
  return r;
}

Schedule ScheduleBuilder::finish() && { return std::move(schedule_); }

}  // namespace spora::parallel::detail
