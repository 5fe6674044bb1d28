# iterating a tuple unrolls the loop: elements may have different types
def main() {
    var total = 0.0
    for t in ([1.0, 2.0], 3.0, [[4.0]]) {
        total = total + sum(t)
    }
    print(total)
    var n = 0
    for (k, v) in ((1, 10), (2, 20)) {
        n = n + k * v
    }
    print(n)
}
# CHECK: 10.0
# CHECK-NEXT: 50
