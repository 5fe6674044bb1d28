// A GPT training step as `spora sim-gpt` runs Megatron-LM (sim/transformer/gpt_sim.h), with the
// Transformer layer's cost given from outside: the study (gpt_study.cpp) puts the strategy
// search's layer into the same pipeline, gradient synchronisation, optimizer and memory model
// that price Megatron's.
//
//   LayerCost meg = megatron_layer(cluster, model, par);         // sim-gpt's own layer
//   GptSimResult r = simulate_with_layer(cluster, model, par, meg);
//   // == simulate_gpt(cluster, model, par) (tests/...: layer_pipeline_test.cpp)
//
// Everything but the layer is sim-gpt's: the embedding and the vocabulary-parallel output layer
// (sim/transformer/layer_ops.h), 1F1B (pipeline_schedule.h), the p2p with Megatron's scatter /
// gather, the data-parallel gradient all-reduce per layer beside the last backward pass, the tied
// embedding's all-reduce, fused Adam, and the memory per GPU with the CUDA context, NCCL buffers
// and fragmentation counted in `fits`.
//
// Supported: the configurations of the study, full recomputation, one model chunk per stage,
// no ZeRO, no sequence parallelism (sim-gpt itself for those); anything else throws
// std::invalid_argument.
#pragma once

#include <cstdint>

#include "sim/cluster_spec.h"
#include "sim/transformer/gpt_sim.h"

namespace spora::gpt_study {

// One Transformer layer, one micro-batch, on one device of its tensor-parallel group.
struct LayerCost {
  double forward = 0;   // seconds, collectives included
  double backward = 0;  // seconds, without the recomputed forward
  // of which the exposed tensor-parallel collectives (for reports)
  double forward_comm = 0, backward_comm = 0;
  double local_params = 0;   // parameters held per device
  double stored_bytes = 0;   // kept per micro-batch in flight until its backward pass
  double working_bytes = 0;  // live while its backward pass runs
};

// sim-gpt's layer: layer_forward / layer_recompute / layer_backward of sim/transformer priced
// with its kernel and communication models.
LayerCost megatron_layer(const sim::ClusterSpec& cluster, const sim::transformer::GptModel& model,
                         const sim::transformer::GptParallel& par,
                         const sim::transformer::GptSimOptions& options = {});

// The step of `par` (resolved, micro_batch set) with every layer costing `layer`.
sim::transformer::GptSimResult simulate_with_layer(
    const sim::ClusterSpec& cluster, const sim::transformer::GptModel& model,
    const sim::transformer::GptParallel& par, const LayerCost& layer,
    const sim::transformer::GptSimOptions& options = {});

}  // namespace spora::gpt_study
