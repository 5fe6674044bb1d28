# and / or / not on run-time booleans, comparisons
def main() {
    let a = [1.0, 2.0, 3.0]
    print(a > 1.5)
    print((a > 1.5) and (a < 2.5))
    print((a < 1.5) or (a > 2.5))
    print(not (a == 2.0))
    print(a != 2.0, a >= 2.0, a <= 2.0)
}
# CHECK: [false, true, true]
# CHECK-NEXT: [false, true, false]
# CHECK-NEXT: [true, false, true]
# CHECK-NEXT: [true, false, true]
# CHECK-NEXT: [true, false, true] [false, true, true] [true, true, false]
