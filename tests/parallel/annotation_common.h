// Shared by the annotation tests (tests/parallel/annotation_*_test.cpp): one-time set-up.
#pragma once

#include <gtest/gtest.h>

#include <mutex>

#include "autodiff/install.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "semantics/pipeline.h"

namespace spora::parallel::testing {

inline void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
  });
}

}  // namespace spora::parallel::testing
