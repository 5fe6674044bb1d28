// stack_loop_products: a loop state the body only updates as c + transpose(A) @ B becomes two
// lists of A and B and one product of their stacked rows after the loop (list_tmatmul_sum).
// Every case runs before and after the pass with the same result (pass_testing.h); the values
// are small integers, so the sums are exact in any order.
#include "semantics/passes/stack_products.h"

#include <gtest/gtest.h>

#include "lang/diagnostics.h"
#include "semantics/passes/dce.h"
#include "semantics/registry.h"
#include "tests/passes/pass_testing.h"

namespace spora::passes::testing {
namespace {

// A backward-pass-shaped loop of %n iterations: slices i of X (f32[3, 2, 3]) and G
// (f32[3, 2, 2]), the state updated as acc + transpose(X_i) @ G_i (`product` is the matmul's
// text, `extra` more of the body).
std::string weight_gradient_loop(const std::string& product, const std::string& init,
                                 const std::string& extra = "") {
  return R"(graph @main(%n: i64) -> f32[3,2] {
  %x = constant [[[1.0, 2.0, 0.0], [3.0, -1.0, 2.0]], [[0.0, 1.0, 1.0], [2.0, 2.0, -3.0]], [[1.0, 0.0, 4.0], [-2.0, 1.0, 1.0]]] : f32[3,2,3]
  %g = constant [[[1.0, -1.0], [2.0, 0.0]], [[0.0, 3.0], [1.0, 1.0]], [[-1.0, 2.0], [2.0, -2.0]]] : f32[3,2,2]
  %c0 = )" +
         init + R"(
  %lo = constant 0 : i64
  %one = constant 1 : i64
  graph @main.body(%i: i64, %acc: f32[3,2]) -> (f32[3,2],) {
    %xi = gather(%x, %i, axis=0) : f32[2,3]
    %gi = gather(%g, %i, axis=0) : f32[2,2]
)" + product +
         extra + R"(
    %a = add(%acc, %p) : f32[3,2]
    %t = make_tuple(%a) : (f32[3,2],)
    return %t
  }
  %r = for_range(%lo, %n, %one, @main.body, %c0) : (f32[3,2],)
  %out = tuple_get(%r, index=0) : f32[3,2]
  return %out
}
)";
}

const char* kPermuted = R"(    %xt = permute(%xi, axes=[1,0]) : f32[3,2]
    %p = matmul(%xt, %gi) : f32[3,2]
)";
const char* kFlag = R"(    %p = matmul(%xi, %gi, transpose_a=true) : f32[3,2]
)";
const char* kZeros = "zeros(shape=[3,2], dtype=f32) : f32[3,2]";
const char* kOnes = "constant [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]] : f32[3,2]";

// The pass, then dead-code elimination (as the pipeline runs them): the old update goes.
void stack_then_dce(ir::Module& m) {
  stack_loop_products(m);
  eliminate_dead_code(m);
}

TEST(Stack, AnAccumulatedProductBecomesOneProductAfterTheLoop) {
  const std::string out =
      after_pass(weight_gradient_loop(kPermuted, kZeros), stack_then_dce, {i64(3)});
  const size_t body = out.find("graph @main.body"), body_end = out.find("\n  }\n", body);
  ASSERT_NE(body_end, std::string::npos) << out;
  const std::string body_text = out.substr(body, body_end - body);
  // The body pushes X_i and G_i and multiplies nothing (the state, passed through, went with
  // the dead code); the one product follows the loop.
  EXPECT_EQ(count(body_text, "list_push"), 2u) << out;
  EXPECT_EQ(count(body_text, "matmul"), 0u) << out;
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 1u) << out;
  EXPECT_GT(out.find("list_tmatmul_sum"), out.find("for_range")) << out;
}

TEST(Stack, TheTransposeFlagFormAndAnInitialValueAreKept) {
  // Initial value ones, transpose as the matmul's flag; also 0 iterations (the initial value).
  for (int64_t n : {3, 1, 0}) {
    const std::string out =
        after_pass(weight_gradient_loop(kFlag, kOnes), stack_loop_products, {i64(n)});
    EXPECT_EQ(count(out, "list_tmatmul_sum"), 1u) << out;
  }
}

TEST(Stack, AStateReadInsideTheBodyStays) {
  // The body also prints the running sum: it is needed at every iteration.
  const std::string out =
      after_pass(weight_gradient_loop(kPermuted, kZeros, "    %seen = print(%acc) : ()\n"),
                 stack_loop_products, {i64(2)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
  EXPECT_EQ(count(out, "matmul", out.find("graph @main.body")), 1u) << out;
}

TEST(Stack, AProductWithATransposedRightOperandStays) {
  const std::string out =
      after_pass(weight_gradient_loop(R"(    %gt = permute(%gi, axes=[1,0]) : f32[2,2]
    %p = matmul(%xi, %gt, transpose_a=true, transpose_b=true) : f32[3,2]
)",
                                      kZeros),
                 stack_loop_products, {i64(3)});
  EXPECT_EQ(count(out, "list_tmatmul_sum"), 0u) << out;
}

TEST(Stack, TheSumsTypeRuleNamesWhatDoesNotFit) {
  parse(weight_gradient_loop(kFlag, kZeros));  // registers the primitives
  const sem::Primitive* p = sem::Registry::instance().find("list_tmatmul_sum");
  ASSERT_NE(p, nullptr);
  const sem::TypeP la = sem::Type::list(sem::Type::tensor(DType::f32, {2, 3}));
  const sem::TypeP lb = sem::Type::list(sem::Type::tensor(DType::f32, {2, 4}));
  EXPECT_EQ(p->infer({la, lb, sem::Type::tensor(DType::f32, {3, 4})}, {})->str(), "f32[3,4]");
  try {
    p->infer({la, lb, sem::Type::tensor(DType::f32, {4, 3})}, {});
    ADD_FAILURE() << "no error";
  } catch (const lang::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the sum is f32[3,4], the initial value f32[4,3]"),
              std::string::npos)
        << e.what();
  }
  const sem::TypeP other_rows = sem::Type::list(sem::Type::tensor(DType::f32, {5, 4}));
  EXPECT_THROW(p->infer({la, other_rows, sem::Type::tensor(DType::f32, {3, 4})}, {}),
               lang::UserError);
}

}  // namespace
}  // namespace spora::passes::testing
