// Measured tables of a device: what `spora calibrate` (benchmarks/calibrate/) measured on a
// machine, read from the cluster spec's `device.measured` block and interpolated by the cost
// model (sim/cost_model.h). The simulator never runs a kernel: these tables are all it knows.
//
//   device:
//     measured:
//       cores: 2                      # the node's devices run on this many cores
//       gemm:                         # f32 matmul [m, k] x [k, n]: rows [m, n, k, FLOP/s]
//         - [16, 16, 16, 1.1e9]       #   a full grid: every m x n x k of the values listed
//         ...
//       conv:                         # conv2d, the GEMM of one image and group that the kernel
//         - [8, 64, 9, 2.0e9]         #   runs: [Og, P, K, FLOP/s] (semantics/cost.h, OpCost::gemm)
//       bandwidth:                    # per op class: rows [bytes the op moves, bytes/s]
//         elementwise: [[16384, 3.1e10], [1048576, 2.2e10], ...]
//       reuse_distance: 4194304       # the tables above: operands at this reuse distance (bytes)
//       at_reuse_distance:            # the same tables measured at other reuse distances
//         0: {gemm: [...], conv: [...], bandwidth: {...}}
//         67108864: {...}
//       oversubscribed:               # more ranks than cores: what a synchronisation costs
//         ranks: 4                    #   measured with 4 ranks on `cores` cores
//         sync: [[0, 2.1e-4], [8e-5, 3.0e-4], ...]   # rows [grain s, extra s per sync]
//       collectives:                  # per primitive: rows [ranks, bytes, seconds per call]
//         all_reduce: [[2, 512, 2.6e-5], [2, 4096, 3.2e-5], ..., [4, 512, 6.1e-5], ...]
//         all_gather: [...]           #   bytes: the whole tensor (all_gather: the gathered one)
//         all_gather_contiguous: [...]  # split along a leading dimension: every piece is one
//         reduce_scatter_contiguous: [...]  # block of the tensor, no piece is copied to or from
//                                     #   a staging buffer (ops/collective.cpp); the plain rows
//                                     #   are pieces of a later dimension, strided
//         all_reduce_b2b: [...]       # any of the above + _b2b: the calls back to back, with no
//                                     #   computation between them (the others: each after
//                                     #   2 ms of computation over 32 MiB)
//
// Interpolation (exact at the measured points, clamped to the edge beyond them):
//   GemmTable   trilinear in (log2 m, log2 n, log2 k) of the FLOP rate: between grid values
//               m0 <= m <= m1 the weight of m1 is log2(m / m0) / log2(m1 / m0), and so on per
//               dimension; a GEMM smaller or larger than the grid takes the edge's rate.
//   RateTable   piecewise linear in log2(bytes) of the rate.
//   SyncTable   piecewise linear in the grain (seconds), clamped to the edges.
//   CollectiveTable  per (primitive, ranks): piecewise linear in log2(bytes) of the time; below
//               the smallest size its time; beyond the largest, the line through the last two
//               points in bytes (their bandwidth), never below the largest's time.
// Reuse distance: the bytes of other data a kernel's inputs have had touched since their last use
// (an LRU stack distance, Mattson et al. 1970). The calibration measures each table with the
// kernel's inputs taken in turn from copies that add up to a distance (0: the same inputs every
// call), and the simulator reads the tables at each input's distance in the step's op order
// (sim/reuse.h), interpolating the time linearly in log2 of the distance between the measured
// ones (a distance below 4 KiB counts as 4 KiB) and clamping beyond them. Without
// `at_reuse_distance` there is one set of tables, used at every distance.
// Why the shape and not the FLOPs alone: a skinny product (64 x 10 x 512) runs far below a square
// one of the same FLOPs, and small element-wise ops run from the caches, faster than large ones.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace spora::sim {

struct GemmTable {
  std::vector<double> m, n, k;  // the grid's values per dimension, ascending
  std::vector<double>
      rate;  // FLOP/s at (m[i], n[j], k[l]): rate[(i * n.size() + j) * k.size() + l]

  bool empty() const { return rate.empty(); }
  double rate_at(double m, double n, double k) const;
  // From rows {m, n, k, rate}; throws std::invalid_argument naming what is wrong (a missing grid
  // point, a repeated one, a non-positive value).
  static GemmTable from_rows(const std::vector<std::array<double, 4>>& rows);
  std::vector<std::array<double, 4>> rows() const;
};

struct RateTable {
  std::vector<double> bytes, rate;  // ascending bytes; rate in bytes/s

  bool empty() const { return rate.empty(); }
  double rate_at(double bytes) const;
  static RateTable from_rows(const std::vector<std::array<double, 2>>& rows);
};

// Ranks taking turns on too few cores, measured by `spora calibrate` (benchmarks/calibrate/
// share.cpp): `ranks` MPI ranks on `cores` cores loop over (compute of `grain` seconds, as one
// rank alone on a core takes it; a small all_reduce over all of them). `extra` is what one loop
// took beyond what the simulator charges without it: the fair share (ranks / cores x grain) and
// the collective with its copies sharing the cores (sim/cost_model.h). The scheduler's wake-ups,
// the ranks that spin in the collective while a peer waits for a core, the caches they share.
// It may be negative (a loop faster than that charge): it corrects the collective's per-call
// time, and the simulator keeps their sum at 0 or more (sim/spmd_step.cpp).
struct SyncTable {
  int ranks = 0;
  std::vector<double> grain, extra;  // ascending grain >= 0

  bool empty() const { return grain.empty(); }
  double extra_at(double grain_seconds) const;
  // From rows {grain, extra}; throws std::invalid_argument naming what is wrong.
  static SyncTable from_rows(int ranks, const std::vector<std::array<double, 2>>& rows);
};

// Collectives as the runtime runs them, each call timed from the last rank's start to the last
// rank's end (benchmarks/calibrate/comm.cpp): the simulator charges these times instead of its
// ring model for a group of a measured size (sim/spmd_step.cpp).
struct CollectiveTable {
  std::vector<double> bytes, seconds;  // ascending bytes

  bool empty() const { return seconds.empty(); }
  double seconds_at(double bytes) const;
  // From rows {bytes, seconds}; throws std::invalid_argument naming what is wrong.
  static CollectiveTable from_rows(const std::vector<std::array<double, 2>>& rows);
};

// The compute tables of one reuse distance of the operands.
struct ComputeTables {
  GemmTable gemm;
  // conv2d, and its two derivative helpers, each over the GEMM its CPU kernel runs per image
  // (semantics/cost.h OpCost::gemm): they run that GEMM beside different copies (im2col, col2im,
  // the weight gradient's accumulation), so one op's rates do not carry over to the others.
  GemmTable conv, conv_input_grad, conv_weight_grad;
  std::map<std::string, RateTable> bandwidth;  // op class -> bytes/s by the bytes an op moves

  // The GEMM-like tables by their name in the spec: gemm, conv, conv_input_grad,
  // conv_weight_grad (nullptr for another name).
  static const std::vector<std::string>& gemm_table_names();
  GemmTable* gemm_table(std::string_view name);
  const GemmTable* gemm_table(std::string_view name) const;
  bool empty() const {
    return gemm.empty() && conv.empty() && conv_input_grad.empty() && conv_weight_grad.empty() &&
           bandwidth.empty();
  }
};

// The tables (the inherited ComputeTables at `reuse_distance`, the others by theirs).
struct MeasuredTables : ComputeTables {
  // The cores the node's devices share (0: one each, as GPUs). When a step runs more ranks on a
  // node than it has cores, the ranks take turns: each op takes ranks / cores times its time,
  // and every synchronisation costs `oversubscribed.extra_at(grain)` more.
  int cores = 0;
  double reuse_distance = -1;  // bytes, of the inherited tables' operands (-1: not stated)
  std::map<double, ComputeTables> at_reuse_distance;
  SyncTable oversubscribed;
  // "all_reduce", "reduce_scatter", "all_gather" -> ranks -> table.
  std::map<std::string, std::map<int, CollectiveTable>> collectives;

  bool empty() const {
    return cores == 0 && ComputeTables::empty() && at_reuse_distance.empty() &&
           oversubscribed.empty() && collectives.empty();
  }
  // Every set of compute tables by its operands' reuse distance, ascending (the inherited
  // tables only, at distance 0, when no distance is stated).
  std::vector<std::pair<double, const ComputeTables*>> by_reuse_distance() const;
  // The measured table of `primitive` over `ranks`, or nullptr. `contiguous`: the pieces are
  // blocks of the tensor (split along a leading dimension); `back_to_back`: no computation since
  // the previous collective. The most specific table measured: contiguous and back to back,
  // contiguous, back to back, then the plain one.
  const CollectiveTable* collective(const std::string& primitive, int ranks,
                                    bool contiguous = false, bool back_to_back = false) const;
};

// Whether `name` is a key of measured.collectives: all_reduce, reduce_scatter or all_gather, the
// last two optionally with _contiguous, any of them optionally with _b2b after that.
bool known_collective_table(const std::string& name);

// Reads the `measured:` block; `fail(field, message)` reports an error (it must throw), with
// the field relative to the block, e.g. "gemm[3]".
MeasuredTables read_measured_tables(
    const YAML::Node& node,
    const std::function<void(const std::string&, const std::string&)>& fail);

// The YAML text of the `measured:` block (indented by `indent` spaces), as `spora calibrate`
// writes it and parse_cluster_spec reads it back.
std::string measured_tables_yaml(const MeasuredTables& t, int indent);

}  // namespace spora::sim
