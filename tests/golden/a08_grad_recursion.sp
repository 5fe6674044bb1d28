# gradients through recursion (a graph calling itself)
def power(x: f32, n: i32) -> f32 {
    if n == 0 {
        return 1.0
    }
    return x * power(x, n - 1)
}

def main() {
    print(power(2.0, 5))
    print(grad(power)(2.0, 5))
}
# CHECK: 32.0
# CHECK-NEXT: 80.0
