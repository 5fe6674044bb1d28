// `spora calibrate`'s machine model (benchmarks/calibrate/calibrate.h): the least-squares fit of
// the collectives measured in place, and the spec it writes read back by the simulator's reader.
#include "benchmarks/calibrate/calibrate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "benchmarks/calibrate/measure.h"
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

// A model of 4 devices on 2 cores with its scalars set, no tables.
MachineModel four_devices() {
  MachineModel m;
  m.devices = 4;
  m.memory_bytes = 8e9;
  m.peak_f32 = 120e9, m.peak_f64 = 40e9, m.memory_bandwidth = 20e9;
  m.interpreter_overhead = 0.5e-6;
  m.tables.cores = 2;
  return m;
}

TEST(Calibrate, TheSpecRoundTripsThroughTheSimulatorsReader) {
  MachineModel m = four_devices();
  m.launch_overhead = {{"matmul", 0.75e-6}, {"elementwise", 0.5e-6}};
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
  m.collectives.push_back({"all_reduce", 4096, 2e-4, 4});
  m.tables.collectives = collective_tables(m.collectives);

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
  // Every measured point is in the collective tables, by primitive and rank count.
  for (const CollectivePoint& p : m.collectives) {
    const sim::CollectiveTable* t = s.device.measured.collective(p.primitive, p.ranks);
    ASSERT_NE(t, nullptr) << p.primitive << " " << p.ranks;
    EXPECT_NEAR(t->seconds_at(p.bytes), p.seconds, 1e-12 * p.seconds) << p.primitive;
  }
  EXPECT_EQ(s.device.measured.collective("all_reduce", 4)->bytes.size(), 1u);
}

// The tables at other reuse distances come back by their distance, the inherited ones at theirs.
TEST(Calibrate, TablesAtEveryReuseDistanceRoundTrip) {
  MachineModel m = four_devices();
  m.tables.reuse_distance = 4194304;
  m.tables.bandwidth["elementwise"] = sim::RateTable::from_rows({{1024, 2e10}, {1 << 24, 1e10}});
  m.tables.at_reuse_distance[0].bandwidth["elementwise"] =
      sim::RateTable::from_rows({{1024, 4e10}, {1 << 24, 1e10}});
  m.tables.at_reuse_distance[67108864].bandwidth["elementwise"] =
      sim::RateTable::from_rows({{1024, 1e10}, {1 << 24, 0.5e10}});
  const std::string yaml = machine_model_yaml(m);
  EXPECT_NE(yaml.find("reuse distance 4 MiB"), std::string::npos) << yaml;
  const sim::MeasuredTables back = sim::parse_cluster_spec(yaml, "m.yaml").device.measured;
  EXPECT_EQ(back.reuse_distance, 4194304);
  ASSERT_EQ(back.at_reuse_distance.size(), 2u);
  EXPECT_EQ(back.bandwidth.at("elementwise").rate, (std::vector<double>{2e10, 1e10}));
  EXPECT_EQ(back.at_reuse_distance.at(0).bandwidth.at("elementwise").rate,
            (std::vector<double>{4e10, 1e10}));
  EXPECT_EQ(back.at_reuse_distance.at(67108864).bandwidth.at("elementwise").rate,
            (std::vector<double>{1e10, 0.5e10}));
}

// A kernel's inputs are taken in turn from distance / input bytes copies, 1 to kMaxCopies; by
// default twice the core's private cache.
TEST(Calibrate, CopiesPutTheInputsAtTheirReuseDistance) {
  EXPECT_EQ(copies_for(0, 4096), 1u);
  EXPECT_EQ(copies_for(1 << 20, 4096), 256u);
  EXPECT_EQ(copies_for(1 << 20, 1 << 22), 1u);
  EXPECT_EQ(copies_for(1e12, 8), kMaxCopies);
  EXPECT_EQ(copies_for(-1, 1024), 2 * private_cache_bytes() / 1024);
}

// P is the core's L2 (or L1, whichever is larger) as sysfs gives it, else as CPUID gives it (a
// virtual machine without sysfs cache folders), never the 2 MiB fallback where either knows.
TEST(Calibrate, PrivateCacheIsTheCoresLevel2) {
  std::ifstream sysfs_l2("/sys/devices/system/cpu/cpu0/cache/index2/size");
  std::string text;
  const long cpuid_l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (sysfs_l2 >> text) {
    size_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    EXPECT_GE(private_cache_bytes(), v);
  } else if (cpuid_l2 > 0) {
    EXPECT_EQ(private_cache_bytes(), static_cast<size_t>(cpuid_l2));
  } else {
    GTEST_SKIP() << "neither sysfs nor CPUID gives this machine's L2 size";
  }
}

// L is the largest cache sysfs lists for the first CPU (the last level), at least the private
// one, or 0 where sysfs lists none.
TEST(Calibrate, LastLevelCacheIsTheLargestInSysfs) {
  size_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string text;
    if (!(f >> text) || text.empty()) continue;
    size_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    largest = std::max(largest, v);
  }
  EXPECT_EQ(last_level_cache_bytes(), largest);
  if (largest > 0) {
    EXPECT_GE(last_level_cache_bytes(), private_cache_bytes());
  }
}

// The oversubscription table from the two loops (share.cpp): per grain of the 4 KiB sweep, the
// 4-rank loop less what the simulator charges without the table (2 x grain + the ring with its
// copies shared); n = 0 is grain 0 whatever its compute part read; the 1 MiB checks are not rows.
TEST(Calibrate, OversubscribedRowsAreTheLoopBeyondTheFairShareAndTheRing) {
  LinkFit link;
  link.bandwidth = 5e9, link.overhead = 40e-6, link.ok = true;
  const double latency = 1e-6;
  // All-reduce of 4 KiB over 4 ranks at share 2: 2 x 40 us + 6 x (1 us + 2 x 1024 B / 5 GB/s).
  const double ring = 80e-6 + 6 * (1e-6 + 2 * 1024 / 5e9);
  EXPECT_NEAR(simulated_all_reduce(4096, 4, 2, latency, link), ring, 1e-15);
  EXPECT_DOUBLE_EQ(simulated_all_reduce(4096, 1, 2, latency, link), 0);
  std::vector<SharePoint> base, over;
  double extra = 1e-4;
  for (const auto& [n, bytes] : share_cases()) {
    const double grain = 10e-6 * n;
    base.push_back({2, n, static_cast<double>(bytes), grain + 1e-9, grain + 50e-6});
    over.push_back({4, n, static_cast<double>(bytes), grain / 2,
                    2 * (grain + 1e-9) + simulated_all_reduce(bytes, 4, 2, latency, link) + extra});
    extra += 1e-4;
  }
  const auto rows = oversubscribed_rows(base, over, 2, latency, link);
  ASSERT_EQ(rows.size(), 8u);  // the sweep at 4 KiB
  EXPECT_DOUBLE_EQ(rows[0][0], 0);
  EXPECT_NEAR(rows[0][1], 1e-4 + 2e-9, 1e-15);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_DOUBLE_EQ(rows[i][0], 10e-6 * share_cases()[i].first + 1e-9);
    EXPECT_NEAR(rows[i][1], 1e-4 * static_cast<double>(i + 1), 1e-12) << i;
  }
  // With the measured all_reduce over 4 ranks, the rows are the loop beyond it instead.
  const sim::CollectiveTable measured = sim::CollectiveTable::from_rows({{4096, 3e-4}});
  const auto table_rows = oversubscribed_rows(base, over, 2, latency, link, &measured);
  ASSERT_EQ(table_rows.size(), 8u);
  for (std::size_t i = 0; i < rows.size(); ++i)
    EXPECT_NEAR(table_rows[i][1], rows[i][1] + ring - 3e-4, 1e-12) << i;
  over.pop_back();
  over.erase(over.begin() + 3);  // a grain the 4-rank run lacks
  EXPECT_TRUE(oversubscribed_rows(base, over, 2, latency, link).empty());
}

}  // namespace
}  // namespace spora::calibrate
