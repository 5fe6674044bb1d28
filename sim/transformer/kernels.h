// The GPU kernels of a GPT step and their device times.
//
// A kernel is a GEMM (m x k times k x n, `batch` of them: the attention's batched products) or a
// memory-bound kernel (a fused elementwise kernel, a layer norm, a softmax, a copy) with the
// bytes it reads and writes. Times on a device (sim/cluster_spec.h's DeviceSpec):
//
//   GEMM           max(flops / (peak[precision] x gemm_efficiency(m, n, k, batch)),
//                      bytes / memory_bandwidth) + launch_overhead
//   memory-bound   bytes / (memory_bandwidth x efficiency[op class]) + launch_overhead[op class]
//                  (a kernel with a measured rate in the spec's device.kernels, by its name,
//                  takes that rate instead of its class's efficiency)
//
// GEMM efficiency depends on the shape (NVIDIA, "Matrix Multiplication Background User's
// Guide", docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication):
//   1. cuBLAS computes the output in thread-block tiles; with Mt x Nt tiles a problem has
//      T = batch x ceil(m / Mt) x ceil(n / Nt) of them (tile quantisation: the padded tiles
//      compute nothing useful);
//   2. the tiles run in waves of one tile per SM: ceil(T / SMs) waves (wave quantisation: the
//      last wave may leave SMs idle);
//   3. so the useful share is  batch m n / (ceil(T / SMs) x SMs x Mt x Nt),  taken at the best
//      of the tile shapes 256x128, 128x256 and 128x128 (what the guide's A100 examples use);
//   4. times the best a GEMM achieves on the device (the ceiling): A100-SXM 267.9 of 312
//      TFLOP/s bf16 = 0.859, H100-SXM 792.1 of 989 = 0.801 (S. Bekman, "Machine Learning
//      Engineering", compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
//      comparison table", mamf-finder.py, CUDA 12.1).
// The model is chosen by the spec's device.model (A100: 108 SMs, H100: 132 SMs); the spec's
// device.kernels.gemm_ceiling replaces the ceiling of step 4. Any other device uses its op class
// `matmul` efficiency with no shape effect.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cluster_spec.h"

namespace spora::sim::transformer {

enum class KernelKind { Gemm, Memory };

struct Kernel {
  std::string name;  // "qkv", "attn-scores", "softmax", "bias-gelu", ...
  KernelKind kind = KernelKind::Memory;
  double m = 0, n = 0, k = 0, batch = 1;  // GEMMs
  double bytes = 0;                       // memory-bound kernels (GEMMs: computed)
  std::string op_class = "elementwise";   // memory-bound kernels: elementwise | norm | copy
  double flops() const { return kind == KernelKind::Gemm ? 2 * m * n * k * batch : 0; }
};

Kernel gemm(std::string name, double m, double n, double k, double batch = 1);
Kernel memory_kernel(std::string name, double bytes, std::string op_class);

struct GemmModel {
  int sms = 0;         // 0: no shape model, the op class efficiency alone
  double ceiling = 1;  // best fraction of peak a GEMM reaches
  std::string source;  // where the ceiling comes from
};
GemmModel gemm_model_for(const DeviceSpec& device);

// The fraction of peak of one GEMM under `model` (steps 1-4 above).
double gemm_efficiency(const GemmModel& model, double m, double n, double k, double batch);

class KernelTimer {
 public:
  KernelTimer(const DeviceSpec& device, const std::string& precision, int element_bytes);
  double seconds(const Kernel& k) const;
  double seconds(const std::vector<Kernel>& ks) const;
  const GemmModel& gemm() const { return gemm_; }
  double peak_flops() const { return peak_; }

 private:
  DeviceSpec device_;
  GemmModel gemm_;
  double peak_ = 0;
  int element_bytes_ = 2;
  double class_efficiency(const std::string& op_class) const;
  double class_launch(const std::string& op_class) const;
};

}  // namespace spora::sim::transformer
