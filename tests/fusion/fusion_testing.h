// Helpers of the fusion tests: programs compiled to optimized IR, runs with and without fusion,
// comparison of values with the f32 tolerance of the issue (relative 1e-5), and the kernel
// cache every test shares (in the build directory, so a second test run compiles nothing).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/codegen/fused_runtime.h"
#include "semantics/ir/ir.h"
#include "semantics/value.h"

namespace spora::fusion_testing {

// Registers primitives, derivative rules, runtime and CPU kernels (once).
void setup();

// Compile options: the shared test cache, -O2 (tests check results, not speed).
codegen::CompileOptions test_compile_options();
// Fused-runtime options: every group compiled (min_elements 0), the test compile options.
codegen::FusedOptions test_fused_options();

// A .sp program lowered in graph mode and optimized (null with the diagnostics on failure).
// With `entry`, that graph becomes the module's entry before optimizing (after `before_optimize`
// ran on the lowered module, e.g. to run main for the entry's inputs).
std::unique_ptr<ir::Module> compile(const std::string& path, std::string* diagnostics = nullptr,
                                    const std::string& entry = "",
                                    const std::function<void(ir::Module&)>& before_optimize = {});

// What a run shows: the printed text and the entry's result (or the error message).
struct ProgramRun {
  std::string printed;
  sem::Value result;
  std::string error;
};
ProgramRun run_entry(const ir::Module& m);
ProgramRun call(const ir::Module& m, const ir::Graph* g, std::vector<sem::Value> args);

// Compares two values leaf by leaf: tensors of the same dtype and shape whose elements agree
// within rel * |b| + abs_floor + scale_rel * max|b| (the largest magnitude of that tensor; nan
// equals nan; integers and booleans exactly). An empty string when they agree, else the first
// difference.
std::string compare(const sem::Value& a, const sem::Value& b, double rel = 1e-5,
                    double abs_floor = 1e-6, double scale_rel = 0);
// The numbers in two printed texts, compared the same way (and the text between them exactly).
std::string compare_printed(const std::string& a, const std::string& b, double rel = 1e-5,
                            double abs_floor = 1e-6);

// A deterministic random value of a tensor type (floats ~ N(0, 1), or uniform in [0.5, 1.5)
// when `positive`; ints in [0, 2); bools).
sem::Value random_value(const sem::TypeP& t, uint64_t seed, bool positive = false);

// Runs each fused graph of m on random arguments with its kernel and node by node; the first
// disagreement, or empty. `checked` counts the groups compared. The arguments are positive
// (uniform in [0.5, 1.5)): normal ones make groups ill-conditioned where real data is not
// (Adam's second moment of a negative "square", a bias correction near 0). Random arguments
// still cancel where real ones do not (a layer-norm gradient of uncentred "centred" inputs),
// and there the kernels' FMAs (a * b + c rounded once) differ from the reference's separate
// roundings by more than 1e-5 of the (small) difference: these checks also accept 1e-5 of the
// largest element of the output (compare's scale_rel); whole programs are compared without.
std::string check_groups(const ir::Module& m, codegen::FusedRuntime& rt, size_t* checked);

}  // namespace spora::fusion_testing
