// The per-family registration functions register_all() calls (one per ops/*.cpp).
#pragma once

#include <string>

#include "semantics/registry.h"

namespace spora::ops {

void register_elementwise(sem::Registry& r);
void register_compare(sem::Registry& r);
void register_reduction(sem::Registry& r);
void register_matmul(sem::Registry& r);
void register_shape(sem::Registry& r);
void register_nn(sem::Registry& r);
void register_conv(sem::Registry& r);
void register_creation(sem::Registry& r);
void register_internal(sem::Registry& r);
void register_tape(sem::Registry& r);
void register_collective(sem::Registry& r);
void register_annotation(sem::Registry& r);  // shard_hint, stage_boundary (all their facets)
// The sharding rule of an elementwise row (every dimension keeps its layout) on the row `name`.
void set_elementwise_sharding(sem::Registry& r, const std::string& name);

}  // namespace spora::ops
