// Measured tables (sim/measured_tables.h) and the cost model that interpolates them
// (sim/cost_model.h): interpolation against hand-computed values, the YAML block round-trips
// through the spec reader, errors name the field, and the cost model tells a skinny GEMM from a
// square one of the same FLOPs.
#include "sim/measured_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ops/ops.h"
#include "semantics/cost.h"
#include "semantics/registry.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"

namespace spora::sim {
namespace {

using sem::CostRule;
using sem::kCostFacet;
using sem::OpCost;

// A 2 x 2 x 2 grid: m, n, k in {16, 256}; rate = 1e9 x (1 + [m=256] + 2 [n=256] + 4 [k=256]).
GemmTable small_grid() {
  std::vector<std::array<double, 4>> rows;
  for (double m : {16.0, 256.0})
    for (double n : {16.0, 256.0})
      for (double k : {16.0, 256.0})
        rows.push_back({m, n, k, 1e9 * (1 + (m > 16) + 2 * (n > 16) + 4 * (k > 16))});
  return GemmTable::from_rows(rows);
}

// The registry's cost rule of `name` on `in`, with its attributes' defaults and `extra`.
OpCost registry_cost(const std::string& name, const std::vector<sem::TypeP>& in,
                     const std::vector<std::pair<std::string, sem::Attr>>& extra = {}) {
  ops::register_all();
  const sem::Primitive& p = *sem::Registry::instance().find(name);
  sem::Attrs attrs;
  for (const sem::ParamSpec& s : p.params)
    if (s.kind == sem::ParamSpec::Kind::Attr && s.default_value)
      attrs.set(s.name, *s.default_value);
  for (const auto& [key, value] : extra) attrs.set(key, value);
  return (*p.facet<CostRule>(kCostFacet))(in, p.infer(in, attrs), attrs);
}

TEST(MeasuredTables, GemmTableIsExactAtItsPointsAndTrilinearInLog2Between) {
  const GemmTable t = small_grid();
  EXPECT_DOUBLE_EQ(t.rate_at(16, 16, 16), 1e9);
  EXPECT_DOUBLE_EQ(t.rate_at(256, 256, 256), 8e9);
  EXPECT_DOUBLE_EQ(t.rate_at(256, 16, 256), 6e9);
  // m = 64 is halfway between 16 and 256 in log2 (4, 6, 8): rate 1e9 (1 + 0.5).
  EXPECT_DOUBLE_EQ(t.rate_at(64, 16, 16), 1.5e9);
  // m = 32: weight log2(32/16) / log2(256/16) = 1/4; n = 128: 3/4; k = 16: 0.
  EXPECT_DOUBLE_EQ(t.rate_at(32, 128, 16), 1e9 * (1 + 0.25 + 2 * 0.75));
  // Beyond the grid: clamped to the edge.
  EXPECT_DOUBLE_EQ(t.rate_at(1, 1, 1), 1e9);
  EXPECT_DOUBLE_EQ(t.rate_at(4096, 4096, 4096), 8e9);
  EXPECT_DOUBLE_EQ(t.rate_at(4096, 1, 64), 1e9 * (1 + 1 + 4 * 0.5));
}

TEST(MeasuredTables, RateTableIsPiecewiseLinearInLog2Bytes) {
  const RateTable t = RateTable::from_rows({{4096, 40e9}, {1024, 10e9}, {65536, 20e9}});
  EXPECT_DOUBLE_EQ(t.rate_at(1024), 10e9);
  EXPECT_DOUBLE_EQ(t.rate_at(2048), 25e9);   // halfway from 1 KiB to 4 KiB
  EXPECT_DOUBLE_EQ(t.rate_at(16384), 30e9);  // halfway from 4 KiB to 64 KiB
  EXPECT_DOUBLE_EQ(t.rate_at(10), 10e9);     // clamped
  EXPECT_DOUBLE_EQ(t.rate_at(1e9), 20e9);
}

TEST(MeasuredTables, RejectsAnIncompleteGridAndRepeatedPoints) {
  std::vector<std::array<double, 4>> rows = small_grid().rows();
  rows.pop_back();
  EXPECT_THROW(GemmTable::from_rows(rows), std::invalid_argument);
  rows.push_back(rows.front());
  EXPECT_THROW(GemmTable::from_rows(rows), std::invalid_argument);
}

const char* kSpec = R"(name: m
nodes: 1
devices_per_node: 4
device:
  kind: cpu
  peak_flops: {f32: 100 GFLOP/s}
  memory: 1 GB
  memory_bandwidth: 10 GB/s
)";

// The error a spec with this `device.measured` block gets ("no error" if none).
std::string spec_error(const std::string& measured) {
  try {
    parse_cluster_spec(std::string(kSpec) + measured +
                           "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n",
                       "m.yaml");
  } catch (const ClusterSpecError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

ClusterSpec spec_with(const MeasuredTables& t) {
  const std::string text = std::string(kSpec) + measured_tables_yaml(t, 2) +
                           "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n";
  return parse_cluster_spec(text, "m.yaml");
}

// The seconds the cost model charges `cost` (f32) under a spec whose only tables are bandwidth
// tables, each one rate (bytes/s) at every size, named by op class or by OpCost::table.
double seconds_under(const OpCost& cost, const std::map<std::string, double>& rates) {
  MeasuredTables t;
  for (const auto& [name, rate] : rates)
    t.bandwidth[name] = RateTable::from_rows({{1024, rate}, {1 << 24, rate}});
  const ClusterSpec spec = spec_with(t);
  return CostModel(spec.device).time(cost, DType::f32).seconds;
}

TEST(MeasuredTables, RoundTripThroughTheSpecReader) {
  MeasuredTables t;
  t.cores = 2;
  t.gemm = small_grid();
  t.conv = small_grid();
  t.bandwidth["elementwise"] = RateTable::from_rows({{1024, 1.5e10}, {1048576, 2.25e10}});
  const ClusterSpec spec = spec_with(t);
  const MeasuredTables& back = spec.device.measured;
  EXPECT_EQ(back.cores, 2);
  EXPECT_EQ(back.gemm.rows(), t.gemm.rows());
  EXPECT_EQ(back.conv.rows(), t.conv.rows());
  ASSERT_EQ(back.bandwidth.count("elementwise"), 1u);
  EXPECT_EQ(back.bandwidth.at("elementwise").bytes, t.bandwidth.at("elementwise").bytes);
  EXPECT_EQ(back.bandwidth.at("elementwise").rate, t.bandwidth.at("elementwise").rate);
}

TEST(MeasuredTables, ErrorsNameTheField) {
  const std::string bad = std::string(kSpec) +
                          "  measured:\n    gemm:\n      - [16, 16, 16]\n"
                          "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n";
  try {
    parse_cluster_spec(bad, "m.yaml");
    FAIL() << "no error";
  } catch (const ClusterSpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.yaml: device.measured.gemm[0]: expected a row of 4 numbers");
  }
}

OpCost matmul_cost(int64_t m, int64_t n, int64_t k) {
  ops::register_all();
  const sem::Primitive& p = *sem::Registry::instance().find("matmul");
  const std::vector<sem::TypeP> in{sem::Type::tensor(DType::f32, {m, k}),
                                   sem::Type::tensor(DType::f32, {k, n})};
  return (*p.facet<CostRule>(kCostFacet))(in, p.infer(in, {}), {});
}

TEST(MeasuredTables, CostModelTellsASkinnyGemmFromASquareOneOfEqualFlops) {
  MeasuredTables t;
  t.gemm = small_grid();
  const ClusterSpec spec = spec_with(t);
  const CostModel model(spec.device);
  // 16 x 16 x 4096 (k beyond the grid: k = 256's rates) and 64 x 64 x 256: 2 x 1,048,576 FLOPs.
  const OpCost skinny = matmul_cost(16, 16, 4096), square = matmul_cost(64, 64, 256);
  ASSERT_EQ(skinny.flops, square.flops);
  EXPECT_EQ(skinny.gemm, (std::array<double, 3>{16, 16, 4096}));
  // skinny: rate(16, 16, 256) = 5e9; square: m, n halfway: 1e9 (1 + 0.5 + 1 + 4) = 6.5e9.
  EXPECT_DOUBLE_EQ(model.time(skinny, DType::f32).seconds, skinny.flops / 5e9);
  EXPECT_DOUBLE_EQ(model.time(square, DType::f32).seconds, square.flops / 6.5e9);
}

TEST(MeasuredTables, CostModelUsesTheBandwidthTableAndTimeSharing) {
  MeasuredTables t;
  t.cores = 2;
  t.bandwidth["elementwise"] = RateTable::from_rows({{1024, 1e10}, {4096, 4e10}});
  const ClusterSpec spec = spec_with(t);
  OpCost add{0, 2048, "elementwise"};
  EXPECT_DOUBLE_EQ(CostModel(spec.device).time(add, DType::f32).seconds, 2048 / 2.5e10);
  // A class without a table: the roofline at 10 GB/s, efficiency 1.
  OpCost sum{0, 2048, "reduction"};
  EXPECT_DOUBLE_EQ(CostModel(spec.device).time(sum, DType::f32).seconds, 2048 / 1e10);
  // Four ranks on two cores take turns: every op twice as long; two ranks do not.
  EXPECT_DOUBLE_EQ(CostModel(spec.device, "", 4).time(add, DType::f32).seconds, 2 * 2048 / 2.5e10);
  EXPECT_DOUBLE_EQ(CostModel(spec.device, "", 2).time(add, DType::f32).seconds, 2048 / 2.5e10);
  EXPECT_EQ(ranks_on_node(spec, 8), 4);
}

// The GEMM a matmul charges is the one the CPU kernel runs (backends/cpu/matmul.cpp): a batched
// left operand times one matrix is one GEMM with the batches stacked as rows; two batched
// operands are one GEMM per batch element.
TEST(MeasuredTables, MatmulChargesTheGemmTheKernelRuns) {
  ops::register_all();
  const sem::Primitive& p = *sem::Registry::instance().find("matmul");
  const auto cost = [&](std::vector<int64_t> a, std::vector<int64_t> b) {
    const std::vector<sem::TypeP> in{sem::Type::tensor(DType::f32, a),
                                     sem::Type::tensor(DType::f32, b)};
    return (*p.facet<CostRule>(kCostFacet))(in, p.infer(in, {}), {});
  };
  const OpCost stacked = cost({8, 128, 256}, {256, 512});
  EXPECT_EQ(stacked.gemm, (std::array<double, 3>{1024, 512, 256}));
  EXPECT_DOUBLE_EQ(stacked.flops, 2.0 * 1024 * 512 * 256);
  const OpCost batched = cost({8, 128, 256}, {8, 256, 512});
  EXPECT_EQ(batched.gemm, (std::array<double, 3>{128, 512, 256}));
  EXPECT_DOUBLE_EQ(batched.flops, 2.0 * 1024 * 512 * 256);
  EXPECT_EQ(cost({2, 3, 64, 32}, {32, 16}).gemm, (std::array<double, 3>{384, 16, 32}));
  EXPECT_EQ(cost({64, 32}, {2, 32, 16}).gemm, (std::array<double, 3>{64, 16, 32}));
}

// Collective tables: linear in log2(bytes) between points, the smallest's time below them, the
// last two points' bandwidth beyond them; round trip through the spec reader; errors name the
// field.
TEST(MeasuredTables, CollectiveTableInterpolatesAndExtrapolatesByBandwidth) {
  const CollectiveTable t = CollectiveTable::from_rows({{1024, 3e-5}, {64, 1e-5}, {4096, 5e-5}});
  EXPECT_DOUBLE_EQ(t.seconds_at(64), 1e-5);
  EXPECT_DOUBLE_EQ(t.seconds_at(8), 1e-5);
  EXPECT_DOUBLE_EQ(t.seconds_at(256), 2e-5);  // log2: halfway from 64 to 1024
  EXPECT_DOUBLE_EQ(t.seconds_at(2048), 4e-5);
  // Beyond: (5e-5 - 3e-5) / 3072 B per byte.
  EXPECT_DOUBLE_EQ(t.seconds_at(4096 + 3072), 7e-5);
  EXPECT_THROW(CollectiveTable::from_rows({{64, 1e-5}, {64, 2e-5}}), std::invalid_argument);
  EXPECT_THROW(CollectiveTable::from_rows({{64, 0}}), std::invalid_argument);

  MeasuredTables m;
  m.collectives["all_reduce"][2] = t;
  m.collectives["all_gather"][4] = CollectiveTable::from_rows({{512, 2e-5}});
  m.collectives["all_gather_contiguous"][4] = CollectiveTable::from_rows({{512, 1e-5}});
  const std::string yaml = std::string(kSpec) + measured_tables_yaml(m, 2) +
                           "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n";
  const ClusterSpec back = parse_cluster_spec(yaml, "m.yaml");
  const MeasuredTables& b = back.device.measured;
  ASSERT_NE(b.collective("all_reduce", 2), nullptr);
  EXPECT_EQ(b.collective("all_reduce", 2)->bytes, t.bytes);
  EXPECT_EQ(b.collective("all_reduce", 2)->seconds, t.seconds);
  EXPECT_DOUBLE_EQ(b.collective("all_gather", 4)->seconds_at(512), 2e-5);
  EXPECT_EQ(b.collective("all_reduce", 4), nullptr);
  EXPECT_EQ(b.collective("reduce_scatter", 2), nullptr);
  // Pieces that are blocks of the tensor take the contiguous table where there is one.
  EXPECT_DOUBLE_EQ(b.collective("all_gather", 4, true)->seconds_at(512), 1e-5);
  EXPECT_DOUBLE_EQ(b.collective("all_gather", 4, false)->seconds_at(512), 2e-5);
  EXPECT_EQ(b.collective("all_reduce", 2, true), b.collective("all_reduce", 2));
  EXPECT_EQ(b.collective("reduce_scatter", 2, true), nullptr);

  const auto error = [](const std::string& block) {
    return spec_error("  measured:\n    collectives:\n" + block);
  };
  EXPECT_EQ(error("      broadcast: [[2, 64, 1e-5]]\n"),
            "m.yaml: device.measured.collectives.broadcast: unknown primitive (known: all_reduce, "
            "reduce_scatter, all_gather; the last two also with _contiguous; any of them also with "
            "_b2b)");
  for (const char* name : {"all_reduce", "all_gather_contiguous", "reduce_scatter_b2b",
                           "all_gather_contiguous_b2b", "all_reduce_b2b"})
    EXPECT_TRUE(known_collective_table(name)) << name;
  for (const char* name : {"all_reduce_contiguous", "all_gather_b2b_contiguous", "_b2b",
                           "broadcast_b2b", "all_gather_contiguous_contiguous"})
    EXPECT_FALSE(known_collective_table(name)) << name;
  // The most specific table measured: contiguous and back to back, contiguous, back to back.
  MeasuredTables look;
  for (const char* name : {"all_gather", "all_gather_b2b", "all_gather_contiguous"})
    look.collectives[name][2] = CollectiveTable::from_rows({{64, 1e-5}});
  EXPECT_EQ(look.collective("all_gather", 2, true, true),
            look.collective("all_gather_contiguous", 2));
  EXPECT_EQ(look.collective("all_gather", 2, false, true), look.collective("all_gather_b2b", 2));
  look.collectives["all_gather_contiguous_b2b"][2] = CollectiveTable::from_rows({{64, 1e-5}});
  EXPECT_EQ(look.collective("all_gather", 2, true, true),
            look.collective("all_gather_contiguous_b2b", 2));
  EXPECT_EQ(look.collective("all_gather", 2, false, false), look.collective("all_gather", 2));
  EXPECT_EQ(error("      all_reduce: [[1, 64, 1e-5]]\n"),
            "m.yaml: device.measured.collectives.all_reduce: expected ranks to be an integer of at "
            "least 2, got 1");
  EXPECT_EQ(error("      all_reduce: [[2, 64, 1e-5], [2, 64, 2e-5]]\n"),
            "m.yaml: device.measured.collectives.all_reduce: 2 ranks: 64 bytes is listed twice");
  EXPECT_EQ(error("      all_reduce: [[2, 64]]\n"),
            "m.yaml: device.measured.collectives.all_reduce[0]: expected a row of 3 numbers");
}

TEST(MeasuredTables, ConvolutionsCarryTheirPerImageGemm) {
  const OpCost c = registry_cost("conv2d", {sem::Type::tensor(DType::f32, {4, 6, 14, 14}),
                                            sem::Type::tensor(DType::f32, {16, 6, 5, 5})});
  // Og = 16 output channels, P = 10 x 10 output pixels, K = 6 x 5 x 5.
  EXPECT_EQ(c.gemm, (std::array<double, 3>{16, 100, 150}));
  EXPECT_DOUBLE_EQ(c.flops, 4 * 2 * 16 * 100 * 150);
}

// conv2d's derivative helpers take their own tables where the spec has them (their kernels run
// the same GEMMs beside other copies: col2im, the weight gradient's accumulation), the
// forward's where it does not (a spec written before they were measured).
TEST(MeasuredTables, ConvolutionGradientsTakeTheirOwnTables) {
  const sem::TypeP x = sem::Type::tensor(DType::f32, {4, 6, 14, 14}),
                   w = sem::Type::tensor(DType::f32, {16, 6, 5, 5}),
                   dy = sem::Type::tensor(DType::f32, {4, 16, 10, 10});
  const OpCost forward = registry_cost("conv2d", {x, w});
  const OpCost in_grad =
      registry_cost("conv2d_input_grad", {dy, w}, {{"shape", sem::Attr{sem::Shape{4, 6, 14, 14}}}});
  const OpCost w_grad =
      registry_cost("conv2d_weight_grad", {x, dy}, {{"shape", sem::Attr{sem::Shape{16, 6, 5, 5}}}});
  EXPECT_EQ(in_grad.table, "conv_input_grad");
  EXPECT_EQ(w_grad.table, "conv_weight_grad");
  EXPECT_EQ(in_grad.gemm, (std::array<double, 3>{150, 100, 16}));  // [K, Og] x [Og, P]
  EXPECT_EQ(w_grad.gemm, (std::array<double, 3>{16, 150, 100}));   // [Og, P] x [P, K]
  auto uniform = [](double rate) {
    std::vector<std::array<double, 4>> rows;
    for (const auto& r : small_grid().rows()) rows.push_back({r[0], r[1], r[2], rate});
    return GemmTable::from_rows(rows);
  };
  MeasuredTables t;
  t.conv = uniform(1e9);
  const ClusterSpec old_spec = spec_with(t);
  const CostModel old_model(old_spec.device);
  EXPECT_DOUBLE_EQ(old_model.time(in_grad, DType::f32).seconds, in_grad.flops / 1e9);
  EXPECT_DOUBLE_EQ(old_model.time(w_grad, DType::f32).seconds, w_grad.flops / 1e9);
  t.conv_input_grad = uniform(2e9);
  t.conv_weight_grad = uniform(4e9);
  const ClusterSpec spec = spec_with(t);
  EXPECT_EQ(spec.device.measured.conv_input_grad.rows(), t.conv_input_grad.rows());
  EXPECT_EQ(spec.device.measured.conv_weight_grad.rows(), t.conv_weight_grad.rows());
  const CostModel model(spec.device);
  EXPECT_DOUBLE_EQ(model.time(forward, DType::f32).seconds, forward.flops / 1e9);
  EXPECT_DOUBLE_EQ(model.time(in_grad, DType::f32).seconds, in_grad.flops / 2e9);
  EXPECT_DOUBLE_EQ(model.time(w_grad, DType::f32).seconds, w_grad.flops / 4e9);
}

// max_pool2d's gradient helpers take the pool_grad bandwidth table where the spec has one (they
// fill the input-shaped gradient and scatter into it), the pool class's where it does not.
TEST(MeasuredTables, PoolingGradientsTakeTheirOwnBandwidthTable) {
  const std::vector<std::pair<std::string, sem::Attr>> k2{
      {"kernel", sem::Attr{std::vector<int64_t>{2}}}};
  const sem::TypeP x = sem::Type::tensor(DType::f32, {8, 4, 32, 32}),
                   g = sem::Type::tensor(DType::f32, {8, 4, 16, 16});
  const OpCost forward = registry_cost("max_pool2d", {x}, k2);
  const OpCost grad = registry_cost("max_pool2d_grad", {x, g}, k2);
  EXPECT_EQ(forward.table, "");
  EXPECT_EQ(grad.table, "pool_grad");
  ASSERT_EQ(grad.op_class, "pool");
  ASSERT_GT(grad.bytes, 0);
  EXPECT_DOUBLE_EQ(seconds_under(grad, {{"pool", 1e10}}), grad.bytes / 1e10);
  const std::map<std::string, double> both{{"pool", 1e10}, {"pool_grad", 2.5e9}};
  EXPECT_DOUBLE_EQ(seconds_under(grad, both), grad.bytes / 2.5e9);
  EXPECT_DOUBLE_EQ(seconds_under(forward, both), forward.bytes / 1e10);
}

// A permute that moves the innermost axis copies single elements and takes the transpose
// bandwidth table where the spec has one; one that keeps it (attention's heads), or moves only
// axes of length 1, copies contiguous runs and takes the copy class's, as a spec without the
// transpose table prices both.
TEST(MeasuredTables, TransposesTakeTheirOwnBandwidthTable) {
  auto axes = [](std::vector<int64_t> a) {
    return std::vector<std::pair<std::string, sem::Attr>>{{"axes", sem::Attr{a}}};
  };
  const sem::TypeP heads = sem::Type::tensor(DType::f32, {8, 128, 4, 64});
  const sem::TypeP matrix = sem::Type::tensor(DType::f32, {1024, 256});
  const sem::TypeP row = sem::Type::tensor(DType::f32, {1, 256});
  const OpCost runs = registry_cost("permute", {heads}, axes({0, 2, 1, 3}));
  const OpCost keys = registry_cost("permute", {heads}, axes({0, 2, 3, 1}));
  const OpCost moved = registry_cost("transpose", {matrix}, {});
  const OpCost moved_back = registry_cost("permute", {matrix}, axes({-1, 0}));
  const OpCost unit = registry_cost("permute", {row}, axes({1, 0}));
  EXPECT_EQ(runs.table, "");
  EXPECT_EQ(keys.table, "transpose");
  EXPECT_EQ(moved.table, "transpose");
  EXPECT_EQ(moved_back.table, "transpose");
  EXPECT_EQ(unit.table, "");
  for (const OpCost* c : {&runs, &keys, &moved, &unit}) ASSERT_EQ(c->op_class, "copy");
  EXPECT_DOUBLE_EQ(seconds_under(keys, {{"copy", 2e10}}), keys.bytes / 2e10);
  const std::map<std::string, double> both{{"copy", 2e10}, {"transpose", 5e9}};
  EXPECT_DOUBLE_EQ(seconds_under(keys, both), keys.bytes / 5e9);
  EXPECT_DOUBLE_EQ(seconds_under(moved, both), moved.bytes / 5e9);
  EXPECT_DOUBLE_EQ(seconds_under(runs, both), runs.bytes / 2e10);
  EXPECT_DOUBLE_EQ(seconds_under(unit, both), unit.bytes / 2e10);
}

}  // namespace
}  // namespace spora::sim

namespace spora::sim {
namespace {

// The oversubscription table: linear in the grain between its rows, the edge's value beyond
// them; negative where the loop was faster than the simulator's charge without it.
TEST(MeasuredTables, SyncTableIsPiecewiseLinearInTheGrain) {
  const SyncTable t = SyncTable::from_rows(4, {{1e-3, 3e-4}, {0, -1e-4}, {4e-3, -2e-4}});
  EXPECT_EQ(t.ranks, 4);
  EXPECT_EQ(t.grain, (std::vector<double>{0, 1e-3, 4e-3}));
  EXPECT_DOUBLE_EQ(t.extra_at(0), -1e-4);
  EXPECT_DOUBLE_EQ(t.extra_at(5e-4), 1e-4);
  EXPECT_DOUBLE_EQ(t.extra_at(1e-3), 3e-4);
  EXPECT_DOUBLE_EQ(t.extra_at(2.5e-3), 5e-5);  // halfway to -2e-4
  EXPECT_DOUBLE_EQ(t.extra_at(1), -2e-4);
  EXPECT_DOUBLE_EQ(SyncTable().extra_at(1e-3), 0);
  EXPECT_THROW(SyncTable::from_rows(4, {{0, 1e-4}, {0, 2e-4}}), std::invalid_argument);
  EXPECT_THROW(SyncTable::from_rows(4, {{-1e-3, 1e-4}}), std::invalid_argument);
  EXPECT_THROW(SyncTable::from_rows(1, {{0, 1e-4}}), std::invalid_argument);
}

TEST(MeasuredTables, SyncTableRoundTripsAndItsErrorsNameTheField) {
  MeasuredTables t;
  t.cores = 2;
  t.oversubscribed = SyncTable::from_rows(4, {{0, 2.5e-4}, {1e-3, 1.25e-3}});
  const MeasuredTables back = spec_with(t).device.measured;
  EXPECT_EQ(back.oversubscribed.ranks, 4);
  EXPECT_EQ(back.oversubscribed.grain, t.oversubscribed.grain);
  EXPECT_EQ(back.oversubscribed.extra, t.oversubscribed.extra);
  const std::string bad = std::string(kSpec) +
                          "  measured:\n    oversubscribed:\n      ranks: 4\n"
                          "      sync: [[0, 1e-4], [0, 2e-4]]\n"
                          "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n";
  try {
    parse_cluster_spec(bad, "m.yaml");
    FAIL() << "no error";
  } catch (const ClusterSpecError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.yaml: device.measured.oversubscribed.sync: the grain 0 is listed twice");
  }
}

// Tables at three distances: 4 KiB (40 GB/s), 64 KiB, the inherited ones (20 GB/s), and 1 MiB
// (10 GB/s), all flat in the bytes an op moves.
MeasuredTables three_levels() {
  MeasuredTables t;
  t.reuse_distance = 65536;
  t.bandwidth["elementwise"] = RateTable::from_rows({{1024, 2e10}, {1 << 20, 2e10}});
  t.at_reuse_distance[4096].bandwidth["elementwise"] =
      RateTable::from_rows({{1024, 4e10}, {1 << 20, 4e10}});
  t.at_reuse_distance[1 << 20].bandwidth["elementwise"] =
      RateTable::from_rows({{1024, 1e10}, {1 << 20, 1e10}});
  return t;
}

TEST(MeasuredTables, ReuseDistanceTablesRoundTripThroughTheSpecReader) {
  const MeasuredTables back = spec_with(three_levels()).device.measured;
  EXPECT_EQ(back.reuse_distance, 65536);
  ASSERT_EQ(back.at_reuse_distance.size(), 2u);
  EXPECT_EQ(back.at_reuse_distance.at(4096).bandwidth.at("elementwise").rate,
            (std::vector<double>{4e10, 4e10}));
  EXPECT_EQ(back.at_reuse_distance.at(1 << 20).bandwidth.at("elementwise").rate,
            (std::vector<double>{1e10, 1e10}));
  const auto levels = back.by_reuse_distance();
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].first, 4096);
  EXPECT_EQ(levels[1].first, 65536);
  EXPECT_EQ(levels[2].first, 1 << 20);
}

TEST(MeasuredTables, ReuseDistanceErrorsNameTheField) {
  EXPECT_EQ(spec_error("  measured:\n    at_reuse_distance:\n      4096: {}\n"),
            "m.yaml: device.measured.at_reuse_distance: needs reuse_distance: the distance of "
            "the tables outside it");
  EXPECT_EQ(spec_error("  measured:\n    reuse_distance: 4096\n    at_reuse_distance:\n"
                       "      4096: {}\n"),
            "m.yaml: device.measured.at_reuse_distance: lists reuse_distance's own distance "
            "again");
  EXPECT_NE(spec_error("  measured:\n    reuse_distance: 4096\n    at_reuse_distance:\n"
                       "      8192: {speed: 1}\n")
                .find("unknown field"),
            std::string::npos);
}

// Each read's share of the op (by bytes) at its distance, the time linear in log2(distance)
// between measured ones, clamped beyond them; without reads, the inherited tables.
TEST(MeasuredTables, CostModelInterpolatesInLog2OfTheDistance) {
  const ClusterSpec spec = spec_with(three_levels());
  const CostModel model(spec.device);
  const sem::OpCost add{0, 4096, "elementwise"};
  const double at40 = 4096 / 4e10, at20 = 4096 / 2e10, at10 = 4096 / 1e10;
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32).seconds, at20);
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{0, 100}}).seconds, at40);  // below 4 KiB
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{65536, 100}}).seconds, at20);
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{1e12, 100}}).seconds, at10);  // clamped
  // 16 KiB is halfway from 4 KiB to 64 KiB in log2; 256 KiB halfway from 64 KiB to 1 MiB.
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{16384, 100}}).seconds, (at40 + at20) / 2);
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{262144, 100}}).seconds, (at20 + at10) / 2);
  // Two reads: a quarter of the bytes near, three quarters far.
  EXPECT_DOUBLE_EQ(model.time(add, DType::f32, {{0, 100}, {1e30, 300}}).seconds,
                   0.25 * at40 + 0.75 * at10);
  // A class the other distances do not measure: the inherited table's roofline everywhere.
  const sem::OpCost sum{0, 4096, "reduction"};
  EXPECT_DOUBLE_EQ(model.time(sum, DType::f32, {{0, 100}}).seconds, 4096 / 1e10);
}

}  // namespace
}  // namespace spora::sim
