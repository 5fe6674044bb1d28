#include "parallel/collectives/schedule.h"

#include <array>
#include <stdexcept>

namespace spora::parallel {

namespace {

constexpr std::array kCollectiveNames = {
    std::pair{Collective::Broadcast, std::string_view("broadcast")},
    std::pair{Collective::Scatter, std::string_view("scatter")},
    std::pair{Collective::Gather, std::string_view("gather")},
    std::pair{Collective::Reduce, std::string_view("reduce")},
    std::pair{Collective::AllReduce, std::string_view("all-reduce")},
    std::pair{Collective::AllGather, std::string_view("all-gather")},
    std::pair{Collective::ReduceScatter, std::string_view("reduce-scatter")},
    std::pair{Collective::AllToAll, std::string_view("all-to-all")},
};

constexpr std::array kReduceOpNames = {
    std::pair{ReduceOp::Sum, std::string_view("sum")},
    std::pair{ReduceOp::Max, std::string_view("max")},
    std::pair{ReduceOp::Min, std::string_view("min")},
    std::pair{ReduceOp::Prod, std::string_view("prod")},
};

constexpr std::array kAlgorithmNames = {
    std::pair{Algorithm::Ring, std::string_view("ring")},
    std::pair{Algorithm::Tree, std::string_view("tree")},
    std::pair{Algorithm::Binomial, std::string_view("binomial")},
    std::pair{Algorithm::HalvingDoubling, std::string_view("halving-doubling")},
    std::pair{Algorithm::RecursiveDoubling, std::string_view("recursive-doubling")},
    std::pair{Algorithm::Bruck, std::string_view("bruck")},
    std::pair{Algorithm::Pairwise, std::string_view("pairwise")},
    std::pair{Algorithm::Hierarchical, std::string_view("hierarchical")},
    std::pair{Algorithm::Native, std::string_view("native")},
};

template <typename Table, typename Key>
std::string_view name_of(const Table& table, Key key) {
  for (const auto& [k, name] : table)
    if (k == key) return name;
  throw std::logic_error("unnamed enumerator");
}

template <typename Table>
auto parse_name(const Table& table, std::string_view name)
    -> std::optional<typename Table::value_type::first_type> {
  for (const auto& [k, n] : table)
    if (n == name) return k;
  return std::nullopt;
}

}  // namespace

std::string_view collective_name(Collective c) { return name_of(kCollectiveNames, c); }
std::string_view reduce_op_name(ReduceOp op) { return name_of(kReduceOpNames, op); }
std::string_view algorithm_name(Algorithm a) { return name_of(kAlgorithmNames, a); }

std::string_view step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::Send:
      return "send";
    case StepKind::Recv:
      return "recv";
    case StepKind::RecvReduce:
      return "recv-reduce";
    case StepKind::Copy:
      return "copy";
    case StepKind::LocalReduce:
      return "reduce";
  }
  return "?";
}

std::string_view buffer_name(BufferKind b) {
  switch (b) {
    case BufferKind::Input:
      return "input";
    case BufferKind::Output:
      return "output";
    case BufferKind::Scratch:
      return "scratch";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  return parse_name(kCollectiveNames, name);
}
std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  return parse_name(kReduceOpNames, name);
}
std::optional<Algorithm> parse_algorithm(std::string_view name) {
  return parse_name(kAlgorithmNames, name);
}

bool is_reducing(Collective c) {
  return c == Collective::Reduce || c == Collective::AllReduce || c == Collective::ReduceScatter;
}

bool is_rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Scatter || c == Collective::Gather ||
         c == Collective::Reduce;
}

std::vector<Collective> all_collectives() {
  std::vector<Collective> out;
  for (const auto& [c, name] : kCollectiveNames) out.push_back(c);
  return out;
}

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> out;
  for (const auto& [a, name] : kAlgorithmNames) out.push_back(a);
  return out;
}

std::int64_t Schedule::input_count(int rank) const {
  const std::int64_t n = spec.count, p = spec.ranks;
  switch (spec.collective) {
    case Collective::Broadcast:
      return rank == spec.root ? n : 0;
    case Collective::Scatter:
      return rank == spec.root ? p * n : 0;
    case Collective::Gather:
    case Collective::Reduce:
    case Collective::AllReduce:
    case Collective::AllGather:
      return n;
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return p * n;
  }
  return 0;
}

std::int64_t Schedule::output_count(int rank) const {
  const std::int64_t n = spec.count, p = spec.ranks;
  switch (spec.collective) {
    case Collective::Broadcast:
    case Collective::Scatter:
    case Collective::AllReduce:
    case Collective::ReduceScatter:
      return n;
    case Collective::Gather:
      return rank == spec.root ? p * n : 0;
    case Collective::Reduce:
      return rank == spec.root ? n : 0;
    case Collective::AllGather:
    case Collective::AllToAll:
      return p * n;
  }
  return 0;
}

std::int64_t Schedule::buffer_count(int rank, BufferKind buffer) const {
  switch (buffer) {
    case BufferKind::Input:
      return input_count(rank);
    case BufferKind::Output:
      return output_count(rank);
    case BufferKind::Scratch:
      return ranks.at(rank).scratch_count;
  }
  return 0;
}

std::size_t Schedule::step_count() const {
  std::size_t total = 0;
  for (const RankProgram& r : ranks) total += r.steps.size();
  return total;
}

}  // namespace spora::parallel
