// The runtime of the backends: see backends/runtime/README.md.
#pragma once

namespace spora::runtime {
// Installs the runtime into the process: the caching allocator behind tensor storage, the
// data / checkpoint / report primitives. Call once at start-up, after ops::register_all().
void install();
}  // namespace spora::runtime
