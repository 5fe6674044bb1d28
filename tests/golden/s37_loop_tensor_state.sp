# loop-carried tensors: a power iteration step repeated
def main() {
    var v = [1.0, 0.0]
    let a = [[2.0, 0.0], [0.0, 1.0]]
    for i in range(3) {
        v = a @ v
    }
    print(v)
    var x = [1.0, 1.0, 1.0]
    var n = 0
    while sum(x) < 100.0 {
        x = x * 2.0
        n = n + 1
    }
    print(n, x)
}
# CHECK: [8.0, 0.0]
# CHECK-NEXT: 6 [64.0, 64.0, 64.0]
