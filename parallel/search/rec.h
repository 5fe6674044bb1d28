// Recursive programming (MindSpore's rec_core, "double recursive" strategy search): fast
// symbolic partitioning for large device counts, on operators described by their shapes.
//
// Input: each operator as an iteration space (matmul [m, n, k], an elementwise op over [b, s,
// h]...), which of its dimensions are summed over (k of a matmul), the iteration dimensions
// its output keeps, where its inputs come from (the producer, and which of this operator's
// dimensions each dimension of that producer's output becomes), and the parameters it reads
// (which iteration dimensions each spans). No candidate lists: a strategy is a number of cuts
// per iteration dimension, a power of two.
//
// Algorithm (devices = 2^L):
//   for level in 1..L:                  # split the device count by 2, one factor at a time
//     for op in topological order:      # MindSpore: by weight or topology
//       for every dimension d whose local size is still even:
//         cost(d) = all-reduce of the local output     if d is summed over
//                 + gradient all-reduce of each parameter that does not span d
//                 + redistribution of every input / output tensor whose producer or consumer
//                   is cut differently on that dimension (producer / consumer already decided
//                   at this level, else as of the previous level)
//       cut the cheapest dimension (ties: the lowest index, usually the batch)
// Costs are bytes over a bandwidth plus a latency, with the same alpha-beta numbers as the
// analytic oracle: what matters is their ratios, as in MindSpore's cost functions.
//
// Memory: after the last level, each device holds its parameter shards (times `param_copies`:
// weights, gradients, optimizer state) and its activation shards; above the limit the result
// says so, with the memory needed (MindSpore's DevicesMemoryControl refuses the partition).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace spora::parallel::search {

struct RecOp {
  std::string name;
  std::vector<int64_t> dims;  // iteration space
  std::vector<bool> reduced;  // per dimension: summed over (a cut needs an all-reduce)
  std::vector<int> output;    // the iteration dimensions the output keeps, in order
  struct Input {
    int producer = -1;         // index of the producing RecOp
    std::vector<int> dim_map;  // producer output dim j -> this op's dim (-1: not an index here)
  };
  std::vector<Input> inputs;
  struct Param {
    std::string name;
    std::vector<int> dims;  // the iteration dimensions its tensor dims are, in order
  };
  std::vector<Param> params;
  double element_bytes = 4;
  double flops = 0;  // whole operator
};

struct RecGraph {
  std::vector<RecOp> ops;  // producers before consumers
};

struct RecOptions {
  int64_t devices = 8;       // a power of two
  double bandwidth = 100e9;  // bytes/s of a collective's slowest link
  double latency = 5e-6;     // seconds per collective
  double peak_flops = 100e12;
  double param_copies = 3;  // weight + gradient + one optimizer state (sgd with momentum)
  double memory_limit = 0;  // bytes per device; 0: none
};

struct RecResult {
  std::vector<std::vector<int64_t>> cuts;  // per op, per iteration dimension
  double cost = 0;                         // seconds: compute / devices + the communication chosen
  double memory = 0;                       // bytes per device
  bool feasible = true;
  std::vector<std::string> params_layout;  // "name (c0, c1)" per parameter, MindSpore notation
};

// Throws std::invalid_argument with a message for people on a malformed graph or a device count
// that is not a power of two.
RecResult search_rec(const RecGraph& g, const RecOptions& o);

// A rec graph of an MLP / transformer stack with the given sizes, for tests and benchmarks:
// `layers` transformer blocks (batch b, sequence s, hidden h, MLP 4h).
RecGraph transformer_rec_graph(int layers, int64_t batch, int64_t seq, int64_t hidden);

}  // namespace spora::parallel::search
