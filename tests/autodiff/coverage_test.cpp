// Every differentiable primitive of the registry has both derivative rules and at least one
// gradient-check case (every primitive has a derivative unless marked non-differentiable).
#include <set>
#include <string>

#include "grad_cases.h"

namespace spora::autodiff::testing {
namespace {

// Rows the AD engines handle structurally (reverse.cpp / forward.cpp), not through rules, and
// rows tests register for themselves ("test_...", grad_check_self_test.cpp), and the collective
// rows, whose kernels need a multi-rank run (their rules: ops/collective.cpp; their runs:
// tests/parallel).
bool exempt(const sem::Primitive& p) {
  if (p.family == "collective") return true;
  static const std::set<std::string> tuple_ops = {"make_tuple", "tuple_get", "make_record",
                                                  "record_get"};
  return p.family == "control" || tuple_ops.count(p.name) > 0 || p.name.rfind("test_", 0) == 0;
}

TEST(Coverage, EveryDifferentiablePrimitiveHasRulesAndACase) {
  setup();
  std::set<std::string> cased;
  for (const GradCase& c : grad_cases()) cased.insert(c.prim);
  int checked = 0;
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    if (!p->differentiable || p->effectful || exempt(*p)) continue;
    ++checked;
    const auto* vjp = p->facet<VjpRule>(kVjpFacet);
    const auto* jvp = p->facet<JvpRule>(kJvpFacet);
    EXPECT_TRUE(vjp && *vjp) << p->name << " has no vjp rule";
    EXPECT_TRUE(jvp && *jvp) << p->name << " has no jvp rule";
    EXPECT_TRUE(cased.count(p->name)) << p->name << " has no gradient-check case in grad_cases.cpp";
  }
  EXPECT_GT(checked, 50);
}

TEST(Coverage, CaseNamesAreUniqueAndNameRealPrimitives) {
  setup();
  std::set<std::string> names;
  for (const GradCase& c : grad_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
    const sem::Primitive* p = sem::Registry::instance().find(c.prim);
    ASSERT_TRUE(p) << c.prim;
    EXPECT_TRUE(p->differentiable) << c.prim;
  }
}

// Non-differentiable rows carry no rules (their outputs get no gradient; a rule there would
// never run and would only mislead).
TEST(Coverage, NonDifferentiablePrimitivesHaveNoRules) {
  setup();
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    if (p->differentiable) continue;
    EXPECT_FALSE(p->facet<VjpRule>(kVjpFacet)) << p->name;
    EXPECT_FALSE(p->facet<JvpRule>(kJvpFacet)) << p->name;
  }
}

}  // namespace
}  // namespace spora::autodiff::testing
