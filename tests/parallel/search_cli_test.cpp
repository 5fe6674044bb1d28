// `spora search` end to end on tiny_mlp.sp (tools/cmd_search.cpp, compiled into this test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "tools/cmd_search.h"

namespace spora::tools {
namespace {

int search(std::vector<std::string> args) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  CLI::App app;
  CLI::App* s = add_search_subcommand(app);
  args.insert(args.begin(), "search");
  std::vector<std::string> rev(args.rbegin(), args.rend());
  app.parse(rev);
  EXPECT_TRUE(s->parsed());
  return run_search_subcommand();
}

TEST(SearchCli, WritesTheBestStrategy) {
  const std::string out = "/tmp/spora_search_cli_" + std::to_string(getpid()) + ".json";
  const int rc = search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                         SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2",
                         "--algo", "dp", "--top", "2", "--batch", "8", "-o", out});
  EXPECT_EQ(rc, 0);
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(out.c_str());
  EXPECT_NE(text.str().find("\"mesh\": [2]"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"layouts\": {"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"predicted_step_seconds\""), std::string::npos) << text.str();
}

TEST(SearchCli, PropagateKeepsAFixedLayout) {
  const std::string out = "/tmp/spora_search_cli_fix_" + std::to_string(getpid()) + ".json";
  const int rc =
      search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
              SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--algo",
              "propagate", "--batch", "8", "--fix", "net.w1=(1, 2)", "-o", out});
  EXPECT_EQ(rc, 0);
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(out.c_str());
  EXPECT_NE(text.str().find("\"net.w1\": \"(1, 2)\""), std::string::npos) << text.str();
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--algo",
                    "propagate", "--fix", "nothing=(2, 1)"}),
            1);
}

TEST(SearchCli, RecOnARealModel) {
  const std::string out = "/tmp/spora_search_cli_rec_" + std::to_string(getpid()) + ".json";
  // 4M examples of the tiny MLP on 8 devices. Recursive programming is greedy operator by
  // operator: the first matmul sees a gradient all-reduce for a batch cut and nothing for a cut
  // of its 8 outputs, so it goes 8-way model parallel there (dp, which sees the whole graph,
  // splits the batch). The labels follow the loss, which can only cut the batch.
  const int rc = search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                         SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2x4",
                         "--algo", "rec", "--batch", "4194304", "-o", out});
  EXPECT_EQ(rc, 0);
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  std::remove(out.c_str());
  EXPECT_NE(text.str().find("\"mesh\": [8]"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"net.w1\": \"(1, 8)\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"y\": \"(8,)\""), std::string::npos) << text.str();
}

TEST(SearchCli, UnknownAlgorithmIsAnError) {
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--algo",
                    "greedy"}),
            1);
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "64"}),
            1);  // more devices than the spec has
}

// --explain: the best strategy's analytic step, term by term; the operator and edge sums add up
// to the step time of the table's first row, and --explain-rows bounds the terms printed.
TEST(SearchCli, ExplainAddsUpToTheAnalyticStep) {
  ::testing::internal::CaptureStdout();
  const int rc =
      search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
              SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--top", "1",
              "--batch", "8", "--no-simulate", "--explain", "--explain-rows", "3"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  // "1    12.345 us ..." and "... operators and parameters 10.000 us (...), edges 2.345 us ..."
  auto number_after = [&](const std::string& key) {
    const size_t at = out.find(key);
    EXPECT_NE(at, std::string::npos) << key << " in\n" << out;
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + key.size()));
  };
  const double step = number_after("\n1    ");
  const double nodes = number_after("operators and parameters ");
  const double edges = number_after("(compute, update), edges ");
  EXPECT_NE(out.find(" us "), std::string::npos) << out;  // all three in microseconds here
  EXPECT_NEAR(nodes + edges, step, 0.002) << out;
  const size_t terms_at = out.find("the largest terms:\n");
  ASSERT_NE(terms_at, std::string::npos) << out;
  size_t rows = 0;
  for (size_t i = terms_at; (i = out.find("\n  ", i)) != std::string::npos; ++i) ++rows;
  EXPECT_EQ(rows, 3u) << out;
}

// --evaluate prices a strategy file as the partitioner runs it: the file the search wrote (its
// layouts and "ops") prices at the search's own analytic step.
TEST(SearchCli, EvaluatePricesTheWrittenStrategyAtTheSearchsStep) {
  const std::string out = "/tmp/spora_search_cli_eval_" + std::to_string(getpid()) + ".json";
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--top",
                    "1", "--batch", "8", "--no-simulate", "-o", out}),
            0);
  const std::string searched = ::testing::internal::GetCapturedStdout();
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--batch",
                    "8", "--evaluate", out, "--explain-rows", "2"}),
            0);
  const std::string evaluated = ::testing::internal::GetCapturedStdout();
  std::remove(out.c_str());
  // "1    12.345 us ..." in the search's table; the first column under --evaluate's header.
  const size_t row = searched.find("\n1    ");
  ASSERT_NE(row, std::string::npos) << searched;
  const double step = std::stod(searched.substr(row + 6));
  const size_t header = evaluated.find("collectives the partitioner inserts\n");
  ASSERT_NE(header, std::string::npos) << evaluated;
  const double priced = std::stod(evaluated.substr(header + 36));
  EXPECT_NEAR(priced, step, 0.002) << searched << evaluated;
  EXPECT_EQ(evaluated.find("does not enumerate"), std::string::npos) << evaluated;
  EXPECT_NE(evaluated.find("the largest terms:"), std::string::npos) << evaluated;
  // A mesh that is not the file's is a user error.
  EXPECT_EQ(search({SPORA_SOURCE_DIR "/tests/sim/data/tiny_mlp.sp", "--cluster",
                    SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml", "--mesh", "2", "--batch",
                    "8", "--evaluate", SPORA_SOURCE_DIR "/examples/strategies/dp4.json"}),
            1);
}

}  // namespace
}  // namespace spora::tools
