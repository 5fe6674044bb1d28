// Front-end throughput: parse + check + lower of a generated 5,000-line program (issue:
// "well under a second"). Reports lines per second as a counter.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "autodiff/install.h"
#include "lang/parser.h"
#include "ops/ops.h"
#include "semantics/lower.h"

namespace {

// ~5,000 lines: 400 small typed functions (models, loops, branches, tensor maths) and a main
// that calls each of them.
std::string generated_program(int functions) {
  std::string s = "model Lin(i: int, o: int) {\n    param w: f32[i, o] = normal(0.0, 0.02)\n"
                  "    param b: f32[o] = zeros()\n    def forward(x) = x @ w + b\n}\n\n";
  for (int k = 0; k < functions; ++k) {
    s += fmt::format(
        "def f{0}(x: f32[B, 8], w: f32[8, 8]) -> f32 {{\n"
        "    let h = relu(x @ w + {1}.0)\n"
        "    var acc = sum(h, axis=1)\n"
        "    for i in range(3) {{\n"
        "        acc = acc * 0.5 + mean(h)\n"
        "    }}\n"
        "    if sum(acc) > 0.0 {{\n"
        "        acc = acc - 1.0\n"
        "    }} else {{\n"
        "        acc = acc + 1.0\n"
        "    }}\n"
        "    return sum(softmax(h, axis=-1)) + sum(acc)\n"
        "}}\n",
        k, k % 7);
  }
  s += "def main() {\n    let x = ones(shape=(4, 8))\n    let w = ones(shape=(8, 8))\n";
  s += "    let m = Lin(8, 8)\n    var total = sum(m(x))\n";
  for (int k = 0; k < functions; ++k) s += fmt::format("    total = total + f{}(x, w)\n", k);
  s += "    print(total)\n}\n";
  return s;
}

void BM_FrontEnd(benchmark::State& state) {
  spora::ops::register_all();
  spora::autodiff::install();
  const std::string text = generated_program(static_cast<int>(state.range(0)));
  int64_t lines = 0;
  for (char c : text) lines += c == '\n';
  for (auto _ : state) {
    spora::lang::SourceManager sources;
    spora::lang::DiagnosticEngine diags(sources);
    auto ast = spora::lang::parse_string(sources, "gen.sp", text, diags);
    spora::sem::Program program;
    program.modules.push_back(std::move(ast));
    program.module_names.push_back("");
    auto module = spora::sem::lower_program(program, diags);
    if (!module) state.SkipWithError("the generated program did not compile");
    benchmark::DoNotOptimize(module);
  }
  state.counters["lines"] = static_cast<double>(lines);
  state.counters["lines_per_second"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_FrontEnd)->Arg(400)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
