#include "backends/runtime/runtime.h"

namespace spora::runtime {
void install() {}
}  // namespace spora::runtime
