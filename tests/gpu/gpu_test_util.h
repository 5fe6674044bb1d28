// Shared by the GPU tests (tests/gpu/): they run where a CUDA device can run kernels and skip
// cleanly elsewhere (CI has no GPU).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/cuda.h"

// Skips the test (with the probe's reason) where no CUDA device can run kernels; otherwise
// installs the CUDA backend.
#define REQUIRE_GPU()                                                \
  do {                                                               \
    std::string why_;                                                \
    if (!::spora::cuda::cuda_available(&why_)) GTEST_SKIP() << why_; \
    ::spora::cuda::install();                                        \
  } while (0)
