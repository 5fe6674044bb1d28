#include "semantics/ad_hooks.h"

namespace spora::sem {

AutodiffHooks& autodiff_hooks() {
  static AutodiffHooks hooks;
  return hooks;
}

}  // namespace spora::sem
