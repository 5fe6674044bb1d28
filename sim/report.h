// What `spora sim` writes about a simulated training step (sim/train_step.h): the text report,
// a Chrome trace and an SVG timeline. All three are deterministic (fixed formats, no clock,
// no addresses), so the same simulation gives the same bytes.
//
// Chrome trace (opens in Perfetto, ui.perfetto.dev, or chrome://tracing): one process per
// device (`pid` = rank, named "rank0@node0-gpu0"), thread 0 the compute stream, thread 1 the
// communication stream; every op with a non-zero time is a complete event (`ph: "X"`, times in
// microseconds) named after its primitive, category forward / backward / update, with its
// FLOPs and bytes in `args`; every bucket gives a copy-in, an all-reduce and a copy-out event.
//
// SVG timeline: two lanes per device (compute: forward, backward, update; communication:
// copies and all-reduces per bucket), a time axis, a legend; hovering a box shows what it is.
// Consecutive ops of one phase are drawn as one box.
//
// Both cover the first `max_ranks` devices (0: all of them); in data parallelism every rank runs
// the same program, and the devices differ only in how their communication went.
#pragma once

#include <string>

#include "sim/cluster_spec.h"
#include "sim/step_program.h"
#include "sim/train_step.h"

namespace spora::sim {

std::string chrome_trace(const ClusterSpec& cluster, const StepProgram& program,
                         const TrainSimResult& result, int max_ranks);

std::string svg_timeline(const ClusterSpec& cluster, const StepProgram& program,
                         const TrainSimResult& result, int max_ranks);

// "rank3@node0-gpu3"
std::string rank_label(const ClusterSpec& cluster, int rank);

}  // namespace spora::sim
