// libFuzzer target over strategy JSON (parallel/partition/strategy.h: `spora run --strategy`),
// parsed for a step with the parameters and inputs of tests/parallel/mlp_small.sp (x, y and
// net.l{1,2,3}.{w,b}): any input gives a strategy or a located lang::UserError, never a crash,
// a hang or a sanitizer report. A strategy that parses is written back as JSON.
#include "parallel/partition/strategy.h"
#include "semantics/ir/parser.h"
#include "tests/fuzz/fuzz_primitives.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const char* kStep = R"(
entry @step
graph @step(%x: f64[8,16], %y: i32[8], %"net.l1.w": f64[16,32], %"net.l1.b": f64[32],
            %"net.l2.w": f64[32,32], %"net.l2.b": f64[32], %"net.l3.w": f64[32,8],
            %"net.l3.b": f64[8]) -> f64[8,8] {
  %a = matmul(%x, %"net.l1.w") : f64[8,32]
  %b = add(%a, %"net.l1.b") : f64[8,32]
  %c = relu(%b) : f64[8,32]
  %d = matmul(%c, %"net.l2.w") : f64[8,32]
  %e = add(%d, %"net.l2.b") : f64[8,32]
  %f = relu(%e) : f64[8,32]
  %g = matmul(%f, %"net.l3.w") : f64[8,8]
  %h = add(%g, %"net.l3.b") : f64[8,8]
  return %h
}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora;
  static const std::unique_ptr<ir::Module> step = [] {
    fuzz::register_primitives();
    return ir::parse_module(kStep, "step.ir");
  }();
  const std::string json = fuzz::text(data, size);
  fuzz::allow_user_error([&] {
    const parallel::Strategy s = parallel::parse_strategy(json, *step->entry, "fuzz.json");
    (void)parallel::strategy_json(s);
  });
  fuzz::allow_user_error([&] { (void)parallel::parse_recompute(json, "fuzz.json"); });
  return 0;
}
