# comparisons, logical ops and where
def main() {
    let a = [1.0, 2.0, 3.0]
    print(eq(a, 2.0), ne(a, 2.0), lt(a, 2.0), le(a, 2.0), gt(a, 2.0), ge(a, 2.0))
    print(logical_and([true, true], [true, false]), logical_or([false, false], [true, false]), logical_not([true]))
    print(where(a > 1.5, a, 0.0))
    print(where([[true], [false]], [1.0, 2.0], [3.0, 4.0]))
}
# CHECK: [false, true, false] [true, false, true] [true, false, false] [true, true, false] [false, false, true] [false, true, true]
# CHECK-NEXT: [true, false] [true, false] [false]
# CHECK-NEXT: [0.0, 2.0, 3.0]
# CHECK-NEXT: [[1.0, 2.0], [3.0, 4.0]]
