// Helpers of the runtime tests (runtime_test_util.h).
#include "tests/runtime/runtime_test_util.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <sstream>

#include "autodiff/install.h"
#include "backends/cpu/cpu.h"
#include "backends/runtime/runtime.h"
#include "lang/parser.h"
#include "ops/ops.h"

namespace spora::runtime::testing {

void setup() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
    runtime::install();
    cpu::register_kernels();
    sem::set_backend(sem::Backend::Cpu);
  });
}

Lowered lower(const std::string& source, bool eager) {
  setup();
  Lowered out;
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  // load_program reads the main file from disk (and its std imports): a file per process and
  // call, since ctest runs test cases in parallel processes.
  static int counter = 0;
  const std::string path = ::testing::TempDir() + "/runtime_test_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++) + ".sp";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(source.c_str(), f);
    std::fclose(f);
  }
  out.program = sem::load_program(sources, path, diags);
  std::remove(path.c_str());
  if (out.program) {
    sem::LowerOptions options;
    options.eager = eager;
    out.module = sem::lower_program(*out.program, diags, options);
  }
  std::ostringstream os;
  diags.print(os);
  out.diagnostics = os.str();
  return out;
}

std::string run_graph_mode(const ir::Module& m) {
  ::testing::internal::CaptureStdout();
  sem::Interpreter interp(m);
  interp.run_entry();
  return ::testing::internal::GetCapturedStdout();
}

ir::Node* apply(ir::Module& m, ir::Graph* g, const std::string& prim, std::vector<ir::Node*> inputs,
                sem::Attrs attrs) {
  const sem::Primitive* p = sem::Registry::instance().find(prim);
  if (!p) throw std::runtime_error("no primitive " + prim);
  std::vector<sem::TypeP> types;
  for (const ir::Node* x : inputs) types.push_back(x->type);
  sem::TypeP t = p->infer(types, attrs);
  return m.add_apply(g, p, std::move(inputs), std::move(attrs), t);
}

}  // namespace spora::runtime::testing
