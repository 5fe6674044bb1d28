# compile-time integers are 64-bit: arithmetic up to the edges of the range is exact, an
# integer that needs 64 bits becomes an i64 tensor (others stay i32), and a loop whose index
# would step past the range ends there
def main() {
    print(9223372036854775806 + 1, -9223372036854775807 - 1)
    print((-2) ** 63, 3 ** 39, 1 ** 9223372036854775807)
    print(-9223372036854775808 // 1, -9223372036854775808 % -1, -7 // 2, -7 % 2)
    let big = [1, 4294967296]
    print(big, big.dtype == i64, [1, 2].dtype == i32)
    print([[1, 2], [3, 4294967296]])
    var n = 0
    for i in range(9223372036854774000, 9223372036854775807, 1000) {
        n += 1
    }
    print(n)
}
# CHECK: 9223372036854775807 -9223372036854775808
# CHECK-NEXT: -9223372036854775808 4052555153018976267 1
# CHECK-NEXT: -9223372036854775808 0 -4 1
# CHECK-NEXT: [1, 4294967296] true true
# CHECK-NEXT: [[1, 2], [3, 4294967296]]
# CHECK-NEXT: 2
