// SVG timelines of partitioned and pipelined steps, drawn like report.h's data-parallel one: a
// title, a legend, one lane per stream, boxes with a hover title, a time axis.
//
//   spmd_svg_timeline      `spora sim --strategy FILE.json`: two lanes per device, compute
//                          (the compute stream busy) and collectives (the comm stream busy)
//   pipeline_svg_timeline  a "pipeline" strategy: one lane per stage, its forward (F),
//                          recomputation (R) and backward (B) passes numbered by micro-batch,
//                          then the gradient sync and the update
//
// Deterministic: fixed formats, no clock, no addresses. Each covers the first `max_lanes`
// devices or stages (0: all).
#pragma once

#include <string>

#include "sim/cluster_spec.h"
#include "sim/pipeline.h"
#include "sim/spmd_step.h"

namespace spora::sim {

std::string spmd_svg_timeline(const ClusterSpec& cluster, const SpmdSimResult& result,
                              const std::string& title, int max_lanes);

std::string pipeline_svg_timeline(const PipelineSimResult& result, const std::string& title,
                                  int max_lanes);

// The time axis under a timeline `width` pixels wide from x = `left` at height y, for `span`
// seconds: 5 to 10 ticks at a round step, labelled in ms (shared with report.cpp).
std::string svg_time_axis(double left, double width, double y, double span);

}  // namespace spora::sim
