# keyword arguments and default values, for defs and primitives
def affine(x, scale = 2.0, shift = 0.0) = x * scale + shift

def main() {
    print(affine(1.0))
    print(affine(1.0, shift=5.0))
    print(affine(shift=1.0, x=3.0, scale=-1.0))
    print(sum([[1.0, 2.0], [3.0, 4.0]], keepdims=true, axis=1))
}
# CHECK: 2.0
# CHECK-NEXT: 7.0
# CHECK-NEXT: -2.0
# CHECK-NEXT: [[3.0], [7.0]]
