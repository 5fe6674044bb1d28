// Every case of grad_cases.cpp through the numeric gradient checker (grad_check_util.h): the
// vjp and jvp rules against finite differences in f64, their transpose identity, and the
// second derivatives (reverse over reverse, forward over reverse, reverse over forward).
#include "grad_cases.h"

namespace spora::autodiff::testing {
namespace {

class GradCheck : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradCheck, FirstOrder) {
  GradHarness h(GetParam());
  h.check_first_order();
}

TEST_P(GradCheck, SecondOrder) {
  if (!GetParam().second_order) GTEST_SKIP() << "no second-order check for this case";
  GradHarness h(GetParam());
  h.check_second_order();
}

INSTANTIATE_TEST_SUITE_P(Rules, GradCheck, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace spora::autodiff::testing
