# transpose (reverse axes by default) and permute
def main() {
    let x = [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]]
    print(transpose(x).shape)
    print(transpose([[1.0, 2.0], [3.0, 4.0]]))
    print(permute(x, (1, 0, 2)).shape)
    print(permute(x, (2, 1, 0))[1])
    print(transpose(x, (0, 2, 1)))
}
# CHECK: (2, 3, 1)
# CHECK-NEXT: [[1.0, 3.0], [2.0, 4.0]]
# CHECK-NEXT: (3, 1, 2)
# CHECK-NEXT: [[2.0], [4.0], [6.0]]
# CHECK-NEXT: [[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]]
