// The data primitives' rows (backends/runtime/data/primitives.cpp) called as the interpreter
// calls them: shape rules read file headers at compile time and kernels check them at run
// time; reports print and record; the progress bar on a terminal redraws in place.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "backends/runtime/data/data.h"
#include "backends/runtime/data/dataset.h"
#include "backends/runtime/data/npy.h"
#include "backends/runtime/data/progress.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {
namespace {

namespace fs = std::filesystem;
using sem::Attr;
using sem::Attrs;
using sem::Tensor;
using sem::Type;
using sem::TypeP;
using sem::Value;

const sem::Primitive& row(const char* name) {
  register_primitives(sem::Registry::instance());
  const sem::Primitive* p = sem::Registry::instance().find(name);
  EXPECT_TRUE(p) << name;
  return *p;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

Attrs attrs(std::vector<std::pair<std::string, Attr>> items) {
  Attrs a;
  for (auto& [n, v] : items) a.set(n, v);
  return a;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("spora_prim_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(DataPrimitives, RowsAreNonDifferentiableAndFileRowsEffectful) {
  for (const char* n : {"fashion_mnist", "batches", "load_idx", "save_idx", "load_npy", "save_npy", "save", "load",
                        "report", "log_epoch", "save_curves"}) {
    const sem::Primitive& p = row(n);
    EXPECT_FALSE(p.differentiable) << n;
    EXPECT_EQ(p.family, "io") << n;
    const bool pure = std::string(n) == "fashion_mnist" || std::string(n) == "batches";
    EXPECT_EQ(p.effectful, !pure) << n;
  }
}

TEST(DataPrimitives, LoadNpyHeaderAtCompileTimeAndItsRunTimeCheck) {
  const std::string path = temp_path("a.npy");
  write_npy(Tensor::zeros(DType::f32, {100, 784}), path);
  const sem::Primitive& load = row("load_npy");
  const Attrs a = attrs({{"path", Attr{path}}});
  EXPECT_EQ(load.infer({}, a)->str(), "f32[100,784]");
  EXPECT_EQ(load.eval({}, a).tensor.type()->str(), "f32[100,784]");
  // The file changes after compilation: a clear error, not a tensor of an unexpected shape.
  write_npy(Tensor::zeros(DType::f32, {50, 784}), path);
  EXPECT_EQ(error_of([&] { load.eval({}, a); }),
            "'" + path + "' changed since the program was compiled: it held f32[100,784] then, f32[50,784] now");
  // dtype and shape given: no header needed at compile time, checked at run time.
  const Attrs pinned = attrs({{"path", Attr{temp_path("none.npy")}}, {"dtype", Attr{DType::f32}},
                              {"shape", Attr{std::vector<int64_t>{50, 784}}}});
  EXPECT_EQ(load.infer({}, pinned)->str(), "f32[50,784]");
  const Attrs wrong = attrs({{"path", Attr{path}}, {"dtype", Attr{DType::f64}}, {"shape", Attr{std::vector<int64_t>{50, 784}}}});
  EXPECT_EQ(error_of([&] { load.eval({}, wrong); }), "load_npy: '" + path + "' holds f32[50,784], the program expects f64[50,784]");
  const Attrs half = attrs({{"path", Attr{path}}, {"dtype", Attr{DType::i32}}});
  EXPECT_EQ(error_of([&] { load.infer({}, half); }), "load_npy: '" + path + "' holds f32[50,784], not i32");
  fs::remove(path);
}

TEST(DataPrimitives, FashionMnistTypeFromTheHeaders) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) GTEST_SKIP();
  const sem::Primitive& fm = row("fashion_mnist");
  EXPECT_EQ(fm.infer({}, attrs({{"split", Attr{std::string("train")}}, {"batch", Attr{int64_t{64}}}}))->str(),
            "iter<(f32[64,1,28,28], i32[64]), (f32[32,1,28,28], i32[32])>");
  EXPECT_EQ(fm.infer({}, attrs({{"split", Attr{std::string("test")}}, {"batch", Attr{int64_t{1000}}},
                                {"flatten", Attr{true}}}))
                ->str(),
            "iter<(f32[1000,784], i32[1000])>");
  EXPECT_EQ(error_of([&] {
              fm.infer({}, attrs({{"split", Attr{std::string("test")}}, {"batch", Attr{int64_t{8}}},
                                  {"limit", Attr{int64_t{20000}}}}));
            }),
            "fashion_mnist: limit=20000 is more than the 10000 examples of the test split");
  EXPECT_EQ(error_of([&] {
              fm.infer({}, attrs({{"split", Attr{std::string("test")}}, {"batch", Attr{int64_t{0}}}}));
            }),
            "batch must be at least 1, not 0");
}

TEST(DataPrimitives, BatchesTypes) {
  const sem::Primitive& b = row("batches");
  const Attrs a = attrs({{"batch", Attr{int64_t{4}}}});
  const TypeP x = Type::tensor(DType::f32, {10, 3}), y = Type::tensor(DType::i32, {10});
  EXPECT_EQ(b.infer({x, y}, a)->str(), "iter<(f32[4,3], i32[4]), (f32[2,3], i32[2])>");
  EXPECT_EQ(b.infer({x}, a)->str(), "iter<f32[4,3], f32[2,3]>");
  EXPECT_EQ(error_of([&] { b.infer({Type::scalar(DType::f32)}, a); }),
            "batches: x must have a first dimension to batch, not f32");
}

TEST(DataPrimitives, ReportAndLogEpoch) {
  Recorder::instance().reset();
  const sem::Primitive& report = row("report");
  const sem::Primitive& log = row("log_epoch");
  EXPECT_EQ(error_of([&] { report.infer({Type::tensor(DType::f32, {3})}, attrs({{"name", Attr{std::string("loss")}}})); }),
            "report: the value of 'loss' must be a single number, not f32[3]");
  report.eval({Value(Tensor::scalar(DType::f32, 0.5))}, attrs({{"name", Attr{std::string("loss")}}}));
  report.eval({Value(Tensor::scalar(DType::f32, 1.5))}, attrs({{"name", Attr{std::string("loss")}}}));
  std::ostringstream out;
  set_output_stream(&out);
  const Attrs a = attrs({{"metrics", Attr{std::string("test_loss,test_acc")}}});
  EXPECT_EQ(log.infer({Type::scalar(DType::i32), Type::scalar(DType::f32), Type::scalar(DType::f32)}, a)->str(), "()");
  log.eval({Value(Tensor::scalar(DType::i32, 3)), Value(Tensor::scalar(DType::f32, 0.25)),
            Value(Tensor::scalar(DType::f32, 0.875))},
           a);
  set_output_stream(nullptr);
  EXPECT_EQ(out.str(), "epoch 3  train_loss 1.0000  test_loss 0.2500  test_acc 0.8750\n");
  Recorder::instance().reset();
}

TEST(DataPrimitives, ProgressBarRedrawsInPlaceOnATerminal) {
  Recorder::instance().reset();
  std::ostringstream os;
  set_progress_output(&os, true);
  {
    ProgressBar bar("train epoch 1", 3, 30);
    Recorder::instance().report("loss", 0.5);
    bar.tick(10);
    bar.tick(10);
    bar.tick(10);
    bar.finish();
  }
  set_progress_output(nullptr, false);
  const std::string s = os.str();
  EXPECT_EQ(s.front(), '\r');
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);  // one line, redrawn
  EXPECT_NE(s.find("train epoch 1 [========================] 3/3  loss 0.5000"), std::string::npos) << s;
  EXPECT_NE(s.find("\x1b[K"), std::string::npos);
  Recorder::instance().reset();
}

}  // namespace
}  // namespace spora::runtime::data
