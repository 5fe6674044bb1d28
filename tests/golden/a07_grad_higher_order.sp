# higher-order functions: a function passed in, returned, and kept in a tuple
def apply_twice(f, x) = f(f(x))

def make_power(k) = fn (x) => x ** k

def main() {
    let fs = (sin, make_power(3.0))
    print(grad(fn (x) => apply_twice(fs[1], x))(1.5))
    print(grad(fn (x) => sum(fs[0](x)))([0.0]))
}
# CHECK: 230.66016
# CHECK-NEXT: [1.0]
