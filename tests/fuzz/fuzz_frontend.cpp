// libFuzzer target over the whole front end: parse, check, lower (spora check without the
// file system). Any input must give diagnostics or a module, never a crash, a hang, or a
// sanitizer report. Build with clang (-DSPORA_FUZZ=ON, see README.md of this folder).
#include <cstddef>
#include <cstdint>
#include <string>

#include "lang/diagnostics.h"
#include "lang/parser.h"
#include "semantics/lower.h"
#include "tests/fuzz/fuzz_primitives.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora;
  fuzz::register_primitives();
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  auto ast = lang::parse_string(sources, "fuzz.sp", fuzz::text(data, size), diags);
  if (!ast || diags.has_errors()) return 0;
  sem::Program program;
  program.modules.push_back(std::move(ast));
  program.module_names.push_back("");
  sem::LowerOptions options;
  options.check_all = true;
  // A user error that escaped the diagnostics engine is still a clean failure.
  fuzz::allow_user_error([&] { (void)sem::lower_program(program, diags, options); });
  return 0;
}
