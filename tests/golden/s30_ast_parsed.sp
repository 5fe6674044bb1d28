# the parsed AST
# RUN: ir --stage parsed
def f(x: f32[N], k = 2) = x * k + 1.0

def main() {
    print(f([1.0]))
}
# CHECK: def f
# CHECK-NEXT: param x: f32[N]
# CHECK-NEXT: param k
# CHECK-NEXT: default: int 2
# CHECK-NEXT: body: binary +
# CHECK-NEXT: binary *
# CHECK: def main
