// The cost graph of a real training step (tests/sim/data/tiny_mlp.sp) on a device mesh.
#include <gtest/gtest.h>

#include <algorithm>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/search/from_ir.h"
#include "sim/step_program.h"

namespace spora::parallel::search {
namespace {

const std::string kTiny = SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp";

sim::StepProgram tiny(int64_t batch) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions o;
  o.batch = batch;
  return sim::build_step_program(kTiny, o);
}

StepCostGraph build(const sim::StepProgram& p, const Mesh& mesh) {
  std::vector<std::string> names;
  for (const sim::StepParam& sp : p.params) names.push_back(sp.name);
  DeviceModel dev;
  dev.comm.axes.assign(mesh.ndim(), AxisLink{5e-6, 10e9});
  return build_step_cost_graph(*p.step, names, static_cast<int>(p.params.size()), 0, mesh, dev);
}

TEST(SearchFromIr, LayoutsOfATensor) {
  const Mesh m{{2, 4}, {}};
  // [8, 6]: axis 0 (2) splits either dim, axis 1 (4) only dim 0 (6 % 4 != 0); a dimension is
  // split by one axis at most, so no (8, 1).
  const std::vector<Layout> ls = enumerate_layouts({8, 6}, m);
  std::vector<std::string> text;
  for (const Layout& l : ls) text.push_back(l.partition_string(m));
  EXPECT_EQ(text, (std::vector<std::string>{"(1, 1)", "(2, 1)", "(1, 2)", "(4, 1)", "(4, 2)"}));
}

TEST(SearchFromIr, TinyMlpGraph) {
  const sim::StepProgram p = tiny(8);
  const Mesh mesh{{2}, {}};
  const StepCostGraph g = build(p, mesh);
  EXPECT_EQ(validate(g.graph), "");
  // Every trainable parameter is a node with every layout of its shape: w1 f32[4, 8] on 2
  // devices is (1, 1), (2, 1), (1, 2).
  int params = 0;
  for (size_t i = 0; i < g.origins.size(); ++i) {
    const auto& o = g.origins[i];
    if (!o.is_param || !o.trainable) continue;
    ++params;
    if (o.node == p.step->params[0]) {  // w1
      EXPECT_EQ(g.graph.nodes[i].labels, (std::vector<std::string>{"(1, 1)", "(2, 1)", "(1, 2)"}));
      // Memory: the shard times weight + gradient (sgd keeps no state).
      EXPECT_DOUBLE_EQ(g.graph.nodes[i].memory[0], 4 * 8 * 4 * 2);
      EXPECT_DOUBLE_EQ(g.graph.nodes[i].memory[1], 4 * 8 * 4 * 2 / 2);
    }
  }
  EXPECT_EQ(params, 4);
  // Each gradient reaches its parameter: an edge into every trainable parameter node with a
  // choice to make (b2 f32[3] cannot be split over 2 devices).
  for (size_t i = 0; i < g.origins.size(); ++i) {
    if (!g.origins[i].trainable || g.graph.strategies(static_cast<int>(i)) == 1) continue;
    const bool has_in =
        std::any_of(g.graph.edges.begin(), g.graph.edges.end(),
                    [&](const CostGraph::Edge& e) { return e.to == static_cast<int>(i); });
    EXPECT_TRUE(has_in) << g.origins[i].name;
  }
  // A replicated layout everywhere is always valid and costs no redistribution: dp never does
  // worse than it.
  std::vector<int> replicated(g.graph.nodes.size(), 0);
  const Assignment rep = evaluate(g.graph, replicated);
  const SearchResult dp = search_dp(g.graph, SearchOptions{});
  ASSERT_FALSE(dp.top.empty());
  EXPECT_LE(dp.top[0].cost, rep.cost + 1e-15);
  const std::string json = strategy_json(g, dp.top[0]);
  EXPECT_NE(json.find("\"mesh\": [2]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"" + p.params[0].name + "\": \"("), std::string::npos) << json;
}

TEST(SearchFromIr, BigBatchGoesDataParallel) {
  ops::register_all();
  const sem::Primitive* mm = sem::Registry::instance().find("matmul");
  if (!mm || !sharding_rule(*mm)) GTEST_SKIP() << "the rows have no sharding facet";
  // 4M examples: every activation is 64-128 MB, 64-128 us at 1 TB/s, against weights of a few
  // hundred bytes whose gradient all-reduce costs its latency (10 us): split the batch.
  const sim::StepProgram p = tiny(int64_t{1} << 22);
  const Mesh mesh{{2}, {}};
  const StepCostGraph g = build(p, mesh);
  const SearchResult dp = search_dp(g.graph, SearchOptions{});
  const std::vector<std::string> lines = parameter_layouts(g, dp.top[0]);
  std::string all;
  for (const std::string& l : lines) all += l + "; ";
  SCOPED_TRACE(all + dp.notes);
  // Data parallelism: the weights whole, the batch split.
  // The weights stay whole or are sharded on their first dimension (ZeRO-style: reduce-scatter
  // the gradient + all-gather the weight costs what an all-reduce does, on less memory).
  EXPECT_TRUE(std::find(lines.begin(), lines.end(), p.params[0].name + " (1, 1)") != lines.end() ||
              std::find(lines.begin(), lines.end(), p.params[0].name + " (2, 1)") != lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "x (2, 1)"), lines.end());  // x: the batch
  EXPECT_NE(std::find(lines.begin(), lines.end(), "y (2,)"), lines.end());    // y: the batch
}

// dp's pick costs what evaluate says, and no more than all-replicated or sharding
// propagation's on the same graph.
void expect_no_worse_than_the_starts(const StepCostGraph& g, const Assignment& a) {
  EXPECT_NEAR(evaluate(g.graph, a.choice).cost, a.cost, 1e-12);
  const std::vector<int> replicated(g.graph.nodes.size(), 0);
  EXPECT_LE(a.cost, evaluate(g.graph, replicated).cost);
  const SearchResult prop = search_propagate(g.graph, SearchOptions{});
  EXPECT_LE(a.cost, prop.top[0].cost * (1 + 1e-9));
}

// The W4 encoder block (benchmarks/sim/w4_block.sp) at batch 8.
sim::StepProgram w4_block() {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions so;
  so.batch = 8;
  return sim::build_step_program(SPORA_SOURCE_DIR "/benchmarks/sim/w4_block.sp", so);
}

// The W4 encoder block on a 2x2 mesh: a step graph that is not series-parallel, with up to 57
// candidates a node. dp finishes inside its byte budget (its cells and records: a few MB) and its
// pick costs no more than all-replicated or sharding propagation's on the same graph.
TEST(SearchFromIr, W4BlockOnTwoByTwo) {
  const sim::StepProgram p = w4_block();
  const StepCostGraph g = build(p, Mesh{{2, 2}, {}});
  EXPECT_EQ(validate(g.graph), "");
  SearchOptions o;
  o.max_search_bytes = size_t{64} << 20;
  const SearchResult dp = search_dp(g.graph, o);
  ASSERT_EQ(dp.top.size(), 1u);
  EXPECT_GT(dp.search_bytes, 0u);
  EXPECT_LT(dp.search_bytes, size_t{64} << 20);
  expect_no_worse_than_the_starts(g, dp.top[0]);
  // Under a budget it cannot meet, it stops with the limit in its message.
  o.max_search_bytes = 1 << 16;
  EXPECT_THROW(search_dp(g.graph, o), SearchLimitError);
}

// The same block on a 3-D mesh (2x2x2: up to 360 candidates a node, 141 nodes over the cap):
// dp searches the capped graph inside a few tens of MB and its pick, on the whole graph, costs
// no more than all-replicated or sharding propagation's.
TEST(SearchFromIr, W4BlockOnTwoByTwoByTwo) {
  const sim::StepProgram p = w4_block();
  const StepCostGraph g = build(p, Mesh{{2, 2, 2}, {}});
  int most = 0;
  for (const CostGraph::Node& nd : g.graph.nodes)
    most = std::max(most, static_cast<int>(nd.cost.size()));
  EXPECT_GT(most, kDpMaxCandidates);
  SearchOptions o;
  o.max_search_bytes = size_t{128} << 20;
  const SearchResult dp = search_dp(g.graph, o);
  ASSERT_EQ(dp.top.size(), 1u);
  EXPECT_FALSE(dp.exact);
  EXPECT_NE(dp.notes.find("searched on their 64 best"), std::string::npos) << dp.notes;
  EXPECT_LT(dp.search_bytes, size_t{128} << 20);
  expect_no_worse_than_the_starts(g, dp.top[0]);
  const std::string json = strategy_json(g, dp.top[0]);
  EXPECT_NE(json.find("\"mesh\": [2, 2, 2]"), std::string::npos) << json;
}

}  // namespace
}  // namespace spora::parallel::search
