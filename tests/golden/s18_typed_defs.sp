# typed parameters with symbolic dims bound per call; the bound dims are usable as integers
def rows(x: f32[B, D]) -> i32 = B

def affine(x: f32[B, I], w: f32[I, O], b: f32[O]) -> f32[B, O] {
    return x @ w + b
}

def main() {
    print(rows([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    print(affine([[1.0, 2.0]], [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], [0.5, 0.5, 0.5]))
}
# CHECK: 3
# CHECK-NEXT: [[1.5, 2.5, 3.5]]
