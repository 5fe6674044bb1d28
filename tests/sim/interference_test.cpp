// Communication-computation interference (sim/interference.h): the device share a running
// collective holds, against closed forms, then in whole data-parallel and partitioned steps
// (switched on, the step is slower; switched off, bit for bit the model without it), and the
// golden log of the tiny MLP with it.
//
// To regenerate the golden log after an intended change:
//   SPORA_UPDATE_GOLDEN=1 build/bin/test_sim --gtest_filter='Interference.GoldenLog*'
#include "sim/interference.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "autodiff/install.h"
#include "ops/ops.h"
#include "sim/isolation.h"
#include "sim/step_program.h"
#include "sim/train_step.h"

namespace spora::sim {
namespace {

namespace sg4 = simgrid::s4u;

const std::string kData = SPORA_SOURCE_DIR "/tests/sim/data/";

// On device 0: the compute stream runs `work` seconds of ops from time 0; the communication
// stream holds share s from 0 while it runs a memory pass of `copy` seconds (0: none) and then
// sleeps until `hold`. Returns when the compute stream finished.
double compute_end(double s, double work, double copy, double hold) {
  const std::string answer = run_isolated([&] {
    SimEngine engine({});
    const Platform platform = build_platform(load_cluster_spec(kData + "alpha-beta.yaml"));
    double end = 0;
    sg4::Actor::create("compute", platform.devices[0], [&] {
      run_compute(platform, work, s);
      end = sg4::Engine::get_clock();
    });
    sg4::Actor::create("comm", platform.devices[0], [&] {
      const CommShare held(s);
      if (copy > 0) sg4::this_actor::execute(platform.flops_for(sg4::this_actor::get_host(), copy));
      const double rest = hold - sg4::Engine::get_clock();
      if (rest > 0) sg4::this_actor::sleep_for(rest);
    });
    engine.get().run();
    return fmt::format("{:a}", end);
  });
  return std::strtod(answer.c_str(), nullptr);
}

// Compute overlapping a collective for its first 5 ms runs at 1 - s: with s = 0.2, 10 ms of
// ops do 4 ms of work by 5 ms and finish 6 ms later, at 11 ms. Alone, they take 10 ms.
TEST(Interference, ComputeRunsOnWhatTheCollectiveLeaves) {
  EXPECT_NEAR(compute_end(0.2, 10e-3, 0, 5e-3), 11e-3, 1e-12);
  EXPECT_NEAR(compute_end(0, 10e-3, 0, 5e-3), 10e-3, 1e-15);       // switched off
  EXPECT_NEAR(compute_end(0.2, 10e-3, 0, 20e-3), 12.5e-3, 1e-12);  // 10 / 0.8, all overlapped
}

// A collective's copy beside the compute: the two share the 1 - s left equally, (1 - s)/2 each.
// s = 0.2: a 2 ms copy takes 5 ms; the compute has done 2 ms of its 10 by then, and the share
// ends with the copy: the compute finishes 8 ms later, at 13 ms.
TEST(Interference, CopiesAndComputeShareTheRest) {
  EXPECT_NEAR(compute_end(0.2, 10e-3, 2e-3, 0), 13e-3, 1e-12);
}

StepProgram program(const std::string& path, int64_t batch) {
  ops::register_all();
  static bool installed = false;
  if (!installed) autodiff::install(), installed = true;
  parallel::StepOptions o;
  o.batch = batch;
  return build_step_program(path, o);
}

// W2 on a DGX with small buckets, so that all-reduces overlap the backward pass: with the
// share on, the step is slower, but by less than all of it at 1 - s plus the communication
// again (its copies share the device too); off, it is unchanged bit for bit.
TEST(Interference, DataParallelStep) {
  const StepProgram p = program(SPORA_SOURCE_DIR "/benchmarks/sim/w2_mlp.sp", 64);
  ClusterSpec c = load_cluster_spec(SPORA_SOURCE_DIR "/examples/clusters/dgx-a100.yaml");
  TrainSimOptions o;
  o.bucket_bytes = o.first_bucket_bytes = 64 << 10;
  const TrainSimResult off = simulate_train_step(c, p, o);
  c.device.comm_sm_share = 0.18;
  const TrainSimResult on = simulate_train_step(c, p, o);
  std::printf("  W2 on dgx-a100, dp8: step %.3f us without interference, %.3f us with s = 0.18\n",
              off.step_seconds * 1e6, on.step_seconds * 1e6);
  EXPECT_GT(on.step_seconds, off.step_seconds);
  EXPECT_LT(on.step_seconds, off.step_seconds / 0.82 + off.devices[0].communication);
  c.device.comm_sm_share = 0;
  EXPECT_EQ(simulate_train_step(c, p, o).step_seconds, off.step_seconds);
}

// The tiny MLP on 2 nodes x 2 devices (tiny-2x2.yaml) with s = 0.25: the 4-rank golden log of
// train_step_test.cpp, with interference.
TEST(Interference, GoldenLogTinyMlpFourRanks) {
  const StepProgram p = program(kData + "tiny_mlp.sp", 2);
  ClusterSpec c = load_cluster_spec(kData + "tiny-2x2.yaml");
  c.device.comm_sm_share = 0.25;
  TrainSimOptions o;
  o.log = true;
  o.bucket_bytes = o.first_bucket_bytes = 100;
  const TrainSimResult r = simulate_train_step(c, p, o);
  const std::string path = kData + "dp_tiny_mlp_4ranks_interference.log";
  if (std::getenv("SPORA_UPDATE_GOLDEN")) {
    std::ofstream out(path);
    for (const std::string& line : r.log) out << line << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);) expected.push_back(line);
  EXPECT_EQ(r.log, expected);
}

}  // namespace
}  // namespace spora::sim
