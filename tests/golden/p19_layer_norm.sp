# layer_norm over the last axis, with and without affine parameters
def main() {
    let x = [[1.0, 3.0], [4.0, 2.0]]
    print(layer_norm(x, eps=0.0))
    print(layer_norm(x, [2.0, 2.0], [1.0, 1.0], eps=0.0))
}
# CHECK: [[-1.0, 1.0], [1.0, -1.0]]
# CHECK-NEXT: [[-1.0, 3.0], [3.0, -1.0]]
