// `spora run --profile FILE` (backends/runtime/profile.h): the Chrome trace of a graph-mode run
// of the W2 training step holds a complete event per node run, the fused groups by their
// members, each event inside the run and located in the source; the summary ranks them on
// stderr. In eager mode, the ops as they ran.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "tests/driver/run_spora.h"

namespace {

TEST(Profile, ChromeTraceOfAGraphModeRun) {
  const fs::path out = fs::temp_directory_path() / ("spora_profile_" + std::to_string(::getpid()) +
                                                    "_" + std::to_string(std::rand()) + ".json");
  const std::string program =
      std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/w2_mlp_train.sp";
  const RunResult r = run_spora("run " + program + " --profile " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("profile: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fused[matmul+add+relu]"), std::string::npos) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(read_file(out));
  fs::remove(out);
  const auto& events = trace.at("traceEvents");
  ASSERT_GT(events.size(), 5u);
  std::set<std::string> names;
  double end = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    EXPECT_GE(e.at("ts").get<double>(), 0.0);
    end = std::max(end, e.at("ts").get<double>() + e.at("dur").get<double>());
    names.insert(e.at("name").get<std::string>());
    const std::string source = e.at("args").value("source", "");
    if (!source.empty()) {
      EXPECT_NE(source.find("w2_mlp_train.sp:"), std::string::npos) << source;
    }
  }
  EXPECT_TRUE(names.count("fused[matmul+add+relu]")) << trace.dump();
  EXPECT_TRUE(names.count("uniform"));
  EXPECT_GT(end, 0.0);
}

// Eager mode runs the program while it lowers it: every op the step runs, forward and
// backward, is an event as it ran, located in the source, and the summary ranks them.
TEST(Profile, ChromeTraceOfAnEagerModeRun) {
  const fs::path out =
      fs::temp_directory_path() / ("spora_profile_eager_" + std::to_string(::getpid()) + ".json");
  const std::string program =
      std::string(SPORA_SOURCE_DIR) + "/benchmarks/workloads/w2_mlp_train.sp";
  const RunResult r = run_spora("run --mode eager " + program + " --profile " + out.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("profile: "), std::string::npos) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(read_file(out));
  fs::remove(out);
  std::multiset<std::string> names;
  size_t located = 0;
  for (const auto& e : trace.at("traceEvents")) {
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    names.insert(e.at("name").get<std::string>());
    const std::string source = e.at("args").value("source", "");
    located += source.find("w2_mlp_train.sp:") != std::string::npos;
  }
  // W2's step op by op: three forward products and five in the backward pass (no first-layer
  // input gradient), the loss, the ReLUs' masks; nothing fused.
  EXPECT_EQ(names.count("matmul"), 8u) << trace.dump();
  EXPECT_EQ(names.count("cross_entropy"), 1u);
  EXPECT_EQ(names.count("relu"), 2u);
  EXPECT_EQ(names.count("where"), 2u);
  for (const std::string& n : names) EXPECT_EQ(n.find("fused["), std::string::npos) << n;
  EXPECT_GT(located, names.size() / 2);
}

}  // namespace
