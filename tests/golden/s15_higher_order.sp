# functions passed in, returned, and stored in tuples
def apply_n(f, x, n: int) {
    var y = x
    for i in range(n) {
        y = f(y)
    }
    return y
}

def square(x) = x * x

def make_scale(s) = fn (x) => s * x

def main() {
    let fs = (square, make_scale(0.5), fn (x) => x - 1.0)
    for f in fs {
        print(f([2.0, 4.0]))
    }
    print(apply_n(square, 2.0, 3))
    print(fs[1](10.0))
}
# CHECK: [4.0, 16.0]
# CHECK-NEXT: [1.0, 2.0]
# CHECK-NEXT: [1.0, 3.0]
# CHECK-NEXT: 256.0
# CHECK-NEXT: 5.0
