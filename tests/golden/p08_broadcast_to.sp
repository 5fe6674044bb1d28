# broadcast_to
def main() {
    print(broadcast_to([1.0, 2.0], (2, 2)))
    print(broadcast_to([[3]], (1, 3)))
}
# CHECK: [[1.0, 2.0], [1.0, 2.0]]
# CHECK-NEXT: [[3, 3, 3]]
