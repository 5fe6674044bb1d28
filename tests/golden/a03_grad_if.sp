# gradients through an if with a data-dependent condition
def f(x: f32[N]) -> f32 {
    if sum(x) > 0.0 {
        return sum(x * x)
    }
    return sum(-3.0 * x)
}

def main() {
    print(grad(f)([1.0, 2.0]))
    print(grad(f)([-1.0, -2.0]))
}
# CHECK: [2.0, 4.0]
# CHECK-NEXT: [-3.0, -3.0]
