// `spora sim-coll`: the nccl-tests table, the JSON form, the log, and usage errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/cmd_sim.h"

namespace spora::tools {
namespace {

struct Output {
  int status;
  std::string out, err;
};

Output run(std::vector<std::string> args) {
  args.insert(args.begin(), "spora");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int status = run_sim_coll_command(static_cast<int>(argv.size()), argv.data());
  std::string out = testing::internal::GetCapturedStdout();
  return {status, out, testing::internal::GetCapturedStderr()};
}

const std::string kA100 = SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml";

TEST(SimColl, TableLikeSporaColl) {
  const Output o = run({"sim-coll", "--cluster", kA100, "--op", "all-reduce", "--algo", "ring",
                        "--sizes", "8:1G", "--factor", "8"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_NE(o.out.find("# spora sim-coll: all-reduce, algorithm ring, 8 ranks on dgx-a100: 1 "
                       "node x 8 NVIDIA A100-SXM4-80GB"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("#       size         count      type   redop    root     time   algbw"
                       "   busbw  #wrong"),
            std::string::npos)
      << o.out;
  // 8, 64, 512, ... 1G: ten sizes, one row each, #wrong always "-".
  int rows = 0;
  for (std::size_t at = 0; (at = o.out.find("     float     sum      -1", at)) != std::string::npos;
       ++at)
    ++rows;
  EXPECT_EQ(rows, 10) << o.out;
  EXPECT_NE(o.out.find("  1073741824     268435456     float     sum      -1"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("# Avg bus bandwidth    : "), std::string::npos);
}

TEST(SimColl, Json) {
  const Output o = run({"sim-coll", "--cluster", kA100, "--sizes", "1M", "--algo", "tree", "--json",
                        "--ranks", "4", "--dtype", "bf16"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out.rfind("{\"collective\": \"all-reduce\", \"algorithm\": \"tree\", \"backend\": "
                        "\"sim\", \"cluster\": \"dgx-a100\", \"ranks\": 4, \"dtype\": \"bf16\"",
                        0),
            0u)
      << o.out;
  EXPECT_NE(o.out.find("{\"size_bytes\": 1048576, \"count\": 524288, \"time_us\": "),
            std::string::npos)
      << o.out;
}

TEST(SimColl, OtherCollectivesAndLog) {
  const Output o =
      run({"sim-coll", "--cluster", SPORA_SOURCE_DIR "/tests/sim/data/two-cores-shared.yaml", "--op",
           "all-gather", "--algo", "bruck", "--sizes", "64", "--log", "-"});
  ASSERT_EQ(o.status, 0) << o.err;
  // 32-byte blocks: a copy is 64 B of memory traffic at 22.5 GB/s, 2.8 ns.
  EXPECT_NE(o.out.find("# size 64 B (8 elements)\n[0.000000003] rank0@node0-cpu0: copy 32 B "
                       "(step 0, from 0.000000000)\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("          64             8     float    none      -1"), std::string::npos)
      << o.out;
}

TEST(SimColl, UsageErrors) {
  Output o = run({"sim-coll", "--sizes", "1K"});
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err,
            "spora sim-coll: error: --cluster is required (e.g. "
            "examples/clusters/dgx-a100.yaml)\n");
  o = run({"sim-coll", "--cluster", "missing.yaml"});
  EXPECT_EQ(o.err, "spora sim-coll: error: missing.yaml: cannot open the file\n");
  o = run({"sim-coll", "--cluster", kA100, "--ranks", "16"});
  EXPECT_EQ(o.err, "spora sim-coll: error: --ranks 16 but dgx-a100 has 8 devices\n");
  o = run({"sim-coll", "--cluster", kA100, "--algo", "bruck"});
  EXPECT_EQ(o.err,
            "spora sim-coll: error: --algo bruck does not implement all-reduce (it "
            "implements: all-gather, all-to-all)\n");
  o = run({"sim-coll", "--cluster", kA100, "--algo", "native"});
  EXPECT_EQ(o.status, 1);
}

// Across nodes the ring runs one channel per NIC by default; --channels 1 is one ring through
// one NIC per node (3 nodes of 8 A100s with 4 HDR NICs, papers/nccl_tests/).
TEST(SimColl, RingChannelsAcrossNodes) {
  const std::string cluster = SPORA_SOURCE_DIR "/examples/clusters/a100-3x4nic.yaml";
  auto busbw = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"sim-coll", "--cluster", cluster, "--algo",
                                  "ring",     "--sizes",   "1G",    "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = run(args);
    EXPECT_EQ(o.status, 0) << o.err;
    const std::size_t at = o.out.find("\"busbw_gbps\": ");
    return std::stod(o.out.substr(at + 14));
  };
  const double four = busbw({}), one = busbw({"--channels", "1"});
  EXPECT_GT(four, 85);  // 4 NICs x 23.5 GB/s, less latencies and the first copy
  EXPECT_LT(four, 94);
  EXPECT_GT(one, 22);  // one NIC
  EXPECT_LT(one, 23.5);
  const Output json = run({"sim-coll", "--cluster", cluster, "--sizes", "1M", "--json"});
  EXPECT_NE(json.out.find("\"channels\": 4"), std::string::npos) << json.out;
  const Output bad = run({"sim-coll", "--cluster", cluster, "--algo", "tree", "--channels", "2"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--channels 2: channels apply to --algo ring only"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace spora::tools
