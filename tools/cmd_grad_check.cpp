// `spora grad-check file.sp`: checks every derivative that main takes (grad, value_and_grad),
// in double precision: central finite differences along a random direction, forward mode
// against reverse mode, and for small inputs the whole gradient element by element. Prints
// the worst relative error per function and check; exits 1 above the tolerance.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <sstream>

#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/pipeline.h"
#include "tools/commands.h"

namespace spora::tools {

int cmd_grad_check(const std::string& path, double tolerance) {
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::LowerOptions options;
  options.x64 = true;
  options.grad_check = true;
  sem::Compiled c = sem::compile_file(sources, diags, path, options);
  diags.print(std::cerr);
  if (!c.module || !c.module->entry) return 1;
  std::ostringstream program_output;  // the program's own prints are not the report
  ops::set_print_stream(&program_output);
  ops::grad_check_results().clear();
  try {
    sem::Interpreter(*c.module).call(c.module->entry, {});
  } catch (const lang::UserError& e) {
    ops::set_print_stream(nullptr);
    std::cerr << fmt::format("spora: error: {}\n", e.what());
    return 1;
  }
  ops::set_print_stream(nullptr);
  const auto& results = ops::grad_check_results();
  if (results.empty()) {
    std::cout << fmt::format("{}: main differentiates no function (nothing to check)\n", path);
    return 0;
  }
  // Worst error per label, in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::pair<double, int>> worst;
  for (const auto& [label, err] : results) {
    auto it = worst.find(label);
    if (it == worst.end()) {
      order.push_back(label);
      worst[label] = {err, 1};
    } else {
      it->second.first = std::max(it->second.first, err);
      ++it->second.second;
    }
  }
  bool ok = true;
  std::cout << fmt::format("{:<70} {:>6} {:>12}\n", "function: check (f64)", "checks", "worst rel err");
  for (const auto& label : order) {
    auto [err, n] = worst[label];
    const bool pass = err <= tolerance;
    ok = ok && pass;
    std::cout << fmt::format("{:<70} {:>6} {:>12.3e}  {}\n", label, n, err, pass ? "ok" : "FAIL");
  }
  std::cout << fmt::format("{} (tolerance {:.0e})\n", ok ? "all derivatives agree" : "derivative check FAILED",
                           tolerance);
  return ok ? 0 : 1;
}

}  // namespace spora::tools
