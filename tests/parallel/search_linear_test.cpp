// Partial sums passed through linear operators (parallel/sharding/dim_rule.h, DimSpec::linear)
// in the step's cost graph: the search may keep Megatron's pending all-reduce past reshapes,
// adds and products to a cheaper place, the partitioner honours the choice (a partial input
// stays pending), and the sharded run equals the single-device one (f64, 1e-10).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "autodiff/install.h"
#include "backends/comm/threads.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/search/from_ir.h"
#include "spmd_common.h"

namespace spora::parallel::search {
namespace {

using parallel::testing::expect_same_run;

distributed::TrainStepOptions options() {
  distributed::TrainStepOptions o = parallel::testing::mlp_options();
  o.file = SPORA_SOURCE_DIR "/tests/parallel/linear_sums.sp";
  return o;
}

// Megatron's row split of both products: each is a partial sum over the 4 devices.
const char* kRowSplit = R"json({"mesh": [4], "layouts": {
    "x": "(1, 4)", "net.w1": "(4, 1)", "net.w2": "(4, 1)"}})json";

StepGraph step() {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  return distributed::build_training_step(options());
}

// The cost graph on 4 devices with slow links, so that where a sum is reduced matters.
StepCostGraph graph(const StepGraph& p) {
  std::vector<std::string> names;
  for (const ir::Node* n : p.step->params) names.push_back(n->name);
  DeviceModel dev;
  dev.comm.axes.assign(1, AxisLink{5e-6, 1e9});
  return build_step_cost_graph(*p.step, names, 3, 0, Mesh{{4}, {}}, dev);
}

distributed::TrainStepResult run_threads(const StepGraph& program, const std::string& strategy) {
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> results(4);
  world.run([&](comm::Communicator& c) {
    results[static_cast<size_t>(c.rank())] =
        distributed::run_training(program, options(), &c, strategy);
  });
  return results[0];
}

TEST(SearchLinear, PendingSumsFlowToACheaperReducePointAndTheRunIsExact) {
  const StepGraph p = step();
  StepCostGraph g = graph(p);
  // The row split as the partitioner's own propagation runs it: it all-reduces each product
  // before the add (its rules take no partial input).
  const Strategy hand = parse_strategy(kRowSplit, *p.step);
  const Partitioned hp = partition_training_step(*p.step, 3, hand);
  std::vector<std::string> unmatched;
  const Assignment as_run = assignment_of(g, *p.step, hp.param_layouts, hp.strategies, &unmatched);
  EXPECT_TRUE(unmatched.empty()) << unmatched.front();
  // The operators searched with the parameters pinned to those layouts (other candidates made
  // prohibitive).
  for (size_t n = 0; n < g.origins.size(); ++n)
    if (g.origins[n].is_param)
      for (size_t c = 0; c < g.graph.nodes[n].cost.size(); ++c)
        if (static_cast<int>(c) != as_run.choice[n]) g.graph.nodes[n].cost[c] += 1e3;
  SearchOptions o;
  const SearchResult r = search_dp(g.graph, o);
  ASSERT_FALSE(r.top.empty());
  const Assignment& best = r.top[0];
  // Some operator of the pick takes a partial input: a pending sum passed through.
  int passed = 0;
  for (size_t n = 0; n < g.origins.size(); ++n) {
    if (g.origins[n].is_param || g.origins[n].fanout) continue;
    const OpStrategy& s = g.origins[n].strategies[static_cast<size_t>(best.choice[n])];
    for (const Layout& l : s.inputs) passed += l.is_partial();
  }
  EXPECT_GT(passed, 0);
  EXPECT_LT(best.cost, as_run.cost) << "the pass-through is cheaper than reducing at once";
  // The partitioner honours the pick: the file's "ops" keep the sums pending, the program has
  // fewer bytes of all-reduce, and the analytic price of its run is the pick's.
  const std::string json = strategy_json(g, best);
  const Strategy picked = parse_strategy(json, *p.step);
  const Partitioned pp = partition_training_step(*p.step, 3, picked);
  unmatched.clear();
  const Assignment again = assignment_of(g, *p.step, pp.param_layouts, pp.strategies, &unmatched);
  EXPECT_TRUE(unmatched.empty()) << unmatched.front();
  EXPECT_NEAR(again.cost, best.cost, 1e-12);
  // The sharded run (4 threads) equals the single-device run.
  EXPECT_LT(std::count_if(pp.graph->nodes.begin(), pp.graph->nodes.end(),
                          [](const ir::Node* n) { return n->is_prim("all_reduce"); }),
            std::count_if(hp.graph->nodes.begin(), hp.graph->nodes.end(),
                          [](const ir::Node* n) { return n->is_prim("all_reduce"); }));
  const distributed::TrainStepResult ref = distributed::run_training(p, options(), nullptr, "");
  expect_same_run(ref, run_threads(p, json), "the row split with the searched operators");
}

}  // namespace
}  // namespace spora::parallel::search
