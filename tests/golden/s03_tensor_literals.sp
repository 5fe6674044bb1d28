# nested tensor literals: f32 when any element is a float, i32 for integers, bool for booleans
def main() {
    let a = [[1.0, 2.0], [3.0, 4.0]]
    let b = [[[1, 2]], [[3, 4]]]
    let c = [true, false]
    print(a)
    print(b)
    print(c)
    print(a.shape, b.ndim)
    print([1, 2.5])
}
# CHECK: [[1.0, 2.0], [3.0, 4.0]]
# CHECK-NEXT: [[[1, 2]], [[3, 4]]]
# CHECK-NEXT: [true, false]
# CHECK-NEXT: (2, 2) 3
# CHECK-NEXT: [1.0, 2.5]
