# vjp of a function with several inputs and a tuple output
def f(x, y) = (x * y, sum(x))

def main() {
    let (out, pullback) = vjp(f, [1.0, 2.0], [3.0, 4.0])
    print(out)
    let (dx, dy) = pullback(([1.0, 1.0], 2.0))
    print(dx, dy)
}
# CHECK: ([3.0, 8.0], 3.0)
# CHECK-NEXT: [5.0, 6.0] [1.0, 2.0]
