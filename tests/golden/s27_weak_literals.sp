# literals are weakly typed: they take the dtype of the tensor they meet
def main() {
    let x = cast([1.0, 2.0], f64)
    let y = x * 1.5
    print(y.dtype == f64)
    let i = [1, 2, 3]
    print(i * 2, (i + 1).dtype == i32)
    print(i * 0.5)
}
# CHECK: true
# CHECK-NEXT: [2, 4, 6] true
# CHECK-NEXT: [0.5, 1.0, 1.5]
