# lambdas with expression and block bodies, capturing outer values
def main() {
    let k = 3.0
    let add_k = fn (x) => x + k
    let twice = fn (f, x) { let y = f(x)
                            return f(y) }
    print(add_k([1.0, 2.0]))
    print(twice(add_k, 1.0))
    print((fn (a, b) => a * b)(6, 7))
}
# CHECK: [4.0, 5.0]
# CHECK-NEXT: 7.0
# CHECK-NEXT: 42
