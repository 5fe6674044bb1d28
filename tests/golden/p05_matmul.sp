# matmul with NumPy semantics: 1-D operands, batched, broadcast batch dims
def main() {
    let v = [1.0, 2.0]
    let m = [[1.0, 2.0], [3.0, 4.0]]
    print(v @ v)
    print(m @ v)
    print(v @ m)
    let batch = [[[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]]]
    print(batch @ m)
    print(matmul(m, batch))
    print(ones(shape=(3, 1, 2, 4)) @ ones(shape=(5, 4, 2)) == 4.0)
}
# CHECK: 5.0
# CHECK-NEXT: [5.0, 11.0]
# CHECK-NEXT: [7.0, 10.0]
# CHECK-NEXT: [[[1.0, 2.0], [3.0, 4.0]], [[2.0, 4.0], [6.0, 8.0]]]
# CHECK-NEXT: [[[1.0, 2.0], [3.0, 4.0]], [[2.0, 4.0], [6.0, 8.0]]]
