# iterating a tensor walks its first axis
def main() {
    var acc = 0.0
    for row in [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]] {
        acc = acc + row[1]
    }
    print(acc)
}
# CHECK: 12.0
