// libFuzzer target over the IR text parser (semantics/ir/parser.h: `spora run file.ir`): any
// input gives a module or a located lang::UserError, never a crash, a hang or a sanitizer
// report. A module that parses is printed too (the printer on whatever the parser accepts).
#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "tests/fuzz/fuzz_primitives.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora;
  fuzz::register_primitives();
  fuzz::allow_user_error([&] {
    auto m = ir::parse_module(fuzz::text(data, size), "fuzz.ir");
    (void)ir::print_module(*m);
  });
  return 0;
}
