# `spora ir --stage kernels --entry step`: the kernel IR (semantics/kernel_ir/) of every fusion
# group of a step, and the C++ target's schedule. A softmax over rows is three passes over each
# row (max, the sum of exp, the output) with row accumulators; W5's chain on 4096 floats is one
# flat loop whose C++ form interleaves two halves and writes 16 lanes explicitly.
# RUN: ir --stage kernels --entry step
def step(x, y) = (softmax(x * 2.0, axis=1), gelu(y * 1.5 + 0.25) * 0.75 + tanh(y))

def main() {
    let (s, c) = step(normal(shape=(64, 100), seed=1), normal(shape=(4096,), seed=2))
    print(s[0, 0:2], c[0:4])
}
# CHECK: // ---- @fused_step ----
# CHECK-NEXT: kernel domain [64,100], 64 rows x 100 inner, 2 reduction passes, 0 totals
# CHECK-NEXT: in0: f32[64,100] (in place)
# CHECK-NEXT: out0: f32[64,100]
# CHECK-NEXT: for r in [0, 64):
# CHECK-NEXT: pass 0:
# CHECK-NEXT: acc a2: f32 max
# CHECK-NEXT: for j in [0, 100):
# CHECK-NEXT: v0: f32 = load in0[r*100 + j]
# CHECK-NEXT: v1: f32 = mul v0, 2:f32
# CHECK-NEXT: a2 max= v1
# CHECK-NEXT: v3: f32 = reduced a2
# CHECK-NEXT: pass 1:
# CHECK-NEXT: v6: f32 = finite_or_zero v3
# CHECK-NEXT: acc a9: f64 sum
# CHECK-NEXT: for j in [0, 100):
# CHECK-NEXT: v4: f32 = load in0[r*100 + j]
# CHECK-NEXT: v5: f32 = mul v4, 2:f32
# CHECK-NEXT: v7: f32 = sub v5, v6
# CHECK-NEXT: v8: f32 = exp v7
# CHECK-NEXT: a9 sum= v8
# CHECK-NEXT: v10: f32 = reduced a9
# CHECK-NEXT: pass 2:
# CHECK-NEXT: for j in [0, 100):
# CHECK-NEXT: v11: f32 = load in0[r*100 + j]
# CHECK-NEXT: v12: f32 = mul v11, 2:f32
# CHECK-NEXT: v13: f32 = sub v12, v6
# CHECK-NEXT: v14: f32 = exp v13
# CHECK-NEXT: v15: f32 = div v14, v10
# CHECK-NEXT: store out0[r*100 + j] = v15
# CHECK-NEXT: cpu: whole rows
# CHECK-NEXT: // ---- @fused_step.1 ----
# CHECK-NEXT: kernel domain [4096], 1 rows x 4096 inner, 0 reduction passes, 0 totals
# CHECK-NEXT: in0: f32[4096] (in place)
# CHECK-NEXT: out0: f32[4096]
# CHECK-NEXT: for r in [0, 1):
# CHECK-NEXT: pass 0:
# CHECK-NEXT: for j in [0, 4096):
# CHECK-NEXT: v0: f32 = load in0[j]
# CHECK-NEXT: v1: f32 = mul v0, 1.5:f32
# CHECK-NEXT: v2: f32 = add v1, 0.25:f32
# CHECK-NEXT: v3: f32 = gelu v2
# CHECK-NEXT: v4: f32 = mul v3, 0.75:f32
# CHECK-NEXT: v5: f32 = tanh v0
# CHECK-NEXT: v6: f32 = add v4, v5
# CHECK-NEXT: store out0[j] = v6
# CHECK-NEXT: cpu: whole rows, pass 0: interleave 2, vector width 16
