# casts between dtypes: float -> int truncates toward zero, -> bool is x != 0
def main() {
    print(cast([1.7, -1.7, 0.0], i32))
    print(cast([1.7, 0.0], bool))
    print(cast([1, 2], f64) * 0.5)
    print(cast([true, false], i64))
}
# CHECK: [1, -1, 0]
# CHECK-NEXT: [true, false]
# CHECK-NEXT: [0.5, 1.0]
# CHECK-NEXT: [1, 0]
