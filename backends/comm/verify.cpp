#include "backends/comm/verify.h"

#include <algorithm>

namespace spora::comm {

using parallel::CollectiveSpec;

namespace {

// The value of element i of rank's input (as an integer; exact in every dtype).
std::int64_t value(const CollectiveSpec& spec, int rank, std::int64_t i) {
  if (!parallel::is_reducing(spec.collective))
    return ((rank + 1) * std::int64_t{7919} + i * 31) % 8388593;  // prime < 2^23
  switch (spec.op) {
    case ReduceOp::Sum:
      return (rank * 7 + i * 3) % 11 - 5;
    case ReduceOp::Max:
    case ReduceOp::Min:
      return (rank * 13 + i * 7) % 101 - 50;
    case ReduceOp::Prod:
      // At most ceil(64 / 5) factors of 2 per element: |product| <= 2^13.
      if ((i + rank) % 5 == 0) return 2;
      return (i * 3 + rank) % 7 == 0 ? -1 : 1;
  }
  return 0;
}

std::int64_t combine(ReduceOp op, std::int64_t a, std::int64_t b) {
  switch (op) {
    case ReduceOp::Sum:
      return a + b;
    case ReduceOp::Max:
      return std::max(a, b);
    case ReduceOp::Min:
      return std::min(a, b);
    case ReduceOp::Prod:
      return a * b;
  }
  return 0;
}

// Expected output element i of rank.
std::int64_t expected(const CollectiveSpec& spec, int rank, std::int64_t i) {
  const std::int64_t n = spec.count;
  auto reduced = [&](std::int64_t element) {
    std::int64_t acc = value(spec, 0, element);
    for (int q = 1; q < spec.ranks; ++q) acc = combine(spec.op, acc, value(spec, q, element));
    return acc;
  };
  switch (spec.collective) {
    case Collective::Broadcast:
      return value(spec, spec.root, i);
    case Collective::Scatter:
      return value(spec, spec.root, rank * n + i);
    case Collective::Gather:
    case Collective::AllGather:
      return value(spec, static_cast<int>(i / n), i % n);
    case Collective::Reduce:
    case Collective::AllReduce:
      return reduced(i);
    case Collective::ReduceScatter:
      return reduced(rank * n + i);
    case Collective::AllToAll:
      return value(spec, static_cast<int>(i / n), rank * n + i % n);
  }
  return 0;
}

template <typename T>
void fill_typed(const CollectiveSpec& spec, int rank, T* out) {
  const std::int64_t n = input_count(spec, rank);
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(value(spec, rank, i));
}

template <typename T>
std::int64_t wrong_typed(const CollectiveSpec& spec, int rank, const T* out) {
  const std::int64_t n = output_count(spec, rank);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i)
    if (out[i] != static_cast<T>(expected(spec, rank, i))) ++wrong;
  return wrong;
}

}  // namespace

std::int64_t input_count(const CollectiveSpec& spec, int rank) {
  parallel::Schedule shape;
  shape.spec = spec;
  return shape.input_count(rank);
}

std::int64_t output_count(const CollectiveSpec& spec, int rank) {
  parallel::Schedule shape;
  shape.spec = spec;
  return shape.output_count(rank);
}

void fill_input(const CollectiveSpec& spec, int rank, DType t, void* input) {
  switch (t) {
    case DType::F32:
      fill_typed(spec, rank, static_cast<float*>(input));
      break;
    case DType::F64:
      fill_typed(spec, rank, static_cast<double*>(input));
      break;
    case DType::I32:
      fill_typed(spec, rank, static_cast<std::int32_t*>(input));
      break;
    case DType::I64:
      fill_typed(spec, rank, static_cast<std::int64_t*>(input));
      break;
  }
}

std::int64_t count_wrong(const CollectiveSpec& spec, int rank, DType t, const void* output) {
  switch (t) {
    case DType::F32:
      return wrong_typed(spec, rank, static_cast<const float*>(output));
    case DType::F64:
      return wrong_typed(spec, rank, static_cast<const double*>(output));
    case DType::I32:
      return wrong_typed(spec, rank, static_cast<const std::int32_t*>(output));
    case DType::I64:
      return wrong_typed(spec, rank, static_cast<const std::int64_t*>(output));
  }
  return 0;
}

}  // namespace spora::comm
