# grad with respect to chosen arguments; integer arguments get no gradient
def f(x, y, z) = sum(x * y) + sum(z * z)

def main() {
    let (gx, gz) = grad(f, wrt=(0, 2))([1.0, 2.0], [3.0, 4.0], [5.0])
    print(gx, gz)
    print(grad(f, wrt=1)([1.0, 2.0], [3.0, 4.0], [5.0]))
}
# CHECK: [3.0, 4.0] [10.0]
# CHECK-NEXT: [1.0, 2.0]
