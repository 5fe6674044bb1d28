// The CPU backend's kernels: see backends/cpu/README.md.
#pragma once

namespace spora::cpu {
// Adds the "kernel.cpu" facet (sem::kCpuKernelFacet) to every registry row that has a CPU
// kernel. Call once at start-up, after ops::register_all(); then sem::set_backend(Cpu).
// With the environment variable SPORA_CPU_KERNELS=0 it registers nothing (every primitive
// then runs its reference kernel: a switch to compare the backends end to end).
//
// In-place contract: a kernel may write its result into the storage of an input tensor that
// is uniquely owned (sem::Tensor::unique()), i.e. one the caller passed by move and will not
// read again. Callers that keep using an input must keep a reference to it.
void register_kernels();
}  // namespace spora::cpu
