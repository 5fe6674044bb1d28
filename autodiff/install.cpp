#include "autodiff/install.h"

#include "autodiff/forward.h"
#include "autodiff/reverse.h"
#include "semantics/ad_hooks.h"

namespace spora::autodiff {

void install() {
  auto& hooks = sem::autodiff_hooks();
  hooks.reverse = reverse_region;
  hooks.forward = forward_region;
}

}  // namespace spora::autodiff
