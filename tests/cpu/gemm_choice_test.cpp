// The per-shape GEMM library choice (backends/cpu/gemm_choice.h): both libraries against the
// reference kernel, the choice file's format, and a corrupt or stale file rebuilt.
#include "backends/cpu/gemm_choice.h"

#include <omp.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "backends/cpu/blas.h"
#include "tests/cpu/cpu_test_util.h"
#include "tests/scoped_env.h"

namespace spora::cpu::testing {
namespace {

namespace fs = std::filesystem;

// A policy for the scope, and the choices forgotten before and after.
struct ScopedPolicy {
  GemmPolicy old;
  explicit ScopedPolicy(GemmPolicy p) : old(set_gemm_policy(p)) { reset_gemm_choices(); }
  ~ScopedPolicy() {
    set_gemm_policy(old);
    reset_gemm_choices();
  }
};

// A busy-machine probe for the scope (gemm_choice.h): the tests that read the file back must
// not depend on what else the machine runs.
struct ScopedBusyProbe {
  std::function<bool()> old;
  explicit ScopedBusyProbe(std::function<bool()> p) : old(set_gemm_busy_probe(std::move(p))) {}
  ~ScopedBusyProbe() { set_gemm_busy_probe(old); }
};

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("spora_gemm_" + std::to_string(::getpid()) + "_" + name);
}

// Every policy computes matmul within the reference's tolerance on odd shapes: ragged blocks
// (the last block narrower), strided blocks of wide outputs, every transpose, broadcast batches,
// vectors, k = 0 and k = 1; and the team's bits equal one thread's under each.
TEST(CpuGemm, EveryLibraryMatchesTheReferenceOnOddShapes) {
  std::vector<GemmPolicy> policies = {GemmPolicy::openblas};
  if (have_onednn()) policies.insert(policies.end(), {GemmPolicy::onednn, GemmPolicy::autotune});
  const fs::path file = temp_file("odd.tsv");
  fs::remove(file);
  ScopedEnv env("SPORA_GEMM_CHOICES", file.string());
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const Case cases[] = {
      {{300, 129}, {129, 520}, false, false},  // 5 blocks of columns, the last 8 wide
      {{129, 300}, {129, 520}, true, false},
      {{300, 129}, {520, 129}, false, true},
      {{129, 300}, {520, 129}, true, true},
      {{700, 97}, {97, 90}, false, false},      // blocks of rows
      {{300, 1024}, {150, 1024}, false, true},  // the fewest rows a block has, the last 44
      {{1024, 300}, {1024, 150}, true, false},
      {{63, 784}, {784, 515}, false, false},
      {{784, 63}, {784, 515}, true, false},
      {{3, 129, 65}, {65, 77}, false, false},  // a broadcast batch
      {{2, 1, 40, 130}, {3, 130, 129}, false, false},
      {{97}, {97, 300}, false, false},  // vectors
      {{300, 97}, {97}, false, false},
      {{33, 1}, {1, 65}, false, false},  // k = 1 and k = 0
      {{5, 0}, {0, 7}, false, false}};
  Gen gen(31);
  for (GemmPolicy p : policies) {
    ScopedPolicy scoped(p);
    for (const Case& c : cases) {
      Attrs attrs;
      if (c.ta) attrs.set("transpose_a", true);
      if (c.tb) attrs.set("transpose_b", true);
      Tensor a = gen.tensor(DType::f32, c.a, -1, 1), b = gen.tensor(DType::f32, c.b, -1, 1);
      const int64_t k = c.a.size() == 1 ? c.a[0] : c.ta ? c.a[c.a.size() - 2] : c.a.back();
      const std::string what = std::to_string(int(p)) + ": " + a.type()->str() +
                               (c.ta ? "^T @ " : " @ ") + b.type()->str() + (c.tb ? "^T" : "");
      EXPECT_TRUE(agree("matmul", {a, b}, attrs, Tol::scaled, product_scale(a, b, k))) << what;
      const Value team = cpu_call("matmul", {a, b}, attrs);
      const Value one = cpu_call_one_thread("matmul", {a, b}, attrs);
      EXPECT_TRUE(matches(team, one, Tol::exact)) << what;
    }
  }
  fs::remove(file);
}

// A product with beta = 1 (C += A B, as the convolution's weight gradient accumulates) timed on
// its first use: the trials write into C's block, which is put back before the real call.
TEST(CpuGemm, ATimedProductThatAccumulatesKeepsItsOutput) {
  if (!have_onednn()) GTEST_SKIP() << "built without oneDNN: nothing is timed";
  const fs::path file = temp_file("beta.tsv");
  fs::remove(file);
  ScopedEnv env("SPORA_GEMM_CHOICES", file.string());
  ScopedPolicy scoped(GemmPolicy::autotune);
  const int64_t m = 96, n = 300, k = 64;  // under 2M multiply-adds: one block, one shape
  std::vector<float> a(m * k), b(k * n), c(m * n), want(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.25f - 1.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 11) * 0.125f - 0.625f;
  for (size_t i = 0; i < c.size(); ++i) c[i] = want[i] = float(i % 7) - 3.f;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q) s += double(a[r * k + q]) * b[q * n + j];
      want[r * n + j] += float(2 * s);
    }
  gemm(false, false, m, n, k, 2.f, a.data(), k, b.data(), n, 1.f, c.data(), n);
  ASSERT_EQ(gemm_choices().size(), 1u);  // it was timed
  for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-3) << i;
  fs::remove(file);
}

// The file: written after a shape is timed, read back by the next process (here: after the
// choices are forgotten) without timing again; a corrupt, truncated or foreign file is ignored
// and rewritten, never trusted.
TEST(CpuGemm, TheChoiceFileIsWrittenReadAndRebuilt) {
  if (!have_onednn()) GTEST_SKIP() << "built without oneDNN: nothing is timed";
  const fs::path file = temp_file("file.tsv");
  ScopedEnv env("SPORA_GEMM_CHOICES", file.string());
  ScopedBusyProbe quiet([] { return false; });
  const std::string header = gemm_choice_header();
  Gen gen(5);
  // Under 2M multiply-adds: one block, so one shape is timed.
  Tensor a = gen.tensor(DType::f32, {128, 80}), b = gen.tensor(DType::f32, {80, 200});
  const std::string garbage[] = {
      "", "not a choice file\n",
      header + "\nNN\t128\t200\t80\t80\t200\t200\tonednn\t1.0\tquiet\n",        // a field short
      header + "\nNN\t128\t200\t80\t80\t200\t200\tmkl\t1.0\t2.0\tquiet\n",      // no such library
      header + "\nNN\t128\t-200\t80\t80\t200\t200\tonednn\t1.0\t2.0\tquiet\n",  // negative
      header + "\nNN\t128\t200\t80\t80\t20\t200\tonednn\t1.0\t2.0\tquiet\n",    // ldb < n
      header + "\nNN\t128\t200\t80\t80\t200\t200\tonednn\tnan\t2.0\tquiet\n",
      header + "\nNN\t128\t200\t80\t80\t200\t200\tonednn\t1.0\t2.0\tidle\n",  // no such state
      header + "\nNN\t128\t200\t80\t80\t200\t200\tonednn\t1.0\t2.0\tquiet",   // no final newline
      "spora-gemm-choices 3 | cpu=another "
      "machine\nNN\t128\t200\t80\t80\t200\t200\topenblas\t1\t2\tquiet\n",
      // this machine's file of version 2 (medians, no machine state)
      "spora-gemm-choices 2" + header.substr(header.find(" | ")) +
          "\nNN\t128\t200\t80\t80\t200\t200\topenblas\t1\t2\n"};
  for (const std::string& text : garbage) {
    std::string why;
    EXPECT_FALSE(parse_gemm_choices(text, header, &why)) << text;
    EXPECT_NE(why.find("line "), std::string::npos) << why;
    { std::ofstream(file) << text; }
    ScopedPolicy scoped(GemmPolicy::autotune);
    EXPECT_TRUE(agree("matmul", {a, b}, {}, Tol::scaled, product_scale(a, b, 80))) << text;
    const std::string now = read(file);
    const auto parsed = parse_gemm_choices(now, header);
    ASSERT_TRUE(parsed) << now;
    ASSERT_EQ(parsed->size(), 1u) << now;
    const GemmChoice& c = (*parsed)[0];
    EXPECT_EQ(c.shape, (GemmShape{false, false, 128, 200, 80, 80, 200, 200}));
    EXPECT_EQ(c.lib, c.onednn_us < c.openblas_us ? GemmLib::onednn : GemmLib::openblas);
  }
  // Read back: a choice the file holds is taken as it is (planted here against the times).
  std::vector<GemmChoice> planted = {
      {{false, false, 128, 200, 80, 80, 200, 200}, GemmLib::onednn, 1.0, 99.0}};
  { std::ofstream(file) << format_gemm_choices(header, planted); }
  {
    ScopedPolicy scoped(GemmPolicy::autotune);
    EXPECT_TRUE(agree("matmul", {a, b}, {}, Tol::scaled, product_scale(a, b, 80)));
    const auto held = gemm_choices();
    ASSERT_EQ(held.size(), 1u);
    EXPECT_EQ(held[0].onednn_us, 99.0);                           // loaded, not timed again
    EXPECT_EQ(read(file), format_gemm_choices(header, planted));  // not rewritten
  }
  fs::remove(file);
}

// A shape timed while the machine is busy is written marked busy. It stands for the processes
// that meet it while the machine stays busy; the first process that meets it on a quiet machine
// times it again and writes a quiet choice. Within one process a choice, once used, stays.
TEST(CpuGemm, AChoiceTimedOnABusyMachineIsTimedAgainWhenItIsQuiet) {
  if (!have_onednn()) GTEST_SKIP() << "built without oneDNN: nothing is timed";
  const fs::path file = temp_file("busy.tsv");
  fs::remove(file);
  ScopedEnv env("SPORA_GEMM_CHOICES", file.string());
  const std::string header = gemm_choice_header();
  Gen gen(6);
  Tensor a = gen.tensor(DType::f32, {96, 72}), b = gen.tensor(DType::f32, {72, 150});
  const GemmShape shape{false, false, 96, 150, 72, 72, 150, 150};
  auto product_agrees = [&] {
    return agree("matmul", {a, b}, {}, Tol::scaled, product_scale(a, b, 72));
  };
  auto file_choice = [&] {
    const auto parsed = parse_gemm_choices(read(file), header);
    EXPECT_TRUE(parsed && parsed->size() == 1u) << read(file);
    return parsed && parsed->size() == 1u ? (*parsed)[0] : GemmChoice{};
  };
  bool busy = false;
  int asked = 0;
  ScopedBusyProbe probe([&] {
    ++asked;
    return busy || asked == 2;  // the first timing: quiet when it begins, busy when it ends
  });
  {
    ScopedPolicy scoped(GemmPolicy::autotune);
    EXPECT_TRUE(product_agrees());
    EXPECT_EQ(asked, 2);
    const GemmChoice c = file_choice();
    EXPECT_EQ(c.shape, shape);
    EXPECT_TRUE(c.busy);
    EXPECT_GT(c.openblas_us, 0.0);
  }
  // Planted busy choice, busy machine: taken as it is, not timed, file untouched.
  const std::vector<GemmChoice> planted = {{shape, GemmLib::onednn, 1.0, 99.0, true}};
  { std::ofstream(file) << format_gemm_choices(header, planted); }
  busy = true;
  {
    ScopedPolicy scoped(GemmPolicy::autotune);
    EXPECT_TRUE(product_agrees());
    ASSERT_EQ(gemm_choices().size(), 1u);
    EXPECT_EQ(gemm_choices()[0].onednn_us, 99.0);
    // The machine turns quiet: this process keeps the choice it used.
    busy = false;
    EXPECT_TRUE(product_agrees());
    EXPECT_EQ(gemm_choices()[0].onednn_us, 99.0);
    EXPECT_EQ(read(file), format_gemm_choices(header, planted));
  }
  // A new process on the quiet machine times the shape again and writes a quiet choice.
  {
    ScopedPolicy scoped(GemmPolicy::autotune);
    EXPECT_TRUE(product_agrees());
    const GemmChoice c = file_choice();
    EXPECT_EQ(c.shape, shape);
    EXPECT_FALSE(c.busy);
    EXPECT_NE(c.onednn_us, 99.0);
  }
  // A process that timed the shape busy does not overwrite another's quiet choice.
  const std::vector<GemmChoice> quiet = {{shape, GemmLib::openblas, 7.0, 8.0, false}};
  busy = true;
  {
    ScopedPolicy scoped(GemmPolicy::autotune);
    { std::ofstream(file) << format_gemm_choices(header, {}); }  // not there: timed, busy
    EXPECT_TRUE(product_agrees());
    EXPECT_TRUE(file_choice().busy);
    { std::ofstream(file) << format_gemm_choices(header, quiet); }  // another process wrote
    Tensor c = gen.tensor(DType::f32, {200, 72});
    EXPECT_TRUE(agree("matmul", {c, b}, {}, Tol::scaled, product_scale(c, b, 72)));  // a save
    const auto parsed = parse_gemm_choices(read(file), header);
    ASSERT_TRUE(parsed) << read(file);
    bool found = false;
    for (const GemmChoice& g : *parsed)
      if (g.shape == shape) {
        found = true;
        EXPECT_FALSE(g.busy);
        EXPECT_EQ(g.openblas_us, 7.0);
      }
    EXPECT_TRUE(found) << read(file);
  }
  fs::remove(file);
}

TEST(CpuGemm, TheFormatRoundTrips) {
  const std::string header = "spora-gemm-choices 3 | cpu=test";
  std::vector<GemmChoice> list = {
      {{false, true, 64, 128, 784, 784, 784, 512}, GemmLib::openblas, 12.5, 30.25, false},
      {{true, false, 1, 1, 1, 1, 1, 1}, GemmLib::openblas, 0, 0, true}};
  if (have_onednn()) list[1].lib = GemmLib::onednn;
  const std::string text = format_gemm_choices(header, list);
  const auto back = parse_gemm_choices(text, header);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*back)[i].shape, list[i].shape);
    EXPECT_EQ((*back)[i].lib, list[i].lib);
    EXPECT_EQ((*back)[i].openblas_us, list[i].openblas_us);
    EXPECT_EQ((*back)[i].onednn_us, list[i].onednn_us);
    EXPECT_EQ((*back)[i].busy, list[i].busy);
  }
  EXPECT_EQ(parse_gemm_choices(header + "\n", header)->size(), 0u);
  EXPECT_FALSE(parse_gemm_choices(text, header + "x"));
}

}  // namespace
}  // namespace spora::cpu::testing
