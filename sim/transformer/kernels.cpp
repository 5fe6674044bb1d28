#include "sim/transformer/kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace spora::sim::transformer {

Kernel gemm(std::string name, double m, double n, double k, double batch) {
  Kernel g;
  g.name = std::move(name);
  g.kind = KernelKind::Gemm;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.op_class = "matmul";
  return g;
}

Kernel memory_kernel(std::string name, double bytes, std::string op_class) {
  Kernel k;
  k.name = std::move(name);
  k.bytes = bytes;
  k.op_class = std::move(op_class);
  return k;
}

GemmModel gemm_model_for(const DeviceSpec& device) {
  GemmModel m;
  if (device.model.find("A100") != std::string::npos)
    m = {108, 267.9 / 312,
         "A100-SXM bf16 GEMM 267.9 of 312 TFLOP/s (Bekman, ml-engineering, MAMF table)"};
  if (device.model.find("H100") != std::string::npos)
    m = {132, 792.1 / 989,
         "H100-SXM bf16 GEMM 792.1 of 989 TFLOP/s (Bekman, ml-engineering, MAMF table)"};
  if (auto it = device.kernels.find("gemm_ceiling"); it != device.kernels.end() && m.sms > 0) {
    m.ceiling = it->second;
    m.source = "the spec's device.kernels.gemm_ceiling";
  }
  return m;
}

double gemm_efficiency(const GemmModel& model, double m, double n, double k, double batch) {
  (void)k;
  if (model.sms == 0) return 1;
  static const double kTiles[][2] = {{256, 128}, {128, 256}, {128, 128}};
  double best = 0;
  for (const auto& t : kTiles) {
    const double tiles = batch * std::ceil(m / t[0]) * std::ceil(n / t[1]);
    const double waves = std::ceil(tiles / model.sms);
    best = std::max(best, batch * m * n / (waves * model.sms * t[0] * t[1]));
  }
  return model.ceiling * best;
}

KernelTimer::KernelTimer(const DeviceSpec& device, const std::string& precision, int element_bytes)
    : device_(device), gemm_(gemm_model_for(device)), element_bytes_(element_bytes) {
  auto it = device.peak_flops.find(precision);
  peak_ = it != device.peak_flops.end() ? it->second : device.max_peak_flops();
  if (peak_ <= 0 || device.memory_bandwidth <= 0)
    throw std::invalid_argument("the cluster spec's device needs peak_flops and memory_bandwidth");
}

double KernelTimer::class_efficiency(const std::string& op_class) const {
  auto it = device_.op_classes.find(op_class);
  return it != device_.op_classes.end() ? it->second.efficiency : 1.0;
}

double KernelTimer::class_launch(const std::string& op_class) const {
  auto it = device_.op_classes.find(op_class);
  if (it != device_.op_classes.end() && it->second.launch_overhead)
    return *it->second.launch_overhead;
  return device_.launch_overhead;
}

double KernelTimer::seconds(const Kernel& k) const {
  if (k.kind == KernelKind::Memory) {
    // A measured rate of this kernel (device.kernels) comes before its op class's.
    const auto measured = device_.kernels.find(k.name);
    const double eff =
        measured != device_.kernels.end() ? measured->second : class_efficiency(k.op_class);
    return k.bytes / (device_.memory_bandwidth * eff) + class_launch(k.op_class);
  }
  double eff =
      gemm_.sms ? gemm_efficiency(gemm_, k.m, k.n, k.k, k.batch) : class_efficiency("matmul");
  const double bytes = element_bytes_ * k.batch * (k.m * k.k + k.k * k.n + k.m * k.n);
  return std::max(k.flops() / (peak_ * eff), bytes / device_.memory_bandwidth) +
         class_launch("matmul");
}

double KernelTimer::seconds(const std::vector<Kernel>& ks) const {
  double t = 0;
  for (const Kernel& k : ks) t += seconds(k);
  return t;
}

}  // namespace spora::sim::transformer
