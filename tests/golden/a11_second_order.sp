# nested derivatives: grad of grad
def f(x) = x * x * x

def main() {
    print(grad(grad(f))(2.0))
    print(grad(grad(grad(f)))(2.0))
    print(grad(grad(sin))(0.5) + sin(0.5))
}
# CHECK: 12.0
# CHECK-NEXT: 6.0
# CHECK-NEXT: 0.0
