// Datasets (backends/runtime/data/dataset.h): batch plans and the part protocol, shuffling
// (a permutation per walk, reproducible from the seed), Fashion-MNIST batches against the raw
// files, the prefetch thread (early stop, errors), and the reports (progress.h).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "backends/runtime/data/dataset.h"
#include "backends/runtime/data/files.h"
#include "backends/runtime/data/progress.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {
namespace {

namespace fs = std::filesystem;
using sem::Tensor;
using sem::Value;

const std::string kFashion = "/usr/share/datasets/fashion-mnist";

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

// x[i] = [i, 10 i], y[i] = i: every row says which example it is.
std::shared_ptr<TensorBatches> numbered(int64_t n, BatchOptions o, const std::string& key) {
  Tensor x = Tensor::empty(DType::f32, {n, 2});
  Tensor y = Tensor::empty(DType::i32, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[2 * i] = static_cast<float>(i);
    x.data<float>()[2 * i + 1] = static_cast<float>(10 * i);
    y.data<int32_t>()[i] = static_cast<int32_t>(i);
  }
  return std::make_shared<TensorBatches>(std::vector<Tensor>{x, y}, o, key);
}

// The example indices of one walk (driving it as the interpreter does: part by part).
std::vector<std::vector<int32_t>> walk(sem::Iterable& it, int64_t parts, std::vector<sem::Shape>* shapes = nullptr) {
  std::vector<std::vector<int32_t>> batches;
  it.reset();
  for (int64_t part = 0; part < parts; ++part) {
    Value v;
    while (it.next_in(part, v)) {
      const Tensor& x = v.items()[0].tensor;
      const Tensor& y = v.items()[1].tensor;
      if (shapes) shapes->push_back(x.shape());
      std::vector<int32_t> ids;
      for (int64_t r = 0; r < y.numel(); ++r) {
        ids.push_back(y.data<int32_t>()[r]);
        EXPECT_EQ(x.data<float>()[2 * r], static_cast<float>(ids.back()));  // rows stay paired
        EXPECT_EQ(x.data<float>()[2 * r + 1], static_cast<float>(10 * ids.back()));
      }
      batches.push_back(ids);
    }
  }
  return batches;
}

TEST(Batching, PlanTypesAndParts) {
  const BatchPlan p = plan_batches(60000, 64, false);
  EXPECT_EQ(p.full, 937);
  EXPECT_EQ(p.rem, 32);  // 60000 % 64
  EXPECT_EQ(p.count(), 938);
  EXPECT_EQ(p.part(936), 0);
  EXPECT_EQ(p.part(937), 1);
  auto ts = p.types({sem::Type::tensor(DType::f32, {1, 28, 28}), sem::Type::scalar(DType::i32)});
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0]->str(), "(f32[64,1,28,28], i32[64])");
  EXPECT_EQ(ts[1]->str(), "(f32[32,1,28,28], i32[32])");
  EXPECT_EQ(sem::Type::iterator("", ts)->str(), "iter<(f32[64,1,28,28], i32[64]), (f32[32,1,28,28], i32[32])>");
  EXPECT_EQ(plan_batches(60000, 64, true).types({sem::Type::scalar(DType::i32)}).size(), 1u);
  // Fewer examples than a batch: one part, the partial batch.
  const BatchPlan small = plan_batches(10, 64, false);
  EXPECT_EQ(small.count(), 1);
  EXPECT_EQ(small.part(0), 0);
  EXPECT_EQ(small.types({sem::Type::scalar(DType::i32)})[0]->str(), "i32[10]");
  EXPECT_EQ(error_of([] { plan_batches(10, 0, false); }), "batch must be at least 1, not 0");
}

TEST(Batching, PartialLastBatchIsItsOwnPart) {
  reset_walks();
  BatchOptions o;
  o.batch = 4;
  auto it = numbered(10, o, "t1");
  std::vector<sem::Shape> shapes;
  auto batches = walk(*it, 2, &shapes);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(shapes[0], (sem::Shape{4, 2}));
  EXPECT_EQ(shapes[2], (sem::Shape{2, 2}));
  EXPECT_EQ(batches[2], (std::vector<int32_t>{8, 9}));
  // Part 0 stops before the partial batch without consuming it; part 1 gets it.
  it->reset();
  Value v;
  int full = 0;
  while (it->next_in(0, v)) ++full;
  EXPECT_EQ(full, 2);
  EXPECT_FALSE(it->next_in(0, v));
  ASSERT_TRUE(it->next_in(1, v));
  EXPECT_EQ(v.items()[1].tensor.numel(), 2);
  EXPECT_FALSE(it->next_in(1, v));
  // drop_last leaves it out.
  o.drop_last = true;
  auto dropped = numbered(10, o, "t2");
  EXPECT_EQ(walk(*dropped, 1).size(), 2u);
}

TEST(Shuffling, APermutationPerWalkReproducibleFromTheSeed) {
  const auto a = permutation(1000, 7, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);  // every index once
  EXPECT_EQ(permutation(1000, 7, 0), a);                                              // reproducible
  EXPECT_NE(permutation(1000, 7, 1), a);                                              // another epoch
  EXPECT_NE(permutation(1000, 8, 0), a);                                              // another seed
  int fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += a[static_cast<size_t>(i)] == i;
  EXPECT_LT(fixed, 10);  // a shuffle, not the identity (expected about 1 fixed point)

  // Through the iterator: each walk visits every example once, walks differ, and a new
  // iterator with the same description continues the walk count (an epoch loop re-creates it).
  reset_walks();
  BatchOptions o;
  o.batch = 8;
  o.shuffle = true;
  o.seed = 3;
  auto flat = [](const std::vector<std::vector<int32_t>>& bs) {
    std::vector<int32_t> all;
    for (const auto& b : bs) all.insert(all.end(), b.begin(), b.end());
    return all;
  };
  const auto w0 = flat(walk(*numbered(50, o, "s"), 2));
  const auto w1 = flat(walk(*numbered(50, o, "s"), 2));
  for (const auto& w : {w0, w1}) {
    std::set<int32_t> seen(w.begin(), w.end());
    EXPECT_EQ(w.size(), 50u);
    EXPECT_EQ(seen.size(), 50u);
  }
  EXPECT_NE(w0, w1);
  const auto p0 = permutation(50, 3, 0), p1 = permutation(50, 3, 1);
  EXPECT_EQ(w0, std::vector<int32_t>(p0.begin(), p0.end()));
  EXPECT_EQ(w1, std::vector<int32_t>(p1.begin(), p1.end()));
  reset_walks();
  EXPECT_EQ(flat(walk(*numbered(50, o, "s"), 2)), w0);  // a new run starts over
}

TEST(Prefetch, StoppingEarlyJoinsTheThread) {
  reset_walks();
  BatchOptions o;
  o.batch = 1;
  o.prefetch = 3;
  auto it = numbered(10000, o, "early");
  it->reset();
  Value v;
  ASSERT_TRUE(it->next_in(0, v));
  ASSERT_TRUE(it->next_in(0, v));
  // The thread fills the queue and waits: it never runs ahead more than `prefetch` batches.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LE(it->prefetcher()->produced(), 2 + 3 + 1);
  const auto t0 = std::chrono::steady_clock::now();
  it->stop();  // as leaving the loop early (an error in the body) does
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_FALSE(it->next_in(0, v));
  // Destroying an iterator mid-walk joins too, and a new walk starts cleanly.
  auto other = numbered(10000, o, "early2");
  other->reset();
  ASSERT_TRUE(other->next_in(0, v));
  other.reset();
  it->reset();
  ASSERT_TRUE(it->next_in(0, v));
  EXPECT_EQ(v.items()[1].tensor.data<int32_t>()[0], 0);
}

TEST(Prefetch, AnErrorOnTheThreadReachesTheLoop) {
  // A Fashion-MNIST directory whose image file is corrupt gzip: the thread fails while
  // decoding, and next() reports it (after a short wait, never a hang).
  if (!fs::exists(kFashion + "/t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const fs::path dir = fs::temp_directory_path() / ("spora_fm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFashion + "/t10k-labels-idx1-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz",
                fs::copy_options::overwrite_existing);
  {
    // A valid header (so compile-time checks pass), then garbage in the middle of the stream.
    std::ifstream in(kFashion + "/t10k-images-idx3-ubyte.gz", std::ios::binary);
    std::string bytes(std::istreambuf_iterator<char>(in), {});
    for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    std::ofstream out(dir / "t10k-images-idx3-ubyte.gz", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  FashionOptions fo;
  fo.root = dir.string();
  fo.split = "test";
  const FashionFiles files = fashion_files(fo);
  EXPECT_EQ(files.n, 10000);
  BatchOptions o;
  o.batch = 100;
  FashionMnist it(fo, o, files);
  it.reset();
  Value v;
  const std::string e = error_of([&] {
    while (it.next_in(0, v)) {
    }
  });
  EXPECT_EQ(
      e.rfind("'" + (dir / "t10k-images-idx3-ubyte.gz").string() + "' is corrupt at byte ", 0), 0u)
      << e;
  fs::remove_all(dir);
  // A missing directory is a clear error naming the path.
  fo.root = "/nonexistent/fashion";
  EXPECT_EQ(error_of([&] { fashion_files(fo); }),
            "fashion_mnist: cannot find the test images: '/nonexistent/fashion/t10k-images-idx3-ubyte.gz' does not "
            "exist (nor '/nonexistent/fashion/t10k-images-idx3-ubyte'); install the Debian package "
            "dataset-fashion-mnist, or pass root=<directory of the idx files>");
}

TEST(FashionMnistData, BatchesMatchTheRawFiles) {
  if (!fs::exists(kFashion + "/t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  reset_walks();
  // Independently decoded bytes.
  auto gunzip = [](const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    std::vector<uint8_t> out(1 << 24);
    const int n = gzread(f, out.data(), static_cast<unsigned>(out.size()));
    gzclose(f);
    out.resize(static_cast<size_t>(n));
    return out;
  };
  const auto images = gunzip(kFashion + "/t10k-images-idx3-ubyte.gz");
  const auto labels = gunzip(kFashion + "/t10k-labels-idx1-ubyte.gz");
  FashionOptions fo;
  fo.split = "test";
  fo.limit = 300;
  const FashionFiles files = fashion_files(fo);
  EXPECT_EQ(files.n, 300);
  BatchOptions o;
  o.batch = 128;
  o.shuffle = true;
  o.seed = 5;
  FashionMnist it(fo, o, files);
  EXPECT_EQ(it.plan().count(), 3);
  it.reset();
  const auto perm = permutation(300, 5, 0);
  int64_t seen = 0;
  for (int64_t part = 0; part < 2; ++part) {
    Value v;
    while (it.next_in(part, v)) {
      const Tensor& x = v.items()[0].tensor;
      const Tensor& y = v.items()[1].tensor;
      const int64_t rows = y.numel();
      EXPECT_EQ(x.shape(), (sem::Shape{rows, 1, 28, 28}));
      EXPECT_EQ(rows, part == 0 ? 128 : 44);
      for (int64_t r = 0; r < rows; ++r, ++seen) {
        const int64_t e = perm[static_cast<size_t>(seen)];
        EXPECT_EQ(y.data<int32_t>()[r], labels[8 + e]);
        for (int k = 0; k < 784; k += 97) {
          const float want = static_cast<float>((images[16 + e * 784 + k] / 255.0 - 0.2860) / 0.3530);
          EXPECT_FLOAT_EQ(x.data<float>()[r * 784 + k], want);
        }
      }
    }
  }
  EXPECT_EQ(seen, 300);
  // Without shuffling, the first label is the file's first: 9 (ankle boot).
  o.shuffle = false;
  fo.flatten = true;
  FashionMnist plain(fo, o, files);
  Value v;
  plain.reset();
  ASSERT_TRUE(plain.next_in(0, v));
  EXPECT_EQ(v.items()[0].tensor.shape(), (sem::Shape{128, 784}));
  EXPECT_EQ(v.items()[1].tensor.data<int32_t>()[0], 9);
  // Over the whole test split the normalised pixels have about mean 0 and std 1 (the
  // statistics 0.2860 / 0.3530 are the training set's).
  fo.limit = 0;
  fo.flatten = false;
  o.batch = 1000;
  FashionMnist all(fo, o, fashion_files(fo));
  double sum = 0, sq = 0;
  int64_t n = 0;
  all.reset();
  while (all.next_in(0, v)) {
    const Tensor& x = v.items()[0].tensor;
    for (int64_t i = 0; i < x.numel(); ++i) {
      sum += x.data<float>()[i];
      sq += static_cast<double>(x.data<float>()[i]) * x.data<float>()[i];
    }
    n += x.numel();
  }
  EXPECT_EQ(n, 10000 * 784);
  EXPECT_NEAR(sum / static_cast<double>(n), 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(n)), 1.0, 0.02);
}

TEST(Reports, EpochLinesCsvAndSvg) {
  Recorder& r = Recorder::instance();
  r.reset();
  for (double l : {1.0, 0.5, 0.25, 0.25}) r.report("loss", l);
  EXPECT_EQ(r.window_summary(), "loss 0.5000");
  EXPECT_EQ(r.log_epoch(1, {"test_loss", "test_acc"}, {0.75, 0.8125}),
            "epoch 1  train_loss 0.5000  test_loss 0.7500  test_acc 0.8125");
  r.report("loss", 0.125);
  EXPECT_EQ(r.log_epoch(2, {"test_acc"}, {0.875}), "epoch 2  train_loss 0.1250  test_acc 0.8750");
  // A metric given by name is not repeated from the reports.
  r.report("loss", 3.0);
  EXPECT_EQ(r.log_epoch(3, {"train_loss"}, {2.0}), "epoch 3  train_loss 2.0000");
  EXPECT_EQ(r.csv(),
            "epoch,train_loss,test_loss,test_acc\n"
            "1,0.5,0.75,0.8125\n"
            "2,0.125,,0.875\n"
            "3,2,,\n");
  const std::string svg = r.svg();
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  for (const char* part : {">loss</text>", ">accuracy</text>", ">epoch</text>", ">train_loss</text>",
                           ">train_loss (batches, smoothed)</text>", ">test_acc</text>", "<polyline", "<circle", "</svg>"})
    EXPECT_NE(svg.find(part), std::string::npos) << part;
  // Atomic files.
  const fs::path dir = fs::temp_directory_path() / ("spora_curves_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  r.save_curves((dir / "run").string());
  std::ifstream csv(dir / "run.csv");
  std::string first;
  std::getline(csv, first);
  EXPECT_EQ(first, "epoch,train_loss,test_loss,test_acc");
  EXPECT_TRUE(fs::exists(dir / "run.svg"));
  fs::remove_all(dir);
  r.reset();
  EXPECT_EQ(format_metric(1.23456e-5), "1.2346e-05");
}

TEST(Reports, StepTimeIsTheMedianBetweenBatches) {
  using namespace std::chrono;
  const steady_clock::time_point t0{};
  // The first batch's costs fall before the first tick; a 500 ms outlier between batches does
  // not move the median of 10, 12, 11, 500 ms (the mean would be 133 ms).
  const std::vector<steady_clock::time_point> ticks = {t0, t0 + milliseconds(10),
                                                       t0 + milliseconds(22), t0 + milliseconds(33),
                                                       t0 + milliseconds(533)};
  EXPECT_DOUBLE_EQ(median_step_seconds(ticks), 0.012);
  EXPECT_DOUBLE_EQ(median_step_seconds({t0, t0 + milliseconds(7)}), 0.007);
  EXPECT_EQ(median_step_seconds({t0}), 0.0);
}

TEST(Reports, ProgressBarLinesWhenNotATerminal) {
  Recorder::instance().reset();
  std::ostringstream os;
  set_progress_output(&os, false);
  reset_walks();
  BatchOptions o;
  o.batch = 10;
  o.progress = true;
  auto it = numbered(95, o, "bar");
  it->reset();
  Value v;
  for (int64_t part = 0; part < 2; ++part)
    while (it->next_in(part, v)) Recorder::instance().report("loss", 2.0);
  set_progress_output(nullptr, false);
  std::vector<std::string> lines;
  std::istringstream in(os.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << os.str();  // 25 %, 50 %, 75 %, done
  EXPECT_EQ(lines[0].rfind("batches epoch 1  3/10  loss 2.0000", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("batches epoch 1  5/10", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("batches epoch 1  8/10", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("batches epoch 1 10/10  loss 2.0000", 0), 0u) << lines[3];
  EXPECT_NE(lines[3].find("samples/s"), std::string::npos);
  EXPECT_NE(lines[3].find(" total"), std::string::npos);
  EXPECT_NE(lines[3].find("/step"), std::string::npos) << lines[3];  // the median between batches
  EXPECT_EQ(lines[2].find("/step"), std::string::npos) << lines[2];
  EXPECT_NE(lines[1].find(" left"), std::string::npos);
  Recorder::instance().reset();
}

}  // namespace
}  // namespace spora::runtime::data
