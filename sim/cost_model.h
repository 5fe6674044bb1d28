// Device time of one operation from its cost (sim/cost.h) and the device of a cluster spec:
//
//   time = max(flops / peak_flops[dtype], bytes / memory_bandwidth) / efficiency[op_class]
//          + launch_overhead[op_class]
//
// a roofline divided by how much of it the op class achieves, plus a fixed per-operation time
// (kernel launch and framework dispatch). The classes `view` and `host` take no time at all.
// Efficiencies default to 1 and overheads to device.launch_overhead (sim/README.md, "Op
// classes"); `spora calibrate` measures both on this machine.
//
// peak_flops[dtype]: the op's dtype (its first floating-point input, else its output) looks up
// the spec's entry of the same name (f64 f32 f16 bf16); integer and bool ops, and dtypes the
// spec does not list, use the f32 entry, else the highest one. `matmul_dtype` (e.g. "tf32",
// "bf16") lets f32 matrix products and convolutions run at another entry's rate, the way
// PyTorch's allow_tf32 or mixed precision would.
#pragma once

#include <string>
#include <vector>

#include "sim/cluster_spec.h"
#include "sim/cost.h"

namespace spora::sim {

struct OpTime {
  double seconds = 0;   // the whole: roofline / efficiency + overhead
  double overhead = 0;  // of which the launch overhead
  bool compute_bound = false;
};

class CostModel {
 public:
  explicit CostModel(const DeviceSpec& device, std::string matmul_dtype = "");

  OpTime time(const OpCost& cost, DType dtype) const;
  double peak_flops(DType dtype, const std::string& op_class) const;
  double efficiency(const std::string& op_class) const;
  double launch_overhead(const std::string& op_class) const;

 private:
  DeviceSpec device_;
  std::string matmul_dtype_;
};

// The dtype an application computes in: its first floating-point input, else its output's
// dtype, else f32.
DType compute_dtype(const std::vector<sem::TypeP>& inputs, const sem::TypeP& output);

}  // namespace spora::sim
