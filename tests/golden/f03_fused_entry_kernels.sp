# `spora ir --entry step`: the kernels of a workload's step (W5's chain on 4096 floats), not
# of main, whose copy of the chain the simplifier shrinks to the 4 elements main prints. The
# loop body is loads, arithmetic, gelu, tanh and a store: explicit AVX-512 code (two vectors,
# one, a masked one) where the kernel is built for it, else the two halves of its task
# interleaved.
# RUN: ir --stage fused --emit kernels --entry step
def step(x) = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x)

def main() {
    let x = normal(shape=(4096,), seed=1)
    print(step(x)[0:4])
}
# CHECK: // ---- @fused_step ----
# CHECK: // domain [4096], 1 rows x 4096 inner, 0 reduction passes, 0 totals
# CHECK: #ifdef SP_AVX512
# CHECK: for (; j + 32 <= j1; j += 32) {
# CHECK-NEXT: const __m512 v0_a = _mm512_loadu_ps(in0 + j);
# CHECK-NEXT: const __m512 v0_b = _mm512_loadu_ps(in0 + j + 16);
# CHECK: const __m512 v3_a = spora::cpu::vm::gelu16(v2_a);
# CHECK: const __m512 v5_b = spora::cpu::vm::tanh16(v0_b);
# CHECK: _mm512_storeu_ps(out0 + j + 16, v6_b);
# CHECK: for (; j + 16 <= j1; j += 16) {
# CHECK: const __mmask16 sp_m = (__mmask16)((1u << (j1 - j)) - 1u);
# CHECK-NEXT: const __m512 v0 = _mm512_maskz_loadu_ps(sp_m, in0 + j);
# CHECK: _mm512_mask_storeu_ps(out0 + j, sp_m, v6);
# CHECK: #else
# CHECK: const int64_t sp_h = (j1 - j0) / 2;
# CHECK-NEXT: #pragma omp simd
# CHECK-NEXT: for (int64_t sp_k = 0; sp_k < sp_h; ++sp_k) {
# CHECK-NEXT: const int64_t j_a = j0 + sp_k, j_b = j0 + sp_h + sp_k;
# CHECK-NEXT: const float v0_a = in0[j_a];
# CHECK-NEXT: const float v0_b = in0[j_b];
# CHECK: const float v3_a = sp_gelu(v2_a);
# CHECK-NEXT: const float v3_b = sp_gelu(v2_b);
# CHECK: out0[j_b] = v6_b;
# CHECK: for (int64_t j = j0 + 2 * sp_h; j < j1; ++j) {  // the odd element
# CHECK: #endif
# CHECK: extern "C" __global__ void
