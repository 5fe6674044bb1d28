// Device time of one operation from its cost (semantics/cost.h) and the device of a cluster spec.
//
// With measured tables (sim/measured_tables.h, written by `spora calibrate`):
//
//   matmul, conv   time = flops / gemm_rate(m, n, k)          the GEMM table of the op's class at
//                                                             the op's own GEMM (OpCost::gemm)
//   a class with a bandwidth table
//                  time = max(flops / peak_flops[dtype], bytes / rate_class(bytes))
//
// and otherwise (published specs, or classes the tables lack) the roofline divided by how much
// of it the op class achieves:
//
//   time = max(flops / peak_flops[dtype], bytes / memory_bandwidth) / efficiency[op_class]
//
// With tables at several reuse distances (measured.at_reuse_distance), `time` given the op's
// reads (their reuse distance in the step's op order, sim/reuse.h, and their bytes) takes each
// read's share of the op (by bytes) at its distance, interpolated between the measured ones
// (sim/measured_tables.h, "Reuse distance"); without reads, the tables of `reuse_distance`.
//
// plus, in every case, a fixed per-operation time launch_overhead[op_class] (kernel launch and
// framework dispatch). The classes `view` and `host` take no time at all. Efficiencies default to
// 1 and overheads to device.launch_overhead (sim/README.md, "The cost model"). The GEMM tables
// hold f32 rates: an op of another dtype (or with `matmul_dtype`) scales the table's rate by
// peak_flops[its dtype] / peak_flops[f32].
//
// Time sharing: when `ranks_on_node` ranks run on a node whose devices share
// `measured.cores` < ranks_on_node cores, every op takes ranks_on_node / cores times as long
// (the ranks take turns on the cores: `spora run --ranks 4` on two cores). The SPMD step's
// collectives (sim/spmd_step.cpp) scale their bytes and per-call overhead by the same factor
// (their copies take turns too) and add, per synchronisation and rank, the measured
// `measured.oversubscribed.extra_at(grain)` (sim/measured_tables.h) to the per-call time (their
// sum kept at 0 or more), the grain being the rank's compute since its previous collective at
// one rank per core.
//
// peak_flops[dtype]: the op's dtype (its first floating-point input, else its output) looks up
// the spec's entry of the same name (f64 f32 f16 bf16); integer and bool ops, and dtypes the
// spec does not list, use the f32 entry, else the highest one. `matmul_dtype` (e.g. "tf32",
// "bf16") lets f32 matrix products and convolutions run at another entry's rate, the way
// PyTorch's allow_tf32 or mixed precision would.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "semantics/cost.h"
#include "sim/cluster_spec.h"

namespace spora::sim {

struct OpTime {
  double seconds = 0;   // the whole: roofline / efficiency (or table) + overhead
  double overhead = 0;  // of which the launch overhead
  bool compute_bound = false;
};

class CostModel {
 public:
  explicit CostModel(const DeviceSpec& device, std::string matmul_dtype = "",
                     int ranks_on_node = 1);

  OpTime time(const sem::OpCost& cost, DType dtype) const;
  // `reads`: rows {reuse distance in bytes, bytes read}, one per input tensor.
  OpTime time(const sem::OpCost& cost, DType dtype,
              const std::vector<std::array<double, 2>>& reads) const;
  double peak_flops(DType dtype, const std::string& op_class) const;
  double efficiency(const std::string& op_class) const;
  double launch_overhead(const std::string& op_class) const;
  // The factor every op's time is multiplied by (>= 1): ranks_on_node / measured.cores.
  double time_share() const { return share_; }

 private:
  // The op's time at one set of tables, without the overhead and the time sharing.
  double seconds(const ComputeTables& tables, const sem::OpCost& cost, DType dtype,
                 bool& compute_bound) const;

  DeviceSpec device_;
  std::string matmul_dtype_;
  double share_ = 1;
};

// The ranks of a step of `ranks` ranks that share one node of `cluster` (ranks fill the nodes in
// order): min(ranks, devices_per_node).
int ranks_on_node(const ClusterSpec& cluster, int ranks);

// The dtype an application computes in: its first floating-point input, else its output's
// dtype, else f32.
DType compute_dtype(const std::vector<sem::TypeP>& inputs, const sem::TypeP& output);

}  // namespace spora::sim
