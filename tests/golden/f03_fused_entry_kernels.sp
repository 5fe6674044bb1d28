# `spora ir --entry step`: the kernels of a workload's step (W5's chain on 4096 floats), not
# of main, whose copy of the chain the simplifier shrinks to the 4 elements main prints. The
# loop body calls gelu and tanh, so it runs the two halves of its task interleaved.
# RUN: ir --stage fused --emit kernels --entry step
def step(x) = gelu(x * 1.5 + 0.25) * 0.75 + tanh(x)

def main() {
    let x = normal(shape=(4096,), seed=1)
    print(step(x)[0:4])
}
# CHECK: // ---- @fused_step ----
# CHECK: // domain [4096], 1 rows x 4096 inner, 0 reduction passes, 0 totals
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
# CHECK: extern "C" __global__ void
