// The test matrix shared by the threads, MPI and NCCL suites: every algorithm (native included)
// x every collective it implements, and one helper that runs a case on one rank and returns
// how many of the rank's output elements differ from the direct computation.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "backends/comm/communicator.h"
#include "backends/comm/executor.h"
#include "backends/comm/verify.h"
#include "parallel/collectives/algorithms.h"

namespace spora::comm::testing_support {

using parallel::Algorithm;
using parallel::AlgorithmOptions;
using parallel::CollectiveSpec;

struct Pair {
  Algorithm algorithm;
  Collective collective;
};

inline std::vector<Pair> all_pairs() {
  std::vector<Pair> out;
  for (Algorithm a : parallel::all_algorithms())
    for (Collective c : parallel::supported_collectives(a)) out.push_back({a, c});
  return out;
}

inline std::string pair_name(const Pair& p) {
  std::string s = std::string(parallel::algorithm_name(p.algorithm)) + "_" +
                  std::string(parallel::collective_name(p.collective));
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

// gtest prints parameters with this (test names and failure messages).
inline void PrintTo(const Pair& p, std::ostream* os) { *os << pair_name(p); }

inline std::vector<ReduceOp> ops_for(Collective c) {
  if (!parallel::is_reducing(c)) return {ReduceOp::Sum};
  return {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod};
}

inline std::string describe(const Pair& pair, const CollectiveSpec& spec, DType t, int chunks) {
  return pair_name(pair) + " ranks=" + std::to_string(spec.ranks) +
         " count=" + std::to_string(spec.count) + " root=" + std::to_string(spec.root) +
         " op=" + std::string(parallel::reduce_op_name(spec.op)) +
         " dtype=" + std::string(dtype_name(t)) + " chunks=" + std::to_string(chunks);
}

// Runs one case on this rank: fills the input, runs the schedule (or the native collective),
// returns the number of wrong output elements. `schedule` is ignored for Native.
inline std::int64_t run_case(Communicator& comm, Algorithm algorithm, const CollectiveSpec& spec,
                             const parallel::Schedule* schedule, DType t) {
  const int r = comm.rank();
  const std::size_t es = dtype_size(t);
  const std::int64_t in_n = input_count(spec, r), out_n = output_count(spec, r);
  std::vector<unsigned char> host_in(in_n * es), host_out(out_n * es, 0xff);  // 0xff..: NaN / -1
  fill_input(spec, r, t, host_in.data());
  Buffer in(comm, host_in.size()), out(comm, host_out.size());
  comm.upload(in.data(), host_in.data(), host_in.size());
  comm.upload(out.data(), host_out.data(), host_out.size());
  if (algorithm == Algorithm::Native) {
    CollectiveCall call{spec.collective, spec.op, t, spec.count, spec.root, in.data(), out.data()};
    comm.native(call);
    comm.synchronize();
  } else {
    execute(*schedule, comm, t, in.data(), out.data());
  }
  comm.download(host_out.data(), out.data(), host_out.size());
  return count_wrong(spec, r, t, host_out.data());
}

}  // namespace spora::comm::testing_support
