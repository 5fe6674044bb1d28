// The roofline with per-class efficiencies and overheads, or the measured tables (cost_model.h).
#include "sim/cost_model.h"

#include <algorithm>
#include <cmath>

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

namespace {

// The table of measured GEMM rates that prices an op: its own (OpCost::table) where the
// tables have it, else its class's; nullptr for other classes.
const GemmTable* gemm_table_of(const ComputeTables& tables, const sem::OpCost& cost) {
  if (cost.op_class != "matmul" && cost.op_class != "conv") return nullptr;
  if (!cost.table.empty())
    if (const GemmTable* own = tables.gemm_table(cost.table); own && !own->empty()) return own;
  return cost.op_class == "matmul" ? &tables.gemm : &tables.conv;
}

// The bandwidth table that prices an op of another class: its own (OpCost::table) where the
// tables have it, else its class's; nullptr where neither is measured.
const RateTable* bandwidth_table_of(const ComputeTables& tables, const sem::OpCost& cost) {
  auto it = cost.table.empty() ? tables.bandwidth.end() : tables.bandwidth.find(cost.table);
  if (it == tables.bandwidth.end()) it = tables.bandwidth.find(cost.op_class);
  return it == tables.bandwidth.end() ? nullptr : &it->second;
}

}  // namespace

double CostModel::seconds(const ComputeTables& tables, const sem::OpCost& cost, DType dtype,
                          bool& compute_bound) const {
  const double peak = peak_flops(dtype, cost.op_class);
  const double compute = cost.flops / peak;
  const double memory = cost.bytes / device_.memory_bandwidth;
  compute_bound = compute > memory;
  const GemmTable* gemm = gemm_table_of(tables, cost);
  const RateTable* rates = bandwidth_table_of(tables, cost);
  if (gemm && !gemm->empty() && cost.gemm[0] > 0 && cost.flops > 0) {
    // The table holds f32 rates; another dtype's peak scales them.
    const auto f32 = device_.peak_flops.find("f32");
    const double scale = f32 == device_.peak_flops.end() ? 1 : peak / f32->second;
    compute_bound = true;
    return cost.flops / (gemm->rate_at(cost.gemm[0], cost.gemm[1], cost.gemm[2]) * scale);
  }
  if (rates && cost.bytes > 0) {
    const double table = cost.bytes / rates->rate_at(cost.bytes);
    compute_bound = compute > table;
    return std::max(compute, table);
  }
  return std::max(compute, memory) / efficiency(cost.op_class);
}

OpTime CostModel::time(const sem::OpCost& cost, DType dtype) const {
  OpTime t;
  if (cost.op_class == "view" || cost.op_class == "host") return t;
  t.overhead = launch_overhead(cost.op_class) * share_;
  t.seconds = seconds(device_.measured, cost, dtype, t.compute_bound) * share_ + t.overhead;
  return t;
}

OpTime CostModel::time(const sem::OpCost& cost, DType dtype,
                       const std::vector<std::array<double, 2>>& reads) const {
  double total = 0;
  for (const auto& r : reads) total += r[1];
  if (device_.measured.at_reuse_distance.empty() || !(total > 0)) return time(cost, dtype);
  auto levels = device_.measured.by_reuse_distance();
  for (auto& [d, tables] : levels) {  // a table the level lacks: the inherited tables' one
    const GemmTable* gemm = gemm_table_of(*tables, cost);
    const bool has = gemm ? !gemm->empty() : bandwidth_table_of(*tables, cost) != nullptr;
    if (!has) tables = &device_.measured;
  }
  OpTime t;
  if (cost.op_class == "view" || cost.op_class == "host") return t;
  t.overhead = launch_overhead(cost.op_class) * share_;
  // Each read's share of the op at its distance: the time linear in log2(distance) between the
  // two measured distances around it (4 KiB at least), clamped to the nearest beyond them.
  auto position = [](double d) { return std::log2(std::max(d, 4096.0)); };
  double s = 0;
  for (const auto& [distance, bytes] : reads) {
    if (!(bytes > 0)) continue;
    const double x = position(distance);
    std::size_t hi = 0;
    while (hi < levels.size() && position(levels[hi].first) < x) ++hi;
    double at = 0;
    if (hi == 0 || hi == levels.size()) {
      at = seconds(*levels[hi == 0 ? 0 : hi - 1].second, cost, dtype, t.compute_bound);
    } else {
      const double x0 = position(levels[hi - 1].first), x1 = position(levels[hi].first);
      const double w = x1 > x0 ? (x - x0) / (x1 - x0) : 1;
      at = (1 - w) * seconds(*levels[hi - 1].second, cost, dtype, t.compute_bound) +
           w * seconds(*levels[hi].second, cost, dtype, t.compute_bound);
    }
    s += bytes / total * at;
  }
  t.seconds = s * share_ + t.overhead;
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
