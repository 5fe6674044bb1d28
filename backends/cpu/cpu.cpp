// The CPU backend's registration (cpu.h): one call per kernel family.
#include "backends/cpu/cpu.h"

#include "backends/cpu/kernels.h"

namespace spora::cpu {

void register_kernels() {
  register_elementwise();
  register_compare();
  register_reduction();
  register_matmul();
  register_nn();
  register_conv();
  register_shape();
  register_creation();
}

}  // namespace spora::cpu
