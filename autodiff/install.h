// Installs autodiff into the lowering's hooks (semantics/ad_hooks.h). Call once at start-up,
// after ops::register_all().
#pragma once

namespace spora::autodiff {
void install();
}
