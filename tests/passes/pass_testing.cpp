// Helpers of the pass tests (pass_testing.h).
#include "tests/passes/pass_testing.h"

#include <gtest/gtest.h>

#include <sstream>

#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/ir/parser.h"
#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"

namespace spora::passes::testing {

std::unique_ptr<ir::Module> parse(std::string_view text) {
  ops::register_all();
  std::unique_ptr<ir::Module> m = ir::parse_module(text);
  ir::verify_or_throw(*m, "of the test input");
  return m;
}

std::string run(const ir::Module& m, const std::vector<sem::Value>& args) {
  std::ostringstream printed;
  ops::set_print_stream(&printed);
  std::string result;
  try {
    sem::Interpreter interp(m);
    result = "=> " + sem::format_value(interp.run_entry(args));
  } catch (const lang::UserError& e) {
    result = std::string("error: ") + e.what();
  }
  ops::set_print_stream(nullptr);
  return printed.str() + result;
}

std::string after_pass(ir::Module& m, const Pass& pass, const std::vector<sem::Value>& args,
                       Effects effects) {
  const std::string before = run(m, args);
  const auto counts = ir::effectful_counts(m);
  pass(m);
  ir::verify_or_throw(m, "after the pass under test");
  EXPECT_EQ(run(m, args), before) << "the pass changed what the module computes";
  const auto after = ir::effectful_counts(m);
  if (effects == Effects::same) {
    EXPECT_EQ(after, counts) << "the pass dropped or added effectful nodes";
  } else if (effects == Effects::copied) {
    for (const auto& [prim, count] : counts)
      EXPECT_TRUE(after.count(prim) && after.at(prim) > 0) << "every " << prim << " was dropped";
  }
  return ir::print_module(m);
}

std::string after_pass(std::string_view input, const Pass& pass,
                       const std::vector<sem::Value>& args, Effects effects) {
  std::unique_ptr<ir::Module> m = parse(input);
  return after_pass(*m, pass, args, effects);
}

sem::Value f32(double v) { return sem::Tensor::scalar(DType::f32, v); }
sem::Value i64(int64_t v) { return sem::Tensor::scalar(DType::i64, static_cast<double>(v)); }

size_t count(const std::string& text, const std::string& what, size_t from) {
  size_t n = 0;
  for (size_t at = text.find(what, from); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

}  // namespace spora::passes::testing
