// Pipeline parallelism (parallel/pipeline, backends/distributed/pipeline_step): the schedules,
// the stage assignment and its errors, and pipelined training runs of small f64 MLPs on
// in-process ranks against the single-device run (losses and updated parameters to 1e-10).
#include "parallel/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <mutex>

#include "autodiff/install.h"
#include "backends/comm/threads.h"
#include "backends/distributed/pipeline_step.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "parallel/pipeline/schedule.h"
#include "spmd_common.h"

namespace spora::parallel::pipeline {
namespace {

using testing::expect_same_run;

void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
  });
}

std::string mlp4_path() { return std::string(SPORA_SOURCE_DIR) + "/tests/parallel/mlp4.sp"; }

distributed::TrainStepOptions options(const std::string& file) {
  setup();
  distributed::TrainStepOptions o = testing::mlp_options();
  o.file = file;
  return o;
}

// ---- schedules -------------------------------------------------------------------------------

TEST(PipelineSchedule, OneFOneBIsTheTextbookOrder) {
  // S = 4, M = 8 (Narayanan et al. 2021, figure 4 top): stage k warms up with 3 - k forwards.
  EXPECT_EQ(schedule_string(stage_schedule(Schedule::OneFOneB, 4, 0, 8)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(schedule_string(stage_schedule(Schedule::OneFOneB, 4, 1, 8)),
            "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(schedule_string(stage_schedule(Schedule::OneFOneB, 4, 3, 8)),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than stages: all forwards, then all backwards.
  EXPECT_EQ(schedule_string(stage_schedule(Schedule::OneFOneB, 4, 0, 2)), "F0 F1 B0 B1");
  EXPECT_EQ(schedule_string(stage_schedule(Schedule::GPipe, 2, 1, 3)), "F0 F1 F2 B0 B1 B2");
}

TEST(PipelineSchedule, LiveActivations) {
  for (int S : {1, 2, 4, 5})
    for (int M : {1, 3, 4, 8, 16})
      for (int k = 0; k < S; ++k) {
        const auto one = stage_schedule(Schedule::OneFOneB, S, k, M);
        const auto gpipe = stage_schedule(Schedule::GPipe, S, k, M);
        ASSERT_EQ(one.size(), 2u * static_cast<size_t>(M));
        EXPECT_EQ(peak_live(one), std::min(S - k, M)) << "1f1b S=" << S << " k=" << k << " M=" << M;
        EXPECT_EQ(peak_live(gpipe), M);
        // Every micro-batch runs forward once, then backward once, backwards in order.
        std::vector<int> f(static_cast<size_t>(M), 0), b(static_cast<size_t>(M), 0);
        int next_b = 0;
        for (const Action& a : one) {
          if (a.kind == Action::Kind::Forward) {
            ++f[static_cast<size_t>(a.micro)];
          } else {
            EXPECT_EQ(f[static_cast<size_t>(a.micro)], 1);
            EXPECT_EQ(a.micro, next_b++);
            ++b[static_cast<size_t>(a.micro)];
          }
        }
        for (int m = 0; m < M; ++m) EXPECT_EQ(f[m] + b[m], 2);
      }
}

// ---- stage assignment and programs -----------------------------------------------------------

struct Built {
  StepGraph step;
  PipelineProgram program;
};

Built build(const std::string& file, const std::string& pipeline_json) {
  distributed::TrainStepOptions o = options(file);
  o.batch = 2;  // a micro-batch
  Built b{distributed::build_training_step(o), {}};
  const auto spec = parse_pipeline(R"({"pipeline": )" + pipeline_json + "}");
  EXPECT_TRUE(spec.has_value());
  b.program = build_pipeline(*b.step.step, b.step.param_names.size(), *spec);
  return b;
}

std::vector<std::string> stage_params(const Built& b, int k) {
  std::vector<std::string> names;
  for (size_t i : b.program.stages[static_cast<size_t>(k)].params)
    names.push_back(b.step.step->params[i]->name);
  return names;
}

TEST(PipelineStages, SplitByParameterPrefix) {
  const Built b = build(testing::mlp_path(), R"({"stages": 2, "split": ["net.l2"]})");
  ASSERT_EQ(b.program.stages.size(), 2u);
  EXPECT_EQ(stage_params(b, 0), (std::vector<std::string>{"net.l1.w", "net.l1.b"}));
  EXPECT_EQ(stage_params(b, 1),
            (std::vector<std::string>{"net.l2.w", "net.l2.b", "net.l3.w", "net.l3.b"}));
  // Stage 0 sends relu(l1(x)) of the micro-batch of 2; stage 1 returns the loss.
  ASSERT_EQ(b.program.assignment.boundary.size(), 1u);
  EXPECT_EQ(b.program.assignment.boundary[0]->type->str(), "f64[2,32]");
  EXPECT_EQ(b.program.stages[0].forward->output->type->str(), "f64[2,32]");
  EXPECT_EQ(b.program.stages[1].forward->output->type->str(), "f64");
  // b_0 returns the gradients of l1 (no activation to send back); b_1 the activation's
  // cotangent and the gradients of l2 and l3.
  EXPECT_EQ(b.program.stages[0].backward->output->type->str(), "(f64[16,32], f64[32])");
  EXPECT_EQ(b.program.stages[1].backward->output->type->str(),
            "(f64[2,32], f64[32,32], f64[32], f64[32,8], f64[8])");
}

TEST(PipelineStages, AutoSplitMinimisesTheLargestStage) {
  const Built a = build(mlp4_path(), R"({"stages": 2, "split": "auto"})");
  const auto worst = [](const StageAssignment& s) {
    return *std::max_element(s.stage_cost.begin(), s.stage_cost.end());
  };
  const double got = worst(a.program.assignment);
  // No split at a layer boundary does better.
  for (const char* at : {"net.l2", "net.l3", "net.l4"}) {
    const Built e = build(mlp4_path(), std::string(R"({"stages": 2, "split": [")") + at + "\"]}");
    EXPECT_LE(got, worst(e.program.assignment) + 1e-9) << at;
  }
  // The best cut is inside l2, between its matmul and its bias (one activation crosses there
  // too): l1 and l2's matmul against l2's bias, l3 and l4.
  EXPECT_EQ(stage_params(a, 0), (std::vector<std::string>{"net.l1.w", "net.l1.b", "net.l2.w"}));
  EXPECT_EQ(stage_params(a, 1),
            (std::vector<std::string>{"net.l2.b", "net.l3.w", "net.l3.b", "net.l4.w", "net.l4.b"}));
}

// The marker of the language's @stage(k), on a graph built by hand (the primitive is looked up
// by name only, so a stand-in row does): (w1, w2, x) -> (mean(relu(x @ w1) marked @ w2), ...).
TEST(PipelineStages, StageBoundaryMarker) {
  sem::Primitive matmul, relu, marker, mean, tuple;
  matmul.name = "matmul";
  relu.name = "relu";
  marker.name = "stage_boundary";
  mean.name = "mean";
  tuple.name = "make_tuple";
  ir::Module m;
  ir::Graph* g = m.add_graph("step");
  const sem::TypeP w = sem::Type::tensor(DType::f64, {4, 4});
  const sem::TypeP a = sem::Type::tensor(DType::f64, {2, 4});
  const sem::TypeP scalar = sem::Type::tensor(DType::f64, {});
  ir::Node* w1 = m.add_param(g, "w1", w);
  ir::Node* w2 = m.add_param(g, "w2", w);
  ir::Node* x = m.add_param(g, "x", a);
  ir::Node* h = m.add_apply(g, &matmul, {x, w1}, {}, a);
  ir::Node* r = m.add_apply(g, &relu, {h}, {}, a);
  sem::Attrs at;
  at.set("stage", int64_t{1});
  ir::Node* b = m.add_apply(g, &marker, {r}, at, a);
  ir::Node* y = m.add_apply(g, &matmul, {b, w2}, {}, a);
  ir::Node* loss = m.add_apply(g, &mean, {y}, {}, scalar);
  g->output = m.add_apply(g, &tuple, {loss, w1, w2}, {}, sem::Type::tuple({scalar, w, w}));
  PipelineSpec spec;
  spec.stages = 2;  // no split points: the marker cuts
  const StageAssignment s = assign_stages(*g, 2, spec);
  EXPECT_EQ(s.stage, (std::vector<int>{0, 0, 1, 1, 1, -1}));
  ASSERT_EQ(s.boundary.size(), 1u);
  EXPECT_EQ(s.boundary[0], r);
  EXPECT_EQ(s.param_stage, (std::vector<int>{0, 1}));
  // A marker past the last stage, and no marker and no split point, are errors.
  spec.stages = 1;
  EXPECT_THROW(assign_stages(*g, 2, spec), lang::UserError);
  b->prim = &relu;
  spec.stages = 2;
  try {
    assign_stages(*g, 2, spec);
    ADD_FAILURE() << "no error";
  } catch (const lang::UserError& e) {
    EXPECT_STREQ(e.what(), "a pipeline of 2 stages needs 1 split points, got 0 ()");
  }
}

void expect_error(const std::string& file, const std::string& pipeline_json,
                  const std::string& what) {
  try {
    build(file, pipeline_json);
    ADD_FAILURE() << "no error for " << pipeline_json;
  } catch (const lang::UserError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(PipelineStages, Errors) {
  expect_error(testing::mlp_path(), R"({"stages": 2, "split": ["net.l9"]})",
               "pipeline split point 'net.l9' names no trainable parameter (they are: net.l1.w");
  expect_error(testing::mlp_path(), R"({"stages": 3, "split": ["net.l3", "net.l2"]})",
               "'net.l2' starts at 'net.l2.w', not after 'net.l3'");
  expect_error(testing::mlp_path(), R"({"stages": 3, "split": ["net.l2"]})",
               "a pipeline of 3 stages needs 2 split points, got 1 (net.l2)");
  // A skip connection: l1's output and its relu both reach stage 1.
  expect_error(std::string(SPORA_SOURCE_DIR) + "/tests/parallel/pipeline_skip.sp",
               R"({"stages": 2, "split": ["net.l2"]})",
               "pipeline stages 0 and 1: 2 activations cross the cut");
  expect_error(testing::mlp_path(), R"({"stages": 20, "split": "auto"})",
               "\"split\": \"auto\" cannot cut the forward pass into 20 stages");
  EXPECT_THROW(parse_pipeline(R"({"pipeline": {"stages": 0}})", "s.json"), lang::UserError);
  EXPECT_THROW(parse_pipeline(R"({"pipeline": {"stages": 2, "schedule": "zigzag"}})"),
               lang::UserError);
  EXPECT_THROW(parse_pipeline(R"({"pipeline": {"stages": 2, "micro": 4}})"), lang::UserError);
  EXPECT_FALSE(parse_pipeline(R"({"mesh": [2]})").has_value());
}

TEST(PipelineRun, BatchMustSplitIntoMicroBatches) {
  try {
    distributed::pipeline_ranks(
        options(testing::mlp_path()),
        R"({"pipeline": {"stages": 2, "micro_batches": 3, "split": ["net.l2"]}})", "pp.json");
    ADD_FAILURE() << "no error";
  } catch (const lang::UserError& e) {
    EXPECT_STREQ(e.what(), "pp.json: the batch of 8 does not split into 3 micro-batches");
  }
}

TEST(PipelineRun, DataParallelGradientsReducedOncePerStep) {
  // Weight gradients stay partial over dp through the micro-batches (one all-reduce per step);
  // the bias gradients, reshaped after their sum, are reduced inside b_k.
  const std::string text =
      distributed::pipeline_ir(options(testing::mlp_path()),
                               R"json({"mesh": [2], "layouts": {"x": "(2, 1)", "y": "(2)"},
              "pipeline": {"stages": 2, "micro_batches": 2, "split": ["net.l2"]}})json",
                               "dp.json");
  EXPECT_NE(text.find("#   all_reduce(axes=[0]) of d net.l1.w once per step"), std::string::npos)
      << text;
  EXPECT_NE(text.find("#   all_reduce(axes=[0]) of d net.l3.w once per step"), std::string::npos);
  EXPECT_NE(text.find("#   sends f64[4,32] [m0, -] to stage 1"), std::string::npos);
}

// ---- pipelined runs against the single device ------------------------------------------------

distributed::TrainStepResult run(const std::string& file, const std::string& strategy, int ranks) {
  const distributed::TrainStepOptions o = options(file);
  const auto setup = distributed::prepare_pipeline(o, strategy);  // shared: one build for all ranks
  comm::ThreadWorld world(ranks);
  std::vector<distributed::TrainStepResult> results(static_cast<size_t>(ranks));
  world.run([&](comm::Communicator& c) {
    results[static_cast<size_t>(c.rank())] = distributed::run_pipeline(*setup, o, c);
  });
  for (int r = 1; r < ranks; ++r) {
    EXPECT_EQ(results[static_cast<size_t>(r)].losses, results[0].losses) << "rank " << r;
    EXPECT_EQ(distributed::params_checksum(results[static_cast<size_t>(r)].params),
              distributed::params_checksum(results[0].params))
        << "rank " << r;
  }
  return results[0];
}

struct Case {
  const char* name;
  const char* file;  // "mlp" or "mlp4"
  int ranks;
  const char* strategy;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class PipelinedRun : public ::testing::TestWithParam<Case> {};

TEST_P(PipelinedRun, EqualsTheSingleDeviceRun) {
  const Case& c = GetParam();
  const std::string file = std::string(c.file) == "mlp4" ? mlp4_path() : testing::mlp_path();
  const distributed::TrainStepResult ref = distributed::run_training(options(file), nullptr, "");
  ASSERT_EQ(ref.losses.size(), 3u);
  EXPECT_GT(ref.losses[0], ref.losses[2]) << "sgd lowers the loss";
  expect_same_run(ref, run(file, c.strategy, c.ranks), c.name);
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, PipelinedRun,
    ::testing::Values(
        Case{"pp2_m4_1f1b", "mlp", 2,
             R"json({"pipeline": {"stages": 2, "micro_batches": 4, "split": ["net.l2"]}})json"},
        Case{"pp2_m4_gpipe", "mlp", 2,
             R"json({"pipeline": {"stages": 2, "micro_batches": 4, "split": ["net.l3"],
                 "schedule": "gpipe"}})json"},
        Case{"pp4_m4", "mlp4", 4,
             R"json({"pipeline": {"stages": 4, "micro_batches": 4,
                 "split": ["net.l2", "net.l3", "net.l4"]}})json"},
        Case{"pp2_m2_dp2", "mlp", 4,
             R"json({"mesh": [2], "layouts": {"x": "(2, 1)", "y": "(2)"},
                 "pipeline": {"stages": 2, "micro_batches": 2, "split": ["net.l2"]}})json"},
        Case{"pp2_m2_tp2", "mlp", 4,
             R"json({"mesh": [2], "layouts": {"net.l1.w": "(1, 2)", "net.l1.b": "(2)",
                 "net.l2.w": "(2, 1)"},
                 "pipeline": {"stages": 2, "micro_batches": 2, "split": ["net.l3"]}})json"},
        Case{"pp3_auto_m8", "mlp4", 3,
             R"json({"pipeline": {"stages": 3, "micro_batches": 8, "split": "auto"}})json"},
        Case{"pp1_m4", "mlp", 1, R"json({"pipeline": {"stages": 1, "micro_batches": 4}})json"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace spora::parallel::pipeline
