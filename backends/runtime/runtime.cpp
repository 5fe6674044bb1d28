#include "backends/runtime/runtime.h"

#include "backends/runtime/allocator.h"

namespace spora::runtime {
void install() { sem::set_allocator(&caching_allocator()); }
}  // namespace spora::runtime
