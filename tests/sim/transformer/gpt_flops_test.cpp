// The Megatron-LM paper's counts (Narayanan et al., SC'21, section 5.1 and table 1) against
// sim/transformer: the parameter formula gives table 1's model sizes, the FLOP formula its
// value for a known configuration, and the kernels of layer_ops.h add up to the same FLOPs.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/transformer/gpt_config.h"
#include "sim/transformer/layer_ops.h"

namespace spora::sim::transformer {
namespace {

struct Table1Row {
  const char* name;
  double billions;  // the paper's "number of parameters (billion)"
  int64_t heads, hidden, layers;
};
// Table 1, rows 1-5 (V = 51,200, s = 2,048).
const Table1Row kRows[] = {{"1.7B", 1.7, 24, 2304, 24},
                           {"3.6B", 3.6, 32, 3072, 30},
                           {"7.5B", 7.5, 32, 4096, 36},
                           {"18.4B", 18.4, 48, 6144, 40},
                           {"39.1B", 39.1, 64, 8192, 48}};

TEST(GptFlops, ParameterCountGivesTable1Sizes) {
  for (const Table1Row& r : kRows) {
    const GptModel m{r.hidden, r.layers, r.heads, 51200, 2048};
    EXPECT_NEAR(parameter_count(m) / 1e9, r.billions, 0.05) << r.name;
  }
}

TEST(GptFlops, FormulaForAKnownConfiguration) {
  // 1.7B, B = 512: 96 B s l h^2 = 96 x 512 x 2048 x 24 x 2304^2 = 1.2823e16 (computed by hand:
  // 96 x 512 = 49152; x 2048 = 100663296; x 24 = 2415919104; x 5308416 = 1.28247e16), times
  // 1 + 2048 / 13824 + 51200 / 884736 = 1.206019.
  const GptModel m{2304, 24, 24, 51200, 2048};
  const double base = 96.0 * 512 * 2048 * 24 * 2304.0 * 2304.0;
  EXPECT_NEAR(base, 1.282470e16, 1e11);
  EXPECT_NEAR(megatron_model_flops(m, 512, Recompute::Full), base * 1.2060185, 1e12);
  EXPECT_NEAR(megatron_model_flops(m, 512, Recompute::Full) / 1e15, 15.4667, 1e-3);
  // Without recomputation: 72 B s l h^2 (1 + s / (6h) + V / (12 l h)).
  EXPECT_NEAR(megatron_model_flops(m, 512, Recompute::None),
              72.0 * 512 * 2048 * 24 * 2304.0 * 2304.0 * (1 + 2048.0 / 13824 + 51200.0 / 663552),
              1e12);
  // The paper's 137 TFLOP/s per GPU on 32 GPUs is 4.38 PFLOP/s aggregate (table 1: 4.4).
  EXPECT_NEAR(137e12 * 32 / 1e15, 4.4, 0.05);
}

double sum_flops(const PassOps& p) {
  double f = 0;
  for (const Kernel& k : p.kernels) f += k.flops();
  return f;
}

TEST(GptFlops, KernelsAddUpToThePapersCount) {
  for (const Table1Row& r : kRows) {
    const GptModel m{r.hidden, r.layers, r.heads, 51200, 2048};
    GptParallel p;
    p.global_batch = 8;
    const LayerShape x = layer_shape(m, p, 8);
    const double layers = static_cast<double>(m.layers);
    // Forward, recomputed forward and backward of every layer; the output layer 3 times.
    const double full = layers * (2 * sum_flops(layer_forward(x)) + sum_flops(layer_backward(x))) +
                        sum_flops(head_forward(x)) + sum_flops(head_backward(x));
    EXPECT_NEAR(full / megatron_model_flops(m, 8, Recompute::Full), 1.0, 1e-12) << r.name;
    const double none = layers * (sum_flops(layer_forward(x)) + sum_flops(layer_backward(x))) +
                        sum_flops(head_forward(x)) + sum_flops(head_backward(x));
    EXPECT_NEAR(none / megatron_model_flops(m, 8, Recompute::None), 1.0, 1e-12) << r.name;
  }
}

TEST(GptFlops, TensorParallelismSplitsTheLayerFlops) {
  const GptModel m{4096, 36, 32, 51200, 2048};
  GptParallel p1, p4;
  p1.global_batch = p4.global_batch = 8;
  p4.tp = 4;
  EXPECT_NEAR(sum_flops(layer_forward(layer_shape(m, p1, 2))) /
                  sum_flops(layer_forward(layer_shape(m, p4, 2))),
              4.0, 1e-12);
  // Four all-reduces of T h E per layer and micro-batch: two forward, two backward.
  const LayerShape x = layer_shape(m, p4, 2);
  EXPECT_EQ(layer_forward(x).collectives.size(), 2u);
  EXPECT_EQ(layer_backward(x).collectives.size(), 2u);
  EXPECT_DOUBLE_EQ(layer_forward(x).collectives[0].bytes, 2.0 * 2048 * 4096 * 2);
}

}  // namespace
}  // namespace spora::sim::transformer
