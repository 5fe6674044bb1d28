// The cost facet (semantics/cost.h, filled in ops/cost.cpp) and the device-time model
// (sim/cost_model.h): every row has a rule, the rules give the closed forms, the roofline
// picks the right bound, and the spec fields are read and checked.
#include "semantics/cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ops/ops.h"
#include "semantics/registry.h"
#include "sim/cluster_spec.h"
#include "sim/cost_model.h"

namespace spora::sim {
namespace {

using sem::Attrs;
using sem::CostRule;
using sem::kCostFacet;
using sem::OpCost;
using sem::Type;
using sem::TypeP;

const sem::Primitive& row(const std::string& name) {
  ops::register_all();
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw std::runtime_error("no primitive " + name);
  return *p;
}

// The cost of prim(inputs, attrs), with the output type from the row's own shape rule.
OpCost cost(const std::string& name, const std::vector<TypeP>& in, const Attrs& attrs = {}) {
  const sem::Primitive& p = row(name);
  const CostRule* rule = p.facet<CostRule>(kCostFacet);
  if (!rule) throw std::runtime_error("no cost rule for " + name);
  return (*rule)(in, p.infer(in, attrs), attrs);
}

TypeP f32(sem::Shape s) { return Type::tensor(DType::f32, std::move(s)); }

Attrs ints_attr(const std::string& name, std::vector<int64_t> v) {
  Attrs a;
  a.set(name, v);
  return a;
}

// Control flow is run by expanding bodies (sim/step_program.h); every other row is costed.
TEST(CostFacet, EveryPrimitiveHasOneExceptControlFlow) {
  ops::register_all();
  const std::set<std::string> exempt{"if", "while", "for_range", "for_each"};
  std::vector<std::string> missing;
  int costed = 0;
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    if (exempt.count(p->name)) {
      EXPECT_EQ(p->facet<CostRule>(kCostFacet), nullptr) << p->name;
      continue;
    }
    if (p->facet<CostRule>(kCostFacet))
      ++costed;
    else
      missing.push_back(p->name);
  }
  std::string list;
  for (const std::string& m : missing) list += " " + m;
  EXPECT_TRUE(missing.empty()) << "rows without a cost rule (add them to ops/cost.cpp):" << list;
  EXPECT_GT(costed, 90);
}

TEST(CostFacet, MatmulIsTwoMnk) {
  const OpCost c = cost("matmul", {f32({64, 784}), f32({784, 512})});
  EXPECT_EQ(c.op_class, "matmul");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 64 * 784 * 512);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (64 * 784 + 784 * 512 + 64 * 512));
  // Batched, with a broadcast right operand: 2 x 3 products of [4,5] @ [5,6].
  const OpCost b = cost("matmul", {f32({2, 3, 4, 5}), f32({5, 6})});
  EXPECT_DOUBLE_EQ(b.flops, 2.0 * 2 * 3 * 4 * 5 * 6);
  EXPECT_DOUBLE_EQ(b.bytes, 4.0 * (2 * 3 * 4 * 5 + 5 * 6 + 2 * 3 * 4 * 6));
  // Vector-matrix: [k] @ [k, n] is n dot products of length k.
  EXPECT_DOUBLE_EQ(cost("matmul", {f32({7}), f32({7, 3})}).flops, 2.0 * 7 * 3);
}

TEST(CostFacet, ConvolutionIsOutputTimesKernelVolume) {
  Attrs attrs = ints_attr("padding", {1});
  attrs.set("stride", std::vector<int64_t>{1});
  attrs.set("dilation", std::vector<int64_t>{1});
  attrs.set("groups", int64_t{1});
  const TypeP x = f32({2, 3, 8, 8}), w = f32({4, 3, 3, 3});
  const OpCost c = cost("conv2d", {x, w, nullptr}, attrs);
  const double out = 2 * 4 * 8 * 8;  // same padding keeps 8 x 8
  EXPECT_EQ(c.op_class, "conv");
  EXPECT_DOUBLE_EQ(c.flops, 2 * out * 3 * 3 * 3);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (2 * 3 * 8 * 8 + 4 * 27 + out));
  // With a bias: one more addition per output element.
  EXPECT_DOUBLE_EQ(cost("conv2d", {x, w, f32({4})}, attrs).flops, 2 * out * 27 + out);
  // Grouped: each output channel sees C / groups input channels.
  Attrs grouped = attrs;
  grouped.set("groups", int64_t{2});
  EXPECT_DOUBLE_EQ(cost("conv2d", {f32({1, 4, 5, 5}), f32({6, 2, 3, 3}), nullptr}, grouped).flops,
                   2.0 * (6 * 5 * 5) * (2 * 3 * 3));
  // The derivative helpers are one convolution each: the same count as the forward.
  Attrs in_grad = attrs;
  in_grad.set("shape", std::vector<int64_t>{2, 3, 8, 8});
  EXPECT_DOUBLE_EQ(cost("conv2d_input_grad", {f32({2, 4, 8, 8}), w}, in_grad).flops,
                   2 * out * 27);
  Attrs w_grad = attrs;
  w_grad.set("shape", std::vector<int64_t>{4, 3, 3, 3});
  EXPECT_DOUBLE_EQ(cost("conv2d_weight_grad", {x, f32({2, 4, 8, 8})}, w_grad).flops, 2 * out * 27);
}

TEST(CostFacet, ElementwiseReductionsAndViews) {
  // Broadcast operands count at their own size.
  const OpCost add = cost("add", {f32({10, 20}), f32({20})});
  EXPECT_EQ(add.op_class, "elementwise");
  EXPECT_DOUBLE_EQ(add.flops, 200);
  EXPECT_DOUBLE_EQ(add.bytes, 4.0 * (200 + 20 + 200));
  EXPECT_DOUBLE_EQ(cost("exp", {f32({100})}).flops, 1000);  // transcendental: 10 per element
  // Comparisons write bools (1 byte).
  EXPECT_DOUBLE_EQ(cost("gt", {f32({8}), f32({8})}).bytes, 4.0 * 16 + 8);
  Attrs axis = ints_attr("axis", {1});
  axis.set("keepdims", false);
  const OpCost sum = cost("sum", {f32({4, 5})}, axis);
  EXPECT_EQ(sum.op_class, "reduction");
  EXPECT_DOUBLE_EQ(sum.flops, 20);
  EXPECT_DOUBLE_EQ(sum.bytes, 4.0 * (20 + 4));
  const OpCost view = cost("reshape", {f32({4, 5})}, ints_attr("shape", {20}));
  EXPECT_EQ(view.op_class, "view");
  EXPECT_EQ(view.bytes, 0);
  const OpCost perm = cost("permute", {f32({4, 5})}, ints_attr("axes", {1, 0}));
  EXPECT_EQ(perm.op_class, "copy");
  EXPECT_DOUBLE_EQ(perm.bytes, 4.0 * 2 * 20);
  Attrs last;
  last.set("axis", int64_t{-1});
  EXPECT_DOUBLE_EQ(cost("softmax", {f32({8, 10})}, last).flops, 5.0 * 80);
}

TEST(CostFacet, PoolingCountsWindows) {
  Attrs attrs = ints_attr("kernel", {2});
  attrs.set("stride", sem::Attr{});
  attrs.set("padding", std::vector<int64_t>{0});
  const OpCost c = cost("max_pool2d", {f32({1, 2, 4, 4})}, attrs);
  EXPECT_EQ(c.op_class, "pool");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 2 * 4);  // 8 windows of 4
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (32 + 8));
}

ClusterSpec spec_with_classes() {
  return parse_cluster_spec(R"(
name: t
nodes: 1
devices_per_node: 1
device:
  peak_flops: {f32: 100 GFLOP/s, bf16: 400 GFLOP/s}
  memory: 1 GB
  memory_bandwidth: 10 GB/s
  launch_overhead: 2 us
  op_classes:
    matmul: {efficiency: 0.5}
    elementwise: {efficiency: 0.8, launch_overhead: 1 us}
interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}
)",
                            "t.yaml");
}

TEST(CostModel, RooflineOverEfficiencyPlusOverhead) {
  const ClusterSpec spec = spec_with_classes();
  const CostModel model(spec.device);
  // 1 GFLOP over 10 MB: compute-bound, 10 ms at peak, 20 ms at 50%, plus 2 us.
  const OpTime mm = model.time({1e9, 1e7, "matmul"}, DType::f32);
  EXPECT_TRUE(mm.compute_bound);
  EXPECT_DOUBLE_EQ(mm.seconds, 1e9 / 100e9 / 0.5 + 2e-6);
  // 1 MFLOP over 100 MB: memory-bound, 10 ms at 10 GB/s, / 0.8, + its own 1 us.
  const OpTime ew = model.time({1e6, 1e8, "elementwise"}, DType::f32);
  EXPECT_FALSE(ew.compute_bound);
  EXPECT_DOUBLE_EQ(ew.seconds, 1e8 / 10e9 / 0.8 + 1e-6);
  EXPECT_DOUBLE_EQ(ew.overhead, 1e-6);
  // Classes without an entry: efficiency 1, the device's overhead; views cost nothing.
  EXPECT_DOUBLE_EQ(model.time({0, 1e7, "copy"}, DType::f32).seconds, 1e-3 + 2e-6);
  EXPECT_EQ(model.time({0, 1e9, "view"}, DType::f32).seconds, 0);
  // The op's dtype picks the peak; bf16 is 4x faster here, f64 (absent) falls back to f32.
  EXPECT_DOUBLE_EQ(model.time({4e9, 0, "matmul"}, DType::bf16).seconds, 4e9 / 400e9 / 0.5 + 2e-6);
  EXPECT_DOUBLE_EQ(model.peak_flops(DType::f64, "matmul"), 100e9);
  // matmul_dtype: f32 products at the bf16 rate, elementwise ops unchanged.
  const CostModel mixed(spec.device, "bf16");
  EXPECT_DOUBLE_EQ(mixed.peak_flops(DType::f32, "matmul"), 400e9);
  EXPECT_DOUBLE_EQ(mixed.peak_flops(DType::f32, "elementwise"), 100e9);
}

TEST(CostModel, SpecErrorsNameTheField) {
  auto parse_device = [](const std::string& extra) {
    return parse_cluster_spec(
        "nodes: 1\ndevices_per_node: 1\ndevice:\n  peak_flops: {f32: 1 TFLOP/s}\n"
        "  memory: 1 GB\n  memory_bandwidth: 1 GB/s\n" +
            extra + "interconnect: {kind: switch, bandwidth: 1 GB/s, latency: 1 us}\n",
        "c.yaml");
  };
  auto message = [&](const std::string& extra) {
    try {
      parse_device(extra);
    } catch (const ClusterSpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("  op_classes: {matmul: {efficiency: 1.5}}\n"),
            "c.yaml: device.op_classes.matmul.efficiency: expected a number in (0, 1], got 1.5");
  EXPECT_EQ(message("  op_classes: {matmull: {efficiency: 0.5}}\n"),
            "c.yaml: device.op_classes.matmull: unknown field (did you mean 'matmul'?)");
  EXPECT_EQ(message("  launch_overhead: soon\n"),
            "c.yaml: device.launch_overhead: expected a duration such as \"5 us\", got \"soon\"");
  const ClusterSpec ok = parse_device("  op_classes: {conv: {launch_overhead: 3 us}}\n");
  EXPECT_DOUBLE_EQ(*ok.device.op_classes.at("conv").launch_overhead, 3e-6);
  EXPECT_DOUBLE_EQ(ok.device.op_classes.at("conv").efficiency, 1);
}

}  // namespace
}  // namespace spora::sim
