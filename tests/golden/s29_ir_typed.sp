# the typed IR of a small function
# RUN: ir --stage typed
def affine(x: f32[4, 3], w: f32[3, 2]) -> f32[4, 2] {
    return relu(x @ w + 1.0)
}

def main() {
    print(affine(ones(shape=(4, 3)), ones(shape=(3, 2))))
}
# CHECK: graph @affine(%x: f32[4,3], %w: f32[3,2]) -> f32[4,2] {
# CHECK: matmul(%x, %w) : f32[4,2]
# CHECK: constant 1.0 : f32
# CHECK: add(
# CHECK: relu(
# CHECK: graph @main() -> () {
# CHECK: call @affine(
