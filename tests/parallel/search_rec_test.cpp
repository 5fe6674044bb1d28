// Recursive programming: valid partitions at every device count, the data- vs model-parallel
// choice following the sizes, memory reporting.
#include <gtest/gtest.h>

#include "parallel/search/rec.h"

namespace spora::parallel::search {
namespace {

void expect_valid(const RecGraph& g, const RecResult& r, int64_t devices) {
  ASSERT_EQ(r.cuts.size(), g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    int64_t total = 1;
    for (size_t d = 0; d < g.ops[i].dims.size(); ++d) {
      const int64_t c = r.cuts[i][d];
      EXPECT_GE(c, 1);
      EXPECT_EQ(c & (c - 1), 0) << g.ops[i].name << " dim " << d << " cut " << c;
      EXPECT_EQ(g.ops[i].dims[d] % c, 0) << g.ops[i].name << " dim " << d;
      total *= c;
    }
    EXPECT_EQ(total, devices) << g.ops[i].name;  // these sizes always leave room to cut
  }
}

TEST(SearchRec, ValidFrom8To4096Devices) {
  const RecGraph g = transformer_rec_graph(2, 64, 512, 1024);
  for (int64_t devices = 8; devices <= 4096; devices *= 2) {
    RecOptions o;
    o.devices = devices;
    const RecResult r = search_rec(g, o);
    expect_valid(g, r, devices);
    EXPECT_GT(r.cost, 0);
  }
}

TEST(SearchRec, SmallModelBigBatchIsDataParallel) {
  // 16 MB of weights a layer against 2 GB of activations: every op cuts the batch.
  const RecGraph g = transformer_rec_graph(2, 4096, 128, 256);
  RecOptions o;
  o.devices = 16;
  const RecResult r = search_rec(g, o);
  for (size_t i = 0; i < g.ops.size(); ++i) EXPECT_EQ(r.cuts[i][0], 16) << g.ops[i].name;
  EXPECT_EQ(r.params_layout[0], "layer0.ln1.gamma (1)");
}

TEST(SearchRec, BigModelSmallBatchSplitsTheWeights) {
  // h = 8192: a 805 MB QKV weight against 100 MB of its output: gradients would cost far more
  // than moving activations, so the matmuls cut their weight dims (Megatron-style).
  const RecGraph g = transformer_rec_graph(1, 8, 128, 8192);
  RecOptions o;
  o.devices = 8;
  const RecResult r = search_rec(g, o);
  expect_valid(g, r, 8);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].dims.size() != 4) continue;  // the matmuls
    EXPECT_EQ(r.cuts[i][0] * r.cuts[i][1], 1) << g.ops[i].name << ": batch/sequence cut";
    EXPECT_EQ(r.cuts[i][2] * r.cuts[i][3], 8) << g.ops[i].name;
  }
}

TEST(SearchRec, MemoryLimitReported) {
  const RecGraph g = transformer_rec_graph(1, 8, 128, 8192);
  RecOptions o;
  o.devices = 8;
  o.memory_limit = 1e6;  // 1 MB
  const RecResult r = search_rec(g, o);
  EXPECT_FALSE(r.feasible);
  EXPECT_GT(r.memory, 1e8);  // the 12 h^2 weights alone are 3.2 GB over 8 devices, three copies
}

TEST(SearchRec, NotAPowerOfTwo) {
  RecOptions o;
  o.devices = 12;
  try {
    search_rec(transformer_rec_graph(1, 8, 8, 8), o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "recursive programming needs a power-of-two device count, got 12");
  }
}

}  // namespace
}  // namespace spora::parallel::search
