# the typed IR of a small function
# RUN: ir --stage typed
def affine(x: f32[4, 3], w: f32[3, 2]) -> f32[4, 2] {
    return relu(x @ w + 1.0)
}

def main() {
    print(affine(ones(shape=(4, 3)), ones(shape=(3, 2))))
}
# CHECK: graph @main() -> () {
# CHECK-NEXT: ones(shape=[4,3], dtype=f32) : f32[4,3]
# CHECK: call @affine(%0, %1) : f32[4,2]
# CHECK: graph @affine(%x: f32[4,3], %w: f32[3,2]) -> f32[4,2] {
# CHECK-NEXT: matmul(%x, %w) : f32[4,2]
# CHECK-NEXT: constant 1.0 : f32
# CHECK-NEXT: add(%5, %6) : f32[4,2]
# CHECK-NEXT: relu(%7) : f32[4,2]
# CHECK-NEXT: return %8
