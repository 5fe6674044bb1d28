// The training-step harness's optimizer update (backends/distributed/train_step.h) on the CPU
// kernels: a parameter or state tensor moved in as its only reference is updated in its own
// buffer, as an optimizer updates in place; one still held elsewhere is left as it was; the
// values are the update's formulas either way.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu.h"
#include "backends/distributed/train_step.h"
#include "ops/ops.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::distributed {
namespace {

using sem::Tensor;
using spora::DType;

Tensor ramp(int64_t n, double scale) {
  Tensor t = Tensor::empty(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) t.set(i, scale * static_cast<double>(i % 17 - 8));
  return t;
}

class OptimizerUpdate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ops::register_all();
    cpu::register_kernels();
    sem::set_backend(sem::Backend::Cpu);
  }
  static void TearDownTestSuite() { sem::set_backend(sem::Backend::Reference); }
};

TEST_F(OptimizerUpdate, AnOnlyReferenceIsUpdatedInItsOwnBuffer) {
  const int64_t n = 1000;
  const Tensor g = ramp(n, 0.5);
  Tensor p = ramp(n, 0.25);
  const Tensor before = p.clone();
  const void* buffer = p.raw();
  std::vector<Tensor> state;
  const Tensor q = optimizer_update("sgd", std::move(p), g, state, 0.1, 1);
  EXPECT_EQ(q.raw(), buffer);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_FLOAT_EQ(
        static_cast<float>(q.get(i)),
        static_cast<float>(before.get(i)) - static_cast<float>(g.get(i)) * static_cast<float>(0.1));
  // Held elsewhere: a new buffer, and the other holder keeps its values.
  Tensor held = ramp(n, 0.25);
  const Tensor other = held;
  const Tensor r = optimizer_update("sgd", held, g, state, 0.1, 1);
  EXPECT_NE(r.raw(), other.raw());
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(other.get(i), before.get(i));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(r.get(i), q.get(i));
}

TEST_F(OptimizerUpdate, AdamsStateIsUpdatedInItsOwnBuffers) {
  const int64_t n = 777;
  const Tensor g = ramp(n, 0.5);
  std::vector<Tensor> state;
  Tensor p = optimizer_update("adam", ramp(n, 0.25), g, state, 0.01, 1);
  ASSERT_EQ(state.size(), 2u);
  const void* m = state[0].raw();
  const void* v = state[1].raw();
  const void* pb = p.raw();
  const Tensor m1 = state[0].clone(), v1 = state[1].clone();
  p = optimizer_update("adam", std::move(p), g, state, 0.01, 2);
  EXPECT_EQ(state[0].raw(), m);
  EXPECT_EQ(state[1].raw(), v);
  EXPECT_EQ(p.raw(), pb);
  // m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2, in f32 as the kernels round them.
  for (int64_t i = 0; i < n; i += 37) {
    const float gi = static_cast<float>(g.get(i));
    EXPECT_FLOAT_EQ(static_cast<float>(state[0].get(i)),
                    static_cast<float>(m1.get(i)) * 0.9f + gi * static_cast<float>(1 - 0.9));
    EXPECT_FLOAT_EQ(
        static_cast<float>(state[1].get(i)),
        static_cast<float>(v1.get(i)) * 0.999f + gi * gi * static_cast<float>(1 - 0.999));
  }
}

}  // namespace
}  // namespace spora::distributed
