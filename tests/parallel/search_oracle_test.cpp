// The analytic oracle against the simulator on a small GPT block (benchmarks/sim/gpt/
// gpt_block.sp at d 128, 4 heads, 64 tokens, 2 sequences) on 4 GPUs of a DGX A100: for
// Megatron's layouts (as the partitioner runs them) and for the dynamic programming's pick,
// the analytic step (search::assignment_of on the cost graph, tools' device model) is within a
// stated tolerance of the simulated one (sim/spmd_step.h), and the pick simulates at least as
// fast as Megatron's layouts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "parallel/search/from_ir.h"
#include "sim/spmd_step.h"
#include "tools/cmd_search.h"

namespace spora::parallel::search {
namespace {

// gpt_block.sp with its `let` sizes replaced, in a file of this process.
std::string small_block() {
  std::ifstream in(SPORA_SOURCE_DIR "/benchmarks/sim/gpt/gpt_block.sp");
  std::stringstream text;
  text << in.rdbuf();
  std::string out, line;
  std::istringstream lines(text.str());
  const std::map<std::string, std::string> sizes = {
      {"batch", "2"}, {"seq", "64"}, {"d", "128"}, {"heads", "4"}};
  while (std::getline(lines, line)) {
    for (const auto& [name, v] : sizes)
      if (line.rfind("let " + name + " = ", 0) == 0) line = "let " + name + " = " + v;
    out += line + "\n";
  }
  const std::string path =
      ::testing::TempDir() + "spora_oracle_gpt_" + std::to_string(::getpid()) + ".sp";
  std::ofstream(path) << out;
  return path;
}

struct Priced {
  double analytic = 0, simulated = 0;
  std::vector<std::string> unmatched;
};

TEST(SearchOracle, AgreesWithTheSimulatorOnASmallGptBlock) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  const std::string path = small_block();
  parallel::StepOptions so;
  so.optimizer = "adam";
  const sim::StepProgram step = sim::build_step_program(path, so);
  std::remove(path.c_str());
  const sim::ClusterSpec cluster =
      sim::load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml");
  const Mesh mesh{{4}, {}};
  std::vector<std::string> names;
  for (const sim::StepParam& p : step.params) names.push_back(p.name);
  const StepCostGraph g =
      build_step_cost_graph(*step.step, names, static_cast<int>(step.params.size()), 2, mesh,
                            tools::search_device_model(cluster, mesh, "adam"));
  auto price = [&](const std::string& json) {
    const Strategy s = parse_strategy(json, *step.step);
    const Partitioned part = partition_training_step(*step.step, step.params.size(), s);
    Priced p;
    p.analytic =
        assignment_of(g, *step.step, part.param_layouts, part.strategies, &p.unmatched).cost;
    p.simulated = sim::simulate_spmd_step(cluster, sim::spmd_program(step, s, "adam")).step_seconds;
    return p;
  };
  const Priced hand = price(R"J({"mesh": [4], "layouts": {"blk.wq": "(1, 4)", "blk.bq": "(4)",
      "blk.wk": "(1, 4)", "blk.bk": "(4)", "blk.wv": "(1, 4)", "blk.bv": "(4)",
      "blk.wo": "(4, 1)", "blk.w1": "(1, 4)", "blk.b1": "(4)", "blk.w2": "(4, 1)"}})J");
  const SearchResult r = search_dp(g.graph, SearchOptions{});
  ASSERT_FALSE(r.top.empty());
  const Priced pick = price(strategy_json(g, r.top[0]));
  EXPECT_TRUE(pick.unmatched.empty()) << pick.unmatched.front();
  EXPECT_NEAR(pick.analytic, r.top[0].cost, 1e-12 + 1e-9 * r.top[0].cost);
  std::printf(
      "Megatron: analytic %.3f us, simulated %.3f us (%zu operators priced as the "
      "closest candidate); pick: analytic %.3f us, simulated %.3f us\n",
      hand.analytic * 1e6, hand.simulated * 1e6, hand.unmatched.size(), pick.analytic * 1e6,
      pick.simulated * 1e6);
  // Measured: Megatron 1310 us analytic against 1285 us simulated, the pick 1296 against 1301.
  // The 5% tolerance: the simulator overlaps collectives with compute where the data allows and
  // runs each all-reduce's reductions as data arrives; the oracle adds every term. Before the
  // oracle priced the update's launches (sim::update_ops) the analytic step was 0.42 of the
  // simulated one here; before the output tuple and fan-out fixes it charged every gradient's
  // all-gather and each reader of a sum its own all-reduce.
  EXPECT_NEAR(hand.analytic / hand.simulated, 1.0, 0.05);
  EXPECT_NEAR(pick.analytic / pick.simulated, 1.0, 0.05);
  EXPECT_LE(pick.analytic, hand.analytic * (1 + 1e-9)) << "dp misses Megatron's plan";
  // Within what the oracle cannot tell apart (1.2% here: the pick is 1% cheaper analytically).
  EXPECT_LE(pick.simulated, hand.simulated * 1.02);
}

}  // namespace
}  // namespace spora::parallel::search
