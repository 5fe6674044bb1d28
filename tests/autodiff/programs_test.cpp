// The rules through the whole pipeline: .sp programs (in f64, LowerOptions::x64) that take
// Hessian-vector products three ways, forward over reverse (jvp(grad(f))), reverse over
// reverse (grad of <grad f, v>) and central differences of grad f, in graph and eager mode.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "grad_check_util.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"

namespace spora::autodiff::testing {
namespace {

// Runs a program; returns the numbers of each printed line.
// fold: graph mode runs the module after fold_transposes_into_products (fusion.h's first step).
std::vector<std::vector<double>> run_program(const std::string& text, bool eager,
                                             bool fold = false) {
  setup();
  // One file per process and test: ctest runs the tests of this file as concurrent processes.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = ::testing::TempDir() + "spora_ad_program_" + std::to_string(::getpid()) + "_" +
                     (info ? info->name() : "none") + ".sp";
  std::ofstream(path) << text;
  std::ostringstream printed;
  ops::set_print_stream(&printed);
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions options;
  options.x64 = true;
  options.eager = eager;
  sem::Compiled c = sem::compile_file(sources, diags, path, options);
  for (const auto& d : diags.diagnostics()) ADD_FAILURE() << d.message;
  if (c.module && !eager && fold) passes::fold_transposes_into_products(*c.module);
  if (c.module && !eager) sem::Interpreter(*c.module).run_entry();
  ops::set_print_stream(nullptr);
  std::remove(path.c_str());
  std::vector<std::vector<double>> lines;
  std::istringstream in(printed.str());
  const std::regex number(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|nan|inf)");
  for (std::string line; std::getline(in, line);) {
    lines.emplace_back();
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it)
      lines.back().push_back(std::stod(it->str()));
  }
  return lines;
}

// Prints hv_fwd, hv_rev, hv_fd for `net(w)` (a def taking the weights first) at w along v.
std::string hvp_program(const std::string& defs, const std::string& args, const std::string& w,
                        const std::string& v) {
  return defs + R"(
def main() {
    let w = )" +
         w + R"(
    let v = )" +
         v + R"(
    let gr = fn (w) => grad(net)(w, )" +
         args + R"()
    let (g0, hv_fwd) = jvp(gr, (w,), (v,))
    let hv_rev = grad(fn (w) => sum(gr(w) * v))(w)
    let h = 0.0001
    let hv_fd = (gr(w + h * v) - gr(w - h * v)) / (2.0 * h)
    print(hv_fwd)
    print(hv_rev)
    print(hv_fd)
}
)";
}

void expect_hvp_agree(const std::string& program) {
  for (bool eager : {false, true}) {
    auto lines = run_program(program, eager);
    ASSERT_EQ(lines.size(), 3u) << (eager ? "eager" : "graph");
    ASSERT_EQ(lines[0].size(), lines[1].size());
    ASSERT_EQ(lines[0].size(), lines[2].size());
    ASSERT_FALSE(lines[0].empty());
    for (size_t i = 0; i < lines[0].size(); ++i) {
      EXPECT_TRUE(close(lines[0][i], lines[1][i], 1e-10))
          << "forward vs reverse, element " << i << (eager ? " (eager)" : "");
      EXPECT_TRUE(close(lines[0][i], lines[2][i], 1e-6))
          << "forward vs differences, element " << i << (eager ? " (eager)" : "");
    }
  }
}

TEST(Programs, HessianVectorProductOfAClassifierLoss) {
  expect_hvp_agree(hvp_program(
      R"(
def net(w, x, y) {
    let z = x @ w
    return cross_entropy(z, y) + sum(log_softmax(z, axis=0) * z) * 0.1 + logsumexp(z * z) * 0.01
}
)",
      "[[1.0, 2.0, -1.0], [0.5, -0.3, 0.2], [2.0, 0.1, 0.7], [-1.2, 0.4, 1.1]], [0, 2, 1, 1]",
      "[[0.1, -0.2, 0.3], [0.3, 0.4, -0.1], [-0.5, 0.2, 0.6]]",
      "[[1.0, 0.5, 0.1], [-0.3, 0.2, 0.4], [0.7, -1.0, 0.2]]"));
}

TEST(Programs, HessianVectorProductOfAConvNet) {
  expect_hvp_agree(hvp_program(R"(
def net(w, x, g, b) {
    let y = conv2d(x, w, stride=1, padding=1)
    let (z, m, v) = batch_norm(y, g, b, zeros(shape=[2]), ones(shape=[2]), training=true)
    let p = avg_pool2d(gelu(z), kernel=2)
    let q = layer_norm(reshape(p, shape=[2, 8]))
    return sum(softmax(q, axis=-1) * q) + logsumexp(q) + mean(sigmoid(q) * p[0, 0, 0, 0]) + sum(v * m)
}
)",
                               "[[[[0.1, 0.2, -0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, "
                               "1.2], [1.3, -1.4, 1.5, 0.6]]], "
                               "[[[0.2, -0.1, 0.3, 0.5], [-0.4, 0.6, 0.1, 0.9], [0.8, -0.7, 0.2, "
                               "0.3], [0.5, 0.4, -0.6, 0.1]]]], "
                               "[1.5, 0.7], [0.1, -0.2]",
                               "[[[[0.3, -0.2, 0.1], [0.4, 0.5, -0.6], [0.2, 0.1, 0.3]]], [[[-0.3, "
                               "0.2, 0.5], [0.1, -0.4, 0.6], [0.2, 0.3, -0.1]]]]",
                               "[[[[0.1, 0.2, 0.3], [0.4, -0.5, 0.6], [0.7, 0.8, -0.9]]], [[[1.0, "
                               "-0.1, 0.2], [0.3, 0.4, 0.5], [-0.6, 0.7, 0.8]]]]"));
}

TEST(Programs, HessianVectorProductThroughShapeOps) {
  expect_hvp_agree(hvp_program(R"(
def net(w, idx) {
    let a = concat((w, w * w), axis=1)
    let s = stack((a[:, 1:3], transpose(a)[0:2, ::-1][:, 0:2]), axis=0)
    let gth = gather(w, idx, axis=0)
    return sum(exp(s) * flatten(s)[0, 1]) + prod(tanh(gth) + 2.0) + max(sin(w)) + sum(w ** 3.0) / mean(exp(w))
}
)",
                               "[0, 1, 1]", "[[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]]",
                               "[[1.0, -0.5, 0.2], [0.3, 0.7, -0.4]]"));
}

TEST(Programs, SecondDerivativeOfAScalarFunction) {
  // d2/dt2 (t tanh t) = 2 sech^2 t - 2 t tanh t sech^2 t
  for (bool eager : {false, true}) {
    auto lines =
        run_program("def main() { print(grad(grad(fn (t) => tanh(t) * t))(0.5)) }\n", eager);
    ASSERT_EQ(lines.size(), 1u);
    double t = std::tanh(0.5), s2 = 1 - t * t;
    EXPECT_NEAR(lines[0].at(0), 2 * s2 - 2 * 0.5 * t * s2, 1e-12);
  }
}

// Recursive functions without declared return types (the base case gives the type), direct
// and mutual, with scalar, matrix and tuple results: reverse mode and forward mode along v
// agree with central differences, and the value with its closed form, in graph and eager mode.
TEST(Programs, GradientsThroughRecursionWithoutReturnTypes) {
  const std::string text = R"(
def pw(x, n: i32) = 1.0 if n == 0 else x * pw(x, n - 1)
def chain(w, x, n: i32) = x if n == 0 else tanh(chain(w, x, n - 1) @ w)
def ping(w, n: i32) = w if n == 0 else sin(pong(w, n - 1))
def pong(w, n: i32) = w * w if n == 0 else ping(w, n - 1) * 2.0
def fib2(x, n: i32) {
    if n == 0 {
        return (x, x * 0.0 + 1.0)
    }
    let (a, b) = fib2(x, n - 1)
    return (b, a + b * x)
}
def loss(w) = pw(sum(w), 3) + sum(chain(w, [[0.5, -0.2]], 3)) + sum(ping(w, 3)) + fib2(sum(w * w), 4)[1]
def main() {
    let w = [[0.3, -0.2], [0.1, 0.4]]
    let v = [[1.0, -0.5], [0.2, 0.7]]
    let h = 0.000001
    print(pw(1.5, 3), fib2(1.5, 4)[1], ping(0.7, 3))
    print(sum(grad(loss)(w) * v))
    let (y, t) = jvp(loss, (w,), (v,))
    print(t)
    print((loss(w + h * v) - loss(w - h * v)) / (2.0 * h))
}
)";
  for (bool eager : {false, true}) {
    auto lines = run_program(text, eager);
    ASSERT_EQ(lines.size(), 4u) << (eager ? "eager" : "graph");
    // 1.5^3; fib2's recurrence (a, b) -> (b, a + b x) from (x, 1), four times; sin(2 sin(0.49)).
    ASSERT_EQ(lines[0].size(), 3u);
    EXPECT_NEAR(lines[0][0], 3.375, 1e-12);
    EXPECT_NEAR(lines[0][1], 22.375, 1e-12);
    EXPECT_NEAR(lines[0][2], std::sin(2 * std::sin(0.49)), 1e-12);
    const double reverse = lines[1].at(0), forward = lines[2].at(0), differences = lines[3].at(0);
    EXPECT_TRUE(close(reverse, forward, 1e-10)) << reverse << " vs " << forward << (eager ? " (eager)" : "");
    EXPECT_TRUE(close(reverse, differences, 1e-6)) << reverse << " vs " << differences << (eager ? " (eager)" : "");
  }
}

// `text` compiled (f32) from a file of its own named after `tag`, removed again.
sem::Compiled compile_text(const std::string& text, const std::string& tag,
                           lang::SourceManager& sources, lang::DiagnosticEngine& diags) {
  const std::string path =
      ::testing::TempDir() + "spora_ad_" + tag + "_" + std::to_string(::getpid()) + ".sp";
  std::ofstream(path) << text;
  sem::Compiled c = sem::compile_file(sources, diags, path);
  std::remove(path.c_str());
  return c;
}

// How many applications of `prim` the compiled program (every graph) holds; with `type`, only
// those whose result prints as it.
size_t count_primitive(const std::string& text, const std::string& prim, bool fold = false,
                       const std::string& type = "") {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::Compiled c = compile_text(text, "count", sources, diags);
  EXPECT_TRUE(c.module);
  if (c.module && fold) passes::fold_transposes_into_products(*c.module);
  size_t count = 0;
  if (c.module)
    for (const auto& g : c.module->graphs())
      for (const ir::Node* n : g->nodes)
        count += n->is_prim(prim) && (type.empty() || (n->type && n->type->str() == type));
  return count;
}

// Activity analysis (autodiff/reverse.cpp): grad with respect to w emits nothing for xs,
// which it only reads (no slice_grad: in eager mode, which runs the derivative as emitted,
// an RNN summed one zero-filled copy of its inputs per time step), and the gradient of w is
// unchanged, in graph and eager mode.
TEST(Programs, NoAdjointsForWhatIsNotDifferentiated) {
  setup();
  const std::string text = R"(
def f(w, xs) = sum(xs[0] @ w) + sum(xs[1] @ w)
def main() {
    let xs = [[[1.0, 2.0]], [[3.0, 4.0]]]
    let w = [[0.5], [0.25]]
    print(grad(f)(w, xs))
}
)";
  EXPECT_EQ(count_primitive(text, "slice"), 2u);  // the forward's xs[0] and xs[1]
  EXPECT_EQ(count_primitive(text, "slice_grad"), 0u);
  // d/dw = xs[0]^T 1 + xs[1]^T 1 = [[4], [6]].
  for (bool eager : {false, true}) {
    const auto lines = run_program(text, eager);
    ASSERT_EQ(lines.size(), 1u) << (eager ? "eager" : "graph");
    EXPECT_EQ(lines[0], (std::vector<double>{4, 6})) << (eager ? "eager" : "graph");
  }
}

// The same for the products' own rules (rules.h Emitter::wants): grad with respect to the
// weights emits no cotangent for the input batch, neither x's product with w^T nor the
// convolution's input gradient (eager mode ran both: W2's step a [64, 512] x [512, 784]
// product, W3's a transposed convolution over its images), and the weights' gradients are
// the closed form's (the kernel's: graph mode's, whose rules the finite-difference tests
// check), in graph and eager mode.
TEST(Programs, ProductsEmitNoCotangentForTheirData) {
  setup();
  const std::string text = R"(
def f(w, k, x, img) = sum((x @ w) ** 2.0) + sum(conv2d(img, k, padding=1) ** 2.0)
def main() {
    let x = [[1.0, 2.0], [3.0, -1.0]]
    let w = [[0.5, -1.0], [0.25, 2.0]]
    let img = reshape(arange(0.0, 16.0) * 0.125, (1, 1, 4, 4))
    let k = reshape(arange(0.0, 9.0) * 0.25 - 1.0, (1, 1, 3, 3))
    let (gw, gk) = grad(f, wrt=(0, 1))(w, k, x, img)
    print(gw)
    print(gk)
}
)";
  EXPECT_EQ(count_primitive(text, "conv2d_input_grad"), 0u);
  EXPECT_GE(count_primitive(text, "conv2d_weight_grad"), 1u);
  std::vector<std::vector<double>> graph_lines;
  for (bool eager : {false, true}) {
    const auto lines = run_program(text, eager);
    ASSERT_EQ(lines.size(), 2u) << (eager ? "eager" : "graph");
    // d/dw sum((x w)^2) = 2 x^T (x w): x w = [[1, 3], [1.25, -5]].
    EXPECT_EQ(lines[0], (std::vector<double>{9.5, -24, 1.5, 22})) << (eager ? "eager" : "graph");
    if (eager) {
      EXPECT_EQ(lines[1], graph_lines[1]);
    }
    graph_lines = lines;
  }
}

// A weight applied to a batch of sequences ([batch, m, k] @ [k, n], as a Transformer's
// projections are) gets its cotangent as one product over all the batch's rows, [k, batch m] x
// [batch m, n], not one [k, m] x [m, n] product per batch entry and their sum; so does a weight
// read through transpose_b. Values are the closed form's, in graph and eager mode.
TEST(Programs, ABatchedWeightsCotangentIsOneProductOverTheRows) {
  setup();
  const std::string text = R"(
def f(w, wt, x) = sum((x @ w) ** 2.0) + sum(matmul(x, wt, transpose_b=true) ** 2.0)
def main() {
    let x = reshape(arange(0.0, 24.0) * 0.25 - 2.0, (3, 4, 2))
    let w = reshape(arange(0.0, 10.0) * 0.5 - 2.0, (2, 5))
    let wt = reshape(arange(0.0, 10.0) * 0.25 - 1.0, (5, 2))
    let (gw, gwt) = grad(f, wrt=(0, 1))(w, wt, x)
    print(gw)
    print(gwt)
}
)";
  // The forward's two products, and one 2-D product per weight: none per batch entry.
  EXPECT_EQ(count_primitive(text, "matmul"), 4u);
  EXPECT_EQ(count_primitive(text, "matmul", false, "f32[3,4,5]"), 2u);
  EXPECT_EQ(count_primitive(text, "matmul", false, "f32[2,5]"), 1u);
  EXPECT_EQ(count_primitive(text, "matmul", false, "f32[5,2]"), 1u);
  // The closed form: gw = 2 sum_b x_b^T (x_b w), gwt = 2 sum_b (x_b wt^T)^T x_b.
  double x[3][4][2], w[2][5], wt[5][2];
  for (int i = 0; i < 24; ++i) x[i / 8][i / 2 % 4][i % 2] = i * 0.25 - 2.0;
  for (int i = 0; i < 10; ++i) w[i / 5][i % 5] = i * 0.5 - 2.0, wt[i / 2][i % 2] = i * 0.25 - 1.0;
  std::vector<double> gw(10, 0.0), gwt(10, 0.0);
  for (int b = 0; b < 3; ++b)
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 5; ++n) {
        double y = 0, z = 0;
        for (int k = 0; k < 2; ++k) y += x[b][m][k] * w[k][n], z += x[b][m][k] * wt[n][k];
        for (int k = 0; k < 2; ++k)
          gw[k * 5 + n] += 2 * x[b][m][k] * y, gwt[n * 2 + k] += 2 * z * x[b][m][k];
      }
  for (bool eager : {false, true}) {
    const auto lines = run_program(text, eager);
    ASSERT_EQ(lines.size(), 2u) << (eager ? "eager" : "graph");
    ASSERT_EQ(lines[0].size(), 10u);
    ASSERT_EQ(lines[1].size(), 10u);
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_NEAR(lines[0][i], gw[i], 1e-9 * std::abs(gw[i]) + 1e-12)
          << i << (eager ? " eager" : "");
      EXPECT_NEAR(lines[1][i], gwt[i], 1e-9 * std::abs(gwt[i]) + 1e-12)
          << i << (eager ? " eager" : "");
    }
  }
}

// A product's cotangents are written with transposed operands (permute), and the fusion
// pass's first step folds each such transpose into matmul's transpose_a / transpose_b: the
// kernels then read the operands where they lie and no transposed copy is made. A program may
// write the flags itself. Values are the closed form's in graph mode (folded or not) and eager
// mode (whose flagged products' cotangents are flagged products).
TEST(Programs, ProductCotangentsReadTheirOperandsWhereTheyLie) {
  setup();
  const std::string text = R"(
def f(a, b, c) = sum(matmul(a @ b, c, transpose_b=true) ** 2.0)
def main() {
    let a = [[1.0, 2.0], [3.0, -1.0]]
    let b = [[0.5, -1.0], [0.25, 2.0]]
    let c = [[1.0, 0.0], [2.0, 1.0], [0.0, -1.0]]
    let (ga, gb, gc) = grad(f, wrt=(0, 1, 2))(a, b, c)
    print(ga)
    print(gb)
    print(gc)
    print(matmul(a, b, transpose_a=true))
}
)";
  EXPECT_GE(count_primitive(text, "permute"), 2u);
  EXPECT_EQ(count_primitive(text, "permute", true), 0u);
  EXPECT_EQ(count_primitive(text, "transpose", true), 0u);
  for (int run = 0; run < 3; ++run) {
    const bool eager = run == 2, fold = run == 1;
    const auto lines = run_program(text, eager, fold);
    const char* mode = eager ? "eager" : fold ? "graph, folded" : "graph";
    ASSERT_EQ(lines.size(), 4u) << mode;
    // p = a b = [[1, 3], [1.25, -5]], y = p c^T = [[1, 5, -3], [1.25, -2.5, 5]], g = 2 y;
    // dc = g^T p, dp = g c, da = dp b^T, db = a^T dp.
    EXPECT_EQ(lines[0], (std::vector<double>{-5, 37.5, 11.25, -31.875})) << mode;
    EXPECT_EQ(lines[1], (std::vector<double>{-0.5, -29, 51.5, 47})) << mode;
    EXPECT_EQ(lines[2], (std::vector<double>{5.125, -6.5, 3.75, 55, 6.5, -68})) << mode;
    EXPECT_EQ(lines[3], (std::vector<double>{1.25, 5, 0.75, -4})) << mode;
  }
}

// f32 tensors of the given shapes, uniform in [-1, 1).
std::vector<sem::Value> uniform_f32(const std::vector<sem::Shape>& shapes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<sem::Value> out;
  for (const sem::Shape& shape : shapes) {
    sem::Tensor t = sem::Tensor::empty(DType::f32, shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, std::uniform_real_distribution<double>(-1, 1)(rng));
    out.emplace_back(t);
  }
  return out;
}

// The graph @step of a program as `spora run` compiles it for its entry (the simplification
// passes, then, with fold, fusion's first step), called on `args`: every float it returns, and
// how many permutes and transposes it holds that move the last axis (copies element by
// element).
struct CompiledStep {
  std::vector<double> values;
  size_t transposes = 0;
};
CompiledStep run_step(const std::string& text, bool fold, const std::vector<sem::Value>& args) {
  setup();
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::Compiled c = compile_text(text, "step", sources, diags);
  CompiledStep out;
  EXPECT_TRUE(c.module);
  if (!c.module) return out;
  c.module->entry = c.module->find_graph("step");
  EXPECT_TRUE(c.module->entry);
  if (!c.module->entry) return out;
  passes::optimize(*c.module);
  if (fold) passes::fold_transposes_into_products(*c.module);
  for (const auto& g : c.module->graphs())
    for (const ir::Node* n : g->nodes) {
      if (!n->is_prim("permute") && !n->is_prim("transpose")) continue;
      const int64_t r = n->inputs[0]->type->rank();
      const bool reversed = n->attrs.is_none("axes");
      const int64_t last = reversed ? 0 : (n->attrs.get_ints("axes").back() % r + r) % r;
      out.transposes += r >= 2 && last != r - 1;
    }
  std::vector<sem::Value> pending{sem::Interpreter(*c.module).call(c.module->entry, args)};
  while (!pending.empty()) {
    sem::Value v = std::move(pending.back());
    pending.pop_back();
    if (v.is_tensor()) {
      for (int64_t i = 0; i < v.tensor.numel(); ++i) out.values.push_back(v.tensor.get(i));
    } else {
      for (const sem::Value& item : v.items()) pending.push_back(item);
    }
  }
  return out;
}

// Attention's scores q k^T with k = heads(x wk): simplified, the transpose after the heads'
// permute is one permute [0,2,3,1], which moves single elements. Folded, the product reads
// heads(k) ([0,2,1,3], contiguous runs) through transpose_b; the backward's products, which
// transpose heads(q) and heads(k) again, read the forward's permutes; and the keys' gradient
// q^T dS, laid back out as heads by [0,3,1,2], is computed as dS^T q and laid out by
// [0,2,1,3]: no permute that moves the last axis is left. Values equal the unfolded step's,
// and the unoptimized program's (chains of transposes) in graph mode, folded or not, and eager
// mode.
TEST(Programs, ProductsReadPermutedHeadsThroughTheirFlags) {
  setup();
  const std::string text = R"(
def heads(t) = transpose(reshape(t, (2, 3, 2, 2)), (0, 2, 1, 3))
def f(x, wq, wk) {
    let q = heads(x @ wq)
    let k = heads(x @ wk)
    return sum((q @ transpose(k, (0, 1, 3, 2))) ** 2.0)
}
def step(x, wq, wk) = value_and_grad(f, wrt=(0, 1, 2))(x, wq, wk)
def main() {
    let x = reshape(arange(0.0, 24.0) * 0.125 - 1.5, (2, 3, 4))
    let wq = reshape(0.5 - arange(0.0, 16.0) * 0.0625, (4, 4))
    let wk = reshape(arange(0.0, 16.0) * 0.125 - 1.0, (4, 4))
    let (l, g) = step(x, wq, wk)
    print(l)
    print(g[0])
    print(g[1])
    print(g[2])
}
)";
  const std::vector<sem::Value> args = uniform_f32({{2, 3, 4}, {4, 4}, {4, 4}}, 7);
  const CompiledStep plain = run_step(text, false, args);
  const CompiledStep folded = run_step(text, true, args);
  EXPECT_GE(plain.transposes, 2u);  // k^T, and the keys' gradient laid out as heads
  EXPECT_EQ(folded.transposes, 0u);
  ASSERT_EQ(plain.values.size(), 1u + 24 + 16 + 16);
  ASSERT_EQ(folded.values.size(), plain.values.size());
  for (size_t i = 0; i < plain.values.size(); ++i)
    EXPECT_NEAR(folded.values[i], plain.values[i], 1e-5 * (1 + std::abs(plain.values[i]))) << i;

  std::vector<std::vector<double>> want;
  for (int run = 0; run < 3; ++run) {
    const bool eager = run == 2, fold = run == 1;
    const auto lines = run_program(text, eager, fold);
    const char* mode = eager ? "eager" : fold ? "graph, folded" : "graph";
    ASSERT_EQ(lines.size(), 4u) << mode;
    ASSERT_EQ(lines[1].size(), 24u) << mode;
    ASSERT_EQ(lines[2].size(), 16u) << mode;
    if (run == 0) {
      want = lines;
      continue;
    }
    for (size_t i = 0; i < lines.size(); ++i)
      for (size_t j = 0; j < lines[i].size(); ++j)
        EXPECT_NEAR(lines[i][j], want[i][j], 1e-12 * (1 + std::abs(want[i][j])))
            << mode << " line " << i << " element " << j;
  }
}

// A batch times one matrix runs as one GEMM over the stacked rows: a transpose of its result
// stays a transpose rather than making the product one GEMM per batch entry.
TEST(Programs, ABatchTimesAMatrixKeepsItsTransposedResult) {
  setup();
  const std::string text = R"(
def step(x, w) = transpose(x @ w, (0, 2, 1))
def main() {
    print(step(reshape(arange(0.0, 24.0), (2, 3, 4)), reshape(arange(0.0, 20.0), (4, 5))))
}
)";
  const std::vector<sem::Value> args = uniform_f32({{2, 3, 4}, {4, 5}}, 9);
  const CompiledStep plain = run_step(text, false, args);
  const CompiledStep folded = run_step(text, true, args);
  EXPECT_EQ(plain.transposes, 1u);
  EXPECT_EQ(folded.transposes, 1u);
  EXPECT_EQ(folded.values, plain.values);
}

}  // namespace
}  // namespace spora::autodiff::testing
