// passes::kernel_stats: kernels and the bytes they read and write, before and after fusion, on
// hand-written IR whose counts are worked out by hand in the comments.
#include "semantics/passes/kernel_stats.h"

#include <gtest/gtest.h>

#include "semantics/ir/parser.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::fusion_testing {
namespace {

std::unique_ptr<ir::Module> parse(const std::string& text) {
  setup();
  auto m = ir::parse_module(text);
  ir::verify_or_throw(*m, "test input");
  return m;
}

TEST(KernelStats, MatmulEpilogue) {
  auto m = parse(R"(
graph @main(%x: f32[16,8], %w: f32[8,4], %b: f32[4]) -> f32[16,4] {
  %h = matmul(%x, %w) : f32[16,4]
  %z = add(%h, %b) : f32[16,4]
  %y = relu(%z) : f32[16,4]
  return %y
}
)");
  // Node by node: matmul reads x (512 B) and w (128 B), add reads h (256 B) and b (16 B),
  // relu reads z (256 B); each writes 256 B.
  passes::KernelStats s = passes::kernel_stats(*m->entry);
  EXPECT_EQ(s.kernels, 3);
  EXPECT_EQ(s.fused_calls, 0);
  EXPECT_DOUBLE_EQ(s.bytes_read, 512 + 128 + 256 + 16 + 256);
  EXPECT_DOUBLE_EQ(s.bytes_written, 3 * 256);
  passes::fuse_operators(*m);
  // Fused: the GEMM (reads x and w, writes h) and the loop nest (reads b and h, writes y).
  s = passes::kernel_stats(*m->entry);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.fused_calls, 1);
  EXPECT_DOUBLE_EQ(s.bytes_read, 512 + 128 + 16 + 256);
  EXPECT_DOUBLE_EQ(s.bytes_written, 2 * 256);
}

TEST(KernelStats, ElementwiseChainAndViews) {
  auto m = parse(R"(
graph @main(%x: f32[64,32]) -> f32[64,32] {
  %a = constant 1.5 : f32
  %b = mul(%x, %a) : f32[64,32]
  %c = gelu(%b) : f32[64,32]
  %d = tanh(%x) : f32[64,32]
  %e = add(%c, %d) : f32[64,32]
  %f = identity(%e) : f32[64,32]
  return %f
}
)");
  // Four kernels of 8 KiB results (identity moves nothing); mul also reads the 4-byte scalar.
  passes::KernelStats s = passes::kernel_stats(*m->entry);
  EXPECT_EQ(s.kernels, 4);
  EXPECT_DOUBLE_EQ(s.bytes_read, 8192 + 4 + 8192 + 8192 + 2 * 8192);
  EXPECT_DOUBLE_EQ(s.bytes_written, 4 * 8192);
  EXPECT_DOUBLE_EQ(s.bytes(), s.bytes_read + s.bytes_written);
  passes::fuse_operators(*m);
  // One loop nest: x in, the sum out (the scalar is copied into the kernel).
  s = passes::kernel_stats(*m->entry);
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.fused_calls, 1);
  EXPECT_DOUBLE_EQ(s.bytes_read, 8192);
  EXPECT_DOUBLE_EQ(s.bytes_written, 8192);
}

}  // namespace
}  // namespace spora::fusion_testing
