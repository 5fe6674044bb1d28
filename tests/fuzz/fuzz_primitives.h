// The primitives and derivative rules (registered once): what the targets that parse programs
// or IR need.
#pragma once

#include "autodiff/install.h"
#include "ops/ops.h"

namespace spora::fuzz {

inline void register_primitives() {
  static bool ready = [] {
    ops::register_all();
    autodiff::install();
    return true;
  }();
  (void)ready;
}

}  // namespace spora::fuzz
