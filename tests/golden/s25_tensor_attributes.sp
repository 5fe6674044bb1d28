# tensor attributes: shape, ndim, dtype, T; len
def main() {
    let x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    print(x.shape, x.ndim, len(x))
    print(x.T)
    print(cast(x, x.dtype) == x)
}
# CHECK: (2, 3) 2 2
# CHECK-NEXT: [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
# CHECK-NEXT: [[true, true, true], [true, true, true]]
