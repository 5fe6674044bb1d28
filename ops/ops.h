// ops/: every primitive's row of the registry, one file
// per family:
//
//   elementwise.cpp  unary math and binary arithmetic with NumPy broadcasting
//   compare.cpp      comparisons, where, cast, logical and/or/not
//   reduction.cpp    sum mean max min prod argmax argmin all any
//   matmul.cpp       matmul (NumPy semantics)
//   shape.cpp        transpose/permute, reshape, broadcast_to, concat, stack, slice, gather,
//                    one_hot, squeeze/unsqueeze/expand_dims, flatten, tuple and record ops
//   nn.cpp           softmax, log_softmax, logsumexp, cross_entropy, layer_norm, batch_norm,
//                    dropout
//   conv.cpp         conv2d, max_pool2d, avg_pool2d
//   creation.cpp     zeros, ones, full, arange, normal, uniform (counter-based RNG,
//                    semantics/rng.h)
//   internal.cpp     print, assert, identity, stop_gradient, control-flow name reservations
//   collective.cpp   all_reduce, all_gather, reduce_scatter, all_to_all, shard_slice (SPMD
//                    programs; run over the communicator of backends/comm/collective_context.h)
//   annotation.cpp   shard_hint, stage_boundary (semi-auto parallel annotations: identities)
//
// Link spora_ops into a program and call register_all() once at start-up (it is idempotent).
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace spora::ops {

// Registers every primitive into sem::Registry::instance(); later calls do nothing.
void register_all();

// Where the `print` primitive writes (std::cout by default); tests set a std::ostringstream.
void set_print_stream(std::ostream* os);
std::ostream& print_stream();

// The (label, relative error) pairs recorded by grad_check nodes (spora grad-check).
std::vector<std::pair<std::string, double>>& grad_check_results();

}  // namespace spora::ops
