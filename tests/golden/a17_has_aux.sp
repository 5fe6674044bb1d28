# grad / value_and_grad with has_aux=true: f returns (value, aux); aux is passed through
def f(x) = (sum(x * x), (x * 2.0, 7))

def main() {
    let ((v, (d, k)), g) = value_and_grad(f, has_aux=true)([1.0, 2.0])
    print(v, d, k, g)
    let (g2, aux) = grad(f, has_aux=true)([3.0])
    print(g2, aux[0])
}
# CHECK: 5.0 [2.0, 4.0] 7 [2.0, 4.0]
# CHECK-NEXT: [6.0] [6.0]
