# slices with steps (positive and negative), out-of-range bounds clamp like Python
def main() {
    let x = arange(0, 10)
    print(x[2:8:2])
    print(x[::-3])
    print(x[-3:])
    print(x[7:2:-2])
    print(x[5:100])
    print(x[8:2])
}
# CHECK: [2, 4, 6]
# CHECK-NEXT: [9, 6, 3, 0]
# CHECK-NEXT: [7, 8, 9]
# CHECK-NEXT: [7, 5, 3]
# CHECK-NEXT: [5, 6, 7, 8, 9]
# CHECK-NEXT: []
