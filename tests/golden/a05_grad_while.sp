# gradients through a while loop whose trip count depends on the data
def f(x) {
    var s = x
    var n = 0
    while sum(s) < 10.0 {
        s = s * 2.0
        n = n + 1
    }
    return sum(s)
}

def main() {
    print(grad(f)([1.0, 1.0]))
    print(grad(f)([3.0, 3.0]))
}
# CHECK: [8.0, 8.0]
# CHECK-NEXT: [2.0, 2.0]
