// The CPU backend's registration (cpu.h): one call per kernel family.
#include "backends/cpu/cpu.h"

#include <cstdlib>
#include <cstring>

#include "backends/cpu/blas.h"
#include "backends/cpu/kernels.h"

namespace spora::cpu {

void register_kernels() {
  // SPORA_CPU_KERNELS=0 leaves every row on its reference kernel (to compare the two end to end).
  if (const char* env = std::getenv("SPORA_CPU_KERNELS"); env && std::strcmp(env, "0") == 0) return;
  configure_blas();
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
