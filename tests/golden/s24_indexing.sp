# indexing and slicing: integers, negative indices, steps, omitted bounds, tuples
def main() {
    let x = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]
    print(x[2, 1])
    print(x[-1])
    print(x[:, 1:3])
    print(x[::-1, 0])
    print(x[0, ::-2])
    print(x[1:, -2:])
    let t = (1, 2.0, "three")
    print(t[-1], t[0])
}
# CHECK: 9.0
# CHECK-NEXT: [8.0, 9.0, 10.0, 11.0]
# CHECK-NEXT: [[1.0, 2.0], [5.0, 6.0], [9.0, 10.0]]
# CHECK-NEXT: [8.0, 4.0, 0.0]
# CHECK-NEXT: [3.0, 1.0]
# CHECK-NEXT: [[6.0, 7.0], [10.0, 11.0]]
# CHECK-NEXT: three 1
