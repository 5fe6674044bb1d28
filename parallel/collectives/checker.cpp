#include "parallel/collectives/checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <optional>

#include "parallel/collectives/text.h"

namespace spora::parallel {

namespace {

constexpr int kMaxSymbolicRanks = 64;
constexpr std::int64_t kMaxSymbolicElements = std::int64_t{1} << 26;

std::string where(int rank, const Step& step) {
  return fmt::format("rank {}, step {}", rank, format_step(step));
}

[[noreturn]] void fail(const std::string& message) { throw ScheduleError(message); }

bool overlap(const Region& a, const Region& b) {
  return a.buffer == b.buffer && a.count > 0 && b.count > 0 && a.offset < b.end() &&
         b.offset < a.end();
}

// ---- pass 1: form ----------------------------------------------------------------------------

void check_form(const Schedule& s) {
  const CollectiveSpec& spec = s.spec;
  if (spec.ranks < 1) fail(fmt::format("ranks={} must be at least 1", spec.ranks));
  if (static_cast<int>(s.ranks.size()) != spec.ranks)
    fail(fmt::format("ranks={} but the schedule has {} rank programs", spec.ranks, s.ranks.size()));
  if (spec.count < 0) fail(fmt::format("count={} must not be negative", spec.count));
  if (spec.root < 0 || spec.root >= spec.ranks)
    fail(fmt::format("root {} is not one of the {} ranks", spec.root, spec.ranks));
  for (int r = 0; r < spec.ranks; ++r) {
    const RankProgram& program = s.ranks[r];
    if (program.scratch_count < 0)
      fail(fmt::format("rank {}: scratch size {} is negative", r, program.scratch_count));
    auto check_region = [&](const Step& step, const Region& region, const char* role) {
      const std::int64_t size = s.buffer_count(r, region.buffer);
      if (region.offset < 0 || region.count < 0 || region.end() > size)
        fail(fmt::format("{}: {} region {} lies outside the {} buffer ({} elements)",
                         where(r, step), role, format_region(region), buffer_name(region.buffer),
                         size));
    };
    for (std::size_t i = 0; i < program.steps.size(); ++i) {
      const Step& step = program.steps[i];
      if (step.id != static_cast<int>(i))
        fail(fmt::format("rank {}: step at position {} has id {}", r, i, step.id));
      for (int d : step.deps)
        if (d < 0 || d >= step.id)
          fail(fmt::format("{}: depends on step {}, which is not an earlier step", where(r, step),
                           d));
      if (step.is_communication()) {
        if (step.peer < 0 || step.peer >= spec.ranks || step.peer == r)
          fail(fmt::format("{}: peer {} is not another rank", where(r, step), step.peer));
      }
      const bool reads_src = step.kind == StepKind::Send || step.kind == StepKind::Copy ||
                             step.kind == StepKind::LocalReduce;
      const bool writes_dst = step.kind != StepKind::Send;
      if (reads_src) check_region(step, step.src, "source");
      if (writes_dst) {
        check_region(step, step.dst, "destination");
        if (step.dst.buffer == BufferKind::Input && step.dst.count > 0)
          fail(fmt::format("{}: writes the input buffer, which is read-only", where(r, step)));
      }
      if (reads_src && writes_dst) {
        if (step.src.count != step.dst.count)
          fail(fmt::format("{}: source and destination differ in size", where(r, step)));
        if (overlap(step.src, step.dst))
          fail(fmt::format("{}: source and destination overlap", where(r, step)));
      }
    }
  }
}

// ---- pass 2: matching ------------------------------------------------------------------------

struct Matching {
  std::vector<std::vector<int>> sequence;  // k per communication step
  std::vector<std::vector<int>> partner;   // the matching step's id on the peer
};

Matching match(const Schedule& s) {
  const int p = s.spec.ranks;
  Matching m;
  m.sequence.resize(p);
  m.partner.resize(p);
  // sends[a][b] / recvs[b][a]: step ids in list order.
  std::vector<std::vector<std::vector<int>>> sends(p, std::vector<std::vector<int>>(p)),
      recvs(p, std::vector<std::vector<int>>(p));
  for (int r = 0; r < p; ++r) {
    m.sequence[r].assign(s.ranks[r].steps.size(), -1);
    m.partner[r].assign(s.ranks[r].steps.size(), -1);
    for (const Step& step : s.ranks[r].steps) {
      if (!step.is_communication()) continue;
      auto& list = step.kind == StepKind::Send ? sends[r][step.peer] : recvs[r][step.peer];
      m.sequence[r][step.id] = static_cast<int>(list.size());
      list.push_back(step.id);
    }
  }
  for (int a = 0; a < p; ++a)
    for (int b = 0; b < p; ++b) {
      const auto& out = sends[a][b];
      const auto& in = recvs[b][a];
      for (std::size_t k = 0; k < std::max(out.size(), in.size()); ++k) {
        if (k >= in.size())
          fail(fmt::format(
              "{}: no matching receive (rank {} receives only {} message(s) from rank {})",
              where(a, s.ranks[a].steps[out[k]]), b, in.size(), a));
        if (k >= out.size())
          fail(fmt::format("{}: no matching send (rank {} sends only {} message(s) to rank {})",
                           where(b, s.ranks[b].steps[in[k]]), a, out.size(), b));
        const Step& send = s.ranks[a].steps[out[k]];
        const Step& recv = s.ranks[b].steps[in[k]];
        if (send.src.count != recv.dst.count)
          fail(fmt::format("{}: sends {} elements but the matching receive ({}) expects {}",
                           where(a, send), send.src.count, where(b, recv), recv.dst.count));
        m.partner[a][send.id] = recv.id;
        m.partner[b][recv.id] = send.id;
      }
    }
  return m;
}

// ---- pass 3: races ---------------------------------------------------------------------------

void check_races(const Schedule& s) {
  for (int r = 0; r < s.spec.ranks; ++r) {
    const auto& steps = s.ranks[r].steps;
    const std::size_t n = steps.size(), words = (n + 63) / 64;
    // before[i]: bit j set when step j precedes step i through dependencies.
    std::vector<std::uint64_t> before(n * words, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (int d : steps[i].deps) {
        for (std::size_t w = 0; w < words; ++w) before[i * words + w] |= before[d * words + w];
        before[i * words + d / 64] |= std::uint64_t{1} << (d % 64);
      }
    auto ordered = [&](int a, int b) {
      if (a > b) std::swap(a, b);
      return (before[b * words + a / 64] >> (a % 64) & 1) != 0;
    };
    struct Access {
      Region region;
      int step;
      bool writes;
    };
    std::vector<Access> accesses;
    for (const Step& step : steps) {
      const bool reads_src = step.kind == StepKind::Send || step.kind == StepKind::Copy ||
                             step.kind == StepKind::LocalReduce;
      if (reads_src && step.src.buffer != BufferKind::Input && step.src.count > 0)
        accesses.push_back({step.src, step.id, false});
      if (step.kind != StepKind::Send && step.dst.count > 0)
        accesses.push_back({step.dst, step.id, true});
    }
    std::sort(accesses.begin(), accesses.end(), [](const Access& a, const Access& b) {
      return std::pair(a.region.buffer, a.region.offset) <
             std::pair(b.region.buffer, b.region.offset);
    });
    for (std::size_t i = 0; i < accesses.size(); ++i)
      for (std::size_t j = i + 1;
           j < accesses.size() && overlap(accesses[i].region, accesses[j].region); ++j) {
        const Access& a = accesses[i].step < accesses[j].step ? accesses[i] : accesses[j];
        const Access& b = accesses[i].step < accesses[j].step ? accesses[j] : accesses[i];
        if ((a.writes || b.writes) && a.step != b.step && !ordered(a.step, b.step)) {
          const std::int64_t lo = std::max(a.region.offset, b.region.offset);
          const std::int64_t hi = std::min(a.region.end(), b.region.end());
          fail(
              fmt::format("rank {}: race on {}: steps '{}' and '{}' both touch it, at least one "
                          "writes, and neither depends on the other",
                          r, format_region({a.region.buffer, lo, hi - lo}),
                          format_step(steps[a.step]), format_step(steps[b.step])));
        }
      }
  }
}

// ---- pass 4: symbolic run --------------------------------------------------------------------

// The symbolic value of one element: which ranks contributed, to which input element.
struct Symbol {
  std::uint64_t ranks = 0;  // 0: never written
  std::int64_t element = -1;
  friend bool operator==(const Symbol&, const Symbol&) = default;
};

std::string rank_set(std::uint64_t ranks) {
  std::string out;
  for (int r = 0; r < 64;) {
    if (!(ranks >> r & 1)) {
      ++r;
      continue;
    }
    int e = r;
    while (e + 1 < 64 && (ranks >> (e + 1) & 1)) ++e;
    if (!out.empty()) out += ",";
    if (e == r)
      out += fmt::format("{}", r);
    else if (e == r + 1)
      out += fmt::format("{},{}", r, e);
    else
      out += fmt::format("{}-{}", r, e);
    r = e + 1;
  }
  return "{" + out + "}";
}

// "rank 3" or "ranks {0,1,4-7}".
std::string ranks_phrase(std::uint64_t ranks) {
  if (std::popcount(ranks) == 1) return fmt::format("rank {}", std::countr_zero(ranks));
  return "ranks " + rank_set(ranks);
}

std::string describe(const Symbol& v) {
  if (v.ranks == 0) return "nothing (never written)";
  return fmt::format("input element {} of {}", v.element, ranks_phrase(v.ranks));
}

class SymbolicRun {
 public:
  SymbolicRun(const Schedule& s, const Matching& m, bool track_data)
      : s_(s), m_(m), track_(track_data), p_(s.spec.ranks) {
    state_.resize(p_);
    post_round_.resize(p_);
    done_round_.resize(p_);
    pending_.resize(p_);
    dependents_.resize(p_);
    for (int r = 0; r < p_; ++r) {
      const auto& steps = s.ranks[r].steps;
      post_round_[r].assign(steps.size(), -1);
      done_round_[r].assign(steps.size(), -1);
      pending_[r].resize(steps.size());
      dependents_[r].resize(steps.size());
      for (const Step& step : steps) {
        pending_[r][step.id] = static_cast<int>(step.deps.size());
        for (int d : step.deps) dependents_[r][d].push_back(step.id);
      }
      if (!track_) continue;
      for (BufferKind b : {BufferKind::Input, BufferKind::Output, BufferKind::Scratch})
        buffer(r, b).assign(s.buffer_count(r, b), Symbol{});
      auto& in = buffer(r, BufferKind::Input);
      for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = Symbol{std::uint64_t{1} << r, static_cast<std::int64_t>(i)};
    }
  }

  void run() {
    for (int r = 0; r < p_; ++r)
      for (const Step& step : s_.ranks[r].steps)
        if (step.deps.empty()) post(r, step.id, 0);
    while (!work_.empty()) {
      auto [r, id] = work_.back();
      work_.pop_back();
      const Step& step = s_.ranks[r].steps[id];
      if (!step.is_communication()) {
        if (track_) apply(r, step, step.src, r);
        complete(r, id, post_round_[r][id]);
        continue;
      }
      const int peer = step.peer, other = m_.partner[r][id];
      if (post_round_[peer][other] < 0 || done_round_[r][id] >= 0) continue;  // wait for partner
      const int round = std::max(post_round_[r][id], post_round_[peer][other]);
      const bool sending = step.kind == StepKind::Send;
      const int from = sending ? r : peer, to = sending ? peer : r;
      const Step& send = s_.ranks[from].steps[sending ? id : other];
      const Step& recv = s_.ranks[to].steps[sending ? other : id];
      if (track_) apply(to, recv, send.src, from);
      complete(r, id, round);
      complete(peer, other, round);
    }
    for (int r = 0; r < p_; ++r)
      for (const Step& step : s_.ranks[r].steps)
        if (done_round_[r][step.id] < 0) fail(explain_deadlock(r, step.id));
  }

  std::vector<Symbol>& buffer(int r, BufferKind b) { return state_[r][static_cast<int>(b)]; }
  const std::vector<std::vector<int>>& rounds() const { return done_round_; }

 private:
  void post(int r, int id, int round) {
    post_round_[r][id] = round;
    work_.emplace_back(r, id);
  }
  void complete(int r, int id, int round) {
    done_round_[r][id] = round;
    for (int next : dependents_[r][id])
      if (--pending_[r][next] == 0) {
        int ready = 0;
        for (int d : s_.ranks[r].steps[next].deps) ready = std::max(ready, done_round_[r][d] + 1);
        post(r, next, ready);
      }
  }

  // Applies `step` on rank r (a local step, or the receiving side of a message whose data is
  // `src` on rank `from`).
  void apply(int r, const Step& step, const Region& src, int from) {
    if (step.kind == StepKind::Send) return;
    const std::vector<Symbol>& in = buffer(from, src.buffer);
    std::vector<Symbol> data(in.begin() + src.offset, in.begin() + src.end());
    std::vector<Symbol>& out = buffer(r, step.dst.buffer);
    const bool reduce = step.kind == StepKind::RecvReduce || step.kind == StepKind::LocalReduce;
    for (std::int64_t i = 0; i < step.dst.count; ++i) {
      Symbol& d = out[step.dst.offset + i];
      const Symbol& v = data[i];
      if (!reduce) {
        d = v;
        continue;
      }
      if (d.ranks == 0 || v.ranks == 0 || d.element != v.element || (d.ranks & v.ranks))
        fail(bad_reduction(r, step, step.dst.offset + i, d, v));
      d.ranks |= v.ranks;
    }
  }

  // Why combining v into d (element `at` of step's destination) is wrong.
  static std::string bad_reduction(int r, const Step& step, std::int64_t at, const Symbol& d,
                                   const Symbol& v) {
    const std::string where_ = where(r, step);
    const std::string elem = fmt::format("{}[{}]", buffer_name(step.dst.buffer), at);
    if (d.ranks == 0 || v.ranks == 0)
      return fmt::format(
          "{}: reduces data that was never written ({} holds {}, the incoming "
          "value is {})",
          where_, elem, describe(d), describe(v));
    if (d.element != v.element)
      return fmt::format("{}: combines different elements: {} holds {}, the incoming value is {}",
                         where_, elem, describe(d), describe(v));
    return fmt::format("{}: counts {} twice in {} ({} + {})", where_,
                       ranks_phrase(d.ranks & v.ranks), elem, describe(d), describe(v));
  }

  std::string explain_deadlock(int r, int id) const {
    // Find a step whose dependencies are done but whose partner never posts, then say why.
    for (int rank = 0; rank < p_; ++rank)
      for (const Step& step : s_.ranks[rank].steps) {
        if (done_round_[rank][step.id] >= 0 || post_round_[rank][step.id] < 0) continue;
        const int other = m_.partner[rank][step.id];
        const Step& partner = s_.ranks[step.peer].steps[other];
        std::string why;
        for (int d : partner.deps)
          if (done_round_[step.peer][d] < 0) {
            why = fmt::format(", which waits for its step {}",
                              format_step(s_.ranks[step.peer].steps[d]));
            break;
          }
        return fmt::format("deadlock: {} waits for rank {} step {}{}", where(rank, step), step.peer,
                           format_step(partner), why);
      }
    return fmt::format("deadlock: {} never runs", where(r, s_.ranks[r].steps[id]));
  }

  const Schedule& s_;
  const Matching& m_;
  bool track_;
  int p_;
  std::vector<std::array<std::vector<Symbol>, 3>> state_;
  std::vector<std::vector<int>> post_round_, done_round_, pending_;
  std::vector<std::vector<std::vector<int>>> dependents_;
  std::vector<std::pair<int, int>> work_;
};

// ---- pass 5: result --------------------------------------------------------------------------

// What output element i of rank r must hold.
Symbol expected(const CollectiveSpec& spec, int r, std::int64_t i) {
  const std::int64_t n = spec.count;
  const std::uint64_t all =
      spec.ranks == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << spec.ranks) - 1;
  const std::uint64_t root = std::uint64_t{1} << spec.root;
  switch (spec.collective) {
    case Collective::Broadcast:
      return {root, i};
    case Collective::Scatter:
      return {root, r * n + i};
    case Collective::Gather:
    case Collective::AllGather:
      return {std::uint64_t{1} << (i / n), i % n};
    case Collective::Reduce:
    case Collective::AllReduce:
      return {all, i};
    case Collective::ReduceScatter:
      return {all, r * n + i};
    case Collective::AllToAll:
      return {std::uint64_t{1} << (i / n), r * n + i % n};
  }
  return {};
}

void check_result(const Schedule& s, SymbolicRun& run) {
  for (int r = 0; r < s.spec.ranks; ++r) {
    const std::vector<Symbol>& out = run.buffer(r, BufferKind::Output);
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(out.size()); ++i) {
      const Symbol want = expected(s.spec, r, i);
      if (out[i] == want) continue;
      std::int64_t end = i + 1;  // the wrong chunk: the run of wrong elements from i
      while (end < static_cast<std::int64_t>(out.size()) && !(out[end] == expected(s.spec, r, end)))
        ++end;
      std::string hint;
      if (out[i].element == want.element && out[i].ranks != 0 && (want.ranks & ~out[i].ranks))
        hint = fmt::format(" (missing {})", ranks_phrase(want.ranks & ~out[i].ranks));
      fail(
          fmt::format("rank {}: chunk {} of the result is wrong: output[{}] holds {}, expected "
                      "{}{}",
                      r, format_region({BufferKind::Output, i, end - i}), i, describe(out[i]),
                      describe(want), hint));
    }
  }
}

}  // namespace

void validate_schedule(const Schedule& s) {
  check_form(s);
  match(s);
  check_races(s);
}

std::vector<std::vector<int>> message_sequence(const Schedule& s) {
  check_form(s);
  return match(s).sequence;
}

std::vector<std::vector<int>> lockstep_rounds(const Schedule& s) {
  check_form(s);
  const Matching m = match(s);
  SymbolicRun run(s, m, /*track_data=*/false);
  run.run();
  return run.rounds();
}

namespace {
std::int64_t buffer_elements(const Schedule& s) {
  std::int64_t elements = 0;
  for (int r = 0; r < s.spec.ranks && r < static_cast<int>(s.ranks.size()); ++r)
    elements += s.input_count(r) + s.output_count(r) + s.ranks[r].scratch_count;
  return elements;
}
}  // namespace

bool fits_symbolic_check(const Schedule& s) {
  return s.spec.ranks <= kMaxSymbolicRanks && buffer_elements(s) <= kMaxSymbolicElements;
}

CheckResult check_schedule(const Schedule& s) {
  try {
    check_form(s);
    if (s.spec.ranks > kMaxSymbolicRanks)
      fail(fmt::format("the symbolic checker handles at most {} ranks, not {}", kMaxSymbolicRanks,
                       s.spec.ranks));
    const std::int64_t elements = buffer_elements(s);
    if (elements > kMaxSymbolicElements)
      fail(fmt::format("the symbolic checker handles at most {} buffer elements in all, not {}",
                       kMaxSymbolicElements, elements));
    const Matching m = match(s);
    check_races(s);
    SymbolicRun run(s, m, /*track_data=*/true);
    run.run();
    check_result(s, run);
  } catch (const ScheduleError& e) {
    return CheckResult{e.what()};
  }
  return {};
}

}  // namespace spora::parallel
