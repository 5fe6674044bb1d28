// libFuzzer target over the whole front end: parse, check, lower (spora check without the
// file system). Any input must give diagnostics or a module, never a crash, a hang, or a
// sanitizer report. Build with clang (-DSPORA_FUZZ=ON, see README's developer section).
#include <cstddef>
#include <cstdint>
#include <string>

#include "autodiff/install.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "ops/ops.h"
#include "semantics/lower.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool ready = [] {
    spora::ops::register_all();
    spora::autodiff::install();
    return true;
  }();
  (void)ready;
  using namespace spora;
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  std::string text(reinterpret_cast<const char*>(data), size);
  auto ast = lang::parse_string(sources, "fuzz.sp", std::move(text), diags);
  if (!ast || diags.has_errors()) return 0;
  sem::Program program;
  program.modules.push_back(std::move(ast));
  program.module_names.push_back("");
  sem::LowerOptions options;
  options.check_all = true;
  try {
    (void)sem::lower_program(program, diags, options);
  } catch (const lang::UserError&) {
    // A user error that escaped the diagnostics engine is still a clean failure.
  }
  return 0;
}
