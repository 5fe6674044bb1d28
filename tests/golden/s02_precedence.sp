# operator precedence follows Python; static integer arithmetic folds at compile time
def main() {
    print(-2 ** 2)
    print(2 + 3 * 4)
    print((2 + 3) * 4)
    print(2 ** 3 ** 2)
    print(7 // 2, -7 // 2, -7 % 3, 7 % -3)
    print(7 / 2)
    print(1 + 2 < 4 and not 3 > 4)
    print(10 - 4 - 3)
}
# CHECK: -4
# CHECK-NEXT: 14
# CHECK-NEXT: 20
# CHECK-NEXT: 512
# CHECK-NEXT: 3 -4 2 -2
# CHECK-NEXT: 3.5
# CHECK-NEXT: true
# CHECK-NEXT: 3
