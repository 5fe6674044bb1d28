// The checker itself: a primitive with a deliberately wrong rule must fail it.
#include <gtest/gtest-spi.h>

#include "grad_check_util.h"

namespace spora::autodiff::testing {
namespace {

// "test_bad_sin": sin with a wrong vjp (dout * sin x) and a wrong jvp (t * cos x + t).
void register_bad_sin() {
  setup();
  if (sem::Registry::instance().find("test_bad_sin")) return;
  sem::Primitive p = *sem::Registry::instance().find("sin");
  p.name = "test_bad_sin";
  p.facets[kVjpFacet] =
      VjpRule([](Emitter& e, const Node&, const std::vector<Node*>& in, Node*, Node* dout) {
        return std::vector<Node*>{e.mul(dout, e.op("sin", {in[0]}))};
      });
  p.facets[kJvpFacet] = JvpRule([](Emitter& e, const Node&, const std::vector<Node*>& in, Node*,
                                   const std::vector<Node*>& ts) {
    return e.add(e.mul(ts[0], e.op("cos", {in[0]})), ts[0]);
  });
  sem::Registry::instance().add(std::move(p));
}

void check_bad_sin() {
  register_bad_sin();
  GradCase c;
  c.name = "bad_sin";
  c.prim = "test_bad_sin";
  c.inputs = {f64({3})};
  GradHarness h(c);
  h.check_first_order();
}

TEST(GradChecker, CatchesAWrongRule) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    check_bad_sin();
  }
  int vjp = 0, jvp = 0, identity = 0;
  for (int i = 0; i < results.size(); ++i) {
    std::string m = results.GetTestPartResult(i).message();
    vjp += m.find("vjp of input 0") != std::string::npos;
    jvp += m.find("jvp element") != std::string::npos;
    identity += m.find("<t, vjp(c)> = <jvp(t), c>") != std::string::npos;
  }
  EXPECT_EQ(vjp, 3);  // every element
  EXPECT_EQ(jvp, 3);
  EXPECT_EQ(identity, 1);
}

}  // namespace
}  // namespace spora::autodiff::testing
