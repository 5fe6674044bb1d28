// `spora calibrate`'s machine model (benchmarks/calibrate/calibrate.h): the least-squares fit of
// the collectives measured in place, and the spec it writes read back by the simulator's reader.
#include "benchmarks/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include "sim/cluster_spec.h"

namespace spora::calibrate {
namespace {

// Points made by the model itself: overhead 40 us, latency 1 us, 5 GB/s.
std::vector<CollectivePoint> exact_points() {
  std::vector<CollectivePoint> points;
  for (const char* p : {"all_reduce", "reduce_scatter", "all_gather"})
    for (double bytes : {512.0, 32768.0, 1048576.0})
      points.push_back({p, bytes, 40e-6 + ring_steps(p) * (1e-6 + bytes / 2 / 5e9)});
  return points;
}

TEST(Calibrate, FitRecoversTheRingModel) {
  const LinkFit f = fit_collectives(exact_points(), 1e-6);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.bandwidth, 5e9, 1);
  EXPECT_NEAR(f.overhead, 40e-6, 1e-12);
}

TEST(Calibrate, FitFailsWithoutAPositiveSlope) {
  EXPECT_FALSE(fit_collectives({{"all_reduce", 512, 1e-4}, {"all_reduce", 1e6, 5e-5}}, 0).ok);
  EXPECT_FALSE(fit_collectives({{"all_reduce", 512, 1e-4}}, 0).ok);
}

TEST(Calibrate, TheSpecRoundTripsThroughTheSimulatorsReader) {
  MachineModel m;
  m.devices = 4;
  m.memory_bytes = 8e9;
  m.peak_f32 = 120e9, m.peak_f64 = 40e9, m.memory_bandwidth = 20e9;
  m.interpreter_overhead = 0.5e-6;
  m.launch_overhead = {{"matmul", 0.75e-6}, {"elementwise", 0.5e-6}};
  m.tables.cores = 2;
  std::vector<std::array<double, 4>> grid;
  for (double a : {4.0, 64.0})
    for (double b : {4.0, 64.0})
      for (double c : {4.0, 64.0}) grid.push_back({a, b, c, a * b * c * 1e5});
  m.tables.gemm = sim::GemmTable::from_rows(grid);
  m.tables.conv = sim::GemmTable::from_rows(grid);
  m.tables.bandwidth["copy"] = sim::RateTable::from_rows({{1024, 5e9}, {4194304, 1.5e10}});
  m.have_mpi = true;
  m.latency = 1e-6;
  m.collectives = exact_points();
  m.link = fit_collectives(m.collectives, m.latency);

  const sim::ClusterSpec s = sim::parse_cluster_spec(machine_model_yaml(m), "this-machine.yaml");
  EXPECT_EQ(s.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(s.device.peak_flops.at("f32"), 120e9);
  EXPECT_DOUBLE_EQ(s.device.memory_bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(s.device.launch_overhead, 0.5e-6);
  EXPECT_DOUBLE_EQ(*s.device.op_classes.at("matmul").launch_overhead, 0.75e-6);
  EXPECT_EQ(s.device.measured.cores, 2);
  EXPECT_EQ(s.device.measured.gemm.rows(), m.tables.gemm.rows());
  EXPECT_EQ(s.device.measured.conv.rows(), m.tables.conv.rows());
  EXPECT_EQ(s.device.measured.bandwidth.at("copy").rate, m.tables.bandwidth.at("copy").rate);
  EXPECT_FALSE(s.overlap_collectives);
  EXPECT_DOUBLE_EQ(s.interconnect.bandwidth, 5e9);
  EXPECT_DOUBLE_EQ(s.interconnect.latency, 1e-6);
  EXPECT_DOUBLE_EQ(s.collective_overhead, 40e-6);
}

}  // namespace
}  // namespace spora::calibrate
