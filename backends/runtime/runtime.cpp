#include "backends/runtime/runtime.h"

#include "backends/runtime/allocator.h"
#include "backends/runtime/data/data.h"

namespace spora::runtime {
void install() {
  sem::set_allocator(&caching_allocator());
  data::register_primitives(sem::Registry::instance());
}
}  // namespace spora::runtime
