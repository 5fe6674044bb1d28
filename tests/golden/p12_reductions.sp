# reductions over all axes, one axis, several axes, with keepdims
def main() {
    let x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    print(sum(x), mean(x), max(x), min(x), prod(x))
    print(sum(x, axis=0), sum(x, axis=-1), mean(x, axis=(0, 1)))
    print(max(x, axis=1, keepdims=true), min(x, axis=0))
    print(prod([[1, 2], [3, 4]], axis=1))
}
# CHECK: 21.0 3.5 6.0 1.0 720.0
# CHECK-NEXT: [5.0, 7.0, 9.0] [6.0, 15.0] 3.5
# CHECK-NEXT: [[3.0], [6.0]] [1.0, 2.0, 3.0]
# CHECK-NEXT: [2, 12]
