// Reuse distances (sim/reuse.h) against hand-counted LRU stack distances, and the dataflow of a
// flattened training step: every op reads known tensors, and every update reads the gradient
// the backward pass wrote. (The cost model's tables by reuse distance: measured_tables_test.)
#include "sim/reuse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autodiff/install.h"
#include "ops/ops.h"

namespace spora::sim {
namespace {

StepOp op(std::vector<TensorRef> reads, std::vector<TensorRef> writes) {
  StepOp o;
  o.reads = std::move(reads);
  o.writes = std::move(writes);
  return o;
}

std::vector<const StepOp*> pointers(const std::vector<StepOp>& ops) {
  std::vector<const StepOp*> out;
  for (const StepOp& o : ops) out.push_back(&o);
  return out;
}

// A chain x -> a -> b with a weight w read twice: in the second pass, each read's distance is
// the bytes of the distinct tensors touched since its last use.
TEST(ReuseDistance, IsTheLruStackDistanceOfTheSecondPass) {
  const TensorRef x{0, 100}, w{1, 1000}, a{2, 10}, b{3, 1};
  const std::vector<StepOp> ops{op({x, w}, {a}), op({a, w}, {b})};
  const auto d = reuse_distances(pointers(ops));
  ASSERT_EQ(d.size(), 2u);
  // Op 0 (pass 2): x was last touched in op 0 of pass 1; since then w (in op 0), a, w, b:
  // distinct w, a, b = 1011 bytes. w was last touched in op 1: since then b = 1 byte.
  ASSERT_EQ(d[0].size(), 2u);
  EXPECT_EQ(d[0][0], (std::array<double, 2>{1011, 100}));
  EXPECT_EQ(d[0][1], (std::array<double, 2>{1, 1000}));
  // Op 1: a was written by op 0 just before (nothing since); w read by op 0 of this pass,
  // then a written: 10 bytes.
  ASSERT_EQ(d[1].size(), 2u);
  EXPECT_EQ(d[1][0], (std::array<double, 2>{0, 10}));
  EXPECT_EQ(d[1][1], (std::array<double, 2>{10, 1000}));
}

// A tensor only ever read in one place is touched once per step: its distance is the whole step's
// other data. A tensor nobody names (id -1) or of no bytes has no row.
TEST(ReuseDistance, UnknownTensorsHaveNoRowAndAStepRepeats) {
  const TensorRef p{0, 64}, t1{1, 8}, t2{2, 8}, none{-1, 50}, empty{3, 0};
  const std::vector<StepOp> ops{op({p, none, empty}, {t1}), op({t1}, {t2})};
  const auto d = reuse_distances(pointers(ops));
  ASSERT_EQ(d[0].size(), 1u);
  EXPECT_EQ(d[0][0], (std::array<double, 2>{16, 64}));  // t1 and t2 since (the empty one: 0)
  EXPECT_EQ(d[1][0], (std::array<double, 2>{0, 8}));
}

// The flattened W2 step: every op with reads reads tensors an earlier op or the step's inputs
// made; each parameter's update reads the gradient the backward pass wrote.
TEST(ReuseDistance, TheStepsDataflowConnectsProducersToConsumers) {
  ops::register_all();
  autodiff::install();
  parallel::StepOptions o;
  o.batch = 32;
  o.optimizer = "adam";
  const StepProgram p = build_step_program(SPORA_SOURCE_DIR "/benchmarks/sim/w2_mlp.sp", o);
  std::set<int> written;
  for (const StepOp& op : p.ops) {
    EXPECT_TRUE(op.cost.op_class == "view" || !op.reads.empty())
        << op.prim->name << " has no known reads";
    for (const TensorRef& w : op.writes) written.insert(w.id);
  }
  ASSERT_EQ(p.params.size(), 6u);
  std::set<int> gradients_read;
  for (const StepParam& param : p.params) {
    ASSERT_EQ(param.update.size(), 12u);  // adam
    // The parameter is written in place by the last op, which also reads it.
    const StepOp& last = param.update.back();
    ASSERT_EQ(last.writes.size(), 1u);
    EXPECT_EQ(last.reads[0].id, last.writes[0].id);
    EXPECT_DOUBLE_EQ(last.writes[0].bytes, param.bytes);
    // The gradient: read by the second op (g > 1), written by the backward pass.
    const TensorRef g = param.update[1].reads.at(0);
    EXPECT_TRUE(written.count(g.id)) << param.name << "'s gradient is not a backward op's output";
    gradients_read.insert(g.id);
  }
  EXPECT_EQ(gradients_read.size(), 6u);
  // In the step order (ops, then the updates), the first layer's weight is last touched by its
  // own update in the previous step: every parameter updated after it was written since.
  std::vector<const StepOp*> seq;
  for (const StepOp& op : p.ops) seq.push_back(&op);
  for (const StepParam& param : p.params)
    for (const StepOp& op : param.update) seq.push_back(&op);
  const auto d = reuse_distances(seq);
  const double w1 = 4.0 * 784 * 512;
  std::size_t w1_index = p.params.size();
  double after = 0;
  for (std::size_t i = 0; i < p.params.size(); ++i) {
    if (p.params[i].bytes == w1)
      w1_index = i;
    else if (i > w1_index)
      after += p.params[i].bytes;
  }
  ASSERT_LT(w1_index, p.params.size());
  bool found = false;
  for (std::size_t i = 0; i < p.ops.size() && !found; ++i) {
    if (p.ops[i].prim->name != "matmul") continue;
    for (const auto& r : d[i])
      if (r[1] == w1) {
        found = true;
        EXPECT_GE(r[0], after);
        EXPECT_LT(r[0], kNeverUsed);
      }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace spora::sim
