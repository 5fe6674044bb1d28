// The autodiff matrix: every differentiable primitive (of the families below) times every
// construct (straight-line, inside an if, inside a for, inside a while with a run-time trip
// count, captured by a closure, passed through a higher-order function, inside recursion,
// second reverse derivatives through the for and the while: the gradient of a weighted sum of
// their gradients, and through a closure chosen by a run-time condition, which captures the
// differentiated value), each gradient checked by `spora grad-check` in f64 against central
// finite differences and forward mode (relative error 1e-6). One generated program per
// primitive. The run-time chosen closure is also checked in both modes (`spora run --mode
// graph|eager`) by the program itself, in f64, against central differences it computes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Case {
  std::string name;
  std::string expr;  // in terms of `v`, an f32[4] with values in [0.3, 1.6]
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"exp", "exp(v)"},
      {"log", "log(v)"},
      {"sqrt", "sqrt(v)"},
      {"rsqrt", "rsqrt(v)"},
      {"abs", "abs(v - 1.0)"},
      {"tanh", "tanh(v)"},
      {"sigmoid", "sigmoid(v)"},
      {"relu", "relu(v - 1.0)"},
      {"gelu", "gelu(v)"},
      {"sin", "sin(v)"},
      {"cos", "cos(v)"},
      {"erf", "erf(v)"},
      {"log1p", "log1p(v)"},
      {"expm1", "expm1(v)"},
      {"square", "square(v)"},
      {"reciprocal", "reciprocal(v)"},
      {"neg", "neg(v)"},
      {"add", "add(v, v * 0.5 + 1.0)"},
      {"sub", "sub(v, v * v)"},
      {"mul", "mul(v, v + 2.0)"},
      {"div", "div(v, v * 0.5 + 1.0)"},
      {"pow", "pow(v, v * 0.5 + 1.0)"},
      {"maximum", "maximum(v, v * 0.5 + 0.6)"},
      {"minimum", "minimum(v, v * 0.5 + 0.6)"},
      {"sum", "sum(reshape(v, (2, 2)), axis=0, keepdims=true)"},
      {"mean", "mean(reshape(v, (2, 2)), axis=1)"},
      {"max", "max(reshape(v, (2, 2)), axis=1)"},
      {"min", "min(reshape(v, (2, 2)), axis=0)"},
      {"prod", "prod(reshape(v, (2, 2)), axis=1)"},
      {"logsumexp", "logsumexp(reshape(v, (2, 2)), axis=1)"},
      {"softmax", "softmax(reshape(v, (2, 2)), axis=-1) * v[0:2]"},
      {"log_softmax", "log_softmax(reshape(v, (2, 2)), axis=-1) * v[0:2]"},
      {"matmul", "reshape(v, (2, 2)) @ reshape(v * v, (2, 2))"},
      {"transpose", "transpose(reshape(v, (2, 2))) * reshape(v * v, (2, 2))"},
      {"concat", "concat((v, v * v), axis=0)"},
      {"stack", "stack((v, sin(v)), axis=1)"},
      {"slice", "v[1:3] * v[::-2]"},
      {"broadcast_to", "broadcast_to(v, (3, 4)) * 0.5"},
      {"layer_norm", "layer_norm(reshape(v, (2, 2))) * reshape(v, (2, 2))"},
      {"cross_entropy", "cross_entropy(reshape(v * 3.0, (2, 2)), [0, 1])"},
  };
  return c;
}

// The constructs, as functions of x: f32[4] returning a float scalar.
const char* const kConstructs[] = {"straight",     "in_if",        "in_for",    "in_while",
                                   "closure",      "higher_order", "recursion", "second_for",
                                   "second_while", "chosen"};

std::string definitions(const std::string& e) {
  std::string s;
  s += "def body(v) = sum(" + e + ")\n";
  s += "def straight(x) = body(x)\n";
  s += "def in_if(x) {\n    if sum(x) > 0.5 {\n        return body(x)\n    }\n    return "
       "sum(x)\n}\n";
  s += "def in_for(x) {\n    var s = 0.0\n    var y = x\n    for i in range(2) {\n        s = s + "
       "body(y)\n"
       "        y = y * 0.9\n    }\n    return s\n}\n";
  s += "def in_while(x) {\n    var s = 0.0\n    var y = x\n    while sum(y) > 3.0 {\n        s = s "
       "+ body(y)\n"
       "        y = y * 0.8\n    }\n    return s\n}\n";
  s += "def closure(x) {\n    let c = x * 1.0\n    let g = fn (z) => body(c * z)\n    return "
       "g(1.0)\n}\n";
  s += "def apply(f, x) = f(x)\n";
  s += "def higher_order(x) = apply(body, x)\n";
  s += "def rec(x: f32[4], n: i32) -> f32 {\n    if n == 0 {\n        return body(x)\n    }\n"
       "    return rec(x * 0.9, n - 1)\n}\n";
  s += "def recursion(x) = rec(x, 2)\n";
  s += "def second_for(x) = sum(grad(in_for)(x) * [0.5, -1.0, 2.0, 0.25])\n";
  s += "def second_while(x) = sum(grad(in_while)(x) * [0.5, -1.0, 2.0, 0.25])\n";
  // A closure chosen by a run-time condition (in graph mode a switch over the two lambdas),
  // capturing c, which depends on x.
  s += "def chosen(x) {\n    let c = x * 1.0\n    let f = (fn (z) => body(c * z)) if sum(x) > 0.5 "
       "else (fn (z) => sum(c * z))\n    return f(1.0)\n}\n";
  return s;
}

std::string program(const std::string& e) {
  std::string s = definitions(e);
  s += "def main() {\n    let x = [0.3, 0.7, 1.1, 1.6]\n";
  for (const char* f : kConstructs) s += std::string("    print(grad(") + f + ")(x))\n";
  s += "}\n";
  return s;
}

// Prints the largest relative difference between grad(chosen) and central differences of
// chosen, all in f64.
std::string chosen_program(const std::string& e) {
  std::string s = definitions(e);
  s += "def main() {\n    let x = cast([0.3, 0.7, 1.1, 1.6], f64)\n    let g = grad(chosen)(x)\n";
  s += "    let h = 0.00001\n    let e = cast([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], "
       "[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]], f64)\n    let fd = [";
  for (int i = 0; i < 4; ++i)
    s += std::string(i ? ", " : "") + "(chosen(x + e[" + std::to_string(i) +
         "] * h) - chosen(x - e[" + std::to_string(i) + "] * h)) / (2.0 * h)";
  s += "]\n    print(\"worst\", max(abs(fd - g) / maximum(abs(g), 0.0001)))\n}\n";
  return s;
}

// Runs `spora ARGS file` on `text`; the exit status and the output (stdout and stderr).
std::pair<int, std::string> run_spora(const std::string& args, const std::string& name,
                                      const std::string& text) {
  const fs::path file = fs::temp_directory_path() / ("spora_grad_matrix_" + name + ".sp");
  std::ofstream(file) << text;
  const std::string cmd =
      std::string(SPORA_BINARY_DIR) + "/bin/spora " + args + " " + file.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  fs::remove(file);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

class GradMatrix : public testing::TestWithParam<Case> {};

TEST_P(GradMatrix, EveryConstruct) {
  const Case& c = GetParam();
  const auto [status, out] = run_spora("grad-check", c.name, program(c.expr));
  EXPECT_EQ(status, 0) << out << "\n--- program ---\n" << program(c.expr);
  for (const char* f : kConstructs)
    EXPECT_NE(out.find(std::string(f) + ": finite differences"), std::string::npos)
        << f << " not checked\n"
        << out;
}

TEST_P(GradMatrix, RunTimeChosenClosureBothModes) {
  const Case& c = GetParam();
  for (const std::string mode : {"graph", "eager"}) {
    const auto [status, out] =
        run_spora("run --mode " + mode, c.name + "_chosen_" + mode, chosen_program(c.expr));
    ASSERT_EQ(status, 0) << mode << "\n" << out << "\n--- program ---\n" << chosen_program(c.expr);
    const size_t at = out.find("worst ");
    ASSERT_NE(at, std::string::npos) << mode << "\n" << out;
    EXPECT_LE(std::stod(out.substr(at + 6)), 1e-6) << mode << "\n" << out;
  }
}

// jacfwd, jacrev and hessian of a function through a loop, a closure and a closure chosen at
// run time, against central differences (second differences for the Hessian) that the program
// computes itself in f64; the program prints the largest relative differences.
std::string jacobian_program() {
  std::string s =
      "def F(x) {\n"
      "    let k = fn (z) => tanh(z) * x[0]\n"
      "    let g = (fn (z) => z * x[1]) if sum(x) > 0.0 else (fn (z) => z)\n"
      "    var y = x\n"
      "    for i in range(3) {\n"
      "        y = y * 0.5 + k(g(y))\n"
      "    }\n"
      "    return stack((sum(y * y), y[0] * y[2]), axis=0)\n"
      "}\n"
      "def S(x) = F(x)[0] - F(x)[1] * 0.5\n"
      "def rel(a, b) = max(abs(a - b) / maximum(abs(b), 0.0001))\n"
      "def main() {\n"
      "    let x = cast([0.4, 0.9, -0.7], f64)\n"
      "    let e = cast([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], f64)\n"
      "    let h = 0.00001\n";
  // Columns of F's Jacobian by central differences.
  s += "    let fd = stack((";
  for (int j = 0; j < 3; ++j)
    s += std::string(j ? ", " : "") + "(F(x + e[" + std::to_string(j) + "] * h) - F(x - e[" +
         std::to_string(j) + "] * h)) / (2.0 * h)";
  s += "), axis=1)\n";
  // The Hessian of S by second differences, with a larger step.
  s += "    let q = 0.0001\n    let hd = stack((";
  for (int i = 0; i < 3; ++i) {
    s += std::string(i ? ", " : "") + "stack((";
    for (int j = 0; j < 3; ++j) {
      const std::string ei = "e[" + std::to_string(i) + "] * q",
                        ej = "e[" + std::to_string(j) + "] * q";
      s += std::string(j ? ", " : "") + "(S(x + " + ei + " + " + ej + ") - S(x + " + ei + " - " +
           ej + ") - S(x - " + ei + " + " + ej + ") + S(x - " + ei + " - " + ej +
           ")) / (4.0 * q * q)";
    }
    s += "), axis=0)";
  }
  s += "), axis=0)\n";
  s += "    print(\"shapes\", jacfwd(F)(x).shape, jacrev(F)(x).shape, hessian(S)(x).shape)\n"
       "    print(\"jacfwd\", rel(jacfwd(F)(x), fd))\n"
       "    print(\"jacrev\", rel(jacrev(F)(x), fd))\n"
       "    print(\"hessian\", rel(hessian(S)(x), hd))\n"
       "}\n";
  return s;
}

TEST(Jacobians, AgainstFiniteDifferencesBothModes) {
  for (const std::string mode : {"graph", "eager"}) {
    const auto [status, out] =
        run_spora("run --mode " + mode, "jacobians_" + mode, jacobian_program());
    ASSERT_EQ(status, 0) << mode << "\n" << out << "\n--- program ---\n" << jacobian_program();
    EXPECT_NE(out.find("shapes (2, 3) (2, 3) (3, 3)"), std::string::npos) << mode << "\n" << out;
    for (const auto& [what, tolerance] :
         {std::pair{"jacfwd ", 1e-6}, {"jacrev ", 1e-6}, {"hessian ", 1e-5}}) {
      const size_t at = out.find(what);
      ASSERT_NE(at, std::string::npos) << mode << " " << what << "\n" << out;
      EXPECT_LE(std::stod(out.substr(at + std::string(what).size())), tolerance)
          << mode << " " << what << "\n"
          << out;
    }
  }
}

// jacrev and jacfwd on structures, as in JAX: T takes a tuple (w: f64[2, 3], b: a scalar) and
// x: f64[3] and returns a tuple (f64[2], a scalar); with wrt=(0, 1) the Jacobian is a tuple per
// result of ((d/dw, d/db), d/dx), each of shape result shape + argument shape. Every entry
// against central differences the program computes in f64.
std::string structured_jacobian_program() {
  std::string s =
      "def T(p, x) = (tanh(p[0] @ x) * p[1], sum(x * x) * p[1])\n"
      "def rel(a, b) = max(abs(a - b) / maximum(abs(b), 0.0001))\n"
      "def main() {\n"
      "    let w = cast([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]], f64)\n"
      "    let b = cast(1.3, f64)\n"
      "    let x = cast([0.4, 0.9, -0.7], f64)\n"
      "    let h = 0.00001\n";
  // Central differences: by each element of w, of b, of x; for each result r.
  auto diff = [](const std::string& plus, const std::string& minus, int r) {
    return "(T(" + plus + ")[" + std::to_string(r) + "] - T(" + minus + ")[" + std::to_string(r) +
           "]) / (2.0 * h)";
  };
  for (int r = 0; r < 2; ++r) {
    std::string by_w, by_x;
    for (int k = 0; k < 6; ++k) {
      const std::string e = "reshape(one_hot(" + std::to_string(k) + ", 6, dtype=f64), (2, 3)) * h";
      by_w +=
          std::string(k ? ", " : "") + diff("(w + " + e + ", b), x", "(w - " + e + ", b), x", r);
    }
    for (int j = 0; j < 3; ++j) {
      const std::string e = "one_hot(" + std::to_string(j) + ", 3, dtype=f64) * h";
      by_x += std::string(j ? ", " : "") + diff("(w, b), x + " + e, "(w, b), x - " + e, r);
    }
    const std::string rs = std::to_string(r), shape = r == 0 ? "(2, 2, 3)" : "(2, 3)";
    const int axis = r == 0 ? 1 : 0;
    s += "    let fw" + rs + " = reshape(stack((" + by_w + "), axis=" + std::to_string(axis) +
         "), " + shape + ")\n";
    s += "    let fb" + rs + " = " + diff("(w, b + h), x", "(w, b - h), x", r) + "\n";
    s += "    let fx" + rs + " = stack((" + by_x + "), axis=" + std::to_string(axis) + ")\n";
  }
  for (const char* how : {"jacrev", "jacfwd"}) {
    const std::string J = std::string("J") + how;
    s += "    let " + J + " = " + how + "(T, wrt=(0, 1))((w, b), x)\n";
    s += "    print(\"" + std::string(how) + " shapes\", " + J + "[0][0][0].shape, " + J +
         "[0][0][1].shape, " + J + "[0][1].shape, " + J + "[1][0][0].shape, " + J +
         "[1][0][1].shape, " + J + "[1][1].shape)\n";
    s += "    print(\"" + std::string(how) + " errors\", rel(" + J + "[0][0][0], fw0), rel(" + J +
         "[0][0][1], fb0), rel(" + J + "[0][1], fx0), rel(" + J + "[1][0][0], fw1), rel(" + J +
         "[1][0][1], fb1), rel(" + J + "[1][1], fx1))\n";
  }
  s += "}\n";
  return s;
}

TEST(Jacobians, OfStructuresAgainstFiniteDifferencesBothModes) {
  const std::string program = structured_jacobian_program();
  for (const std::string mode : {"graph", "eager"}) {
    const auto [status, out] = run_spora("run --mode " + mode, "jacobians_tree_" + mode, program);
    ASSERT_EQ(status, 0) << mode << "\n" << out << "\n--- program ---\n" << program;
    for (const std::string how : {"jacrev", "jacfwd"}) {
      EXPECT_NE(out.find(how + " shapes (2, 2, 3) (2,) (2, 3) (2, 3) () (3,)"), std::string::npos)
          << mode << "\n"
          << out;
      const size_t at = out.find(how + " errors ");
      ASSERT_NE(at, std::string::npos) << mode << " " << how << "\n" << out;
      std::istringstream errors(out.substr(at + how.size() + 8));
      int n = 0;
      for (double e; n < 6 && errors >> e; ++n)
        EXPECT_LE(e, 1e-6) << mode << " " << how << " " << n;
      EXPECT_EQ(n, 6) << mode << " " << how << "\n" << out;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Primitives, GradMatrix, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
