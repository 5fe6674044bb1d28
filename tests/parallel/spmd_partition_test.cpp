// The collective primitives (over the in-process communicator), the SPMD partitioner's
// collectives for data and tensor parallelism, strategy files, and sharded training runs of the
// small MLP on 4 in-process ranks against the single-device run.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "autodiff/install.h"
#include "autodiff/rules.h"
#include "backends/comm/collective_context.h"
#include "backends/comm/threads.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "parallel/partition/partition.h"
#include "parallel/partition/strategy.h"
#include "semantics/registry.h"
#include "spmd_common.h"

namespace spora::parallel::testing {
namespace {

using sem::Attrs;
using sem::Tensor;
using sem::Value;

void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
  });
}

const sem::Primitive& prim(const std::string& name) {
  setup();
  return *sem::Registry::instance().find(name);
}

Tensor iota(sem::Shape shape, double base) {
  Tensor t = Tensor::zeros(DType::f64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, base + static_cast<double>(i));
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

Attrs attrs(std::initializer_list<std::pair<const char*, sem::Attr>> items) {
  Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

// Runs prim on every rank of a [2, 2] mesh with rank r's input iota(shape, 100 r); the outputs.
std::vector<Tensor> on_mesh(const std::string& name, sem::Shape shape, const Attrs& a) {
  const sem::Primitive& p = prim(name);
  comm::ThreadWorld world(4);
  std::vector<Tensor> out(4);
  world.run([&](comm::Communicator& c) {
    comm::CollectiveScope scope(&c, {2, 2});
    out[c.rank()] = p.eval({Value(iota(shape, 100.0 * c.rank()))}, a).tensor;
  });
  return out;
}

TEST(Collectives, MeshGroupsAreRowMajor) {
  EXPECT_EQ(comm::mesh_coords({2, 2}, 3), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(comm::mesh_group({2, 2}, 1, {1}), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(comm::mesh_group({2, 2}, 1, {0}), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(comm::mesh_group({2, 2}, 2, {0, 1}), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(Collectives, AllReduceSumsOverTheGroupOfItsAxes) {
  const std::vector<int64_t> mesh{2, 2};
  // Over axis 1: ranks {0, 1} and {2, 3}.
  auto out = on_mesh("all_reduce", {2}, attrs({{"axes", std::vector<int64_t>{1}}, {"mesh", mesh}}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{100, 102}));  // (0, 1) + (100, 101)
  EXPECT_EQ(values(out[1]), (std::vector<double>{100, 102}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{500, 502}));  // (200, 201) + (300, 301)
  out = on_mesh("all_reduce", {1}, attrs({{"axes", std::vector<int64_t>{0, 1}}, {"mesh", mesh}}));
  for (const Tensor& t : out) EXPECT_EQ(values(t), (std::vector<double>{600}));
}

TEST(Collectives, AllGatherConcatenatesInGroupOrder) {
  // [2, 1] pieces gathered along dim 1 over axis 0: rank 1's group is {1, 3}.
  auto out = on_mesh(
      "all_gather", {2, 1},
      attrs({{"dim", int64_t{1}}, {"axis", int64_t{0}}, {"mesh", std::vector<int64_t>{2, 2}}}));
  ASSERT_EQ(out[1].shape(), (sem::Shape{2, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{100, 300, 101, 301}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 200, 1, 201}));
}

TEST(Collectives, ReduceScatterKeepsThisRanksPieceOfTheSum) {
  // Over axis 1 (groups {0,1}, {2,3}), dim 0 of [4]: sum (0..3)+(100..103) = 100,102,104,106.
  auto out = on_mesh(
      "reduce_scatter", {4},
      attrs({{"dim", int64_t{0}}, {"axis", int64_t{1}}, {"mesh", std::vector<int64_t>{2, 2}}}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{100, 102}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{104, 106}));
}

TEST(Collectives, AllToAllMovesTheSplitToAnotherDimension) {
  // Rank r holds rows [2, 2] of a [2, 4] tensor split on dim 1... here: split dim 0 into 2
  // pieces, concatenate along dim 1. Group of rank 0 over axis 1: {0, 1}.
  auto out = on_mesh("all_to_all", {2, 2},
                     attrs({{"split_dim", int64_t{0}},
                            {"concat_dim", int64_t{1}},
                            {"axis", int64_t{1}},
                            {"mesh", std::vector<int64_t>{2, 2}}}));
  ASSERT_EQ(out[0].shape(), (sem::Shape{1, 4}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 1, 100, 101}));  // row 0 of each
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 3, 102, 103}));  // row 1 of each
}

TEST(Collectives, ShardSliceTakesThisRanksPieceLocally) {
  auto out = on_mesh(
      "shard_slice", {2, 4},
      attrs({{"dim", int64_t{1}}, {"axis", int64_t{1}}, {"mesh", std::vector<int64_t>{2, 2}}}));
  ASSERT_EQ(out[3].shape(), (sem::Shape{2, 2}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{302, 303, 306, 307}));  // coordinate 1 on axis 1
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 1, 4, 5}));
}

TEST(Collectives, WithoutAMultiRankRunTheKernelsSayHowToGetOne) {
  const sem::Primitive& p = prim("all_reduce");
  try {
    p.eval({Value(iota({2}, 0))},
           attrs({{"axes", std::vector<int64_t>{0}}, {"mesh", std::vector<int64_t>{4}}}));
    FAIL() << "no error";
  } catch (const lang::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce needs a multi-rank run: spora run"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      p.infer({sem::Type::tensor(DType::f32, {4})},
              attrs({{"axes", std::vector<int64_t>{2}}, {"mesh", std::vector<int64_t>{4}}})),
      lang::UserError);
  EXPECT_THROW(
      prim("shard_slice")
          .infer({sem::Type::tensor(DType::f32, {6})}, attrs({{"dim", int64_t{0}},
                                                              {"axis", int64_t{0}},
                                                              {"mesh", std::vector<int64_t>{4}}})),
      lang::UserError);
}

// Emits into a graph (the derivative rules' view of the IR).
class GraphEmitter : public autodiff::Emitter {
 public:
  GraphEmitter(ir::Module& m, ir::Graph* g) : m_(m), g_(g) {}
  ir::Node* op(const std::string& name, std::vector<ir::Node*> inputs, Attrs attrs) override {
    const sem::Primitive& p = prim(name);
    std::vector<sem::TypeP> types;
    for (ir::Node* n : inputs) types.push_back(n->type);
    return m_.add_apply(g_, &p, inputs, attrs, p.infer(types, attrs));
  }
  ir::Node* scalar(double value, DType dtype) override {
    return m_.add_constant(g_, Value(Tensor::scalar(dtype, value)));
  }

 private:
  ir::Module& m_;
  ir::Graph* g_;
};

// The vjp of `name` applied to x of `shape`: the cotangent node of x.
ir::Node* vjp_of(ir::Module& m, const std::string& name, sem::Shape shape, const Attrs& a) {
  ir::Graph* g = m.graphs().empty() ? m.add_graph("g") : m.graphs()[0].get();
  GraphEmitter e(m, g);
  ir::Node* x = m.add_param(g, "x", sem::Type::tensor(DType::f64, shape));
  ir::Node* y = e.op(name, {x}, a);
  ir::Node* dout = m.add_param(g, "dout", y->type);
  const auto* vjp = prim(name).facet<autodiff::VjpRule>(autodiff::kVjpFacet);
  EXPECT_TRUE(vjp != nullptr) << name;
  return (*vjp)(e, *y, {x}, y, dout).at(0);
}

TEST(Collectives, DerivativesAreTheTransposesUnderTheReplicatedCotangentConvention) {
  ir::Module m;
  const std::vector<int64_t> mesh{2, 2};
  const Attrs d0a1 = attrs({{"dim", int64_t{0}}, {"axis", int64_t{1}}, {"mesh", mesh}});
  // all_gather -> shard_slice (local), reduce_scatter and shard_slice -> all_gather.
  ir::Node* dx = vjp_of(m, "all_gather", {2, 3}, d0a1);
  EXPECT_TRUE(dx->is_prim("shard_slice"));
  EXPECT_EQ(dx->type->str(), "f64[2,3]");
  EXPECT_EQ(dx->attrs, d0a1);
  dx = vjp_of(m, "reduce_scatter", {4, 3}, d0a1);
  EXPECT_TRUE(dx->is_prim("all_gather"));
  EXPECT_EQ(dx->type->str(), "f64[4,3]");
  dx = vjp_of(m, "shard_slice", {4, 3}, d0a1);
  EXPECT_TRUE(dx->is_prim("all_gather"));
  // all_reduce: the cotangent itself.
  dx = vjp_of(m, "all_reduce", {3}, attrs({{"axes", std::vector<int64_t>{0}}, {"mesh", mesh}}));
  EXPECT_TRUE(dx->is_param());
  EXPECT_EQ(dx->name, "dout");
  // all_to_all: split and concat dims exchanged.
  dx = vjp_of(m, "all_to_all", {4, 3},
              attrs({{"split_dim", int64_t{0}},
                     {"concat_dim", int64_t{1}},
                     {"axis", int64_t{0}},
                     {"mesh", mesh}}));
  EXPECT_TRUE(dx->is_prim("all_to_all"));
  EXPECT_EQ(dx->attrs.get_int("split_dim"), 1);
  EXPECT_EQ(dx->attrs.get_int("concat_dim"), 0);
  EXPECT_EQ(dx->type->str(), "f64[4,3]");
}

// ---- the partitioner ------------------------------------------------------------------------

struct Step {
  StepGraph program;
  Partitioned part;
  std::vector<std::string> collectives;
};

Step partition_mlp(const char* strategy_json) {
  setup();
  Step s{distributed::build_training_step(mlp_options()), {}, {}};
  const ir::Graph& g = *s.program.step;
  const Strategy strategy = parse_strategy(strategy_json, g);
  PartitionOptions po;
  po.output_layouts.push_back(std::nullopt);
  for (size_t i = 0; i < s.program.param_names.size(); ++i) {
    auto it = strategy.layouts.find(g.params[i]->name);
    po.output_layouts.push_back(it == strategy.layouts.end() ? std::nullopt
                                                             : std::optional(it->second));
  }
  s.part = partition(g, strategy, po);
  s.collectives = collective_summary(*s.part.graph);
  return s;
}

int count_prefix(const std::vector<std::string>& lines, const std::string& prefix) {
  return static_cast<int>(std::count_if(
      lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; }));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(Partition, TheStepHasTheNamedParameters) {
  setup();
  const StepGraph p = distributed::build_training_step(mlp_options());
  std::vector<std::string> names;
  for (const ir::Node* n : p.step->params) names.push_back(n->name);
  EXPECT_EQ(names, (std::vector<std::string>{"net.l1.w", "net.l1.b", "net.l2.w", "net.l2.b",
                                             "net.l3.w", "net.l3.b", "x", "y"}));
}

TEST(Partition, DataParallelAllReducesEachGradientAndTheLoss) {
  const Step s = partition_mlp(kDp4);
  // Six gradients (partial sums over the batch shards) and the loss (a mean of shard means).
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0])"), 7) << joined(s.collectives);
  EXPECT_EQ(s.collectives.size(), 7u) << joined(s.collectives);
  // Local shapes: the batch of 8 is 2 per rank.
  EXPECT_EQ(s.part.graph->params[6]->type->str(), "f64[2,16]");
  EXPECT_EQ(s.part.graph->params[7]->type->str(), "i32[2]");
  EXPECT_EQ(s.part.graph->params[0]->type->str(), "f64[16,32]");
}

TEST(Partition, MegatronAllReducesAfterTheRowSplitMatmulForwardAndBackward) {
  const Step s = partition_mlp(kTp4);
  EXPECT_EQ(s.part.graph->params[2]->type->str(), "f64[32,8]");  // l2.w column split
  EXPECT_EQ(s.part.graph->params[4]->type->str(), "f64[8,8]");   // l3.w row split
  // Forward: the logits of the row-split matmul [8, 8] are partial until the all-reduce the
  // bias add needs. Backward: the gradient of l2's input [8, 32] (the column-split layer's
  // input) is partial until the relu's mask needs it whole. Nothing else: every other value
  // stays in the layout its consumers want, and the loss is computed replicated.
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0]) f64[8,8]"), 1)
      << joined(s.collectives);
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0]) f64[8,32]"), 1)
      << joined(s.collectives);
  EXPECT_EQ(s.collectives.size(), 2u) << joined(s.collectives);
}

TEST(Partition, DataAndTensorParallelReduceOverTheirOwnMeshAxes) {
  const Step s = partition_mlp(kDp2Tp2);
  // Forward: the row-split l2's output over tp (batch 8 / dp 2 = 4 rows per rank).
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[1]) f64[4,32]"), 1)
      << joined(s.collectives);
  // The loss and the six gradients over dp, each in its parameter's layout (l1 and l2's
  // weights split over tp: [16, 16] and [16, 32] per rank).
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0])"), 7) << joined(s.collectives);
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0]) f64[16,16]"), 1)
      << joined(s.collectives);
  EXPECT_EQ(count_prefix(s.collectives, "all_reduce(axes=[0]) f64[16,32]"), 1)
      << joined(s.collectives);
  EXPECT_EQ(s.collectives.size(), 8u) << joined(s.collectives);
}

TEST(Partition, StrategyFilesNameRealParametersAndFittingLayouts) {
  setup();
  const StepGraph p = distributed::build_training_step(mlp_options());
  EXPECT_THROW(
      parse_strategy(R"json({"mesh": [4], "layouts": {"net.l9.w": "(4, 1)"}})json", *p.step),
      lang::UserError);
  EXPECT_THROW(parse_strategy(R"json({"mesh": [3], "layouts": {"x": "(3, 1)"}})json", *p.step),
               lang::UserError);  // 8 rows do not split in 3
  EXPECT_THROW(parse_strategy(R"json({"mesh": [4], "layouts": {"x": 4}})json", *p.step),
               lang::UserError);
  EXPECT_THROW(parse_strategy("{\"mesh\": [4]", *p.step), lang::UserError);
  const Strategy s = parse_strategy(kDp2Tp2, *p.step);
  EXPECT_EQ(s.layouts.at("net.l1.w").tensor_map, (std::vector<int>{-1, 1}));
  EXPECT_EQ(s.layouts.at("x").tensor_map, (std::vector<int>{0, -1}));
  // The JSON written back parses to the same strategy.
  const Strategy again = parse_strategy(strategy_json(s), *p.step);
  EXPECT_EQ(again.layouts, s.layouts);
  EXPECT_EQ(again.mesh, s.mesh);
}

TEST(Partition, ANodesChosenStrategyOverridesPropagation) {
  setup();
  const StepGraph p = distributed::build_training_step(mlp_options());
  size_t first_matmul = 0;
  while (!p.step->nodes[first_matmul]->is_prim("matmul")) ++first_matmul;
  const std::string json = R"json({"mesh": [4], "layouts": {"x": "(4, 1)", "y": "(4)"},
                                   "ops": {")json" +
                           std::to_string(first_matmul) + R"json(": "replicated"}})json";
  const Strategy s = parse_strategy(json, *p.step);
  ASSERT_EQ(s.ops.count(first_matmul), 1u);
  const Partitioned part = partition(*p.step, s);
  // The first layer runs replicated: x is gathered first.
  const std::vector<std::string> c = collective_summary(*part.graph);
  EXPECT_EQ(count_prefix(c, "all_gather(dim=0, axis=0) f64[8,16]"), 1) << joined(c);
  EXPECT_EQ(parse_strategy(strategy_json(s), *p.step).ops.at(first_matmul).name, "replicated");
  EXPECT_THROW(parse_strategy(R"json({"mesh": [4], "ops": {"0": "no-such"}})json", *p.step),
               lang::UserError);
}

TEST(Partition, LayoutsThatDoNotFitAreUserErrors) {
  setup();
  const StepGraph p = distributed::build_training_step(mlp_options());
  Strategy s;
  s.mesh.shape = {4};
  s.layouts["x"] = Layout::replicated(1);  // x is 2-D
  EXPECT_THROW(partition(*p.step, s), lang::UserError);
  s.layouts["x"] = Layout::split(2, 1, 0);  // 16 features split 4 ways is fine...
  EXPECT_NO_THROW(partition(*p.step, s));
  s.layouts["x"] = Layout::split(2, 0, 0);
  s.layouts["x"].partial = {};
  s.layouts["y"] = Layout{{-1}, {0}};  // ...but an input cannot be a partial sum
  EXPECT_THROW(partition(*p.step, s), lang::UserError);
  s.layouts.erase("y");
  s.layouts["nope"] = Layout::replicated(1);
  EXPECT_THROW(partition(*p.step, s), lang::UserError);
}

// ---- sharded runs on 4 in-process ranks ------------------------------------------------------

distributed::TrainStepResult run_threads(const StepGraph& program, const char* strategy) {
  comm::ThreadWorld world(4);
  std::vector<distributed::TrainStepResult> results(4);
  world.run([&](comm::Communicator& c) {
    results[c.rank()] = distributed::run_training(program, mlp_options(), &c, strategy);
  });
  // Every rank saw the same losses and gathered the same parameters.
  for (int r = 1; r < 4; ++r) EXPECT_EQ(results[r].losses, results[0].losses) << "rank " << r;
  return results[0];
}

class ShardedRun : public ::testing::TestWithParam<std::string> {};

TEST_P(ShardedRun, EqualsTheSingleDeviceRun) {
  setup();
  const StepGraph program = distributed::build_training_step(mlp_options());
  const distributed::TrainStepResult ref =
      distributed::run_training(program, mlp_options(), nullptr, "");
  ASSERT_EQ(ref.losses.size(), 3u);
  EXPECT_GT(ref.losses[0], ref.losses[2]) << "sgd lowers the loss";
  const distributed::TrainStepResult got = run_threads(program, strategy_named(GetParam()));
  EXPECT_GT(got.collectives, 0);
  expect_same_run(ref, got, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Strategies, ShardedRun, ::testing::Values("dp4", "tp4", "dp2tp2"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace spora::parallel::testing
