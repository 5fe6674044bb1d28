# eager mode differentiates the op-by-op tape: same numbers as graph mode
# RUN: run --mode eager
def f(x) {
    var s = x
    while sum(s) < 10.0 {
        s = s * 2.0
    }
    return sum(s * x)
}

def main() {
    print(grad(f)([1.0, 1.0]))
    print(grad(grad(fn (x) => x ** 4.0))(1.0))
}
# CHECK: [16.0, 16.0]
# CHECK-NEXT: 12.0
