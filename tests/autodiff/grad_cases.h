// The table of gradient-check cases: every differentiable primitive (and the helper primitives
// the derivative rules emit), with broadcasting shapes, keepdims variants, the conv2d geometry
// options and both modes of the normalisation layers. grad_check_test.cpp runs each case;
// coverage_test.cpp checks that no differentiable primitive is missing from it.
#pragma once

#include <vector>

#include "grad_check_util.h"

namespace spora::autodiff::testing {

const std::vector<GradCase>& grad_cases();

}  // namespace spora::autodiff::testing
