// The kernel IR (semantics/kernel_ir/): structural index expressions, the verifier's
// rejections (ill-typed, out of bounds, undefined or out-of-scope values) with their messages,
// the printer, the interleave and tile transformations, and kernels planned from groups.
#include <gtest/gtest.h>

#include <string>

#include "semantics/ir/parser.h"
#include "semantics/ir/verifier.h"
#include "semantics/kernel_ir/kernel_ir.h"
#include "semantics/kernel_ir/transform.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/fusion_plan.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::kir {
namespace {

const Ix r = Ix::var(Var::row());
const Ix j = Ix::var(Var::inner_index());

// tanh of a [rows, inner] f32 tensor: v0 = in0[r*inner + j]; v1 = tanh(v0); out0[...] = v1.
Kernel tanh_kernel(int64_t rows, int64_t inner) {
  Kernel k;
  k.inputs = {{DType::f32, {rows, inner}}};
  k.outputs = {{DType::f32, {rows, inner}}};
  k.domain = {rows, inner};
  k.rows = rows;
  k.inner = inner;
  k.splittable = true;
  const Ix at = Ix::sum({Ix::scale(r, inner), j});
  Pass p;
  p.body.push_back(define(0, load(0, DType::f32, at)));
  p.body.push_back(define(1, unary("tanh", Operand::value(0, DType::f32))));
  p.body.push_back(store(0, at, Operand::value(1, DType::f32)));
  k.passes.push_back(p);
  k.describe = "test";
  return k;
}

TEST(KernelIr, IndexExpressionsCompareAsStructures) {
  const Ix a = Ix::sum({Ix::scale(r, 8), j});
  const Ix b = Ix::sum({Ix::scale(Ix::var(Var::row()), 8), Ix::var(Var::inner_index())});
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_FALSE(a == Ix::sum({j, Ix::scale(r, 8)}));  // the order of the terms is structure
  EXPECT_FALSE(a == Ix::sum({Ix::scale(r, 9), j}));
  EXPECT_FALSE(Ix::div(j, 4) == Ix::mod(j, 4));
  EXPECT_FALSE(Ix::var(Var::coord(1, true)) == Ix::var(Var::coord(1, false)));
  EXPECT_TRUE(Ix() == Ix::constant(0));
  EXPECT_TRUE(Ix::constant(0).is_const(0));
  EXPECT_TRUE(a.depends_inner());
  EXPECT_FALSE(Ix::scale(r, 8).depends_inner());
  EXPECT_TRUE(Ix::mod(Ix::var(Var::coord(2, true)), 3).depends_inner());
  EXPECT_TRUE(Ix::div(Ix::var(Var::coord(0, false)), 3).uses(Var::Kind::Coord));
  EXPECT_FALSE(a.uses(Var::Kind::Coord));
  // Copies rename the inner loop's variables only.
  const Ix c = a.with_inner_copy(2);
  EXPECT_FALSE(c == a);
  EXPECT_EQ(print(c), "r*8 + j.2");
  EXPECT_EQ(print(Ix::mod(Ix::div(a, 4), 2)), "(((r*8 + j) / 4) % 2)");
}

TEST(KernelIr, VerifierAcceptsAWellFormedKernel) {
  EXPECT_EQ(verify(tanh_kernel(3, 100)), "");
}

TEST(KernelIr, VerifierRejectsAnIllTypedExpression) {
  Kernel k = tanh_kernel(3, 100);
  // tanh of a bool, and an add of a bool and a float.
  k.passes[0].body.insert(k.passes[0].body.begin() + 1,
                          define(5, compare("lt", Operand::value(0, DType::f32),
                                            Operand::literal(0, DType::f32))));
  k.passes[0].body.insert(k.passes[0].body.begin() + 2,
                          define(6, unary("tanh", Operand::value(5, DType::boolean))));
  k.passes[0].body.insert(
      k.passes[0].body.begin() + 3,
      define(7, binary("add", DType::f32, Operand::value(0, DType::f32),
                       Operand::value(5, DType::boolean))));
  const std::string v = verify(k);
  EXPECT_NE(v.find("pass 0 body: tanh v5: needs a real operand of its dtype (result bool)"),
            std::string::npos)
      << v;
  EXPECT_NE(v.find("pass 0 body: add v0, v5: needs real operands (result f32)"), std::string::npos)
      << v;
}

TEST(KernelIr, VerifierRejectsAValueUsedAsAnotherDtype) {
  Kernel k = tanh_kernel(3, 100);
  k.passes[0].body[1] = define(1, unary("tanh", Operand::value(0, DType::f64)));
  const std::string v = verify(k);
  EXPECT_NE(v.find("v0 is used as f64 but defined as f32"), std::string::npos) << v;
}

TEST(KernelIr, VerifierRejectsAStoreOfAnotherDtype) {
  Kernel k = tanh_kernel(3, 100);
  k.outputs[0].dtype = DType::f64;
  const std::string v = verify(k);
  EXPECT_NE(v.find("store of f32 v1 into out0 of f64"), std::string::npos) << v;
}

TEST(KernelIr, VerifierRejectsAnIndexOutOfBounds) {
  Kernel k = tanh_kernel(3, 100);
  // One past the row: the last element reads index 300.
  k.passes[0].body[0] = define(0, load(0, DType::f32, Ix::sum({Ix::scale(r, 100), j, Ix::constant(1)})));
  const std::string v = verify(k);
  EXPECT_NE(v.find("pass 0 body: index r*100 + j + 1 takes values in [1, 300], outside [0, 300)"),
            std::string::npos)
      << v;
  // A stride too large for the buffer, and a remainder by 0.
  Kernel s = tanh_kernel(3, 100);
  s.passes[0].body[2] = store(0, Ix::sum({Ix::scale(r, 101), j}), Operand::value(1, DType::f32));
  EXPECT_NE(verify(s).find("index r*101 + j takes values in [0, 301], outside [0, 300)"),
            std::string::npos)
      << verify(s);
  Kernel z = tanh_kernel(3, 100);
  z.passes[0].body[0] = define(0, load(0, DType::f32, Ix::mod(j, 0)));
  EXPECT_NE(verify(z).find("remainder by 0 in (j % 0)"), std::string::npos) << verify(z);
}

TEST(KernelIr, VerifierRejectsUndefinedAndOutOfScopeValues) {
  // A value used before its definition.
  Kernel k = tanh_kernel(3, 100);
  std::swap(k.passes[0].body[0], k.passes[0].body[1]);
  std::string v = verify(k);
  EXPECT_NE(v.find("pass 0 body: v0 is used before it is defined (or outside its scope)"),
            std::string::npos)
      << v;
  // A value of the body read after its loop, and j outside the inner loop.
  Kernel post = tanh_kernel(3, 100);
  post.passes[0].post.push_back(store(0, Ix::scale(r, 100), Operand::value(1, DType::f32)));
  post.passes[0].post.push_back(store(0, j, Operand::literal(0, DType::f32)));
  v = verify(post);
  EXPECT_NE(v.find("pass 0 post: v1 is used before it is defined"), std::string::npos) << v;
  EXPECT_NE(v.find("pass 0 post: j used outside the inner loop"), std::string::npos) << v;
  // A row accumulator read before its loop ends; a total read inside the nest; a value
  // defined twice; a coordinate that no setup defines.
  Kernel acc = tanh_kernel(3, 100);
  Accumulator a;
  a.id = 9;
  a.op = ReduceOp::Sum;
  a.dtype = DType::f64;
  a.value = Operand::value(1, DType::f32);
  acc.passes[0].accs.push_back(a);
  Expr red;
  red.op = Expr::Op::Reduced;
  red.dtype = DType::f32;
  red.acc = 9;
  acc.passes[0].pre.push_back(define(10, red));
  Expr tot = red;
  tot.total = true;
  tot.acc = 0;
  acc.passes[0].post.push_back(define(11, tot));
  acc.passes[0].body.push_back(define(1, unary("tanh", Operand::value(0, DType::f32))));
  acc.passes[0].body.push_back(define(12, load(0, DType::f32, Ix::var(Var::coord(1, true)))));
  v = verify(acc);
  EXPECT_NE(v.find("pass 0 pre: a9 read where its loop has not ended"), std::string::npos) << v;
  EXPECT_NE(v.find("pass 0 post: t0 read before the nest ends"), std::string::npos) << v;
  EXPECT_NE(v.find("v1 is defined twice"), std::string::npos) << v;
  EXPECT_NE(v.find("c1 is not defined here"), std::string::npos) << v;
}

TEST(KernelIr, PrinterWritesTheLoopNest) {
  Kernel k = tanh_kernel(3, 100);
  k.in_place_ok = {true};
  EXPECT_EQ(print(k),
            "kernel test\n"
            "  in0: f32[3,100] (in place)\n"
            "  out0: f32[3,100]\n"
            "  for r in [0, 3):\n"
            "    pass 0:\n"
            "      for j in [0, 100):\n"
            "        v0: f32 = load in0[r*100 + j]\n"
            "        v1: f32 = tanh v0\n"
            "        store out0[r*100 + j] = v1\n");
}

TEST(KernelIr, InterleaveCopiesTheBodyAndRenamesItsValues) {
  Kernel k = tanh_kernel(3, 100);
  interleave(k, k.passes[0], 2);
  const Pass& p = k.passes[0];
  EXPECT_EQ(p.loop.interleave, 2);
  ASSERT_EQ(p.loop.interleaved.size(), 6u);
  EXPECT_EQ(p.loop.interleaved[0].copy, 1);
  EXPECT_EQ(p.loop.interleaved[1].copy, 2);
  EXPECT_EQ(print(p.loop.interleaved[1].expr.index), "r*100 + j.2");
  EXPECT_EQ(p.loop.interleaved[3].expr.args[0].copy, 2);  // tanh(v0.2)
  EXPECT_EQ(verify(k), "");
  EXPECT_TRUE(calls_transcendental(p));
  // A loop that accumulates is not interleaved.
  Kernel a = tanh_kernel(3, 100);
  a.passes[0].accs.push_back(Accumulator{0, false, ReduceOp::Sum, DType::f64,
                                         Operand::value(1, DType::f32)});
  EXPECT_THROW(interleave(a, a.passes[0], 2), std::logic_error);
}

TEST(KernelIr, TilesSplitOnlySplittableKernels) {
  Kernel k = tanh_kernel(1, 100000);
  tile_inner(k, 8192);
  EXPECT_EQ(task_extent(k), 8192);
  tile_inner(k, 200000);  // longer than the row: whole rows
  EXPECT_EQ(task_extent(k), 100000);
  k.splittable = false;
  EXPECT_THROW(tile_inner(k, 8192), std::logic_error);
}

// Kernels planned from groups verify, and a value read twice at the same index (compared as a
// structure) is computed once.
TEST(KernelIr, PlannedKernelsVerifyAndShareEqualReads) {
  fusion_testing::setup();
  auto m = ir::parse_module(R"(
graph @main(%x: f32[8,32], %b: f32[32]) -> (f32[8,32], f32[8,1]) {
  %e = exp(%x) : f32[8,32]
  %s = add(%e, %b) : f32[8,32]
  %t = mul(%s, %e) : f32[8,32]
  %m = sum(%t, axis=[1], keepdims=true) : f32[8,1]
  %r = make_tuple(%t, %m) : (f32[8,32], f32[8,1])
  return %r
}
)");
  passes::fuse_operators(*m);
  ir::verify_or_throw(*m, "after fusion");
  int groups = 0;
  for (const auto& g : m->graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    ++groups;
    std::string why;
    auto plan = passes::plan_group(passes::group_of(*g), &why);
    ASSERT_TRUE(plan) << why;
    EXPECT_EQ(verify(*plan), "");
    // Per pass (the row sum's, then the stores'): exp(x) and the load of x once each.
    ASSERT_EQ(plan->passes.size(), 2u) << print(*plan);
    for (const Pass& p : plan->passes) {
      int exps = 0, loads0 = 0;
      for (const Stmt& s : p.body) {
        exps += s.kind == Stmt::Kind::Define && s.expr.op == Expr::Op::Unary && s.expr.fn == "exp";
        loads0 += s.kind == Stmt::Kind::Define && s.expr.op == Expr::Op::Load && s.expr.buffer == 0;
      }
      EXPECT_EQ(exps, 1) << print(*plan);
      EXPECT_EQ(loads0, 1) << print(*plan);
    }
  }
  EXPECT_EQ(groups, 1);
}

}  // namespace
}  // namespace spora::kir
