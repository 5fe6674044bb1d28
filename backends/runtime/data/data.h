// The data, checkpoint and training-report primitives of Spora (backends/runtime/data/README.md).
// Their rows live here, with their kernels, rather than in ops/: every one of them needs this
// folder's code (zlib, threads, files) even in its shape rule, which reads file headers at
// compile time. runtime::install() registers them.
#pragma once

#include <ostream>

#include "semantics/registry.h"

namespace spora::runtime::data {

// Adds the rows (fashion_mnist, batches, load_idx, save_idx, load_npy, save_npy, save, load,
// report, log_epoch, save_curves) to the registry; later calls do nothing.
void register_primitives(sem::Registry& r);

// Where log_epoch writes its line (std::cout unless set; tests capture it).
void set_output_stream(std::ostream* os);

}  // namespace spora::runtime::data
