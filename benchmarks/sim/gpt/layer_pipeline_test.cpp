// The study's pipeline with a given layer (layer_pipeline.h) is sim-gpt's step: with sim-gpt's
// own Megatron layer it gives simulate_gpt's step time and memory on Megatron-LM SC'21 table 1's
// five configurations (the study's hand baselines), and a cheaper layer gives a shorter step.
#include "layer_pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "sim/transformer/comm_model.h"

namespace spora::gpt_study {
namespace {

namespace tr = sim::transformer;

struct Row {
  int64_t hidden, layers, heads, gpus, batch, tp, pp;
};
// Narayanan et al. SC'21, table 1, rows 1-5.
const Row kRows[] = {{2304, 24, 24, 32, 512, 1, 1},
                     {3072, 30, 32, 64, 512, 2, 1},
                     {4096, 36, 32, 128, 512, 4, 1},
                     {6144, 40, 48, 256, 1024, 8, 1},
                     {8192, 48, 64, 512, 1536, 8, 2}};

sim::ClusterSpec cluster(int64_t gpus) {
  return tr::scale_cluster(
      sim::load_cluster_spec(SPORA_SOURCE_DIR "/benchmarks/sim/gpt/dgx-a100-64.yaml"), gpus);
}

TEST(LayerPipeline, MegatronLayerGivesSimGptsStep) {
  int checked = 0;
  for (const Row& row : kRows)
    for (int64_t b : {1, 2, 4, 8}) {
      const tr::GptModel m{row.hidden, row.layers, row.heads, 51200, 2048};
      tr::GptParallel p{.global_batch = row.batch, .tp = row.tp, .pp = row.pp};
      p.precision = "f16";
      p.micro_batch = b;
      tr::resolve_parallel(m, p, row.gpus);
      const sim::ClusterSpec c = cluster(row.gpus);
      const tr::GptSimResult want = tr::simulate_gpt(c, m, p);
      const tr::GptSimResult got = simulate_with_layer(c, m, p, megatron_layer(c, m, p));
      EXPECT_NEAR(got.step_seconds, want.step_seconds, 1e-12 * want.step_seconds)
          << row.hidden << " b " << b;
      EXPECT_NEAR(got.memory.total(), want.memory.total(), 1e-6) << row.hidden << " b " << b;
      EXPECT_EQ(got.fits, want.fits) << row.hidden << " b " << b;
      EXPECT_NEAR(got.tflops_per_gpu, want.tflops_per_gpu, 1e-9);
      ++checked;
    }
  EXPECT_EQ(checked, 20);
}

TEST(LayerPipeline, ACheaperLayerShortensTheStepByItsCriticalPathShare) {
  // 7.5B on 128 GPUs, t = 4, p = 1, b = 8: m = 2 micro-batches, 36 layers; each layer runs
  // forward, recomputed forward and backward per micro-batch, so 1 ms off the backward saves
  // 2 x 36 x 1 ms = 72 ms when the gradient all-reduce stays hidden.
  const tr::GptModel m{4096, 36, 32, 51200, 2048};
  tr::GptParallel p{.global_batch = 512, .micro_batch = 8, .tp = 4, .pp = 1};
  p.precision = "f16";
  tr::resolve_parallel(m, p, 128);
  const sim::ClusterSpec c = cluster(128);
  const LayerCost meg = megatron_layer(c, m, p);
  LayerCost faster = meg;
  faster.backward -= 1e-3;
  tr::GptSimOptions no_overlap;
  no_overlap.grad_overlap = false;  // the sync after the passes: the saving shows whole
  const double a = simulate_with_layer(c, m, p, meg, no_overlap).step_seconds;
  const double bfast = simulate_with_layer(c, m, p, faster, no_overlap).step_seconds;
  EXPECT_NEAR(a - bfast, 2 * 36 * 1e-3, 1e-9);
}

TEST(LayerPipeline, RejectsWhatItDoesNotModel) {
  const tr::GptModel m{4096, 36, 32, 51200, 2048};
  tr::GptParallel p{.global_batch = 512, .micro_batch = 8, .tp = 4, .pp = 1};
  p.sequence_parallel = true;
  tr::resolve_parallel(m, p, 128);
  EXPECT_THROW(megatron_layer(cluster(128), m, p), std::invalid_argument);
}

}  // namespace
}  // namespace spora::gpt_study
