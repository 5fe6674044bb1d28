// The roofline with per-class efficiencies and overheads, or the measured tables (cost_model.h).
#include "sim/cost_model.h"

#include <algorithm>

namespace spora::sim {

CostModel::CostModel(const DeviceSpec& device, std::string matmul_dtype, int ranks_on_node)
    : device_(device), matmul_dtype_(std::move(matmul_dtype)) {
  const int cores = device_.measured.cores;
  if (cores > 0 && ranks_on_node > cores) share_ = static_cast<double>(ranks_on_node) / cores;
}

double CostModel::peak_flops(DType dtype, const std::string& op_class) const {
  const auto& peaks = device_.peak_flops;
  auto entry = [&](const std::string& name) -> double {
    const auto it = peaks.find(name);
    return it == peaks.end() ? 0 : it->second;
  };
  if (!matmul_dtype_.empty() && dtype == DType::f32 && (op_class == "matmul" || op_class == "conv"))
    if (const double p = entry(matmul_dtype_); p > 0) return p;
  if (is_float(dtype))
    if (const double p = entry(std::string(dtype_name(dtype))); p > 0) return p;
  if (const double p = entry("f32"); p > 0) return p;
  return device_.max_peak_flops();
}

double CostModel::efficiency(const std::string& op_class) const {
  const auto it = device_.op_classes.find(op_class);
  return it == device_.op_classes.end() ? 1 : it->second.efficiency;
}

double CostModel::launch_overhead(const std::string& op_class) const {
  if (op_class == "view" || op_class == "host") return 0;
  const auto it = device_.op_classes.find(op_class);
  if (it != device_.op_classes.end() && it->second.launch_overhead)
    return *it->second.launch_overhead;
  return device_.launch_overhead;
}

OpTime CostModel::time(const sem::OpCost& cost, DType dtype) const {
  OpTime t;
  if (cost.op_class == "view" || cost.op_class == "host") return t;
  const MeasuredTables& tables = device_.measured;
  const double peak = peak_flops(dtype, cost.op_class);
  const double compute = cost.flops / peak;
  const double memory = cost.bytes / device_.memory_bandwidth;
  t.compute_bound = compute > memory;
  t.overhead = launch_overhead(cost.op_class) * share_;
  const GemmTable* gemm = cost.op_class == "matmul" ? &tables.gemm
                          : cost.op_class == "conv" ? &tables.conv
                                                    : nullptr;
  const auto rates = tables.bandwidth.find(cost.op_class);
  double seconds = 0;
  if (gemm && !gemm->empty() && cost.gemm[0] > 0 && cost.flops > 0) {
    // The table holds f32 rates; another dtype's peak scales them.
    const auto f32 = device_.peak_flops.find("f32");
    const double scale = f32 == device_.peak_flops.end() ? 1 : peak / f32->second;
    seconds = cost.flops / (gemm->rate_at(cost.gemm[0], cost.gemm[1], cost.gemm[2]) * scale);
    t.compute_bound = true;
  } else if (rates != tables.bandwidth.end() && cost.bytes > 0) {
    const double table = cost.bytes / rates->second.rate_at(cost.bytes);
    t.compute_bound = compute > table;
    seconds = std::max(compute, table);
  } else {
    seconds = std::max(compute, memory) / efficiency(cost.op_class);
  }
  t.seconds = seconds * share_ + t.overhead;
  return t;
}

int ranks_on_node(const ClusterSpec& cluster, int ranks) {
  return std::max(1, std::min(ranks, cluster.devices_per_node));
}

DType compute_dtype(const std::vector<sem::TypeP>& inputs, const sem::TypeP& output) {
  for (const sem::TypeP& t : inputs)
    if (t && t->is_tensor() && is_float(t->dtype)) return t->dtype;
  if (output && output->is_tensor()) return output->dtype;
  return DType::f32;
}

}  // namespace spora::sim
