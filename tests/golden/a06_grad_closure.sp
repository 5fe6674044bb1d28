# a closure captures w; the gradient flows to the captured value
def f(w) {
    let scale = fn (x) => x * w
    return sum(scale([1.0, 2.0])) + sum(scale([3.0, 0.0]))
}

def main() {
    print(grad(f)(2.0))
}
# CHECK: 6.0
