# zeros, ones, full, arange
def main() {
    print(zeros(shape=(2, 2)))
    print(ones(shape=(3,), dtype=i32))
    print(full((2,), 7.5))
    print(arange(5), arange(1, 7, 2), arange(0, 1, 0.25, dtype=f32))
}
# CHECK: [[0.0, 0.0], [0.0, 0.0]]
# CHECK-NEXT: [1, 1, 1]
# CHECK-NEXT: [7.5, 7.5]
# CHECK-NEXT: [0, 1, 2, 3, 4] [1, 3, 5] [0.0, 0.25, 0.5, 0.75]
