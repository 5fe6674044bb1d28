# grad and value_and_grad of a scalar function
def f(x) = sum(x * x)

def main() {
    print(grad(f)([1.0, 2.0, 3.0]))
    let (v, g) = value_and_grad(f)([1.0, -1.0])
    print(v, g)
    print(grad(fn (x) => x * x * x)(2.0))
}
# CHECK: [2.0, 4.0, 6.0]
# CHECK-NEXT: 2.0 [2.0, -2.0]
# CHECK-NEXT: 12.0
