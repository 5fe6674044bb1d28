# gather (NumPy take) and one_hot
def main() {
    let x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    print(gather(x, [2, 0], axis=0))
    print(gather(x, [1], axis=1))
    print(one_hot([0, 2], 3))
}
# CHECK: [[5.0, 6.0], [1.0, 2.0]]
# CHECK-NEXT: [[2.0], [4.0], [6.0]]
# CHECK-NEXT: [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
