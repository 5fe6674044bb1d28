// The CPU backend's kernels (DESIGN.md section 6): see backends/cpu/README.md.
#pragma once

namespace spora::cpu {
// Adds the "kernel.cpu" facet (sem::kCpuKernelFacet) to every registry row that has a CPU
// kernel. Call once at start-up, after ops::register_all(); then sem::set_backend(Cpu).
void register_kernels();
}  // namespace spora::cpu
