# concat along an existing axis, stack along a new one
def main() {
    let a = [[1.0, 2.0]]
    let b = [[3.0, 4.0]]
    print(concat((a, b), axis=0))
    print(concat((a, b), axis=1))
    print(concat((a, b, a), axis=-1))
    print(stack((a, b), axis=0).shape)
    print(stack(([1, 2], [3, 4]), axis=1))
}
# CHECK: [[1.0, 2.0], [3.0, 4.0]]
# CHECK-NEXT: [[1.0, 2.0, 3.0, 4.0]]
# CHECK-NEXT: [[1.0, 2.0, 3.0, 4.0, 1.0, 2.0]]
# CHECK-NEXT: (2, 1, 2)
# CHECK-NEXT: [[1, 3], [2, 4]]
