# elementwise binary primitives with NumPy broadcasting
def main() {
    let a = [[1.0, 2.0], [3.0, 4.0]]
    let b = [10.0, 20.0]
    print(add(a, b), sub(b, a))
    print(mul(a, 2.0), div(a, [[2.0], [4.0]]))
    print(pow(a, 2.0))
    print(maximum(a, 2.5), minimum(a, 2.5))
    print(floordiv([7.0, -7.0], 2.0), mod([7.0, -7.0], 3.0))
    print([7, -7] // 2, [7, -7] % 3)
    print([3, 4] / 2)
}
# CHECK: [[11.0, 22.0], [13.0, 24.0]] [[9.0, 18.0], [7.0, 16.0]]
# CHECK-NEXT: [[2.0, 4.0], [6.0, 8.0]] [[0.5, 1.0], [0.75, 1.0]]
# CHECK-NEXT: [[1.0, 4.0], [9.0, 16.0]]
# CHECK-NEXT: [[2.5, 2.5], [3.0, 4.0]] [[1.0, 2.0], [2.5, 2.5]]
# CHECK-NEXT: [3.0, -4.0] [1.0, 2.0]
# CHECK-NEXT: [3, -4] [1, 2]
# CHECK-NEXT: [1.5, 2.0]
